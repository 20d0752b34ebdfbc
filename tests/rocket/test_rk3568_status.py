"""RK3566/RK3568 on its simulator (drivers/rocket/sim_rk3568.c): registry rows, the delegate, claims.

The rows are drivable: the simulated kernel + NPU run the generation's programs. The family's support decision claims
what the encoder writes and the simulator runs (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED with per-tensor or
per-channel weights, uint8 or int8; a global AVERAGE_POOL_2D as the vendor's averaging depthwise convolution, other
averages as an exact depthwise convolution; MUL/ADD/SUB with a constant; a PAD folded into its convolution; the ADD
of two uint8 or int8 maps; a reshape written in place) and leaves the rest on the CPU with a reason: max pools (the
PPU raises no interrupt bit on RK3568), MEAN, LUT ops, views. The sweeps (tests/test_ops.py, tests/rocket/test_ops.py) run on
rk3568 only: rk3566 is the same NPU, checked here to give the same bytes.
"""

from __future__ import annotations

import numpy as np
import pytest

from teflon import compiler, modelgen, reference, targets
from teflon.modelgen import ConvCase, PoolCase

from .graphs import conv_graph

ROWS = ["rk3568", "rk3566"]


def test_rows_share_one_generation() -> None:
    rows = [targets.get(n) for n in ROWS]
    assert {r.generation for r in rows} == {"rk3568"}
    assert all(r.family == "rocket" and r.cores == 1 and r.drivable and r.per_channel for r in rows)
    assert all(r.compatibles == ("rockchip,rk3568-rknn-core",) for r in rows)
    assert len({r.blob_id for r in targets.TARGETS}) == len(targets.TARGETS)
    assert "rk3566" not in [t.name for t in targets.drivable_generations()]


@pytest.mark.parametrize("device", ROWS)
def test_claims(device: str) -> None:
    encodable = conv_graph(ConvCase("conv2d", 16, 16, 32, out_c=32))
    banded = conv_graph(ConvCase("conv2d", 112, 112, 64, out_c=64))  # four row bands, two of them delta tasks
    for g, verdict in ((encodable, "the encoder writes it as 1 task"), (banded, "as 4 tasks")):
        (claimed, why), = compiler.supported(g, device).values()
        assert claimed and verdict in why, why
    per_channel = conv_graph(ConvCase("conv2d", 8, 8, 16, out_c=16, dtype="int8", per_channel=True))
    (claimed, why), = compiler.supported(per_channel, device).values()
    assert claimed and "1 task" in why, why  # the 8-byte per-channel BS stream


def test_max_pools_stay_on_the_cpu(delegate_library: None) -> None:
    case = PoolCase(16, 16, 32, filter=2, stride=2, op="max")
    model = case.build()
    inputs = modelgen.random_inputs(model, seed=1)
    run = reference.run_delegate(model, inputs, device="rk3568", sim="1")
    assert not run.delegated
    assert np.array_equal(run.outputs[0], reference.run_cpu(model, inputs, cache=False)[0])


def test_average_pool_is_a_depthwise_convolution(delegate_library: None) -> None:
    """An average pool runs as the exact depthwise convolution (one conv task, op-enable 0x1F, completed on DPU_0/1);
    with TEFLON_ROCKET_PPU=1 the encoder writes the vendor's PPU task instead, which is not claimed."""
    from teflon import bridge

    model = PoolCase(32, 32, 16, filter=2, stride=2, op="avg").build()
    inputs = modelgen.random_inputs(model, seed=1)
    with bridge.capture() as cap:
        run = reference.run_delegate(model, inputs, device="rk3568", sim="1")
    assert run.delegated
    (_, prog), = cap.programs
    assert [op.kind for op in prog.operations] == ["DEPTHWISE_CONV_2D"]
    assert np.array_equal(run.outputs[0], reference.run_cpu(model, inputs, cache=False)[0])
    graph = cap.support[0][0]
    (claimed, _), = compiler.supported(graph, "rk3568").values()
    assert claimed


def test_rk3566_runs_rk3568_programs(delegate_library: None) -> None:
    model = ConvCase("conv2d", 24, 24, 40, out_c=24, kernel=3, activation="relu6").build()
    inputs = modelgen.random_inputs(model, seed=2)
    a, b = (reference.run_delegate(model, inputs, device=d, sim="1") for d in ROWS)
    assert a.delegated and a.outputs[0].tobytes() == b.outputs[0].tobytes()


def test_simulator_refuses_a_ppu_task(delegate_library: None) -> None:
    """With TEFLON_ROCKET_PPU=1 the encoder writes a pool as the vendor's PPU task (regcmd compares it with the
    vendor's), but does not claim it and the simulated kernel + NPU refuse to run it: the PPU raises no interrupt bit
    on RK3568, so a one-task kick would never complete."""
    from teflon import bridge
    from teflon.native import Device, NativeError, Runner

    model = PoolCase(16, 16, 32, filter=2, stride=2, op="max").build()
    inputs = modelgen.random_inputs(model, seed=1)
    with bridge.capture() as cap:
        reference.run_delegate(model, inputs, device="rk3588", sim="1")
    graph = cap.support[0][0]
    (op,) = graph.operations
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TEFLON_ROCKET_PPU", "1")
        (claimed, why), = compiler.supported(graph, "rk3568").values()
        assert not claimed and "raises no interrupt bit" in why, why
        prog = compiler.compile(graph, [op.index], [op.inputs[0]], list(op.outputs), "rk3568")
    dev = Device("rk3568", sim=True)
    try:
        with pytest.raises(NativeError, match="PPU task not simulated on rk3568"):
            Runner(dev, prog).run({op.inputs[0]: inputs[0]})
    finally:
        dev.close()
