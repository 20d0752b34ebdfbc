"""RK3576 encoder numbers end to end, before the C simulator: the compiled Program run through a numpy model of
the documented encoder/simulator contract (tests/rk3576_contract.py) against TFLite's CPU kernels.

Same tolerance as the op sweeps: at most 1 LSB, >= 99.5 % of the elements exact.
"""

from __future__ import annotations

import pytest

import rk3576_contract
from teflon import rocket
from teflon.modelgen import ConvCase, random_inputs

pytest.importorskip("tflite_runtime", reason="TFLite runtime needed for the CPU reference")
from teflon.reference import compare, run_cpu

CASES = [
    ConvCase("conv2d", 16, 16, 32, 40, dtype="int8"),
    ConvCase("conv2d", 16, 16, 32, 40, dtype="uint8"),
    ConvCase("conv2d", 17, 13, 20, 33, kernel=3, stride=2, dtype="int8", per_channel=True),
    ConvCase("conv2d", 9, 11, 3, 8, kernel=5, dtype="uint8", padding="valid"),
    ConvCase("conv2d", 7, 7, 64, 100, kernel=1, dtype="int8", per_channel=True, padding="valid"),
    ConvCase("conv2d", 1, 1, 64, 10, kernel=1, dtype="uint8"),
    ConvCase("dwconv", 16, 16, 24, dtype="uint8"),
    ConvCase("dwconv", 15, 18, 48, kernel=5, stride=2, dtype="int8", per_channel=True),
    ConvCase("dwconv", 7, 7, 80, dtype="uint8", weight_zp=3),
]
SPLIT_CASES = [  # row windows with CBUF-kept rows
    ConvCase("dwconv", 112, 112, 32, dtype="uint8"),
    ConvCase("conv2d", 80, 80, 64, 16, kernel=3, dtype="int8", per_channel=True),
    ConvCase("dwconv", 112, 112, 64, kernel=3, stride=2, dtype="int8"),
    ConvCase("conv2d", 224, 224, 3, 32, kernel=3, stride=2, dtype="uint8"),
]


def _check(case: ConvCase) -> None:
    model = case.build()
    x = random_inputs(model, seed=1)
    ref = run_cpu(model, x)[0]
    g = rk3576_contract.conv_graph(case)
    assert rocket.supported(g, "rk3576")[0][0]
    prog = rocket.compile(g, [0], [0], [3], "rk3576")
    out = rk3576_contract.run(prog, {0: x[0]})[3]
    c = compare(ref, out)
    print(f"{case.name}: {len(prog.operations[0].tasks)} tasks, {c}")
    assert c.max_abs_diff <= 1
    assert c.exact_fraction >= 0.995


@pytest.mark.parametrize("case", CASES, ids=str)
def test_contract_numbers(case: ConvCase) -> None:
    _check(case)


@pytest.mark.parametrize("case", SPLIT_CASES, ids=str)
def test_contract_numbers_split(case: ConvCase) -> None:
    _check(case)
