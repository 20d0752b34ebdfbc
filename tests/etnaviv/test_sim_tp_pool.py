"""The simulator's TP max pooling (docs/hardware/etnaviv-maxpool.md) and the four-phase x2 upsample, run from their
descriptor bytes: the C engine agrees with numpy and with the Python reference model (`tp_execute`), and every field
the pooling reads changes the result or is refused when mutated (the fields' mutation coverage).
Ids: `v7-maxpool-h20-w20-c16-k3x3-s1`.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from etnaviv import test_sim_golden as golden
from teflon.etnaviv import cmdstream
from teflon.etnaviv.chips import chip_for_version
from teflon.etnaviv.desc import TP
from teflon.etnaviv.ops import KIND_TP, TP_TYPES, EtnaOp
from teflon.etnaviv.tp import tp_descriptors, tp_execute
from teflon.hw.descriptor import DescError

simlib = golden.simlib
IN_VA, OUT_VA, DESC_VA = 0x00100000, 0x00400000, 0x00800000
RNG = np.random.default_rng(7)

# (H, W, C), (kh, kw), stride, pads (top, bottom, left, right), TP cores
POOL_CASES = [((20, 20, 16), (3, 3), 1, (1, 1, 1, 1), 4), ((23, 70, 5), (3, 3), 2, (0, 0, 0, 0), 3),
              ((9, 11, 3), (2, 3), 2, (0, 1, 1, 1), 1)]
POOL_FIELDS = ("alu_horz_processing", "alu_horz_proc_count", "alu_horz_proc_stride", "alu_vert_processing",
               "alu_vert_proc_count", "alu_vert_proc_stride", "in_tile_x_inc", "in_tile_y_inc")


def _stream(addrs: list[int]) -> list[int]:
    """A command stream running one TP job whose descriptors sit at `addrs` (cmdstream's words)."""
    s = cmdstream.Stream()
    cmdstream.init(s)
    for i, a in enumerate(addrs):
        last = i == len(addrs) - 1
        s.state(cmdstream.GL_OCB_REMAP_START, 0)
        s.state(cmdstream.GL_OCB_REMAP_END, 0)
        s.state(cmdstream.GL_TP_CONFIG, 0)
        s.state(cmdstream.GL_UNK03950, 0)
        s.state(cmdstream.PS_TP_INST_ADDR, a + (0 if last else cmdstream.TP_TAG_NOT_LAST))
    s.state(cmdstream.PS_UNK10A4, 0)
    cmdstream.close(s)
    return s.words


def _run(lib: ctypes.CDLL, version: int, jobs: list[list[list[int]]], src: np.ndarray, out_size: int
         ) -> tuple[str | None, np.ndarray]:
    """Run TP jobs (lists of descriptors) on a fresh simulator; (error or None, output bytes)."""
    chip = chip_for_version(version)
    sim = golden.Sim(lib, {"nn_core_version": chip.version, "nn_core_count": chip.nn_core_count,
                           "tp_core_count": chip.tp_core_count, "on_chip_sram_size": chip.on_chip_sram_size,
                           "nn_zrl_bits": chip.nn_zrl_bits, "nn_input_buffer_depth": chip.nn_input_buffer_depth,
                           "nn_accum_buffer_depth": chip.nn_accum_buffer_depth})
    try:
        sim.bo(IN_VA, src.size)[:] = src.ravel()
        out = sim.bo(OUT_VA, out_size)
        descs = [d for job in jobs for d in job]
        mem = sim.bo(DESC_VA, 256 * len(descs)).view(np.uint32)
        for i, d in enumerate(descs):
            mem[64 * i:64 * i + len(d)] = d
        err, first = None, 0
        for job in jobs:  # one submit per job
            err = err or sim.submit(_stream([DESC_VA + 256 * (first + i) for i in range(len(job))]))
            first += len(job)
        return err, out[:out_size].copy()
    finally:
        sim.close()


def _maxpool_op(case: tuple) -> tuple[EtnaOp, np.ndarray, np.ndarray]:
    (h, w, c), (kh, kw), s, pads, _ = case
    x = RNG.integers(0, 256, (h, w, c), dtype=np.uint8)
    t, b, left, r = pads
    p = np.pad(x, ((t, b), (left, r), (0, 0)))
    oh, ow = (p.shape[0] - kh) // s + 1, (p.shape[1] - kw) // s + 1
    win = np.lib.stride_tricks.sliding_window_view(p, (kh, kw), axis=(0, 1))
    ref = win[: (oh - 1) * s + 1 : s, : (ow - 1) * s + 1 : s].max(axis=(-2, -1))
    op = EtnaOp(type=KIND_TP, tp_type=TP_TYPES.index("MAXPOOL"), input_width=h, input_height=w, input_channels=c,
                output_width=oh, output_height=ow, output_channels=c, stride=s, weight_width=kh, weight_height=kw,
                pad=(*pads, 0, 0))
    return op, x.transpose(2, 0, 1).copy(), ref.transpose(2, 0, 1).copy()


def _pool_id(case: tuple) -> str:
    (h, w, c), (kh, kw), s, _, n = case
    return f"maxpool-h{h}-w{w}-c{c}-k{kh}x{kw}-s{s}-tp{n}"


@pytest.mark.parametrize("version", [7, 8], ids=["v7", "v8"])
@pytest.mark.parametrize("case", POOL_CASES, ids=[_pool_id(c) for c in POOL_CASES])
def test_maxpool_engine(simlib: ctypes.CDLL, version: int, case: tuple) -> None:
    """The C engine's pooled tiles give numpy's max pool, as the Python reference model does."""
    op, src, ref = _maxpool_op(case)
    descs = tp_descriptors(op, case[-1], IN_VA, OUT_VA, None)
    err, out = _run(simlib, version, [descs], src, ref.size)
    assert err is None, err
    np.testing.assert_array_equal(out, ref.ravel())
    mem = {IN_VA: src.ravel().copy(), OUT_VA: np.zeros(ref.size, np.uint8)}
    tp_execute(descs, mem)
    np.testing.assert_array_equal(mem[OUT_VA], ref.ravel())


@pytest.mark.parametrize("case", POOL_CASES, ids=[_pool_id(c) for c in POOL_CASES])
def test_maxpool_field_mutation(simlib: ctypes.CDLL, case: tuple) -> None:
    """Every pooling field the engine reads, flipped by one step, changes the output or is refused."""
    op, src, ref = _maxpool_op(case)
    descs = tp_descriptors(op, case[-1], IN_VA, OUT_VA, None)
    unchanged = []
    for name in POOL_FIELDS:
        for delta in (1, -1):
            mutated = []
            for words in descs:
                d = TP.decode(list(words))
                d[name] = max(d[name] + delta, 0)
                try:
                    mutated.append(TP.pack(**d))
                except DescError:  # past the field's bits: the other direction covers it
                    break
            if len(mutated) < len(descs) or mutated == descs:
                continue
            err, out = _run(simlib, 7, [mutated], src, ref.size)
            if err is None and np.array_equal(out, ref.ravel()):
                unchanged.append(f"{name}{delta:+d}")
    assert not unchanged, f"mutations the simulator ignores: {unchanged}"


@pytest.mark.parametrize("planar", [True, False], ids=["planar", "nhwc"])
def test_upsample_engine(simlib: ctypes.CDLL, planar: bool) -> None:
    """The four UPSAMPLE phases, run by the C engine, write numpy's x2 repeat; a wrong phase base is visible."""
    h, w, c = 7, 9, 5
    x = RNG.integers(0, 256, (h, w, c), dtype=np.uint8)
    ref = x.repeat(2, axis=0).repeat(2, axis=1)
    jobs = [tp_descriptors(EtnaOp(type=KIND_TP, tp_type=TP_TYPES.index("UPSAMPLE"), input_width=h, input_height=w,
                                  input_channels=c, output_width=2 * h, output_height=2 * w, output_channels=c,
                                  phase=p), 3, IN_VA, OUT_VA, None, in_planar=planar) for p in range(4)]
    src = x.transpose(2, 0, 1).copy() if planar else x
    err, out = _run(simlib, 8, jobs, src, ref.size)
    assert err is None, err
    got = out.reshape(c, 2 * h, 2 * w).transpose(1, 2, 0) if planar else out.reshape(2 * h, 2 * w, c)
    np.testing.assert_array_equal(got, ref)
    err, out2 = _run(simlib, 8, jobs[:3] + [jobs[2]], src, ref.size)  # phase 3 missing: its pixels stay 0
    assert err is None and not np.array_equal(out2, out)
