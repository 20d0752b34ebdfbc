"""The simulated Ethos-U65 against TFLite: single-op int8/uint8 models (teflon.modelgen) compiled by Vela for
ethos-u65-256, Vela's command stream and read-only blob run on the simulator, outputs compared with TFLite.

Two references: TFLite's reference kernels (OpResolverType.BUILTIN_REF, the arithmetic TFLite Micro runs next
to an Ethos-U and the one the NPU's TFL rounding mode reproduces) must match exactly; TFLite's optimized builtin
kernels round exact ties of the final shift the other way now and then, so they must match within 1 LSB.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import tflite
from npu_harness import Simulator, VelaOutput, npu_only, vela_compile_many
from tflite.BuiltinOperator import BuiltinOperator
from tflite.BuiltinOptions import BuiltinOptions

from ethos_u.vela_oracle import ref_kernels
from teflon import modelgen as mg
from teflon.reference import compare, run_cpu


@dataclass(frozen=True)
class SoftmaxCase:
    """SOFTMAX (beta 1) of a (1, C) int8 vector with the converter's output quantization (1/256, -128): Vela
    lowers it into a MAX pool, an exponential LUT and ~26 32-bit element-wise kicks."""

    c: int
    in_scale: float
    in_zp: int = -10

    @property
    def name(self) -> str:
        return f"softmax-in{self.c}-s{self.in_scale:g}-i8"

    def __str__(self) -> str:
        return self.name

    def build(self) -> bytes:
        g = mg.GraphBuilder(f"teflon.modelgen {self.name}")
        x = g.tensor("input", (1, self.c), "int8", mg.QParams.make(self.in_scale, self.in_zp))
        y = g.tensor("output", (1, self.c), "int8", mg.QParams.make(1 / 256, -128))

        def options(fb) -> int:
            tflite.SoftmaxOptionsStart(fb)
            tflite.SoftmaxOptionsAddBeta(fb, 1.0)
            return tflite.SoftmaxOptionsEnd(fb)

        g.op(BuiltinOperator.SOFTMAX, 2, [x], [y], BuiltinOptions.SoftmaxOptions, options)
        return g.build([x], [y])


def _conv(op: str, h: int, c: int, oc: int | None, k: int, s: int, pad: str, act: str = "none",
          dtype: str = "int8", pc: bool = True) -> mg.ConvCase:
    return mg.ConvCase(op, h, h, c, oc, kernel=k, stride=s, padding=pad, activation=act, dtype=dtype,
                       per_channel=pc and dtype == "int8")


CASES = [
    _conv("conv2d", 8, 16, 16, 1, 1, "same"),
    _conv("conv2d", 8, 16, 16, 3, 1, "same"),
    _conv("conv2d", 9, 8, 24, 3, 2, "same", "relu6"),
    _conv("conv2d", 16, 8, 32, 3, 2, "same", "relu6"),
    _conv("conv2d", 11, 8, 8, 5, 1, "valid", "relu"),
    _conv("conv2d", 12, 4, 20, 5, 2, "same"),
    _conv("conv2d", 8, 40, 48, 1, 1, "valid", pc=False),
    _conv("conv2d", 10, 3, 16, 3, 2, "same", "relu", dtype="uint8"),
    _conv("dwconv", 8, 16, None, 3, 1, "same"),
    _conv("dwconv", 10, 24, None, 3, 2, "same", "relu6"),
    _conv("dwconv", 9, 8, None, 5, 1, "valid", pc=False),
    _conv("dwconv", 8, 16, None, 3, 1, "same", "relu", dtype="uint8"),
    mg.FcCase(64, 16, dtype="int8"),
    mg.FcCase(100, 30, activation="relu", dtype="int8", per_channel=True),
    mg.AddCase(8, 8, 16, dtype="int8"),
    mg.AddCase(6, 7, 5, activation="relu", dtype="int8", op="sub"),
    mg.AddCase(8, 8, 16, dtype="uint8"),
    mg.ConstOpCase(8, 8, 16, op="mul", bcast="c", dtype="int8"),
    mg.ConstOpCase(5, 6, 7, op="mul", bcast="1", dtype="int8"),
    mg.ConstOpCase(8, 8, 16, op="add", bcast="1", dtype="int8"),
    mg.ConstOpCase(8, 8, 16, op="rsub", bcast="c", dtype="int8"),
    mg.ConstOpCase(8, 8, 16, op="max", bcast="c", dtype="int8"),
    mg.ConstOpCase(8, 8, 16, op="min", bcast="1", dtype="int8"),
    mg.PoolCase(8, 8, 16, filter=2, stride=2, op="max", dtype="int8"),
    mg.PoolCase(9, 9, 8, filter=3, stride=2, padding="same", op="max", dtype="int8"),
    mg.PoolCase(8, 8, 16, filter=2, stride=2, op="avg", dtype="int8"),
    mg.PoolCase(8, 8, 16, filter=3, stride=1, padding="same", op="avg", dtype="int8"),
    mg.PoolCase(7, 7, 32, op="mean", dtype="int8"),
    mg.PoolCase(8, 8, 16, filter=2, stride=2, op="avg", dtype="uint8"),
    mg.PoolCase(7, 7, 32, op="mean", dtype="int8", requant=True),
    # LUT activations (a 256-entry table DMA'd into SHRAM) and clamps
    mg.UnaryCase("logistic", 8, 8, 16, dtype="int8"),
    mg.UnaryCase("logistic", 8, 8, 16, dtype="uint8"),
    mg.UnaryCase("tanh", 8, 8, 16, dtype="int8"),
    mg.UnaryCase("hardswish", 8, 8, 16, dtype="int8"),
    mg.UnaryCase("leakyrelu", 8, 8, 16, dtype="int8"),
    mg.UnaryCase("silu", 8, 8, 16, dtype="int8"),
    mg.UnaryCase("relu6", 8, 8, 16, dtype="int8"),
    mg.UnaryCase("quantize", 8, 8, 16, dtype="int8"),
    # SOFTMAX: 32-bit element-wise SUB/SHR/CLZ/SHL/ADD/MUL, REDUCE_SUM, a 32-bit LUT
    SoftmaxCase(10, 0.1),
    SoftmaxCase(1001, 0.15),
    SoftmaxCase(2, 0.05),
]


@pytest.fixture(scope="module")
def compiled() -> dict[str, VelaOutput | str]:
    return vela_compile_many({c.name: c.build() for c in CASES})


@pytest.mark.parametrize("case", CASES, ids=str)
def test_npu_matches_tflite(case, npu_sim: Simulator, compiled: dict[str, VelaOutput | str],
                            record_property) -> None:
    model = case.build()
    inputs = mg.random_inputs(model, seed=0)
    vo = compiled[case.name]
    if isinstance(vo, str):
        pytest.skip(f"Vela does not compile it: {vo}")
    if not npu_only(vo):
        pytest.skip("Vela leaves operators on the CPU")
    ref = ref_kernels(model, inputs)
    run = npu_sim.run(vo, inputs, like=ref)
    assert run.rc == 0, run.error
    exact = compare(ref, run.outputs)
    builtin = compare(run_cpu(model, inputs), run.outputs)
    record_property("vs_reference_kernels", str(exact))
    record_property("vs_builtin_kernels", str(builtin))
    print(f"{case.name}: reference kernels {exact}; builtin {builtin}")
    assert exact.max_abs_diff == 0, f"vs TFLite reference kernels: {exact}"
    assert builtin.max_abs_diff <= 1, f"vs TFLite builtin kernels: {builtin}"
