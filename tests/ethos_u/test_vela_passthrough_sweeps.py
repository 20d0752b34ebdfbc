"""Vela's `ethos-u` custom op for the later op sweeps, run as it is by the delegate (device imx93, simulated kernel
+ NPU): op_sweeps.OPS (with LOW_RANK) and SMALL_DEPTH_RESHAPED (element-wise operations on fewer than 8 channels
that Vela reshapes), op_sweeps.SOFTMAX, sweeps.MOVES and sweeps.RESIZES, each compiled by Vela
5.2.0 for ethos-u65-256 (vela_oracle, cached). The outputs are compared with TFLite on the original model:

- builtin kernels (the project's reference): within 1 LSB, each case printing whether it is bit-exact;
- TFLite's reference kernels (OpResolverType.BUILTIN_REF) where Vela implements their arithmetic and the builtin
  kernel's differs: MEAN (Vela follows the reference kernel's MEAN; the builtin kernel's is up to 1 LSB off it,
  on 0 to 50 % of a case's outputs here, printed) and SOFTMAX rows of 512 or more (none in the sweep: its rows
  stop at 511). Those cases carry `-vs-refkernels` in their id.

Measured: all 124 cases are bit-exact against their reference (the MEAN cases against the reference kernels).
Vela's one-value constants (ConstOpCase bcast "1", or "c" on one channel: MIN / MAX / ADD / SUB / MUL; seven
cases) are an IFM2 scalar (NPU_SET_IFM2_BROADCAST broadcast_scalar, bit 7, with NPU_SET_IFM2_SCALAR): Linux's
command-stream validator reads no IFM2 for them on the U65 (commit 838ae99f9a77, docs/hardware/ethosu-kernel.md
"Validator"), so they run as the others; their ids carry `-ifm2-scalar`, and each checks that Vela's stream does
use the scalar and that the output is bit-exact.

A representative subset runs by default; the whole of each sweep is marked slow.
"""

from __future__ import annotations

import numpy as np
import pytest

from teflon import modelgen
from teflon.reference import compare, run_cpu, run_delegate

from . import op_sweeps, programs, sweeps, tflite_graph
from .vela_oracle import compile_raw, compile_tflite, ref_kernels

pytestmark = pytest.mark.usefixtures("delegate_library")

SWEEPS: dict[str, list] = {"ops": op_sweeps.OPS + op_sweeps.SMALL_DEPTH_RESHAPED, "softmax": list(op_sweeps.SOFTMAX),
                           "moves": list(sweeps.MOVES), "resizes": list(sweeps.RESIZES)}
# one or two of each kind, by name, run in the default suite
DEFAULT = {
    "max-in8x8x16-b1x8x8x16-i8-seed0", "min-in7x9x32-b32-i8-seed3", "mul-in16x12x10-c1x16x1x1-i8-seed0",
    "quantize-in5x3x32-int8-to-uint8-seed1", "softmax-in1x10-beta1-i8-seed0", "softmax-in1x4420x2-beta1-i8-seed6",
    "mean-in7x7x32-rq-i8", "min-in8x8x16-bcast-1-i8", "hardswish-in4x4x16-i8", "pad-in6x6x16-p112000-i8",
    "avgpool-in25x5x64-k25x5-s1-valid-i8", "quantize-in28x28-uint8-to-int8-seed0",
    "mul-in1x4420x2-b1x1x4420x2-i8-seed19", "add-in8x8x4-b1x1x1x4-i8-seed12",
}


def _ref_kernel_arithmetic(model: bytes) -> bool:
    """Vela implements TFLite's reference-kernel arithmetic here, not the builtin kernel's: MEAN, and SOFTMAX over
    rows of 512 or more."""
    graph = tflite_graph.load(model)
    for op in graph.operations:
        if op.kind == "MEAN":
            return True
        if op.kind == "SOFTMAX" and graph.tensors[op.inputs[0]].shape[-1] >= 512:
            return True
    return False


def _params() -> list:
    out = []
    for sweep, cases in SWEEPS.items():
        for i, case in enumerate(cases):
            name = case.name
            refk = _ref_kernel_arithmetic(case.build())
            scalar = isinstance(case, modelgen.ConstOpCase) and (case.bcast == "1" or case.in_c == 1)  # one value
            ident = f"{sweep}-{name}" + ("-vs-refkernels" if refk else "") + ("-ifm2-scalar" if scalar else "")
            default = name in DEFAULT or (sweep in ("moves", "resizes") and i == 0)
            out.append(pytest.param(case, refk, scalar, id=ident, marks=() if default else pytest.mark.slow))
    return out


@pytest.mark.parametrize(("case", "refk", "scalar"), _params())
def test_vela_sweep_op_through_the_delegate(case: object, refk: bool, scalar: bool) -> None:
    original = case.build()  # type: ignore[attr-defined]
    vela = compile_tflite(original)
    if scalar:
        assert programs.uses_ifm2_scalar(compile_raw(original).words), "expected Vela to write the one-value constant as an IFM2 scalar"
    inputs = modelgen.random_inputs(original, seed=7)
    run = run_delegate(vela, inputs, device="imx93", sim="1")
    on_npu = sorted(run.delegated)
    assert on_npu, (run.ops, run.reasons)
    ref = ref_kernels(original, inputs) if refk else run_cpu(original, inputs)
    c = compare(ref, run.outputs)
    exact = all(np.array_equal(a, b) for a, b in zip(ref, run.outputs, strict=True))
    cpu_ops = [op for i, op in enumerate(run.ops) if i not in run.delegated]
    builtin = f"; vs builtin kernels {compare(run_cpu(original, inputs), run.outputs)}" if refk else ""
    print(f"{case}: vs {'reference' if refk else 'builtin'} kernels {'bit-exact' if exact else 'within 1 LSB'} {c}"
          f"{builtin}; {len(on_npu)} ethos-u op(s), on the CPU: {cpu_ops or 'none'}")
    assert c.max_abs_diff <= 1 and c.within(1, 0.995), c
    if scalar:  # the IFM2 scalar cases: bit-exact, as Vela means them
        assert exact, c
