#!/usr/bin/env bash
# An aarch64 Debian root with Python 3.11, for cross-building libteflon.so (its headers and libpython) and for
# running the aarch64 wheel under qemu-user (scripts/test-aarch64.sh). Safe to re-run; prints the root's path.
#
#   bash scripts/aarch64-sysroot.sh [ROOT]     # default build/aarch64-sysroot
#
# Needs root on Debian (bookworm or later): it enables the arm64 architecture in dpkg and apt, then downloads the
# arm64 packages with `apt-get download` and unpacks them with `dpkg-deb -x` (nothing arm64 is installed on this
# machine). The cross compiler and qemu-user come from Debian too.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=${1:-build/aarch64-sysroot}
ROOT=$(realpath -m "$ROOT")

# What an aarch64 Python 3.11 needs to start and import its standard library's C modules, plus what the
# aarch64 wheels of numpy and tflite-runtime link against (libstdc++, libgcc_s), plus the headers to build with.
PACKAGES=(
    libc6 libgcc-s1 libstdc++6 zlib1g libexpat1 libffi8 libssl3 libbz2-1.0 liblzma5 libsqlite3-0
    libuuid1 libncursesw6 libtinfo6 libreadline8 libcrypt1 libdb5.3
    python3.11-minimal libpython3.11-minimal libpython3.11-stdlib libpython3.11 libpython3.11-dev
    libexpat1-dev zlib1g-dev libcrypt-dev libnsl-dev libtirpc-dev
)

stamp="$ROOT/.teflon-sysroot"
want="${PACKAGES[*]}"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "$ROOT"
    exit 0
fi

need_host=()
command -v aarch64-linux-gnu-gcc >/dev/null || need_host+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
command -v qemu-aarch64-static >/dev/null || command -v qemu-aarch64 >/dev/null || need_host+=(qemu-user-static)
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    dpkg --add-architecture arm64
    apt-get update -q >&2
elif ! apt-cache show python3.11-minimal:arm64 >/dev/null 2>&1; then
    apt-get update -q >&2
fi
if [ "${#need_host[@]}" -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need_host[@]}" >&2
fi

debs="$ROOT.debs"
mkdir -p "$debs" "$ROOT"
# as root into a directory apt's sandbox user cannot write: download without the sandbox
(cd "$debs" && apt-get download -q -o APT::Sandbox::User=root "${PACKAGES[@]/%/:arm64}" >&2)
for deb in "$debs"/*.deb; do
    dpkg-deb -x "$deb" "$ROOT"
done
# Debian's merged /usr: the loader and libraries are looked up under /lib as well as /usr/lib.
for d in lib bin sbin; do
    if [ -d "$ROOT/$d" ] && [ ! -L "$ROOT/$d" ]; then
        cp -a "$ROOT/$d/." "$ROOT/usr/$d/" && rm -rf "${ROOT:?}/$d"
    fi
    [ -e "$ROOT/$d" ] || ln -s "usr/$d" "$ROOT/$d"
done
# Absolute symlinks inside the root (libfoo.so -> /lib/...) must resolve inside it when the linker follows them.
find "$ROOT" -type l -lname '/*' | while read -r link; do
    target=$(readlink "$link")
    ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$ROOT$target")" "$link"
done
echo "$want" >"$stamp"
echo "$ROOT"
