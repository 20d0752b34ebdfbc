"""Vela's `ethos-u` custom op run as it is (teflon.ethosu.vela): for each single-operation model compiled by Vela for
ethos-u65-256, the delegate (device imx93, simulated kernel + NPU) claims the op and invokes it. The numbers are
compared with TFLite's CPU kernels on the original (pre-Vela) model: TFLite has no CPU kernel for `ethos-u`.
"""

from __future__ import annotations

import numpy as np
import pytest

from teflon import bridge, modelgen
from teflon.reference import compare, run_cpu, run_delegate

from . import programs
from .vela_models import CASES, CHAIN_IDS, CHAINS, IDS, models

pytestmark = pytest.mark.usefixtures("delegate_library")


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vela_op_claimed_and_invoked(case: object) -> None:
    original, vela = models(case)  # type: ignore[arg-type]
    inputs = modelgen.random_inputs(original, seed=5)
    run = run_delegate(vela, inputs, device="imx93", sim="1")
    assert len(run.ops) == 1 and run.delegated == frozenset({0}) and run.partitions == 1, run
    ref = run_cpu(original, inputs)
    assert [o.shape for o in run.outputs] == [r.shape for r in ref]
    assert [o.dtype for o in run.outputs] == [r.dtype for r in ref]


@pytest.mark.parametrize(("case", "sram"), [(CHAINS[0], 14464), (CHAINS[1], 0)], ids=CHAIN_IDS)
def test_fast_scratch_in_sram_or_a_bo(case: object, sram: int) -> None:
    """Vela's fast scratch is region 2: the NPU's SRAM (sram_size) when it fits the i.MX93's 96 KiB, else a BO."""
    from teflon.ethosu import task

    prog = programs.program(programs.vela_op(case.build()))  # type: ignore[attr-defined]
    size, regions, _ = task.unpack(bytes(prog.buffer("task").data or b""))
    (job,) = prog.jobs
    assert size == sram and (2 in regions) == (sram == 0), (size, regions)
    assert job.out_buffers == (["arena"] if sram else ["arena", "scratch_fast"]), job
    original, vela = models(case)  # type: ignore[arg-type]
    run = run_delegate(vela, modelgen.random_inputs(original, seed=5), device="imx93", sim="1")
    assert run.delegated == frozenset({0}), run


@pytest.mark.parametrize("case", CASES + CHAINS, ids=IDS + CHAIN_IDS)
def test_vela_op_equals_tflite_on_the_original_model(case: object) -> None:
    """Vela's stream run by the delegate on the simulated NPU gives TFLite's answer on the model before Vela."""
    original, vela = models(case)  # type: ignore[arg-type]
    inputs = modelgen.random_inputs(original, seed=7)
    run = run_delegate(vela, inputs, device="imx93", sim="1")
    ref = run_cpu(original, inputs)
    c = compare(ref, run.outputs)
    print(f"{case}: {c}")
    assert c.within(1, 0.99), c
    assert all(np.array_equal(a, b) for a, b in zip(ref, run.outputs, strict=True)) or c.max_abs_diff <= 1


def test_plain_tflite_ops_go_to_teflons_own_compiler() -> None:
    """The same model before Vela: its CONV_2D is lowered by teflon's compiler (teflon.ethosu.program)."""
    original, _ = models(CASES[0])
    run = run_delegate(original, modelgen.random_inputs(original, seed=1), device="imx93", sim="1")
    assert run.delegated == frozenset({0}) and run.partitions == 1, run.reasons


def test_stream_for_another_npu_is_not_claimed() -> None:
    """A stream compiled for ethos-u65-512 (another CONFIG image) stays on the CPU, saying why."""
    from .vela_oracle import compile_tflite

    original = CASES[0].build()
    vela = compile_tflite(original, accel="ethos-u65-512")
    with bridge.capture() as cap, pytest.raises(RuntimeError, match="unresolved custom op"):  # no CPU ethos-u
        run_delegate(vela, modelgen.random_inputs(original, seed=1), device="imx93", sim="1")
    ((_, decisions),) = cap.support
    ok, reason = decisions[0]
    assert not ok and "compiled for an NPU with CONFIG 0x" in reason, reason
