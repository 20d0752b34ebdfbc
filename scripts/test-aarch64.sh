#!/usr/bin/env bash
# The aarch64 wheel, tested under emulation: cross-builds it (scripts/build-wheel.sh --arch aarch64), installs it
# with aarch64 wheels of its dependencies into a directory next to an aarch64 Debian Python 3.11
# (scripts/aarch64-sysroot.sh), and runs a smoke set with pytest under qemu-aarch64: the delegate in tflite_runtime,
# MobileNetV1 on the simulated rk3588 and a311d (top-1 equal to the CPU's), the C dlopen host, a few convolutions
# per family. Not part of .ci/run (it takes minutes under emulation): run it by hand.
#
#   bash scripts/test-aarch64.sh              # extra arguments go to pytest
#
# Needs root on Debian (apt-get for the cross toolchain, qemu-user-static and the arm64 packages) and PyPI.
# The C host test runs its aarch64 executable through qemu-aarch64 (TEFLON_TEST_EXEC_WRAPPER); binfmt_misc is not needed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$PWD

t0=$(date +%s)
wheel=$(bash scripts/build-wheel.sh --arch aarch64 | tail -n 1)
echo "test-aarch64.sh: the aarch64 wheel took $(($(date +%s) - t0)) s (Debian root included when it was missing)"
ROOT=$(bash scripts/aarch64-sysroot.sh | tail -n 1)
QEMU=$(command -v qemu-aarch64-static || command -v qemu-aarch64)

# The aarch64 wheels: tflite-runtime 2.14's is tagged manylinux_2_34 (the root's glibc is Debian's, >= 2.36).
SITE=$REPO/build/aarch64-site
glibc=$("$QEMU" -L "$ROOT" "$ROOT/usr/bin/python3.11" -c 'import platform; print(platform.libc_ver()[1])')
echo "test-aarch64.sh: $(basename "$wheel"); aarch64 root $ROOT (glibc $glibc)"
stamp="$SITE/.teflon-site"
deps=("numpy<2" "cffi>=1.15" "tflite-runtime==2.14.0" "tflite==2.18.0" "flatbuffers" "pillow" "pytest")
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "${deps[*]}" ]; then
    t0=$(date +%s)
    rm -rf "$SITE"
    .venv/bin/python -m pip install --quiet --target "$SITE" --upgrade --only-binary=:all: --implementation cp \
        --python-version 3.11 --abi cp311 --platform manylinux_2_34_aarch64 --platform manylinux_2_28_aarch64 \
        --platform manylinux2014_aarch64 --platform linux_aarch64 "${deps[@]}"
    echo "${deps[*]}" >"$stamp"
    echo "test-aarch64.sh: the aarch64 wheels of the dependencies took $(($(date +%s) - t0)) s"
fi
# The wheel under test, always fresh (no dependencies: they are above).
rm -rf "$SITE"/teflon "$SITE"/teflon-*.dist-info
.venv/bin/python -m pip install --quiet --target "$SITE" --upgrade --no-deps --platform linux_aarch64 --only-binary=:all: \
    --implementation cp --python-version 3.11 --abi cp311 "$wheel"
file -L "$SITE/teflon/libteflon.so"

# The C host test starts an aarch64 executable from the emulated Python. qemu-user hands execve to the host kernel,
# which runs it only if binfmt_misc knows qemu-aarch64; the test's exec wrapper starts it through qemu instead,
# so the test runs whether or not binfmt_misc is there.
export TEFLON_TEST_EXEC_WRAPPER="$QEMU -L $ROOT"
select_dlopen=" or test_dlopen_create_destroy_and_prepare or test_cached_decisions_need_no_python_in_a_c_host"

# The emulated Python: the root's interpreter, the site directory on its path, the root as qemu's prefix for every
# aarch64 program it starts (QEMU_LD_PREFIX). The C host test is compiled by the cross compiler (CC).
export QEMU_LD_PREFIX=$ROOT
export PYTHONPATH=$SITE
export CC=aarch64-linux-gnu-gcc
export TEFLON_REQUIRE_DELEGATE=1
# The CPU reference outputs of the build machine's runs are not reused: the aarch64 TFLite computes its own.
export TEFLON_REFERENCE_CACHE=$REPO/build/aarch64-reference
bin=$REPO/build/aarch64-bin
mkdir -p "$bin"
ln -sf "$ROOT/usr/bin/python3.11" "$bin/python3"
ln -sf "$ROOT/usr/bin/python3.11" "$bin/python3.11"
export PATH="$bin:$PATH"

smoke="tests/test_board.py tests/test_dlopen.py"
select="test_board$select_dlopen"
start=$(date +%s)
set +e
# shellcheck disable=SC2086
"$QEMU" -L "$ROOT" "$ROOT/usr/bin/python3.11" -m pytest -p no:cacheprovider -q -rfEs $smoke -k "$select" "$@"
rc=$?
set -e
echo "test-aarch64.sh: the smoke set took $(($(date +%s) - start)) s under qemu-aarch64"
exit "$rc"
