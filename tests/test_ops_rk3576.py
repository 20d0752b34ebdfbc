"""Single-op sweeps on the simulated RK3576 NPU against TFLite's builtin CPU kernels.

The same cases and tolerances as test_ops_rk3588.py (opcases.py, opcheck.py): CONV_2D / DEPTHWISE_CONV_2D must be
delegated and match the CPU within 1 LSB with >= 99.5 % of the elements exact. Unlike rk3588, int8 per-channel
weights are delegated too (the coefficient table's per-channel multiplier), here also with the weight-scale
spreads of real post-training-quantized models. ADD and AVERAGE_POOL_2D stay on the CPU. The RK3576 backend's
known CPU fallbacks and the requantization limits it shares with rk3588 are listed in opcases.py. The `slow`
variants run with `scripts/test.sh -m slow`.
"""

from __future__ import annotations

import pytest

from opcases import (
    DEFAULT_ADD,
    DEFAULT_CONV,
    DEFAULT_POOL,
    LITERT_CASES,
    RK3576_DEFAULT_PER_CHANNEL,
    RK3576_SLOW_PER_CHANNEL,
    SLOW_ADD,
    SLOW_CONV,
)
from opcheck import Recorder, check_add, check_delegated_conv, check_pool
from teflon.modelgen import AddCase, ConvCase, PoolCase
from teflon.runtime import interpreter_module

# ---------------------------------------------------------------------------------------------------------------
# CONV_2D / DEPTHWISE_CONV_2D, per-tensor: delegated, within 1 LSB
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", DEFAULT_CONV, ids=str)
def test_conv(case: ConvCase, rk3576_sim: dict[str, str], record_property: Recorder) -> None:
    check_delegated_conv(case, rk3576_sim, record_property)


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW_CONV, ids=str)
def test_conv_slow(case: ConvCase, rk3576_sim: dict[str, str], record_property: Recorder) -> None:
    check_delegated_conv(case, rk3576_sim, record_property)


# ---------------------------------------------------------------------------------------------------------------
# int8 per-channel weights: delegated on rk3576, same tolerance
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", RK3576_DEFAULT_PER_CHANNEL, ids=str)
def test_per_channel(case: ConvCase, rk3576_sim: dict[str, str], record_property: Recorder) -> None:
    check_delegated_conv(case, rk3576_sim, record_property)


@pytest.mark.slow
@pytest.mark.parametrize("case", RK3576_SLOW_PER_CHANNEL, ids=str)
def test_per_channel_slow(case: ConvCase, rk3576_sim: dict[str, str], record_property: Recorder) -> None:
    check_delegated_conv(case, rk3576_sim, record_property)


# ---------------------------------------------------------------------------------------------------------------
# ADD: stays on the CPU (no fusion on rk3576; opcheck.check_add)
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", DEFAULT_ADD, ids=str)
def test_add(case: AddCase, rk3576_sim: dict[str, str], record_property: Recorder) -> None:
    check_add(case, rk3576_sim, record_property)


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW_ADD, ids=str)
def test_add_slow(case: AddCase, rk3576_sim: dict[str, str], record_property: Recorder) -> None:
    check_add(case, rk3576_sim, record_property)


# ---------------------------------------------------------------------------------------------------------------
# An op no backend claims (AVERAGE_POOL_2D), alone and after a delegated convolution
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", DEFAULT_POOL, ids=str)
def test_unsupported_op_falls_back(case: PoolCase, rk3576_sim: dict[str, str], record_property: Recorder) -> None:
    check_pool(case, rk3576_sim, record_property)


# ---------------------------------------------------------------------------------------------------------------
# The other runtime: ai_edge_litert (its builtin kernels are the reference there)
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", LITERT_CASES, ids=str)
def test_ai_edge_litert(case: ConvCase | AddCase, rk3576_sim: dict[str, str], record_property: Recorder) -> None:
    try:
        interpreter_module("ai_edge_litert")
    except ImportError:
        pytest.skip("ai_edge_litert not installed")
    if isinstance(case, AddCase):
        check_add(case, rk3576_sim, record_property, runtime="ai_edge_litert")
    else:
        check_delegated_conv(case, rk3576_sim, record_property, runtime="ai_edge_litert")
