"""The NPU's rounding shift (python/teflon/rocket/rounding.py; drivers/rocket/sim_dot.h rkt_shift_even): to nearest,
ties to even, as third parties measured OUT_CVT (CVT_ROUND 0), the BS multiplier and the PPU average on both SoCs
(docs/hardware/rocket.md "OUT_CVT's tie rule").

The helpers are checked against Python's own round-half-to-even; the simulator against them with programs built so
that a quarter of the outputs are exact ties: a 2x2 average of int8 inputs as a depthwise convolution with OUT_CVT
2^14 / 2^16 (every datapath: reference, and each kernel set this CPU runs), and as a PPU pool with the reciprocals
2^15 (exact, so the product is sum / 4). Ids: `rk3588-conv-avx512`, `rk3576-ppu`.
"""

from __future__ import annotations

import importlib
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from teflon.rocket.rounding import preimage, shift_even

if TYPE_CHECKING:
    from teflon.ir import Graph, Operation
    from teflon.program import Program

DEVICES = ("rk3588", "rk3576")


def test_shift_even_is_round_half_to_even() -> None:
    x = np.arange(-1000, 1001, dtype=np.int64)
    for s in range(7):
        want = np.array([round(int(v) / 2**s) for v in x])  # Python's round: ties to even
        assert np.array_equal(shift_even(x, s), want), s
        assert [shift_even(int(v), s) for v in x[::37]] == list(want[::37])
        assert np.array_equal(shift_even(x, np.full(x.shape, s)), want), s  # per-element shifts


def test_preimage_is_every_input_that_rounds_to_the_output() -> None:
    t = np.arange(-3000, 3001, dtype=np.int64)
    for shift in (0, 1, 2, 5):
        for scale in (1, 3, 7, 16, 23):
            out = shift_even(t * scale, shift)
            for want in range(-40, 41):
                hit = t[out == want]
                lo, hi = preimage(want, scale, shift)
                if hit.size:
                    assert (lo, hi) == (hit.min(), hit.max()), (shift, scale, want)
                else:
                    assert lo > hi, (shift, scale, want)


def _kernel_sets() -> list[str]:
    flags: set[str] = set()
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").is_file() else []:
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    sets = ["reference", "c"]
    if "avx2" in flags:
        sets.append("avx2")
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni"} <= flags:
        sets.append("avx512")
    return sets


def _pool_graph() -> tuple[bytes, Graph]:
    from teflon import bridge, load_delegate
    from teflon.modelgen import PoolCase
    from teflon.reference import make_interpreter

    case = PoolCase(8, 8, 32, 2, 2, "valid", "int8")
    model = case.build()
    with bridge.capture() as cap:
        make_interpreter(model, [load_delegate(device="rk3588", sim="1")], reference=True)
    return model, cap.support[0][0]


def _tie_program(graph: Graph, device: str, unit: str) -> tuple[Program, Operation]:
    """The 2x2 average as a depthwise convolution (weight 1, bias 0, OUT_CVT 2^14 / 2^16) or as a PPU pool
    (reciprocals 2^15): both compute round(sum / 4)."""
    from teflon.rocket import target
    from teflon.rocket.average import RECIP_ONE
    from teflon.rocket.pool import constant_depthwise, window_pool

    op = graph.operations[0]
    pool = window_pool(graph, op)
    if unit == "ppu":
        pool.recip_w, pool.recip_h = RECIP_ONE // 2, RECIP_ONE // 2
        ops = [pool]
    else:
        conv = constant_depthwise(pool, 2, 2, 2, 2, 1, 4 * pool.in_zp)  # v = the window sum of stored inputs
        one = np.float32(1.0)
        ops = [replace(conv, out_zp=0, in_scale=one, out_scale=one, w_scale=np.float32(2**-2), cvt=(1 << 14, 16))]
    t = target(device)
    encoder = importlib.import_module(f"{t.generation.__name__}.encoder")
    # no graph: its memo holds the support decision's streams for this node (the claimed convolution, another OUT_CVT)
    return encoder.compile_ops(t.regmap, device, ops, [op.inputs[0]], [op.outputs[0]]), op


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("unit", ["conv", "ppu"])
def test_simulator_rounds_ties_to_even(device: str, unit: str, monkeypatch: pytest.MonkeyPatch,
                                       delegate_library: None) -> None:
    from teflon.modelgen import random_inputs
    from teflon.native import Device, Runner

    model, graph = _pool_graph()
    prog, op = _tie_program(graph, device, unit)
    x = random_inputs(model, seed=3)[0]
    sums = x.astype(np.int64).reshape(4, 2, 4, 2, 32).sum(axis=(1, 3))
    want = np.clip(shift_even(sums, 2), -128, 127)
    ties = np.mean(sums % 4 == 2)
    assert ties > 0.2, ties  # the case exercises the rule: half up would differ on half of these
    for kernels in _kernel_sets() if unit == "conv" else ["default"]:
        monkeypatch.delenv("TEFLON_SIM_REFERENCE", raising=False)
        monkeypatch.delenv("TEFLON_SIM_KERNELS", raising=False)
        if kernels == "reference":
            monkeypatch.setenv("TEFLON_SIM_REFERENCE", "1")
        elif kernels != "default":
            monkeypatch.setenv("TEFLON_SIM_KERNELS", kernels)
        with Device(device, sim=True) as dev:
            out = Runner(dev, prog).run({op.inputs[0]: x})[op.outputs[0]].reshape(4, 4, 32)
        diff = np.abs(out.astype(np.int64) - want)
        print(f"{device}-{unit}-{kernels}: ties {ties:.1%}, exact {np.mean(diff == 0):.2%}, max diff {diff.max()}")
        assert np.array_equal(out, want), f"{device}-{unit}-{kernels}"
