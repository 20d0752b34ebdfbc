"""The checks of the single-op suites (test_ops_rk3588.py, test_ops_rk3576.py), for any delegate options.

Delegated convolutions must match TFLite's builtin CPU kernels within MAX_DIFF LSB with an exact-match rate of
at least MIN_EXACT (judged by `Comparison.within`); what a backend leaves on the CPU must come back unchanged.
The device's known limitations (tests/opcases.py: `known_cpu`, `known_requant_limit`) turn the matching failures
into xfails with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from opcases import (
    MEAN_MIN_EXACT,
    MEAN_REQUANT_MIN_EXACT,
    known_cpu,
    known_cpu_add,
    known_requant_limit,
    pad_cpu_reason,
    pool_cpu_reason,
    separate_add,
)
from teflon.modelgen import (
    AddCase,
    ConstOpCase,
    ConvCase,
    ElementwiseCase,
    FcCase,
    PadConvCase,
    PoolCase,
    UnaryCase,
    operator_names,
    operators,
    random_inputs,
    tensor_scales,
)
from teflon.reference import Comparison, DelegateRun, compare, run_cpu, run_delegate

CONV_KINDS = ("CONV_2D", "DEPTHWISE_CONV_2D")
MAX_DIFF = 1
MIN_EXACT = 0.995
# An ADD or pool reading delegated convolutions: each of two producers may be off on 0.5 % of the elements.
CHAINED_MIN_EXACT = 1 - 2 * (1 - MIN_EXACT)

Recorder = Callable[[str, object], None]
Case = ConvCase | AddCase | PoolCase | FcCase | ElementwiseCase | UnaryCase | ConstOpCase | PadConvCase


def run_case(case: Case, options: dict[str, str], record_property: Recorder,
             runtime: str | None = None) -> tuple[DelegateRun, list[np.ndarray], Comparison]:
    model = case.build()
    inputs = random_inputs(model, seed=0)
    ref = run_cpu(model, inputs, runtime=runtime)
    run = run_delegate(model, inputs, runtime=runtime, **options)
    cmp = compare(ref, run.outputs)
    print(f"{case.name} on {options['device']}: {cmp}; delegated {len(run.delegated)}/{len(run.ops)} nodes in "
          f"{run.partitions} partition(s); {case.macs} MACs")
    record_property("max_abs_diff", cmp.max_abs_diff)
    record_property("exact_fraction", round(cmp.exact_fraction, 6))
    record_property("delegated_nodes", len(run.delegated))
    record_property("macs", case.macs)
    return run, ref, cmp


def mismatch_hint(ref: list[np.ndarray], out: list[np.ndarray]) -> str:
    """Where the first output differs, as NHWC coordinates, and how many elements per channel are off."""
    r, o = ref[0].astype(np.int64), out[0].astype(np.int64)
    bad = np.argwhere(r != o)
    shown = ", ".join(f"{tuple(int(v) for v in idx)}: cpu {r[tuple(idx)]} npu {o[tuple(idx)]}" for idx in bad[:6])
    per_channel = np.bincount(bad[:, -1], minlength=r.shape[-1]) if len(bad) else np.zeros(0, int)
    worst = np.argsort(-per_channel)[:4]
    channels = ", ".join(f"c{int(c)}: {int(per_channel[c])}" for c in worst if per_channel[c])
    return f"first differences (n, y, x, c): {shown}; most affected channels: {channels}"


def check_delegated_conv(case: Case, options: dict[str, str], record_property: Recorder,
                         min_exact: float = MIN_EXACT, cpu_kinds: tuple[str, ...] = (), runtime: str | None = None,
                         max_diff: int = MAX_DIFF, kinds: tuple[str, ...] = CONV_KINDS) -> None:
    """Every node of `kinds` delegated (and nothing of `cpu_kinds`), output within tolerance of the CPU's."""
    device = options["device"]
    run, ref, cmp = run_case(case, options, record_property, runtime)
    missing = run.undelegated(*kinds)
    known = known_cpu(case, device)
    if missing and known:
        assert cmp.max_abs_diff == 0, f"{case.name}: CPU fallback differs from the CPU reference: {cmp}"
        pytest.xfail(f"known {device} limitation, stays on the CPU: {known}")
    assert not missing, (f"not delegated: {run.describe(missing)} "
                         "(TEFLON_DEBUG=verbose prints the compiler's reasons)")
    claimed = [i for i in run.nodes_of(*cpu_kinds) if i in run.delegated]
    assert not claimed, f"{device} must leave these on the CPU: {run.describe(claimed)}"
    limit = known_requant_limit(case.name, device)
    if limit and cmp.max_abs_diff <= max_diff and not cmp.within(max_diff, min_exact):
        pytest.xfail(f"{case.name}: {cmp}: known {device} requantization limit: {limit}")
    if not cmp.within(max_diff, min_exact):
        pytest.fail(f"{case.name}: {cmp} (allowed {max_diff} LSB, >= {100 * min_exact:.1f}% exact); "
                    + mismatch_hint(ref, run.outputs), pytrace=False)


def check_delegated_op(case: Case, options: dict[str, str], record_property: Recorder, kinds: tuple[str, ...],
                       runtime: str | None = None) -> None:
    """A single-op model whose op (one of `kinds`) must be delegated, within 1 LSB and >= 99.5 % exact."""
    check_delegated_conv(case, options, record_property, runtime=runtime, kinds=kinds)


def check_cpu_fallback(case: Case, options: dict[str, str], record_property: Recorder, kinds: tuple[str, ...],
                       runtime: str | None = None) -> None:
    """Nothing of `kinds` delegated, and the output equal to the CPU's."""
    run, _, cmp = run_case(case, options, record_property, runtime)
    claimed = [i for i in run.nodes_of(*kinds) if i in run.delegated]
    assert not claimed, f"{options['device']} must leave these on the CPU: {run.describe(claimed)}"
    assert cmp.max_abs_diff == 0, f"{case.name}: CPU fallback differs from the CPU reference: {cmp}"


# ADD on the rocket SoCs: fed by graph inputs it runs as a 1x1 depthwise copy of one input with the ADD fused into it
# (rocket/identity_add.py: no rounding skipped, judged like a single op: <= 1 LSB, >= 99.5 % exact); fed by a
# convolution it is fused into that convolution (the DPU's EW stage adds the other input before OUT_CVT). The fused
# operation skips TFLite's requantization of the convolution output: its rounding (half an LSB of that tensor, i.e.
# g / 2 LSB of the sum with gain g = s_conv / s_out) and its clamp. A uniform rounding error of +-g/2 moves the final
# rounding on a fraction g/4 of the elements (measured: 24.7 % at g = 0.98, 8.9 % at g = 0.35, 9.9 % at g = 0.40;
# docs/hardware/rocket.md "Fused ADD: numbers"; for g > 2 the rate is 1 - 1/g), so the fused case is judged against
# that rate on top of the chained allowance, and within the chained bound plus ceil(g / 2) LSB except where TFLite
# clamped the convolution output (the fused operation never sees that clamp): at most CLAMPED of the elements
# (measured over the default and slow sweeps: at most 0.016 % of a case, worst 24 LSB, RELU cases whose convolution
# output range is too narrow). The other
# input, when a delegated convolution computes it, carries its own tolerance: each of two producers may be off by
# 1 LSB on 0.5% of elements, and 1 LSB of an input is s_in / s_out LSB of the sum (RELU6 fixes s_out = 6/255,
# which can magnify it a lot).
CLAMPED = 0.005


def chained_max_diff(model: bytes, producers: tuple[str, ...] = CONV_KINDS) -> int:
    """Worst output change of each ADD when every input computed by a `producers` node is off by MAX_DIFF."""
    ops = operators(model)
    scales = tensor_scales(model)
    made_by = {t: op.name for op in ops for t in op.outputs}
    worst = MAX_DIFF
    for op in ops:
        if op.name in ("ADD", "SUB"):
            gain = sum(float(scales[t][0]) for t in op.inputs if made_by.get(t) in producers)
            worst = max(worst, math.ceil(MAX_DIFF * gain / float(scales[op.outputs[0]][0]) - 1e-9))
    return worst


def fused_add_gain(model: bytes) -> float:
    """The gain s_conv / s_out of the input the rocket encoder fuses (the convolution output with the smaller scale,
    rocket.fused_add.add_fusion; a SUB's first input) of the model's ADD or SUB fed by a convolution; 0 without one."""
    ops = operators(model)
    scales = tensor_scales(model)
    made_by = {t: op.name for op in ops for t in op.outputs}
    gains = [float(scales[t][0]) / float(scales[op.outputs[0]][0])
             for op in ops if op.name in ("ADD", "SUB") for t in (op.inputs[:1] if op.name == "SUB" else op.inputs)
             if made_by.get(t) in CONV_KINDS]
    return min(gains, default=0.0)


def fused_add_bound(model: bytes) -> tuple[int, float]:
    """(|diff| bound outside clamped elements, min exact fraction) of an ADD fused into its producing convolution
    (see above)."""
    gain = fused_add_gain(model)
    moved = gain / 4 if gain <= 2 else 1 - 1 / gain
    return chained_max_diff(model) + math.ceil(gain / 2), CHAINED_MIN_EXACT - moved


def check_add(case: AddCase, options: dict[str, str], record_property: Recorder, runtime: str | None = None) -> None:
    device = options["device"]
    kind = case.op.upper()
    model = case.build()
    known = known_cpu_add(case, device)
    if case.producers == "inputs":  # a copy of one input with the ADD fused (rocket/identity_add.py): no skipped rounding
        if known:
            check_cpu_fallback(case, options, record_property, (kind,), runtime=runtime)
        else:
            check_delegated_conv(case, options, record_property, MIN_EXACT, runtime=runtime, max_diff=1,
                                 kinds=(kind,))
        return
    if separate_add(case, device):  # the ADD's own task reads the convolutions' outputs: their tolerance, plus its
        # own rounding (one LSB)
        check_delegated_conv(case, options, record_property, CHAINED_MIN_EXACT, runtime=runtime,
                             max_diff=chained_max_diff(model) + 1, kinds=(*CONV_KINDS, kind))
        return
    if known:  # the ADD stays on the CPU, fed by delegated convolutions: their chained tolerance
        check_delegated_conv(case, options, record_property, CHAINED_MIN_EXACT, cpu_kinds=(kind,), runtime=runtime,
                             max_diff=chained_max_diff(model))
        return
    bound, min_exact = fused_add_bound(model)
    run, ref, cmp = run_case(case, options, record_property, runtime)
    missing = run.undelegated(*CONV_KINDS, kind)
    assert not missing, f"not delegated: {run.describe(missing)} (TEFLON_DEBUG=verbose prints the compiler's reasons)"
    diff = np.abs(ref[0].astype(np.int64) - run.outputs[0].astype(np.int64))
    clamped = float(np.mean(diff > bound))
    record_property("fused_gain", round(fused_add_gain(model), 4))
    record_property("allowed_min_exact", round(min_exact, 4))
    record_property("beyond_bound_fraction", round(clamped, 6))
    print(f"  fused ADD: gain {fused_add_gain(model):.3f}, allowed {100 * min_exact:.2f}% exact and |diff| <= {bound} "
          f"except {100 * CLAMPED:.1f}%; {100 * clamped:.3f}% beyond")
    if not cmp.within(cmp.max_abs_diff, min_exact) or clamped > CLAMPED:
        pytest.fail(f"{case.name}: {cmp} (fused ADD: >= {100 * min_exact:.1f}% exact, |diff| <= {bound} on all but "
                    f"{100 * CLAMPED:.1f}%: {100 * clamped:.3f}% beyond); " + mismatch_hint(ref, run.outputs),
                    pytrace=False)


POOL_KINDS = ("AVERAGE_POOL_2D", "MAX_POOL_2D", "MEAN")


def check_pad_conv(case: PadConvCase, options: dict[str, str], record_property: Recorder) -> None:
    """PAD -> convolution: the PAD folded into the convolution's padding (both delegated, the convolution's
    tolerance), or on the CPU with the convolution delegated (opcases.pad_cpu_reason)."""
    if pad_cpu_reason(case, options["device"]):
        check_delegated_conv(case, options, record_property, cpu_kinds=("PAD",))
    else:
        check_delegated_conv(case, options, record_property, kinds=(*CONV_KINDS, "PAD"))


def check_const(case: ConstOpCase, options: dict[str, str], record_property: Recorder) -> None:
    """MUL/ADD/SUB with a constant: a 1x1 depthwise convolution, within the single-op contract (a MUL is claimed only
    where its requantization plan matches TFLite on >= 99.5 % of the input x constant values); a single-channel map
    stays on the CPU."""
    kind = {"mul": "MUL", "add": "ADD"}.get(case.op, "SUB")
    if case.in_c == 1 or (options["device"] == "rk3568" and case.activation == "relu6"):  # rk3568: no BN bound
        check_cpu_fallback(case, options, record_property, (kind,))
        return
    check_delegated_conv(case, options, record_property, MIN_EXACT, max_diff=1, kinds=(kind,))


def check_pool(case: PoolCase, options: dict[str, str], record_property: Recorder) -> None:
    """A pool on the rocket PPU, alone and after a delegated convolution; the cases opcases.pool_cpu_reason names
    must stay on the CPU."""
    reason = pool_cpu_reason(case, options["device"])
    if reason:
        print(f"{case.name}: stays on the CPU: {reason}")
        if case.after_conv:
            # the pool reads the delegated convolution's output: the convolution's tolerance carries over
            check_delegated_conv(case, options, record_property, CHAINED_MIN_EXACT, cpu_kinds=POOL_KINDS)
        else:
            check_cpu_fallback(case, options, record_property, POOL_KINDS)
        return
    min_exact = (CHAINED_MIN_EXACT if case.after_conv else MEAN_REQUANT_MIN_EXACT if case.requant
                 else MEAN_MIN_EXACT if case.op == "mean" else MIN_EXACT)
    check_delegated_conv(case, options, record_property, min_exact, kinds=CONV_KINDS + POOL_KINDS)


def check_unary(case: UnaryCase, options: dict[str, str], record_property: Recorder, cpu_reason: str | None = None,
                runtime: str | None = None) -> None:
    """A per-element unary op (a SiLU: its LOGISTIC and MUL) through the exact LUT path: delegated and byte-equal
    to the CPU, or, where the device does not emit it (`cpu_reason`), left on the CPU unchanged."""
    kinds = ("LOGISTIC", "MUL") if case.op == "silu" else tuple(operator_names(case.build()))
    if cpu_reason:
        check_cpu_fallback(case, options, record_property, kinds, runtime=runtime)
        return
    check_delegated_conv(case, options, record_property, min_exact=1.0, runtime=runtime, max_diff=0, kinds=kinds)
