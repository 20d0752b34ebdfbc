"""Single-op sweeps on every simulated rocket NPU (the target registry's rocket rows) against TFLite's builtin CPU
kernels.

The per-tensor convolution sweep common to every target is tests/test_ops.py. int8 per-channel weights are delegated with the same tolerance by targets with the `per_channel`
capability (then also with the weight-scale spreads of real post-training-quantized models) and must come back
unchanged from the CPU on the others. FULLY_CONNECTED runs as a 1x1 convolution. An ADD or SUB fed by a convolution
is fused into it (its own measured bound, opcheck.check_add), other ADDs run fused into a 1x1 depthwise copy of one
input; MAX_POOL_2D, AVERAGE_POOL_2D and MEAN run on the PPU where the parameters allow, an AVERAGE_POOL_2D the PPU
cannot round like TFLite as a depthwise convolution on the DPU, a global average wider than the PPU's window as
one 1x1 convolution per 16-channel plane (opcases.pool_cpu_reason). Cases live in opcases.py (with each
device's known CPU fallbacks and requantization limits), the checks in opcheck.py; the `slow` variants run with
`scripts/test.sh -m slow`. Ids start with the device: `rk3576-conv2d-in112x112x32-oc64-k3-s2-same-u8`.
"""

from __future__ import annotations

import pytest

from conftest import device_cases
from opcases import (
    DEFAULT_ADD,
    DEFAULT_CONST,
    DEFAULT_PAD_CONV,
    DEFAULT_PER_CHANNEL,
    DEFAULT_POOL,
    DEFAULT_UNARY,
    KERNEL_CONV,
    LITERT_CASES,
    RK3568_ADD,
    ROCKET_DEFAULT_FC,
    SLOW_ADD,
    SLOW_CONST,
    SLOW_PAD_CONV,
    SLOW_PER_CHANNEL,
    SLOW_ROCKET_FC,
    SLOW_UNARY,
    SPREAD_DEFAULT_PER_CHANNEL,
    SPREAD_SLOW_PER_CHANNEL,
    UNARY_KNOWN_CPU,
    WIDE_CONV,
)
from opcheck import (
    CONV_KINDS,
    Recorder,
    check_add,
    check_const,
    check_cpu_fallback,
    check_delegated_conv,
    check_delegated_op,
    check_pad_conv,
    check_pool,
    check_unary,
)
from teflon import targets
from teflon.modelgen import AddCase, ConstOpCase, ConvCase, FcCase, PadConvCase, PoolCase, UnaryCase

DEVICES = [t.name for t in targets.drivable_generations() if t.family == "rocket"]  # rk3566: test_rk3568_status.py


def _per_channel(device: str, slow: bool) -> list[ConvCase]:
    if targets.get(device).per_channel:
        return SPREAD_SLOW_PER_CHANNEL if slow else SPREAD_DEFAULT_PER_CHANNEL
    return SLOW_PER_CHANNEL if slow else DEFAULT_PER_CHANNEL


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, KERNEL_CONV))
def test_kernels_strides(device: str, case: ConvCase, options: dict[str, str], record_property: Recorder) -> None:
    """Kernels up to 7x7, non-square kernels, unequal strides, stride 3."""
    check_delegated_conv(case, options, record_property)


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, WIDE_CONV))
def test_wide(device: str, case: ConvCase, options: dict[str, str], record_property: Recorder) -> None:
    """Maps wider than the width fields or the CBUF's rows: column windows."""
    check_delegated_conv(case, options, record_property)



# ---------------------------------------------------------------------------------------------------------------
# int8 per-channel weights: delegated where the target has the capability, else the CPU result unchanged
# ---------------------------------------------------------------------------------------------------------------


def _check_per_channel(device: str, case: ConvCase, options: dict[str, str], record_property: Recorder,
                       runtime: str | None = None) -> None:
    if targets.get(device).per_channel:
        check_delegated_conv(case, options, record_property, runtime=runtime)
    else:
        check_cpu_fallback(case, options, record_property, CONV_KINDS, runtime=runtime)


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, lambda d: _per_channel(d, slow=False)))
def test_per_channel(device: str, case: ConvCase, options: dict[str, str], record_property: Recorder) -> None:
    _check_per_channel(device, case, options, record_property)


@pytest.mark.slow
@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, lambda d: _per_channel(d, slow=True)))
def test_per_channel_slow(device: str, case: ConvCase, options: dict[str, str], record_property: Recorder) -> None:
    _check_per_channel(device, case, options, record_property)


# ---------------------------------------------------------------------------------------------------------------
# FULLY_CONNECTED: a 1x1 convolution over a 1x1xN feature map
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, ROCKET_DEFAULT_FC))
def test_fully_connected(device: str, case: FcCase, options: dict[str, str], record_property: Recorder) -> None:
    check_delegated_op(case, options, record_property, ("FULLY_CONNECTED",))


@pytest.mark.slow
@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, SLOW_ROCKET_FC))
def test_fully_connected_slow(device: str, case: FcCase, options: dict[str, str], record_property: Recorder) -> None:
    check_delegated_op(case, options, record_property, ("FULLY_CONNECTED",))


# ---------------------------------------------------------------------------------------------------------------
# Per-element unary ops (LOGISTIC, SiLU, HARD_SWISH, LEAKY_RELU, TANH, RELU*): the DPU LUT program, byte-exact
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, DEFAULT_UNARY))
def test_unary(device: str, case: UnaryCase, options: dict[str, str], record_property: Recorder) -> None:
    check_unary(case, options, record_property, UNARY_KNOWN_CPU.get(device))


@pytest.mark.slow
@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, SLOW_UNARY))
def test_unary_slow(device: str, case: UnaryCase, options: dict[str, str], record_property: Recorder) -> None:
    # rk3576 runs a table op as a copy convolution, which a single-channel map cannot feed (rk3576/lut.py)
    single = "a single-channel map on rk3576" if device == "rk3576" and case.in_c == 1 else None
    check_unary(case, options, record_property, single or UNARY_KNOWN_CPU.get(device))


# ---------------------------------------------------------------------------------------------------------------
# ADD: fused into the producing convolution or a copy (opcheck.check_add); pools (opcheck.check_pool)
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, DEFAULT_ADD))
def test_add(device: str, case: AddCase, options: dict[str, str], record_property: Recorder) -> None:
    check_add(case, options, record_property)


@pytest.mark.slow
@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, SLOW_ADD))
def test_add_slow(device: str, case: AddCase, options: dict[str, str], record_property: Recorder) -> None:
    check_add(case, options, record_property)


@pytest.mark.parametrize("case", RK3568_ADD, ids=lambda c: f"rk3568-{c.name}")
def test_add_rk3568(case: AddCase, delegate_library: None, record_property: Recorder) -> None:
    """The vendor's ADD of two uint8 maps (a DPU-only task) on the planes rk3568 takes."""
    from conftest import sim_options

    check_add(case, sim_options("rk3568"), record_property)


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, DEFAULT_CONST))
def test_const(device: str, case: ConstOpCase, options: dict[str, str], record_property: Recorder) -> None:
    check_const(case, options, record_property)


@pytest.mark.slow
@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, SLOW_CONST))
def test_const_slow(device: str, case: ConstOpCase, options: dict[str, str], record_property: Recorder) -> None:
    check_const(case, options, record_property)


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, DEFAULT_PAD_CONV))
def test_pad_conv(device: str, case: PadConvCase, options: dict[str, str], record_property: Recorder) -> None:
    check_pad_conv(case, options, record_property)


@pytest.mark.slow
@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, SLOW_PAD_CONV))
def test_pad_conv_slow(device: str, case: PadConvCase, options: dict[str, str], record_property: Recorder) -> None:
    check_pad_conv(case, options, record_property)


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, DEFAULT_POOL))
def test_pool(device: str, case: PoolCase, options: dict[str, str], record_property: Recorder) -> None:
    check_pool(case, options, record_property)


# ---------------------------------------------------------------------------------------------------------------
# The other runtime: ai_edge_litert loads the same delegate (its builtin kernels are the reference there)
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, LITERT_CASES))
def test_ai_edge_litert(device: str, case: ConvCase | AddCase, options: dict[str, str],
                        record_property: Recorder) -> None:
    from teflon.runtime import interpreter_module

    try:
        interpreter_module("ai_edge_litert")
    except ImportError as exc:
        pytest.skip(f"ai_edge_litert not installed ({exc})")
    if isinstance(case, AddCase):
        check_add(case, options, record_property, runtime="ai_edge_litert")
    elif case.per_channel:
        _check_per_channel(device, case, options, record_property, runtime="ai_edge_litert")
    else:
        check_delegated_conv(case, options, record_property, runtime="ai_edge_litert")
