"""The static program check (teflon/rocket/check.py) and the range table it shares with the simulator.

- every default op-sweep program on rk3588 and rk3576 passes the check, and the simulator runs each of them
  without refusing a word;
- per SoC, one mutation per ranged field (the table's `ranges`): a word of a compiled program set just outside
  the range is refused by the check and by the simulator, both naming the register;
- a convolution whose requantization multiplier needs an OUT_CVT shift beyond the DPU's (the uint8 SSD detector
  of a user report wrote 131 on rk3588) is encoded within range and matches TFLite; with the bounded encoding taken
  away it stays on the CPU with the range as its reason, never reaching invoke.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest

import program_digest as pd
from opcases import DEFAULT_ADD, DEFAULT_CONV, DEFAULT_PER_CHANNEL, DEFAULT_POOL, DEFAULT_UNARY
from teflon import bridge
from teflon.hw.regmap import WORD_VALUE_SHIFT, FieldRange, RegMap
from teflon.modelgen import ConvCase, UnaryCase, random_inputs
from teflon.native import Device, NativeError, Runner
from teflon.program import Program
from teflon.reference import compare, run_cpu, run_delegate
from teflon.rocket import target
from teflon.rocket.check import check_program, check_words
from teflon.rocket.disasm import task_words

pytestmark = pytest.mark.usefixtures("delegate_library")

DEVICES = ("rk3588", "rk3576")
DEFAULT_NAMES = {c.name for c in (*DEFAULT_CONV, *DEFAULT_PER_CHANNEL, *DEFAULT_ADD, *DEFAULT_POOL, *DEFAULT_UNARY)}


def _zero_inputs(runner: Runner) -> dict[int, np.ndarray]:
    return {b.tensor: np.zeros(b.shape, b.dtype) for b in runner.bindings if b.direction == "in"}


def _run(dev: Device, prog: Program) -> None:
    runner = Runner(dev, prog)
    try:
        runner.run(_zero_inputs(runner))
    finally:
        runner.close()


@pytest.mark.parametrize("device", DEVICES)
def test_default_op_programs_pass_the_check(device: str) -> None:
    rm = target(device).regmap
    cases = [(n, c) for n, c in pd.sweep_cases() if n in DEFAULT_NAMES]
    assert cases
    programs = 0
    with Device(device, sim=True) as dev:
        for name, case in cases:
            for _, prog in pd.delegate_programs(case.build(), device):
                assert check_program(rm, prog) == [], name
                _run(dev, prog)  # the simulator refuses nothing the check accepted
                programs += 1
    assert programs >= len(cases) // 2


# One program per SoC holding every ranged register: on rk3588 per-channel weights (the BS multiplier and its
# shifts) and a fused RELU6 inside the output range (ReLUX). rk3576's table has no ranges (rk3576/regs.py).
MUTATION_CASES = {
    "rk3588": ConvCase("conv2d", 8, 8, 16, 32, kernel=3, dtype="int8", per_channel=True, activation="relu6",
                       output_scale=0.01, seed=3),
    "rk3576": ConvCase("conv2d", 8, 8, 16, 32, kernel=3, dtype="uint8", seed=3),
}


# Ranged registers the simulator reads only in another kind of program: the LUT's index selects (a DPU-only LUT task).
MUTATION_OVERRIDES = {("rk3588", "DPU_LUT_INFO"): UnaryCase("logistic", 8, 8, 16, "int8")}


def _program(device: str, register: str) -> Program:
    case = MUTATION_OVERRIDES.get((device, register), MUTATION_CASES[device])
    programs = pd.delegate_programs(case.build(), device)
    assert len(programs) == 1
    return programs[0][1]


def _outside(rm: RegMap, rg: FieldRange) -> int:
    """A field value just outside the range that the field's bits still hold."""
    f = rm.register(rg.register).field(rg.field)
    top = (1 << (f.width - 1)) - 1 if f.signed else f.mask
    return rg.hi + 1 if rg.hi < top else rg.lo - 1


def _mutate(rm: RegMap, prog: Program, rg: FieldRange) -> tuple[Program, int]:
    """`prog` with field `rg` of its first word writing the register set outside the range, and that word."""
    reg = rm.register(rg.register)
    f = reg.field(rg.field)
    for op in prog.operations:
        for t in op.tasks:
            for i, w in enumerate(task_words(prog, t)):
                if rm.decode(w)[1] != rg.register:
                    continue
                value = (w >> WORD_VALUE_SHIFT) & 0xFFFFFFFF
                value = value & ~(f.mask << f.lo) | (_outside(rm, rg) & f.mask) << f.lo
                word = w & ~(0xFFFFFFFF << WORD_VALUE_SHIFT) | value << WORD_VALUE_SHIFT
                buf = prog.buffer(t.buffer)
                data = bytearray(buf.data or b"")
                struct.pack_into("<Q", data, t.offset + 8 * i, word)
                buf.data = bytes(data)
                return prog, word
    raise AssertionError(f"no {rg.register} word in the program")


def _ranges() -> list[Any]:
    return [pytest.param(d, rg, id=f"{d}-{rg.register}.{rg.field}") for d in DEVICES for rg in target(d).regmap.ranges]


@pytest.mark.parametrize(("device", "rng"), _ranges())
def test_mutation_outside_a_range_is_refused(device: str, rng: FieldRange) -> None:
    rm = target(device).regmap
    prog = _program(device, rng.register)
    assert check_program(rm, prog) == []
    bad, word = _mutate(rm, prog, rng)
    problems = check_program(rm, bad)
    assert len(problems) == 1 and f"{rng.register}.{rng.field}" in problems[0].reason, problems
    assert check_words(rm, [word])[0][0] == 0
    with Device(device, sim=True) as dev, pytest.raises(NativeError, match=rng.register):
        _run(dev, bad)


def test_out_cvt_shift_limits() -> None:
    """The limit the encoders bound OUT_CVT_SHIFT by (requant.bounded_cvt): rk3588's range, rk3576's 6-bit field."""
    assert target("rk3588").regmap.limits("DPU_OUT_CVT_SHIFT", "OUT_CVT_SHIFT") == (0, 47)
    assert target("rk3576").regmap.limits("DPU_OUT_CVT_SHIFT", "OUT_CVT_SHIFT") == (0, 63)


# The requantization multiplier in_scale * w_scale / out_scale of these layers needs an OUT_CVT shift above 47
# (rk3588's range; rk3576's 6-bit field ends at 63): 2.5e-10 -> 48, 1e-12 -> 56, 1e-30 -> 115.
SSD_LIKE = [ConvCase("conv2d", 8, 8, 16, 32, kernel=3, dtype="uint8", activation=act, input_scale=0.02,
                     weight_scale=ws, output_scale=0.05, seed=1)
            for ws in (2.5e-10, 1e-12, 1e-30) for act in ("none", "relu6")]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", SSD_LIKE, ids=lambda c: f"ws{c.weight_scale:g}-{c.activation}")
def test_tiny_multiplier_is_encoded_in_range(device: str, case: ConvCase) -> None:
    model = case.build()
    inputs = random_inputs(model, seed=0)
    ref = run_cpu(model, inputs)
    with bridge.capture() as cap:
        run = run_delegate(model, inputs, device=device, sim="1")
    assert len(run.delegated) == 1
    rm = target(device).regmap
    for _, prog in cap.programs:
        assert check_program(rm, prog) == []
    cmp = compare(ref, run.outputs)
    assert cmp.max_abs_diff == 0, cmp


def test_tiny_multiplier_without_bounded_encoding_stays_on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The refusal path: an OUT_CVT shift outside the range is a node reason at the support decision."""
    from teflon.rocket.rk3588 import encoder

    monkeypatch.setattr(encoder, "bounded_cvt", lambda scale, shift, max_shift: (scale, shift))
    case = SSD_LIKE[-2]
    model = case.build()
    inputs = random_inputs(model, seed=0)
    with bridge.capture() as cap:
        run = run_delegate(model, inputs, device="rk3588", sim="1", cache_dir="")
    assert not run.delegated and not cap.programs
    reasons = [why for _, decisions in cap.support for _, why in decisions.values()]
    assert any("DPU_OUT_CVT_SHIFT.OUT_CVT_SHIFT = 115 is outside 0..47" in r for r in reasons), reasons
    np.testing.assert_array_equal(run.outputs[0], run_cpu(model, inputs)[0])


def _shared_models() -> list[Any]:
    from conftest import shared_path

    root = shared_path()
    models = sorted((root / "models").rglob("*.tflite")) if root is not None else []
    return [pytest.param(m, id=m.stem) for m in models]


@pytest.mark.slow
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("model", _shared_models())
def test_shared_model_programs_pass_the_check(device: str, model: Any) -> None:
    """Every program the delegate compiles for ../shared's models (the zoo included) passes the check (measured on
    2026-11-29: 0 problems on both SoCs, every model's invoke on the simulator ran)."""
    rm = target(device).regmap
    for _, prog in pd.delegate_programs(model.read_bytes(), device):
        assert check_program(rm, prog) == []


def test_a_program_failing_the_check_stays_on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The last gate (RocketTarget.compile): a program with a word outside a range fails its compile, and the
    delegate runs that partition on the CPU instead of failing at invoke."""
    from teflon.rocket import rk3588

    rm = target("rk3588").regmap
    rng = next(r for r in rm.ranges if r.register == "DPU_OUT_CVT_SHIFT")
    compile_ok = rk3588.compile
    monkeypatch.setattr(rk3588, "compile", lambda *a, **k: _mutate(rm, compile_ok(*a, **k), rng)[0])
    case = MUTATION_CASES["rk3576"]  # a plain uint8 convolution
    model = case.build()
    inputs = random_inputs(model, seed=0)
    with bridge.capture() as cap:
        run = run_delegate(model, inputs, device="rk3588", sim="1", cache_dir="")
    assert not run.delegated and not cap.programs
    assert any("DPU_OUT_CVT_SHIFT.OUT_CVT_SHIFT = 48 is outside 0..47" in why for _, why in cap.failures), cap.failures
    np.testing.assert_array_equal(run.outputs[0], run_cpu(model, inputs)[0])
