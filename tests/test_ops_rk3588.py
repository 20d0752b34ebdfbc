"""Single-op sweeps on the simulated RK3588 NPU against TFLite's builtin CPU kernels.

Per-tensor CONV_2D / DEPTHWISE_CONV_2D must be delegated and match the CPU within 1 LSB with >= 99.5% of the
elements exact. Per-channel int8 weights, ADD and AVERAGE_POOL_2D stay on the CPU for now: their outputs must
equal the CPU's exactly. Cases live in opcases.py, the checks in opcheck.py (shared with test_ops_rk3576.py);
the `slow` variants run with `scripts/test.sh -m slow`.
"""

from __future__ import annotations

import pytest

from opcases import (
    DEFAULT_ADD,
    DEFAULT_CONV,
    DEFAULT_PER_CHANNEL,
    DEFAULT_POOL,
    LITERT_CASES,
    SLOW_ADD,
    SLOW_CONV,
    SLOW_PER_CHANNEL,
)
from opcheck import CONV_KINDS, Recorder, check_add, check_cpu_fallback, check_delegated_conv, check_pool
from teflon.modelgen import AddCase, ConvCase, PoolCase
from teflon.runtime import interpreter_module

# ---------------------------------------------------------------------------------------------------------------
# CONV_2D / DEPTHWISE_CONV_2D, per-tensor: delegated, within 1 LSB
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", DEFAULT_CONV, ids=str)
def test_conv(case: ConvCase, rk3588_sim: dict[str, str], record_property: Recorder) -> None:
    check_delegated_conv(case, rk3588_sim, record_property)


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW_CONV, ids=str)
def test_conv_slow(case: ConvCase, rk3588_sim: dict[str, str], record_property: Recorder) -> None:
    check_delegated_conv(case, rk3588_sim, record_property)


# ---------------------------------------------------------------------------------------------------------------
# int8 per-channel weights: rk3588 does not claim them; the CPU result must come back unchanged
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", DEFAULT_PER_CHANNEL, ids=str)
def test_per_channel_falls_back(case: ConvCase, rk3588_sim: dict[str, str], record_property: Recorder) -> None:
    check_cpu_fallback(case, rk3588_sim, record_property, CONV_KINDS)


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW_PER_CHANNEL, ids=str)
def test_per_channel_falls_back_slow(case: ConvCase, rk3588_sim: dict[str, str],
                                     record_property: Recorder) -> None:
    check_cpu_fallback(case, rk3588_sim, record_property, CONV_KINDS)


# ---------------------------------------------------------------------------------------------------------------
# ADD: stays on the CPU for now (opcheck.check_add)
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", DEFAULT_ADD, ids=str)
def test_add(case: AddCase, rk3588_sim: dict[str, str], record_property: Recorder) -> None:
    check_add(case, rk3588_sim, record_property)


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW_ADD, ids=str)
def test_add_slow(case: AddCase, rk3588_sim: dict[str, str], record_property: Recorder) -> None:
    check_add(case, rk3588_sim, record_property)


# ---------------------------------------------------------------------------------------------------------------
# An op no backend claims (AVERAGE_POOL_2D), alone and after a delegated convolution
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", DEFAULT_POOL, ids=str)
def test_unsupported_op_falls_back(case: PoolCase, rk3588_sim: dict[str, str], record_property: Recorder) -> None:
    check_pool(case, rk3588_sim, record_property)


# ---------------------------------------------------------------------------------------------------------------
# The other runtime: ai_edge_litert loads the same delegate (its builtin kernels are the reference there)
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", LITERT_CASES, ids=str)
def test_ai_edge_litert(case: ConvCase | AddCase, rk3588_sim: dict[str, str], record_property: Recorder) -> None:
    try:
        interpreter_module("ai_edge_litert")
    except ImportError:
        pytest.skip("ai_edge_litert not installed")
    if isinstance(case, AddCase):
        check_add(case, rk3588_sim, record_property, runtime="ai_edge_litert")
    elif case.per_channel:
        check_cpu_fallback(case, rk3588_sim, record_property, CONV_KINDS, runtime="ai_edge_litert")
    else:
        check_delegated_conv(case, rk3588_sim, record_property, runtime="ai_edge_litert")
