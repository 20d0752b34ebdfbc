#!/usr/bin/env bash
# The C parts under AddressSanitizer + UBSan: an instrumented libteflon.so (build-asan/), the C-only dlopen
# test with leak checking, and the simulator/delegate test files through Python with leak checking off
# (CPython itself does not free everything at exit); tests/test_faults.py turns leak checking back on for its
# Python-free C host (tests/c/test_fault_leaks.c).
# The ioctl shims' tests run here too (the shim after the sanitizer runtimes in LD_PRELOAD).
#
#   bash scripts/test-asan.sh            # after scripts/setup.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PWD/.venv/bin:$PATH"

if [ ! -f build-asan/build.ninja ]; then
    meson setup build-asan -Db_sanitize=address,undefined -Dbuildtype=debugoptimized >/dev/null
fi
ninja -C build-asan >/dev/null

export TEFLON_LIBRARY="$PWD/build-asan/delegate/libteflon.so"
export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so) $(gcc -print-file-name=libstdc++.so)"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=0
# The test files and the items left out of them are listed in tests/conftest.py (ASAN_FILES, ASAN_LEFT_OUT, with
# the reasons): `--stage=asan` collects only those files; scripts/test.sh's plain stage (`--stage=plain`) runs
# everything else, so each test runs once in the default run.
echo "== pytest under ASan/UBSan ($TEFLON_LIBRARY)"
python -m pytest -n auto -q -p no:cacheprovider -m "not slow" --stage=asan "$@"
