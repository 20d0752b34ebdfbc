#!/usr/bin/env bash
# The C parts under AddressSanitizer + UBSan: an instrumented libteflon.so (build-asan/), the C-only dlopen
# test with leak checking, and the simulator/delegate test files through Python with leak checking off
# (CPython itself does not free everything at exit); tests/test_faults.py turns leak checking back on for its
# Python-free C host (tests/c/test_fault_leaks.c).
# The ioctl shims' tests run here too (the shim after the
# sanitizer runtimes in LD_PRELOAD); their op sweeps through the shim are left to the plain run (the sweeps
# themselves run here with sim=1, and the shim's code paths are covered by the shim tests' own runs).
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
# Left out here because the same C code runs instrumented elsewhere in this list, so they would only repeat it:
#  - the rocket C harness tests (tests/rocket/test_sim_rk3576.py): the harness is an executable the test builds
#    with -fsanitize=address,undefined itself, without libteflon, so the plain run already runs it under ASan;
#  - the shared convolution sweep on rk3588/rk3576 (tests/test_ops.py): tests/rocket/test_sim_fast.py's
#    test_sweep_best, in this list, runs the same models (DEFAULT_CONV and the per-channel ones) on both SoCs
#    through the same delegate, on the fast datapath the sweep uses and again on the reference one.
same_code_elsewhere=(
    --deselect tests/rocket/test_sim_rk3576.py::test_kick_words
    --deselect tests/rocket/test_sim_rk3576.py::test_soc_detection
    --deselect "tests/test_ops.py::test_conv[rk3588-"
    --deselect "tests/test_ops.py::test_conv[rk3576-"
)
echo "== pytest under ASan/UBSan ($TEFLON_LIBRARY)"
python -m pytest -n auto -q -p no:cacheprovider -m "not slow" \
    tests/test_dlopen.py tests/test_delegate_options.py tests/rocket/test_sim_rk3588.py \
    tests/rocket/test_sim_mutation.py tests/rocket/test_split_rk3588.py tests/rocket/test_ops.py \
    tests/rocket/test_sim_rk3576.py tests/rocket/test_sim_rk3568_golden.py tests/rocket/test_rk3568_status.py tests/rocket/test_rk3568_perchannel.py tests/rocket/test_rk3568_shapes.py tests/rocket/test_sim_mutation_rk3568.py tests/rocket/test_sim_fast.py tests/test_ops.py tests/etnaviv/test_ops.py tests/etnaviv/test_kernel_shim.py \
    tests/test_program_cache.py tests/test_dynamic_shapes.py \
    tests/test_native_lifetime.py \
    tests/test_compare.py \
    tests/test_faults.py \
    tests/test_doctor_experiments.py \
    tests/rocket/test_kernel_shim.py \
    tests/test_random.py \
    tests/rocket/test_views.py \
    tests/test_netgen.py \
    tests/test_profile.py \
    tests/rocket/test_cores.py \
    tests/rocket/test_clamp.py \
    tests/rocket/test_columns_rk3576.py \
    tests/rocket/test_channel_groups_rk3576.py \
    tests/rocket/test_unary_views.py \
    tests/etnaviv/test_counters.py \
    tests/etnaviv/test_sim_fast.py \
    tests/etnaviv/test_views.py \
    tests/etnaviv/test_coefs.py \
    tests/ethos_u/test_kernel_sim.py tests/ethos_u/test_kernel_shim.py tests/ethos_u/test_faults.py \
    tests/ethos_u/test_vela_passthrough.py tests/ethos_u/test_sim_fast.py \
    -k "not ai_edge_litert and not op_sweep_through_shim" \
    "${same_code_elsewhere[@]}" "$@"
