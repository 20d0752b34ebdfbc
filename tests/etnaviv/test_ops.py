"""Single-op sweeps on every simulated etnaviv NPU (the target registry's etnaviv rows) against TFLite's builtin CPU
kernels: the same case ids and tolerance rules as every sweep (the common convolution sweep is tests/test_ops.py): a
claimed op within 1 LSB of the CPU with >= 99.5 % of the elements exact (judged as a rate). Beyond convolutions
the etnaviv compiler claims FULLY_CONNECTED, ADD/SUB (two-input NN jobs), PAD, RELU and LOGISTIC (TP jobs), and
per-element maps of one tensor as TP TABLE jobs (TANH, HARD_SWISH, LEAKY_RELU, RELU6, RELU_N1_TO_1, QUANTIZE,
ADD/SUB/MUL/MAXIMUM/MINIMUM with one constant value, the SiLU pair); the
device's known CPU fallbacks (opcases.KNOWN_CPU) must come back unchanged. Ids start with the device:
`a311d-conv2d-in112x112x32-oc64-k3-s2-same-u8`.
"""

from __future__ import annotations

import pytest

from conftest import device_cases
from opcases import (
    ETNAVIV_DEFAULT_ADD,
    ETNAVIV_DEFAULT_ELEMENTWISE,
    ETNAVIV_DEFAULT_FC,
    ETNAVIV_DEFAULT_MAXPOOL,
    ETNAVIV_DEFAULT_MEAN,
    ETNAVIV_DEFAULT_PER_CHANNEL,
    ETNAVIV_DEFAULT_POOL,
    ETNAVIV_DEFAULT_RESIZE,
    ETNAVIV_DEFAULT_TABLE,
    ETNAVIV_NON_SQUARE,
    ETNAVIV_SLOW_PER_CHANNEL,
    ETNAVIV_SLOW_TABLE,
    ETNAVIV_TABLE_MIN_EXACT,
    etnaviv_maxpool_cpu_reason,
    etnaviv_mean_cpu_reason,
    etnaviv_pool_cpu_reason,
)
from opcheck import MIN_EXACT, Recorder, check_cpu_fallback, check_delegated_conv, check_delegated_op
from teflon import targets
from teflon.modelgen import (
    AddCase,
    ConstOpCase,
    ConvCase,
    ElementwiseCase,
    FcCase,
    PoolCase,
    UnaryCase,
    operator_names,
)

DEVICES = [t.name for t in targets.of_family("etnaviv")]


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, ETNAVIV_NON_SQUARE))
def test_non_square(device: str, case: ConvCase, options: dict[str, str], record_property: Recorder) -> None:
    """96x160 inputs with 3x3 and 5x3 kernels: right on the NPU, or on the CPU with the compiler's reason."""
    check_delegated_conv(case, options, record_property)


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, ETNAVIV_DEFAULT_FC))
def test_fully_connected(device: str, case: FcCase, options: dict[str, str], record_property: Recorder) -> None:
    check_delegated_op(case, options, record_property, ("FULLY_CONNECTED",))


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, ETNAVIV_DEFAULT_PER_CHANNEL))
def test_per_channel(device: str, case: ConvCase | FcCase, options: dict[str, str],
                     record_property: Recorder) -> None:
    """int8 per-channel weights: one NN job per run of output channels with one requantization (up to
    MAX_CHANNEL_JOBS), judged like any single op; past the limit on the CPU with the job count as the reason."""
    check_delegated_op(case, options, record_property, ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"))


@pytest.mark.slow
@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, ETNAVIV_SLOW_PER_CHANNEL))
def test_per_channel_slow(device: str, case: ConvCase | FcCase, options: dict[str, str],
                          record_property: Recorder) -> None:
    check_delegated_op(case, options, record_property, ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"))


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, ETNAVIV_DEFAULT_POOL))
def test_average_pool(device: str, case: PoolCase, options: dict[str, str], record_property: Recorder) -> None:
    """AVERAGE_POOL_2D as a unit-weight depthwise NN job: exactly TFLite's rounding where claimed (the multiplier
    is proven over every reachable window sum); the rest on the CPU with the compiler's reason."""
    reason = etnaviv_pool_cpu_reason(case, device)
    if reason:
        check_cpu_fallback(case, options, record_property, ("AVERAGE_POOL_2D",))
        return
    check_delegated_op(case, options, record_property, ("AVERAGE_POOL_2D", "CONV_2D"))


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, ETNAVIV_DEFAULT_MEAN))
def test_mean(device: str, case: PoolCase, options: dict[str, str], record_property: Recorder) -> None:
    """MEAN over H, W as a whole-plane unit-weight NN job: equal to TFLite on every reachable sum where claimed (the
    weight, multiplier, bias and output offset are proven over all of them); the rest on the CPU with the
    compiler's reason."""
    if etnaviv_mean_cpu_reason(case, device):
        if case.after_conv:
            check_delegated_op(case, options, record_property, ("CONV_2D",))
        else:
            check_cpu_fallback(case, options, record_property, ("MEAN",))
        return
    check_delegated_op(case, options, record_property, ("MEAN", "CONV_2D"))


@pytest.mark.parametrize("keep_dims", [True, False])
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_mean_reference(dtype: str, keep_dims: bool) -> None:
    """fixedpoint.tflite_mean (what mean_encoding proves against) equals the runtime's MEAN on random inputs, with
    and without keep_dims and a change of quantization."""
    import numpy as np

    from teflon.fixedpoint import tflite_mean
    from teflon.modelgen import random_inputs
    from teflon.reference import run_cpu
    from teflon.runtime import make_interpreter

    for h, w, requant, seed in [(2, 2, False, 0), (4, 4, True, 1), (5, 5, True, 2), (3, 5, False, 3), (7, 7, True, 4)]:
        case = PoolCase(h, w, 48, op="mean", dtype=dtype, requant=requant, seed=seed, keep_dims=keep_dims)
        model = case.build()
        q = {d["name"]: d["quantization"] for d in make_interpreter(model).get_tensor_details()}
        (sx, zx), (sy, zy) = q["input"], q["output"]
        for s in range(3):
            x = random_inputs(model, seed=s)[0]
            sums = x.astype(np.int64).reshape(-1, 48).sum(axis=0)
            want = run_cpu(model, [x])[0].reshape(-1).astype(np.int64)
            assert np.array_equal(tflite_mean(sums, h * w, dtype, sx, zx, sy, zy, keep_dims), want), case.name


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, ETNAVIV_DEFAULT_MAXPOOL))
def test_max_pool(device: str, case: PoolCase, options: dict[str, str], record_property: Recorder) -> None:
    """MAX_POOL_2D as TP max-pooling jobs: byte-exact where claimed (a maximum of stored bytes, no rounding); the
    rest on the CPU with the compiler's reason."""
    if etnaviv_maxpool_cpu_reason(case):
        check_cpu_fallback(case, options, record_property, ("MAX_POOL_2D",))
        return
    check_delegated_op(case, options, record_property, ("MAX_POOL_2D", "CONV_2D"))


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, ETNAVIV_DEFAULT_RESIZE))
def test_resize(device: str, case: ElementwiseCase, options: dict[str, str], record_property: Recorder) -> None:
    """RESIZE_NEAREST_NEIGHBOR x2 as four TP copies: byte-exact."""
    check_delegated_op(case, options, record_property, ("RESIZE_NEAREST_NEIGHBOR",))


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, ETNAVIV_DEFAULT_ADD))
def test_add_sub(device: str, case: AddCase, options: dict[str, str], record_property: Recorder) -> None:
    check_delegated_op(case, options, record_property, ("ADD", "SUB"))


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, ETNAVIV_DEFAULT_ELEMENTWISE))
def test_elementwise(device: str, case: ElementwiseCase, options: dict[str, str], record_property: Recorder) -> None:
    check_delegated_op(case, options, record_property, ("RELU", "LOGISTIC", "PAD", "PADV2"))


def _check_table(case: UnaryCase | ConstOpCase, options: dict[str, str], record_property: Recorder) -> None:
    """Every node of the model (a SiLU: LOGISTIC and MUL) as one TP TABLE job, within 1 LSB and >= 99.5 % exact
    (SILU: its measured limit)."""
    min_exact = ETNAVIV_TABLE_MIN_EXACT.get(getattr(case, "op", ""), MIN_EXACT)
    check_delegated_conv(case, options, record_property, min_exact=min_exact,
                         kinds=tuple(operator_names(case.build())))


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, ETNAVIV_DEFAULT_TABLE))
def test_table(device: str, case: UnaryCase | ConstOpCase, options: dict[str, str],
               record_property: Recorder) -> None:
    _check_table(case, options, record_property)


@pytest.mark.slow
@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, ETNAVIV_SLOW_TABLE))
def test_table_slow(device: str, case: UnaryCase | ConstOpCase, options: dict[str, str],
                    record_property: Recorder) -> None:
    _check_table(case, options, record_property)


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, [
    ConvCase("conv2d", 28, 28, 1, 1, kernel=1), ConvCase("dwconv", 56, 56, 1, kernel=1, padding="valid", weight_zp=74),
    ConvCase("dwconv", 56, 56, 1, kernel=1, stride=2, dtype="int8"),
]))
def test_single_rounding_limit(device: str, case: ConvCase, options: dict[str, str]) -> None:
    """The evidence behind opcases.ETNAVIV_REQUANT_LIMIT: on these fan-in-1 cases the NPU's output equals the exactly
    rounded real result round(S * acc) + zp on every element; where it differs from TFLite, TFLite's two roundings
    are what moved the element."""
    import numpy as np

    from teflon.modelgen import conv_params, random_inputs
    from teflon.reference import compare, run_cpu, run_delegate

    model = case.build()
    x = random_inputs(model)[0]
    p = conv_params(case, case.rng())
    xs = x[0, ::case.stride, ::case.stride, 0].astype(np.int64) - int(p.input_quant.zero_point[0])
    acc = xs * (int(p.weights.reshape(-1)[0]) - int(p.weight_quant.zero_point[0])) + int(p.bias.reshape(-1)[0])
    s = float(p.input_quant.scale[0]) * float(p.weight_quant.scale[0]) / float(p.output_quant.scale[0])
    lo, hi = (0, 255) if case.dtype == "uint8" else (-128, 127)
    exact = np.clip(np.floor(acc * s + 0.5) + int(p.output_quant.zero_point[0]), lo, hi)
    npu = run_delegate(model, [x], **options).outputs[0][0, :, :, 0]
    cpu = run_cpu(model, [x])[0][0, :, :, 0]
    assert compare(exact.astype(npu.dtype), npu).mismatches == 0
    print(f"{case.name} on {device}: NPU == exact rounding; TFLite differs on {compare(cpu, npu).mismatches} elements")
