"""The compile-time program check (teflon.etnaviv.check) and the simulator refuse the same descriptors.

- Every default op-sweep program (tests/opcases.py, on every etnaviv target) passes the check (and the op sweeps
  run the same programs on the simulator).
- Mutation: for each bounded field of the NN (per generation) and TP tables, a compiled program with that field
  moved just outside its bounds is refused by the check and by the simulator, both naming the field.
- A layer whose encoding falls outside the bounds stays on the CPU with the reason (a tiny requantization scale:
  post_shift beyond what the NN engine takes).
- teflon.netgen structures that reached invoke with invalid programs or went wrong inside whole models (YOLOv8 box
  decode, DeepLabV3's residual projection, a SiLU chain) compile to valid programs and match the CPU.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

from conftest import device_cases, sim_options
from opcases import (
    DEFAULT_CONV,
    ETNAVIV_DEFAULT_ADD,
    ETNAVIV_DEFAULT_ELEMENTWISE,
    ETNAVIV_DEFAULT_FC,
    ETNAVIV_DEFAULT_PER_CHANNEL,
    ETNAVIV_DEFAULT_TABLE,
    ETNAVIV_NON_SQUARE,
)
from teflon import netgen, targets
from teflon.etnaviv.check import nn_table, program_violations
from teflon.etnaviv.chips import chip
from teflon.etnaviv.desc import NN_WORDS, TP, TP_WORDS
from teflon.etnaviv.lower import support
from teflon.hw.descriptor import DescError, DescField, DescTable
from teflon.ir import Graph, Operation, Quant, Tensor
from teflon.modelgen import ConvCase, ElementwiseCase, random_inputs
from teflon.program import Buffer, Program
from teflon.reference import compare, run_cpu, run_delegate

DEVICES = [t.name for t in targets.of_family("etnaviv")]
SWEEP = [*DEFAULT_CONV, *ETNAVIV_DEFAULT_FC, *ETNAVIV_DEFAULT_ADD, *ETNAVIV_DEFAULT_ELEMENTWISE, *ETNAVIV_DEFAULT_TABLE,
         *ETNAVIV_NON_SQUARE, *ETNAVIV_DEFAULT_PER_CHANNEL]
MIN_WITHIN = 0.995  # whole-model tolerance: >= 99.5 % of the outputs within teflon.reference.MODEL_LSB


def _programs(model: bytes, device: str) -> list[tuple[list[int], Program]]:
    """The programs the delegate compiles for `model` (Prepare only)."""
    import teflon
    from teflon import bridge
    from teflon.reference import make_interpreter

    with bridge.capture() as cap:
        delegate = teflon.load_delegate(device=device, sim="1")
        make_interpreter(model, [delegate], reference=True)
    return list(cap.programs)


@contextmanager
def _runner(device: str, program: Program) -> Iterator[Any]:
    from teflon.native import Device, Runner

    with Device(device, sim=True) as dev:
        runner = Runner(dev, program)
        try:
            yield runner
        finally:
            runner.close()  # before its device


def _zero_inputs(program: Program) -> dict[int, np.ndarray]:
    return {io.tensor: np.zeros((1, io.h, io.w, io.c), io.dtype) for io in program.io if io.direction == "in"}


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, SWEEP))
def test_sweep_program_passes(device: str, case: Any, delegate_library: None) -> None:
    """No default op-sweep program breaks a rule. (The simulator runs these same programs, compiled the same way
    through the delegate, in tests/test_ops.py and tests/etnaviv/test_ops.py; a program the check refused would
    have stayed on the CPU there and failed its test.)"""
    for _, program in _programs(case.build(), device):
        assert program_violations(program, chip(device)) == []


# ---- mutation ------------------------------------------------------------------------------------------------

def _outside(f: DescField) -> int:
    """A value that fits the field's bits but lies outside its bounds."""
    assert f.bounds is not None
    lo, hi = f.bounds
    return lo - 1 if lo > 0 else hi + 1


def _mutable(table: DescTable) -> list[DescField]:
    return [f for f in table.ranged() if f.bounds is not None and (f.bounds[0] > 0 or f.bounds[1] < f.mask)]


def _mutation_cases() -> list[Any]:
    cases = []
    for device in DEVICES:
        for f in _mutable(nn_table(chip(device))):
            cases.append(pytest.param(device, "NN", f.name, id=f"{device}-nn-{f.name}"))
        for f in _mutable(TP):
            cases.append(pytest.param(device, "TP", f.name, id=f"{device}-tp-{f.name}"))
    return cases


def _mutated(program: Program, kind: str, table: DescTable, name: str, value: int) -> Program:
    """A copy of `program` whose first descriptor of `kind` ("NN" or "TP:...") holds `value` in field `name`."""
    rec = next(r for r in program.operations if r.kind == kind or (kind == "TP" and r.kind.startswith("TP")))
    offsets = rec.info["descriptors"]
    assert isinstance(offsets, list)
    off = offsets[0]
    descs = bytearray(program.buffer("descriptors").data or b"")
    n = NN_WORDS if kind == "NN" else TP_WORDS
    words = [int.from_bytes(descs[off + 4 * i: off + 4 * i + 4], "little") for i in range(n)]
    table.put(words, name, value)
    descs[off: off + 4 * n] = np.asarray(words, "<u4").tobytes()
    buffers = [Buffer(b.name, b.size, bytes(descs), b.tensor) if b.name == "descriptors" else b
               for b in program.buffers]
    return Program(program.device, buffers, program.relocs, program.jobs, program.io, program.operations)


@pytest.mark.parametrize(("device", "kind", "field"), _mutation_cases())
def test_mutation_rejected(device: str, kind: str, field: str, delegate_library: None) -> None:
    """One field just outside its bounds: the check names it, and the simulator refuses the program naming it."""
    from teflon.native import NativeError

    if kind == "NN":
        model = ConvCase("conv2d", 8, 8, 16, 16, kernel=3).build()
        table = nn_table(chip(device))
    else:
        model = ElementwiseCase("logistic", 8, 8, 16).build()
        table = TP
    (_, program), = _programs(model, device)
    value = _outside(table.field(field))
    bad = _mutated(program, kind, table, field, value)
    found = program_violations(bad, chip(device))
    assert any(field in v for v in found), found
    with _runner(device, bad) as runner, pytest.raises(NativeError, match=f"(?i){field}"):
        runner.run(_zero_inputs(bad))


# ---- per-channel layers: one NN job per channel group ---------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_per_channel_jobs_write_their_planes(device: str, delegate_library: None) -> None:
    """A per-channel layer's NN jobs (one per channel: every scale differs) write consecutive channel planes of one
    output buffer, and the simulator follows each job's output address: pointed at the next job's plane, the first
    job's channel is never written (the next job overwrites what it wrote) while every other channel is unchanged."""
    case = ConvCase("conv2d", 8, 8, 4, 6, 3, dtype="int8", per_channel=True)
    (_, program), = _programs(case.build(), device)
    table = nn_table(chip(device))
    descs = program.buffer("descriptors").data or b""
    nn = [r for r in program.operations if r.kind == "NN"]
    assert len(nn) == 6
    outs = []
    for r in nn:
        offsets = r.info["descriptors"]
        assert isinstance(offsets, list)
        words = [int.from_bytes(descs[offsets[0] + 4 * i: offsets[0] + 4 * i + 4], "little") for i in range(NN_WORDS)]
        outs.append(table.get(words, "out_image_address"))
    assert [o - outs[0] for o in outs] == [64 * c for c in range(6)]  # 8x8 planes
    inputs = {t: np.random.default_rng(1).integers(-128, 128, a.shape).astype(a.dtype)
              for t, a in _zero_inputs(program).items()}
    with _runner(device, program) as runner:
        good = next(iter(runner.run(inputs).values()))
    moved = _mutated(program, "NN", table, "out_image_address", outs[1])
    assert program_violations(moved, chip(device)) == []
    with _runner(device, moved) as runner:
        bad = next(iter(runner.run(inputs).values()))
    assert (bad[..., 1:] == good[..., 1:]).all()
    assert (bad[..., 0] != good[..., 0]).mean() > 0.5


# ---- refusals in the support decision -------------------------------------------------------------------------

def _q(scale: float, zp: int) -> Quant:
    return Quant(np.array([scale], np.float32), np.array([zp], np.int32))


@pytest.mark.parametrize("device", DEVICES)
def test_tiny_scale_stays_on_cpu(device: str) -> None:
    """A uint8 conv whose requantization scale needs a post shift beyond the NN engine's (an SSD video detector's
    tiny scales): refused per layer with the field and its bounds in the reason."""
    rng = np.random.default_rng(3)
    tensors = {
        0: Tensor(0, "uint8", (1, 8, 8, 4), _q(1e-6, 128)),
        1: Tensor(1, "uint8", (8, 1, 1, 4), _q(1e-6, 128), rng.integers(0, 256, (8, 1, 1, 4)).astype(np.uint8)),
        2: Tensor(2, "int32", (8,), _q(1e-12, 0), np.zeros(8, np.int32)),  # S = 1e-12 / 1000
        3: Tensor(3, "uint8", (1, 8, 8, 8), _q(1000.0, 128)),  # S = 1e-15: post shift 65 (v7), 50 (v8)
    }
    opts = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "activation": "NONE", "dilation_h": 1, "dilation_w": 1}
    graph = Graph(tensors, [Operation(0, "CONV_2D", [0, 1, 2], [3], opts)])
    claimed, reason = support(graph, chip(device))[0]
    assert not claimed
    assert "post_shift" in reason, reason


@pytest.mark.parametrize("device", DEVICES)
def test_field_that_does_not_fit_stays_on_cpu(device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A TP descriptor whose field does not even fit its bits (DeepLab's node 71 on a311d: in_window_y_end 42239
    in 16 signed bits) is a per-layer refusal with the field in the reason, not an error of the whole decision."""
    from teflon.etnaviv import check

    def too_wide(*_: object, **__: object) -> list[list[int]]:
        raise DescError("ETNA_TP.in_window_y_end = 42239 does not fit 16 signed bits")

    monkeypatch.setattr(check, "tp_descriptors", too_wide)
    tensors = {0: Tensor(0, "uint8", (1, 8, 8, 4), _q(0.05, 128)), 1: Tensor(1, "uint8", (1, 8, 8, 4), _q(1 / 256, 0))}
    claimed, reason = support(Graph(tensors, [Operation(0, "LOGISTIC", [0], [1])]), chip(device))[0]
    assert not claimed
    assert "in_window_y_end" in reason, reason


# ---- netgen structures ----------------------------------------------------------------------------------------

# The real models' sizes run for minutes on the simulator and the CPU reference: the default run builds the same
# structures smaller (the residual projection keeps its 12 channels, which leave v7 phantom planes).
SMALL = {"residual_projection": lambda dtype: netgen.residual_projection(dtype, 33),
         "silu_chain": lambda dtype: netgen.silu_chain(dtype, 40)}


def _structure_cases() -> list[Any]:
    cases = []
    for name in netgen.STRUCTURES:
        for dtype in ("uint8", "int8"):
            for device in DEVICES:
                cases.append(pytest.param(name, dtype, device, False, id=f"{name}-{dtype}-{device}",
                                          marks=[pytest.mark.slow] if name in SMALL else []))
                if name in SMALL:
                    cases.append(pytest.param(name, dtype, device, True, id=f"{name}-small-{dtype}-{device}"))
    return cases


@pytest.mark.parametrize(("name", "dtype", "device", "small"), _structure_cases())
def test_structure(name: str, dtype: str, device: str, small: bool, delegate_library: None) -> None:
    """Valid programs (the check passes on each) and the whole model within the model tolerance of the CPU."""
    model = SMALL[name](dtype) if small else netgen.build(name, dtype)  # type: ignore[arg-type]
    programs = _programs(model, device)
    assert programs, "nothing delegated"
    for _, program in programs:
        assert program_violations(program, chip(device)) == []
    x = random_inputs(model)
    run = run_delegate(model, x, **sim_options(device))
    if name == "box_decode" and chip(device).version == 8:
        # the SPLIT (two halves of the NHWC bytes: views, etnaviv-views.md), ADD, SUB and LOGISTIC of the decode all
        # run on the NPU (v7 refuses SUB, and a 16800-column add view)
        assert len(run.delegated) == 4, run.delegated
    for ref, out in zip(run_cpu(model, x), run.outputs, strict=True):
        cmp = compare(ref, out)
        print(f"{name}-{dtype}-{device}: {cmp}")
        assert cmp.within_model_lsb >= MIN_WITHIN
        if name == "box_decode":  # three single ops: the single-op contract (its SUB's results are exact ties)
            assert cmp.max_abs_diff <= 1 and cmp.exact_fraction >= 0.995, cmp
