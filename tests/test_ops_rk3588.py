"""Single-op sweeps on the simulated RK3588 NPU against TFLite's builtin CPU kernels.

Per-tensor CONV_2D / DEPTHWISE_CONV_2D must be delegated and match the CPU within 1 LSB with >= 99.5% of the
elements exact. Per-channel int8 weights, ADD and AVERAGE_POOL_2D stay on the CPU for now: their outputs must
equal the CPU's exactly. Cases live in opcases.py; the `slow` variants run with `scripts/test.sh -m slow`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from opcases import (
    DEFAULT_ADD,
    DEFAULT_CONV,
    DEFAULT_PER_CHANNEL,
    DEFAULT_POOL,
    KNOWN_REQUANT_LIMIT,
    SLOW_ADD,
    SLOW_CONV,
    SLOW_PER_CHANNEL,
    rk3588_known_cpu,
)
from teflon.modelgen import AddCase, ConvCase, PoolCase, operators, random_inputs, tensor_scales
from teflon.reference import Comparison, DelegateRun, compare, run_cpu, run_delegate
from teflon.runtime import interpreter_module

CONV_KINDS = ("CONV_2D", "DEPTHWISE_CONV_2D")
MAX_DIFF = 1
MIN_EXACT = 0.995

Recorder = Callable[[str, object], None]


def _run(case: ConvCase | AddCase | PoolCase, options: dict[str, str], record_property: Recorder,
         runtime: str | None = None) -> tuple[DelegateRun, list[np.ndarray], Comparison]:
    model = case.build()
    inputs = random_inputs(model, seed=0)
    ref = run_cpu(model, inputs, runtime=runtime)
    run = run_delegate(model, inputs, runtime=runtime, **options)
    cmp = compare(ref, run.outputs)
    print(f"{case.name}: {cmp}; delegated {len(run.delegated)}/{len(run.ops)} nodes in {run.partitions} "
          f"partition(s); {case.macs} MACs")
    record_property("max_abs_diff", cmp.max_abs_diff)
    record_property("exact_fraction", round(cmp.exact_fraction, 6))
    record_property("delegated_nodes", len(run.delegated))
    record_property("macs", case.macs)
    return run, ref, cmp


def _mismatch_hint(ref: list[np.ndarray], out: list[np.ndarray]) -> str:
    """Where the first output differs, as NHWC coordinates, and how many elements per channel are off."""
    r, o = ref[0].astype(np.int64), out[0].astype(np.int64)
    bad = np.argwhere(r != o)
    shown = ", ".join(f"{tuple(int(v) for v in idx)}: cpu {r[tuple(idx)]} npu {o[tuple(idx)]}" for idx in bad[:6])
    per_channel = np.bincount(bad[:, -1], minlength=r.shape[-1]) if len(bad) else np.zeros(0, int)
    worst = np.argsort(-per_channel)[:4]
    channels = ", ".join(f"c{int(c)}: {int(per_channel[c])}" for c in worst if per_channel[c])
    return f"first differences (n, y, x, c): {shown}; most affected channels: {channels}"


def check_delegated_conv(case: ConvCase | AddCase | PoolCase, options: dict[str, str],
                         record_property: Recorder, min_exact: float = MIN_EXACT,
                         cpu_kinds: tuple[str, ...] = (), runtime: str | None = None,
                         max_diff: int = MAX_DIFF) -> None:
    """Every convolution delegated (and nothing of `cpu_kinds`), output within tolerance of the CPU's."""
    run, ref, cmp = _run(case, options, record_property, runtime)
    missing = run.undelegated(*CONV_KINDS)
    known = rk3588_known_cpu(case)
    if missing and known:
        assert cmp.max_abs_diff == 0, f"{case.name}: CPU fallback differs from the CPU reference: {cmp}"
        pytest.xfail(f"known rk3588 limitation, stays on the CPU: {known}")
    assert not missing, (f"not delegated: {run.describe(missing)} "
                         "(TEFLON_DEBUG=verbose prints the compiler's reasons)")
    claimed = [i for i in run.nodes_of(*cpu_kinds) if i in run.delegated]
    assert not claimed, f"rk3588 must leave these on the CPU: {run.describe(claimed)}"
    limit = KNOWN_REQUANT_LIMIT.get(case.name)
    if limit and cmp.max_abs_diff <= max_diff and not cmp.within(max_diff, min_exact):
        pytest.xfail(f"{case.name}: {cmp}: known RK3588 requantization limit: {limit}")
    if not cmp.within(max_diff, min_exact):
        pytest.fail(f"{case.name}: {cmp} (allowed {max_diff} LSB, >= {100 * min_exact:.1f}% exact); "
                    + _mismatch_hint(ref, run.outputs), pytrace=False)


def check_cpu_fallback(case: ConvCase | AddCase | PoolCase, options: dict[str, str], record_property: Recorder,
                       kinds: tuple[str, ...], runtime: str | None = None) -> None:
    run, _, cmp = _run(case, options, record_property, runtime)
    claimed = [i for i in run.nodes_of(*kinds) if i in run.delegated]
    assert not claimed, f"rk3588 must leave these on the CPU: {run.describe(claimed)}"
    assert cmp.max_abs_diff == 0, f"{case.name}: CPU fallback differs from the CPU reference: {cmp}"


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
# ADD: stays on the CPU for now. Fed by graph inputs it must equal the CPU exactly; fed by delegated
# convolutions it inherits their tolerance: each of two producers may be off by 1 LSB on 0.5% of elements, and
# 1 LSB of an input is s_in / s_out LSB of the sum (RELU6 fixes s_out = 6/255, which can magnify it a lot).
# ---------------------------------------------------------------------------------------------------------------

CHAINED_MIN_EXACT = 1 - 2 * (1 - MIN_EXACT)


def chained_max_diff(model: bytes, producers: tuple[str, ...] = CONV_KINDS) -> int:
    """Worst output change of each ADD when every input computed by a `producers` node is off by MAX_DIFF."""
    ops = operators(model)
    scales = tensor_scales(model)
    made_by = {t: op.name for op in ops for t in op.outputs}
    worst = MAX_DIFF
    for op in ops:
        if op.name == "ADD":
            gain = sum(float(scales[t][0]) for t in op.inputs if made_by.get(t) in producers)
            worst = max(worst, math.ceil(MAX_DIFF * gain / float(scales[op.outputs[0]][0]) - 1e-9))
    return worst


def check_add(case: AddCase, options: dict[str, str], record_property: Recorder, runtime: str | None = None) -> None:
    if case.producers == "inputs":
        check_cpu_fallback(case, options, record_property, ("ADD",), runtime=runtime)
    else:
        max_diff = chained_max_diff(case.build())
        record_property("allowed_max_abs_diff", max_diff)
        check_delegated_conv(case, options, record_property, CHAINED_MIN_EXACT, runtime=runtime, max_diff=max_diff)


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
    if case.after_conv:
        # the pool reads the delegated convolution's output: the convolution's tolerance carries over
        check_delegated_conv(case, rk3588_sim, record_property, CHAINED_MIN_EXACT, cpu_kinds=("AVERAGE_POOL_2D",))
    else:
        check_cpu_fallback(case, rk3588_sim, record_property, ("AVERAGE_POOL_2D",))


# ---------------------------------------------------------------------------------------------------------------
# The other runtime: ai_edge_litert loads the same delegate (its builtin kernels are the reference there)
# ---------------------------------------------------------------------------------------------------------------

LITERT_CASES: list[ConvCase | AddCase] = [
    ConvCase("conv2d", 28, 28, 16, 32, 3, 2, "same"),
    ConvCase("conv2d", 14, 14, 32, 64, 1, 1, "valid", dtype="int8"),
    ConvCase("dwconv", 28, 28, 32, None, 3, 1, "same", "relu6", dtype="int8"),
    ConvCase("conv2d", 14, 14, 16, 32, 3, 1, "same", dtype="int8", per_channel=True),
    AddCase(8, 8, 16, "conv2", out_c=16, kernel=3),
]


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
