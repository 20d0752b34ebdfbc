#!/usr/bin/env bash
# Build the binary wheel: dist/teflon-<version>-cp311-cp311-linux_<arch>.whl, libteflon.so and the Python package.
#
#   bash scripts/build-wheel.sh                   # this machine's architecture
#   bash scripts/build-wheel.sh --arch aarch64    # cross-built with Debian's aarch64 toolchain
#   bash scripts/build-wheel.sh --arch x86_64
#
# The wheel is for CPython 3.11 (libteflon.so embeds it and links libpython3.11.so.1.0; on Debian/Ubuntu boards
# that is the libpython3.11 package). The aarch64 build takes the embedded Python's headers and libpython from an
# aarch64 Debian root (scripts/aarch64-sysroot.sh, which also installs the cross toolchain) through
# scripts/cross/aarch64-linux-gnu.ini. Prints the wheel's path last.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ARCH=$(uname -m)
while [ "$#" -gt 0 ]; do
    case "$1" in
        --arch) ARCH=$2; shift 2 ;;
        --arch=*) ARCH=${1#--arch=}; shift ;;
        *) echo "usage: $0 [--arch aarch64|x86_64]" >&2; exit 2 ;;
    esac
done
case "$ARCH" in
    aarch64 | arm64) ARCH=aarch64 ;;
    x86_64 | amd64) ARCH=x86_64 ;;
    *) echo "build-wheel.sh: unsupported architecture $ARCH (aarch64, x86_64)" >&2; exit 2 ;;
esac

[ -x .venv/bin/python ] || bash scripts/setup.sh >&2
PY=$PWD/.venv/bin/python
# meson-python runs meson and ninja from PATH.
export PATH="$PWD/.venv/bin:$PATH"

args=()
if [ "$ARCH" != "$(uname -m)" ]; then
    if [ "$ARCH" != aarch64 ] || [ "$(uname -m)" != x86_64 ]; then
        echo "build-wheel.sh: cross builds go from x86_64 to aarch64 only" >&2
        exit 2
    fi
    bash scripts/aarch64-sysroot.sh >&2
    args+=(-Csetup-args=--cross-file="$PWD/scripts/cross/aarch64-linux-gnu.ini")
    # The wheel's platform tag: meson-python takes it from the build interpreter unless told otherwise.
    export _PYTHON_HOST_PLATFORM=linux-aarch64
fi

mkdir -p dist
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$PY" -m pip wheel --quiet --no-build-isolation --no-deps -w "$out" -Cbuild-dir="build/wheel-$ARCH" "${args[@]}" . >&2
whl=$(ls "$out"/teflon-*.whl)
case "$(basename "$whl")" in
    *"linux_$ARCH.whl") ;;
    *) echo "build-wheel.sh: $(basename "$whl") is not tagged linux_$ARCH" >&2; exit 1 ;;
esac
mv -f "$whl" dist/
echo "dist/$(basename "$whl")"
