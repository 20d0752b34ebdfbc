"""The simulated RK3576 kernel + NPU (drivers/rocket/sim_rk3576.c, docs/hardware/rocket-rk3576-sim.md).

1. Rockchip's own RK3576 programs (../shared/golden/rocket-rk3576, compile "A" = single core) run through
   teflon.native: the vendor's register words are kept as they are (addresses relocated into our buffers);
   the vendor's weights and coefficients are not stored, so each test packs its own random weights,
   coefficient table and shift word in the documented layouts and compares the output, byte for byte, with
   a numpy model of the documented arithmetic over the whole layer. The point: the vendor's geometry words
   (row windows, CBUF ring, strides, pads, output jumps) execute without error and address exactly the
   expected bytes. Programs in a form the simulator does not understand must be refused clearly.
2. Every field the vendor writes is read: flipping a bit changes the output or is an error, except for
   the documented don't-cares (DONT_CARE, mirrored in docs/hardware/rocket-rk3576-sim.md).
3. Kernel level (a C harness built from drivers/ under ASan): the RK3576 kick word 0x70001 is accepted and
   the RK3588 word 0x7001 refused as "asks for 28673 tasks"; RK3588 unchanged; SoC detection from the
   devicetree compatible on fake sysfs trees.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from conftest import shared_path
from fakesysfs import fake_rocket_sysfs as _sysfs
from teflon.native import Device, NativeError, Runner
from teflon.program import Buffer, IOBinding, Job, Program, Task
from teflon.rocket.assemble import regcmd_reloc
from teflon.rocket.rounding import shift_even

REPO = Path(__file__).resolve().parents[2]
SHARED = shared_path() or Path("/nonexistent/shared")
GOLDEN = SHARED / "golden" / "rocket-rk3576"


def _int8_files() -> list[Path]:
    if not GOLDEN.is_dir():
        return []
    out = []
    for f in sorted(GOLDEN.glob("*.json")):
        if f.name == "index.json":
            continue
        if json.loads(f.read_text()).get("datapath") in ("direct", "depthwise"):
            out.append(f)
    return out


FILES = _int8_files()
VALUE_MASK = 0xFFFFFFFF << 16
SYNC = 0x0041 << 48
OP_ENABLE = (0x0081 << 48) | (0x1D << 16) | 0x0008
ADDRESS_ROLES = {0x1088: "input", 0x1110: "weights", 0x4018: "output", 0x5020: "coefs"}

Regs = dict[int, int]


def _word(offset: int, value: int, target: int) -> int:
    return (target << 48) | ((value & 0xFFFFFFFF) << 16) | offset


def _regs(words: list[int]) -> Regs:
    return {w & 0xFFFF: (w >> 16) & 0xFFFFFFFF for w in words if (w >> 48) not in (0x0041, 0x0081)}


def _r16(v: int) -> int:
    return -(-v // 16) * 16


class Golden:
    """One vendor layer, compile A: its tasks' words and the geometry the tests need."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.d = json.loads(path.read_text())
        layer = self.d["params"]["layers"][0]
        _, self.ic, self.ih, self.iw = layer["input_nchw"]
        _, self.oc, self.oh, self.ow = layer["output_nchw"]
        self.kh, self.kw = layer["kernel_hw"]
        self.sy, self.sx = layer["strides_hw"]
        self.pads = layer["pads_tlbr"]  # top, left, bottom, right
        self.dw = self.d["datapath"] == "depthwise"
        prog = next(p for p in self.d["programs"] if p["compile_label"] == "A")
        self.tasks = prog["tasks"]
        self.words = [[int(w, 16) for w in t["words"]] for t in self.tasks]
        self.r0 = _regs(self.words[0])
        self.c16 = _r16(self.ic)
        self.kernels = 1 if self.dw else -(-self.oc // 2) * 2
        self.surf = self.r0[0x401C]  # output plane pitch, atoms
        self.plane = self.r0[0x1094]  # input plane pitch, atoms

    @property
    def stem(self) -> str:
        return self.path.stem

    @property
    def form_understood(self) -> bool:
        """Direct programs in the 0x4044 = 0 / 0x501C = 0x114 arrangement are outside what is simulated."""
        return self.dw or self.r0[0x4044] == 1

    def coef_bytes(self) -> int:
        return -(-self.oc // 8) * (48 if self.dw else 64)


def _pack_direct(w: np.ndarray) -> bytes:
    """w[kernel][ky][kx][channel] (channels padded to 16) -> kernel groups of 32, channel groups of 32 (a
    trailing 16 stays 16), taps row-major, kernel, channel."""
    k, _, _, c = w.shape
    parts = []
    for og in range(0, k, 32):
        for ig in range(0, c, 32):
            block = w[og : og + 32, :, :, ig : ig + 32]  # (nk, kh, kw, wi)
            parts.append(np.ascontiguousarray(block.transpose(1, 2, 0, 3)).tobytes())
    return b"".join(parts)


def _pack_depthwise(w: np.ndarray) -> bytes:
    """w[channel][ky][kx] (channels padded to 16) -> channel groups of 64, taps, then per channel pair (2p, 2p+1)
    the bytes w(2p), w(2p+1), 0, 0: the vendor's second bytes left 0 (docs/hardware/rocket-rk3576.md "Weight
    cube")."""
    c = w.shape[0]
    parts = []
    for cg in range(0, c, 64):
        block = w[cg : cg + 64].transpose(1, 2, 0)  # (kh, kw, wi)
        kh, kw, wi = block.shape
        cube = np.zeros((kh, kw, wi // 2, 2, 2), np.int8)  # (..., pair, byte of the channel, channel of the pair)
        cube[:, :, :, 0, :] = block.reshape(kh, kw, wi // 2, 2)
        parts.append(cube.tobytes())
    return b"".join(parts)


class Case:
    """Random weights, coefficients and input for one golden layer, and the program that runs it."""

    def __init__(self, g: Golden, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.g = g
        taps = g.kh * g.kw
        if g.dw:
            w = np.zeros((g.c16, g.kh, g.kw), np.int8)
            w[: g.ic] = rng.integers(-128, 128, (g.ic, g.kh, g.kw))
            self.weights = _pack_depthwise(w)
            self.w = w[: g.ic].astype(np.int64)
        else:
            w = np.zeros((g.kernels, g.kh, g.kw, g.c16), np.int8)
            w[: g.oc, :, :, : g.ic] = rng.integers(-128, 128, (g.oc, g.kh, g.kw, g.ic))
            self.weights = _pack_direct(w)
            self.w = w[: g.oc, :, :, : g.ic].astype(np.int64)
        assert len(self.weights) == g.r0[0x101C]
        # A: a bias of the accumulator's size; B: a weight-zero-point-like factor; C: Q14-like multipliers
        acc_scale = 128 * 64 * taps * (1 if g.dw else g.ic) // 8
        self.a = rng.integers(-acc_scale, acc_scale, g.oc).astype(np.int64)
        self.b = np.zeros(g.oc, np.int64) if g.dw else rng.integers(-100, 100, g.oc).astype(np.int64)
        self.x = rng.integers(-128, 128, (g.ih, g.iw, g.ic)).astype(np.int8)
        # C and the shift word: per-channel multipliers C / 2^s around the factor that spreads the outputs over
        # the int8 range under the vendor's OUT_CVT scale (the stream's), ~40 LSB per standard deviation, with
        # C in the vendor's Q14-like range; values < 0 are shifted one bit more (the sign selection shows)
        scale, shift = g.r0[0x40B0] & 0xFFFF, g.r0[0x40B4] & 0x3F
        spread = max(float(np.std(self._bias_added())), 1.0)
        factor = 40.0 * 2.0**shift / scale / spread
        s = int(np.clip(np.rint(np.log2(13000.0 / factor)), 1, 40))
        self.shift_word = s | (s + 1) << 8
        self.c = np.clip(np.rint(factor * 2.0**s * rng.uniform(0.7, 1.3, g.oc)), 1, 32767).astype(np.int64)
        # and A moves the outputs' centre to 0 whatever the vendor's OUT_CVT_OFFSET (-128 for a ReLU range)
        offset = int(np.int32(np.uint32(g.r0[0x40AC])))
        self.a += np.rint(-offset * 2.0**shift / scale * 2.0**s / self.c).astype(np.int64)
        self.table = self._table()

    def _table(self) -> bytes:
        g = self.g
        groups = -(-g.oc // 8)
        out = bytearray(groups * (48 if g.dw else 64))
        for grp in range(groups):
            base = grp * (48 if g.dw else 64)
            sl = slice(grp * 8, min(grp * 8 + 8, g.oc))
            n = sl.stop - sl.start
            struct.pack_into(f"<{n}i", out, base, *self.a[sl].tolist())
            if not g.dw:
                struct.pack_into(f"<{n}h", out, base + 32, *self.b[sl].tolist())
            struct.pack_into(f"<{n}h", out, base + (32 if g.dw else 48), *self.c[sl].tolist())
        return bytes(out)

    def program(self, words: list[list[int]] | None = None, table: bytes | None = None,
                weights: bytes | None = None) -> Program:
        """The golden tasks as one job; every task ends with the trailer the rocket kernel's fetch needs."""
        g = self.g
        words = words if words is not None else g.words
        table = table if table is not None else self.table
        prog = Program(device="rk3576")
        planes = g.c16 // 16
        in_size = (planes - 1) * 16 * g.plane + 16 * (-(-g.iw * g.ih // 4) * 4)
        spg = 4 if g.dw else 2
        groups = -(-_r16(g.oc) // (16 * spg))
        out_size = groups * spg * 16 * g.surf
        shift_at = -(-len(table) // 64) * 64
        prog.add_buffer(Buffer("input", in_size, tensor=True))
        prog.add_buffer(Buffer("output", out_size, tensor=True))
        prog.add_buffer(Buffer("weights", len(weights if weights is not None else self.weights),
                               weights if weights is not None else self.weights))
        prog.add_buffer(Buffer("coefs", shift_at + 4, table + bytes(shift_at - len(table))
                               + struct.pack("<I", self.shift_word)))
        regcmd = bytearray()
        tasks = []
        chained_end = 0
        for t, ws in zip(g.tasks, words, strict=True):
            off = int(t["offset_in_regcmd_area"], 16)
            ws = list(ws)
            if t["pc_trailer"] is None:  # the last task: no next task, then SYNC + op-enable
                ws += [_word(0x0010, 0, 0x0101), _word(0x0014, 0, 0x0101), SYNC, OP_ENABLE]
            regcmd += bytes(off - len(regcmd))
            for j, w in enumerate(ws):
                reg = w & 0xFFFF
                if (w >> 48) == 0x0101 and reg == 0x0010 and (w >> 16) & 0xFFFFFFFF:
                    prog.relocs.append(regcmd_reloc("regcmd", off + 8 * j, "regcmd"))
                elif (w >> 48) in (0x0201, 0x1001, 0x2001) and reg in ADDRESS_ROLES:
                    prog.relocs.append(regcmd_reloc("regcmd", off + 8 * j, ADDRESS_ROLES[reg]))
                elif (w >> 48) == 0x2001 and reg == 0x5024:  # shift word: after the table
                    ws[j] = (w & ~VALUE_MASK) | ((((w >> 16) & 0xFFFFFFFF) + shift_at) << 16)
                    prog.relocs.append(regcmd_reloc("regcmd", off + 8 * j, "coefs"))
            regcmd += struct.pack(f"<{len(ws)}Q", *ws)
            tasks.append(Task("regcmd", off, 8 * len(ws)))
            if t["pc_trailer"] is not None:  # the chain names the next task and its fetch: keep it in the buffer
                nxt = int(t["pc_trailer"]["next_0x0010"], 16)
                chained_end = max(chained_end, nxt + 16 * (int(t["pc_trailer"]["amount_0x0014"], 16) + 1))
        regcmd += bytes(-len(regcmd) % 64)  # the PC fetches 16-byte units: the last task's fetch rounds up
        prog.add_buffer(Buffer("regcmd", max(len(regcmd), chained_end), bytes(regcmd)))
        prog.jobs = [Job(tasks, ["input"], ["output"])]
        prog.io = [
            IOBinding(0, "in", "input", "int8", g.ih, g.iw, g.ic, row_pitch=16 * g.iw, plane_pitch=16 * g.plane),
            IOBinding(1, "out", "output", "int8", g.oh, g.ow, g.oc, row_pitch=16 * g.ow, plane_pitch=16 * g.surf),
        ]
        return prog

    def run(self, dev: Device, prog: Program | None = None) -> np.ndarray:
        out = Runner(dev, prog or self.program()).run({0: self.x[None]})[1]
        return out[0]

    def _bias_added(self) -> np.ndarray:
        """acc + A + B·Σx over the whole layer (int32-saturated), NHWC."""
        g = self.g
        pad = int(np.int32(np.uint32(g.r0[0x1084])))
        top, left, bottom, right = g.pads
        xp = np.pad(self.x.astype(np.int64), ((top, bottom), (left, right), (0, 0)), constant_values=pad)
        win = np.lib.stride_tricks.sliding_window_view(xp, (g.kh, g.kw), axis=(0, 1))[:: g.sy, :: g.sx]
        win = win[: g.oh, : g.ow]  # (oh, ow, c, kh, kw)
        if g.dw:
            acc = np.einsum("yxchw,chw->yxc", win, self.w)
            s = win.sum(axis=(3, 4))
        else:
            acc = np.einsum("yxchw,khwc->yxk", win, self.w, optimize=True)
            s = win.sum(axis=(2, 3, 4))[..., None]
        return np.clip(acc + self.a + self.b * s, -(1 << 31), (1 << 31) - 1)

    def reference(self, words: list[int] | None = None) -> np.ndarray:
        """The documented arithmetic (docs/hardware/rocket-rk3576-sim.md §4) over the whole layer."""
        r = _regs(words or self.g.words[0])
        v = self._bias_added()
        sh = np.where(v >= 0, self.shift_word & 0x3F, (self.shift_word >> 8) & 0x3F)
        u = np.clip(shift_even(v * self.c, sh), -(1 << 31), (1 << 31) - 1)
        scale, shift = r[0x40B0] & 0xFFFF, r[0x40B4] & 0x3F
        offset = int(np.int32(np.uint32(r[0x40AC])))
        y = shift_even(u * scale, shift) + offset
        return np.clip(y, -128, 127).astype(np.int8)


@pytest.fixture(scope="module")
def sim(delegate_library: None) -> Device:
    dev = Device("rk3576", sim=True)
    yield dev
    dev.close()


GOLDENS = [Golden(f) for f in FILES]
pytestmark = pytest.mark.skipif(not GOLDENS, reason=f"no golden rocket-rk3576 files under {GOLDEN}")


def _live_bs_form(words: list[int]) -> list[int]:
    """The other direct BS arrangement (0x4044 = 0, 0x4050 = 0x8002x111, 0x501C = 0x114) rewritten into the
    live capture's (1, 0x8001x111, 0x710); every geometry word stays the vendor's."""
    out = []
    for w in words:
        reg, value = w & 0xFFFF, (w >> 16) & 0xFFFFFFFF
        value = {0x4044: 1, 0x4050: (value & ~0xF0000) | 0x10000, 0x501C: 0x710}.get(reg, value)
        out.append((w & ~VALUE_MASK) | (value << 16))
    return out


@pytest.mark.parametrize("g", GOLDENS, ids=[g.stem for g in GOLDENS])
def test_vendor_program(sim: Device, g: Golden) -> None:
    case = Case(g)
    prog = None
    if not g.form_understood:
        with pytest.raises(NativeError, match=r"job 0 task 0: DPU_BS_CFG = 0x00000000: direct: only BS_CFG 1"):
            case.run(sim)
        prog = case.program(words=[_live_bs_form(w) for w in g.words])  # the geometry still has to run
    out = case.run(sim, prog)
    ref = case.reference()
    saturated = float(np.mean(np.abs(ref.astype(np.int32)) >= 127))
    print(f"{g.stem}: {len(g.tasks)} tasks, {np.count_nonzero(out != ref)} of {out.size} differ, "
          f"{saturated:.1%} saturated")
    assert np.array_equal(out, ref), f"{np.count_nonzero(out != ref)} of {out.size} bytes differ"
    assert saturated < 0.5, "test data too extreme to be meaningful"


# ---- every field the vendor writes is read --------------------------------------------------------------------


def _one_plane(g: Golden) -> bool:
    return g.c16 <= 16


def _one_surface(g: Golden) -> bool:
    return g.oc <= 16


def _one_group(g: Golden) -> bool:
    return -(-g.oc // 16) <= (4 if g.dw else 2)


def _task_unpadded(g: Golden, task: int) -> bool:
    return _regs(g.words[task])[0x1080] == 0


# (register, field) -> (reason, condition under which a mutation may leave the output unchanged)
DONT_CARE: dict[tuple[str, str], tuple[str, Callable[[Golden, int], bool]]] = {
    ("PC_BASE_ADDRESS", "PC_SOURCE_ADDR"): (
        (
            "in-stream chain pointer: the kernel kicks every task with TASK_NUMBER 1, the PC never follows it; "
            "only checked to point into a buffer"
        ),
        lambda g, t: True,
    ),
    ("PC_REGISTER_AMOUNTS", "PC_DATA_AMOUNT"): (
        "in-stream chain length: not followed; only checked against the chained buffer", lambda g, t: True),
    ("CNA_DMA_CON2", "SURF_STRIDE"): (
        "input plane pitch: unused when the input has one 16-channel plane", lambda g, t: _one_plane(g)),
    ("DPU_DST_SURF_STRIDE", "DST_SURF_STRIDE"): (
        "output surface pitch: unused when the output has one 16-channel surface", lambda g, t: _one_surface(g)),
    ("DPU_SURFACE_ADD", "SURF_ADD"): (
        "jump to the next group of 32 (64 depthwise) channels: unused with one group", lambda g, t: _one_group(g)),
    ("CNA_PAD_CON1", "PAD_VALUE"): (
        "pad value: unused when the task's window has no padding", _task_unpadded),
    ("CNA_UNDOC_1038", "NOT_FIRST_TASK"): (
        (
            "weight reuse: clearing it on a later task reloads the same weights (setting it on a first task is an "
            "error)"
        ),
        lambda g, t: t > 0,
    ),
}

MUTATION_STREAMS = [
    "conv-in80x80x64-oc16-k3x3-s1-p1111-i8__gah-c_64",  # two windows, CBUF rows kept, 4 input planes
    "conv-in80x80x16-oc128-k5x5-s2-p1122-i8__gah-conv2d",  # asymmetric pads, stride 2, 4 output groups
    "dwconv-in16x16x24-oc24-k3x3-s1-p1111-i8__ru-dw_c24_k3_s1_16",  # depthwise, partial last plane
    "dwconv-in7x7x80-oc80-k3x3-s1-p1111-i8__gah-dwbig_80",  # depthwise, 2 groups of 64, round4 pitches
]
MUTATION_GOLDENS = [g for g in GOLDENS if g.stem in MUTATION_STREAMS]


def _mutants(g: Golden) -> list[tuple[str, str, int, int, int]]:
    """(register, field, task, word index, mutated word): the lowest and highest bit of every field of every
    word of every task (a register without fields: bits 0 and 31)."""
    from teflon.rocket import target

    rm = target("rk3576").regmap
    out = []
    for ti, words in enumerate(g.words):
        for i, w in enumerate(words):
            _unit, name, _ = rm.decode(w)
            if name in ("SYNC", "OP_ENABLE", "NOP"):
                out += [(name, "value", ti, i, w ^ (1 << 16)), (name, "offset", ti, i, w ^ (1 << 2))]
                continue
            if any((v & 0xFFFF) == (w & 0xFFFF) and (v >> 48) == (w >> 48) for v in words[i + 1 :]):
                continue  # overwritten before the op-enable (the vendor writes CNA_UNDOC_1038 twice)
            fields = rm.register(name).fields
            bits = sorted({b for f in fields for b in (f.lo, f.hi)}) if fields else [0, 31]
            names = {b: f.name for f in fields for b in (f.lo, f.hi)} if fields else {0: "-", 31: "-"}
            out += [(name, names[b], ti, i, w ^ (1 << (16 + b))) for b in bits]
    return out


def _outcome(dev: Device, case: Case, prog: Program, base: np.ndarray) -> str:
    try:
        out = case.run(dev, prog)
    except NativeError:
        return "error"
    return "unchanged" if np.array_equal(out, base) else "changed"


@pytest.mark.parametrize("g", MUTATION_GOLDENS, ids=[g.stem for g in MUTATION_GOLDENS])
def test_every_field_is_read(sim: Device, g: Golden) -> None:
    case = Case(g, seed=1)
    base = case.run(sim)
    counts = {"changed": 0, "error": 0, "unchanged": 0}
    unread = []
    for reg, field, ti, i, word in _mutants(g):
        words = [list(w) for w in g.words]
        words[ti][i] = word
        result = _outcome(sim, case, case.program(words=words), base)
        counts[result] += 1
        dc = DONT_CARE.get((reg, field))
        if result == "unchanged" and (dc is None or not dc[1](g, ti)):
            unread.append(f"task {ti} word {i} {reg}.{field} -> 0x{word:016x}")
    # data the DPU and CNA read: coefficient A, B, C of the first and last channel, the shift word, weights
    table = bytearray(case.table)
    gb = 48 if g.dw else 64
    last = g.oc - 1
    spots = {"A[0]": 2, f"A[{last}]": (last // 8) * gb + 4 * (last % 8) + 2,
             f"C[{last}]": (last // 8) * gb + (32 if g.dw else 48) + 2 * (last % 8) + 1}
    if not g.dw:
        spots["B[0]"] = 32
    for what, pos in spots.items():
        t = bytearray(table)
        t[pos] ^= 0x04 if what.startswith("C") else 0x40
        r = _outcome(sim, case, case.program(table=bytes(t)), base)
        counts[r] += 1
        if r == "unchanged":
            unread.append(f"coefficient {what}")
    weights = bytearray(case.weights)
    taps = g.kh * g.kw
    if g.dw:  # tap 0 channel 0, the last tap's last real channel of the first group of 64
        wi = min(64, g.c16)
        spots_w = {0, 2 * ((taps - 1) * wi + min(g.ic, 64) - 1)}
    else:  # kernel 0 / the middle / the last kernel of the first group, tap 0, channel 0
        spots_w = {0, taps * g.c16 * (min(g.oc, 32) // 2), taps * g.c16 * (min(g.oc, 32) - 1)}
    for pos in sorted(spots_w):
        w = bytearray(weights)
        w[pos] ^= 0x40
        r = _outcome(sim, case, case.program(weights=bytes(w)), base)
        counts[r] += 1
        if r == "unchanged":
            unread.append(f"weight byte {pos}")
    print(f"{g.stem}: {counts}")
    assert not unread, "mutations with no effect (field not read by the simulator?):\n  " + "\n  ".join(unread)


def test_shift_word_is_read(sim: Device) -> None:
    g = next(g for g in GOLDENS if g.stem == MUTATION_STREAMS[2])
    case = Case(g, seed=2)
    base = case.run(sim)
    for word in (0x0E0D, 0x0D0D, 0x0E0E):  # each half alone, then both
        case.shift_word = word
        out = case.run(sim)
        assert not np.array_equal(out, base), f"shift word 0x{word:04x} changed nothing"
        assert np.array_equal(out, case.reference()), f"shift word 0x{word:04x}: output differs from the model"
    case.shift_word = 0x4000_0E0E
    with pytest.raises(NativeError, match=r"shift word 0x40000e0e .* only bits 0..5"):
        case.run(sim)


def test_depthwise_byte_pairs_add_up(sim: Device) -> None:
    """Both bytes of a depthwise channel are live and added, channel pairs interleaved (docs/hardware/
    rocket-rk3576.md "Weight cube"): a weight split over its two bytes computes the same as the weight in the first
    byte, and weights beyond int8 (the two bytes down to -256) work."""
    g = next(g for g in GOLDENS if g.stem == MUTATION_STREAMS[2])
    case = Case(g)
    rng = np.random.default_rng(5)
    cube = np.frombuffer(case.weights, np.int8).reshape(-1, 2, 2).astype(np.int16)  # (channel pair, byte, channel)
    first = cube[:, 0, :]
    t = rng.integers(-64, 64, first.shape)
    lo = np.clip(first - t, -128, 127)
    split = np.stack([lo, first - lo], axis=1).astype(np.int8).tobytes()
    assert split != case.weights
    assert np.array_equal(case.run(sim, case.program(weights=split)), case.run(sim))
    wide = np.stack([np.full(first.shape, -128), np.where(t > 0, -128, 127)], axis=1).astype(np.int8)
    case.weights = wide.tobytes()
    per_channel = wide.astype(np.int64).sum(axis=1).reshape(-1)  # -256 or -1, channel fastest within a tap
    taps = g.kh * g.kw
    case.w = per_channel[: taps * g.c16].reshape(g.kh, g.kw, g.c16).transpose(2, 0, 1)[: g.ic]
    assert np.array_equal(case.run(sim), case.reference())


def test_zero_multiplier_is_refused(sim: Device) -> None:
    g = next(g for g in GOLDENS if g.stem == MUTATION_STREAMS[0])
    case = Case(g)
    t = bytearray(case.table)
    struct.pack_into("<h", t, 48 + 2 * 3, 0)  # C of channel 3
    with pytest.raises(NativeError, match=r"channel 3 has multiplier C = 0"):
        case.run(sim, case.program(table=bytes(t)))


def test_window_over_the_cbuf_budget_is_refused(sim: Device) -> None:
    """The vendor's first window of the 112-row depthwise is 91 rows: the most that fits 5120 granules of 56."""
    g = next((g for g in GOLDENS if g.stem == "dwconv-in112x112x32-oc32-k3x3-s1-p1111-i8__gah-dw"), None)
    if g is None:
        pytest.skip("golden file missing")
    words = [list(w) for w in g.words]

    def bump(reg: int, delta: int) -> None:
        i = next(i for i, w in enumerate(words[0]) if w & 0xFFFF == reg)
        words[0][i] += delta << 16

    # one more row fetched into the window: 92 x 56 granules > 5120
    bump(0x102C, 1)
    bump(0x1078, 1)
    bump(0x1028, 56 << 16)
    bump(0x1098, 112)
    with pytest.raises(NativeError, match=r"a window of 92 rows x 56 granules exceeds the CBUF data ring of 5120"):
        Case(g).run(sim, Case(g).program(words=words))


def test_rows_kept_in_cbuf_come_from_the_previous_task(sim: Device) -> None:
    """The second window reads its first two rows from the CBUF ring: run alone (its own job) it must fail."""
    g = next((g for g in GOLDENS if g.stem == "dwconv-in112x112x32-oc32-k3x3-s1-p1111-i8__gah-dw"), None)
    if g is None:
        pytest.skip("golden file missing")
    case = Case(g)
    words = [list(w) for w in g.words]
    words[1] = [w & ~(1 << 47) if w & 0xFFFF == 0x1038 else w for w in words[1]]  # load the weights again
    prog = case.program(words=words)
    prog.jobs = [Job([t], ["input"], ["output"]) for t in prog.jobs[0].tasks]
    with pytest.raises(NativeError, match=r"job 1 task 0: CNA_CBUF_CON2 = 0x00381378: window row 0 .* never filled"):
        case.run(sim, prog)


# ---- kernel level: the C harness ---------------------------------------------------------------------------------

# The harness compiles every driver source under ASan in one compiler run (the most expensive fixture of the
# default suite): its tests share one xdist group so that one worker builds it (scripts/test.sh: --dist loadgroup).
# In the ASan stage (scripts/test-asan.sh) it links the driver libraries of that sanitized build instead.
HARNESS_GROUP = pytest.mark.xdist_group("rocket-c-harness")
_DRIVER_ARCHIVES = ("rocket/libteflon_rocket.a", "libteflon_drivers.a", "etnaviv/libteflon_etnaviv.a",
                    "etnaviv/libetnaviv_sim.a", "ethosu/libteflon_ethosu.a", "ethosu/libethosu_fast.a",
                    "ethosu/libethosu_npu.a", "ethosu/libethosu_mlw.a")


def _sanitized_driver_archives() -> list[str] | None:
    """The driver libraries of the build $TEFLON_LIBRARY comes from, when that build has b_sanitize=address,undefined
    (build-asan/); else None."""
    lib = os.environ.get("TEFLON_LIBRARY")
    if not lib:
        return None
    build = Path(lib).resolve().parent.parent
    try:
        options = json.loads((build / "meson-info" / "intro-buildoptions.json").read_text())
    except (OSError, ValueError):
        return None
    value = next((o.get("value") for o in options if o.get("name") == "b_sanitize"), None)
    sanitize = set(value if isinstance(value, list) else str(value).split(","))  # a list from meson 1.8 on
    archives = [build / "drivers" / a for a in _DRIVER_ARCHIVES]
    if not {"address", "undefined"} <= sanitize or not all(a.is_file() for a in archives):
        return None
    return [str(a) for a in archives]


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("rocket_sim")
    for soc in ("rk3588", "rk3576", "rk3568"):
        subprocess.run([sys.executable, str(REPO / "python/teflon/hw/gen_c_header.py"), "--table",
                        f"teflon.rocket.{soc}.regs:TABLE", "--prefix", soc, "-o", str(out / f"rocket_regs_{soc}.h")],
                       check=True)
    subprocess.run([sys.executable, str(REPO / "python/teflon/targets.py"), "--c-header", str(out / "teflon_targets.h")],
                   check=True)
    # driver.c's family table also names the etnaviv family: its sources (minus the LD_PRELOAD shim) and
    # descriptor headers link in too
    for table in ("NN_V7", "NN_V8", "TP"):
        subprocess.run([sys.executable, str(REPO / "python/teflon/hw/gen_c_header.py"), "--table",
                        f"teflon.etnaviv.desc:{table}", "--prefix", f"ETNA_{table}", "-o",
                        str(out / f"etna_{table.lower()}_desc.h")], check=True)
    # ... and the ethosu family: its sources (minus its shim) and the generated U65 command-set header
    subprocess.run([sys.executable, str(REPO / "python/teflon/hw/gen_c_header.py"), "--table",
                    "teflon.ethosu.regs:U65", "--prefix", "ETHOSU_U65", "-o", str(out / "ethosu_regs_u65.h")],
                   check=True)
    drivers = REPO / "drivers"
    etnaviv = [p for p in sorted((drivers / "etnaviv").glob("*.c")) if p.name != "etna_shim.c"]
    ethosu = [p for p in sorted((drivers / "ethosu").glob("*.c")) if p.name != "ethosu_shim.c"]
    sources = [*sorted(drivers.glob("*.c")), *sorted((drivers / "rocket").glob("*.c")), *etnaviv, *ethosu]
    exe = out / "test_rocket_sim"
    archives = _sanitized_driver_archives()
    objects = ["-Wl,--start-group", *archives, "-Wl,--end-group"] if archives else list(map(str, sources))
    cmd = [cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-fsanitize=address,undefined",
           "-fno-sanitize-recover=all", f"-I{drivers}", f"-I{drivers / 'rocket'}", f"-I{drivers / 'etnaviv'}",
           f"-I{drivers / 'ethosu'}",
           f"-I{out}", str(REPO / "tests/c/test_rocket_sim.c"), *objects, "-o", str(exe), "-lpthread", "-lm"]
    r = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if r.returncode != 0 and "sanitize" in r.stderr:
        pytest.skip(f"no ASan/UBSan runtime: {r.stderr[-300:]}")
    assert r.returncode == 0, r.stderr
    return exe


def _run(exe: Path, *args: str, env: dict[str, str] | None = None) -> str:
    # no Python in the harness: leak checking on, also in the ASan stage (which turns it off for Python)
    r = subprocess.run([str(exe), *args], check=False, capture_output=True, text=True, timeout=60,
                       env={**os.environ, "ASAN_OPTIONS": "detect_leaks=1", **(env or {})})
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


@HARNESS_GROUP
def test_kick_words(harness: Path) -> None:
    """rk3576 kicks with 0x70001 and refuses 0x7001 ("asks for 28673 tasks"); rk3588 kicks with 0x7001."""
    assert "all checks passed" in _run(harness, "kick")




@HARNESS_GROUP
@pytest.mark.parametrize(
    ("cores", "where", "expect"),
    [
        ({}, "driver", "rc=-19 soc="),
        ({"fdab0000.npu": "rockchip,rk3588-rknn-core", "fdac0000.npu": "rockchip,rk3588-rknn-core"}, "driver",
         "rc=0 soc=rk3588"),
        ({"27700000.npu": "rockchip,rk3576-rknn-core", "27708000.npu": "rockchip,rk3576-rknn-core"}, "driver",
         "rc=0 soc=rk3576"),
        ({"fdab0000.npu": "rockchip,rk3588-rknn-core-top;rockchip,rknn-core-top"}, "driver", "rc=0 soc=rk3588"),
        ({"27700000.npu": "rockchip,rk3576-rknn-core"}, "accel", "rc=0 soc=rk3576"),
        ({"fe000000.npu": "rockchip,rk3562-rknn-core"}, "driver", "rc=-95 soc=rockchip,rk3562-rknn-core"),
        ({"a.npu": "rockchip,rk3562-rknn-core", "b.npu": "rockchip,rk3576-rknn-core"}, "driver", "rc=0 soc=rk3576"),
        # the first row of the RK3566/RK3568 compatible (both rows share it: rocket_kernel.c accepts either)
        ({"fde40000.npu": "rockchip,rk3568-rknn-core"}, "driver", "rc=0 soc=rk3568"),
        ({"fdab0000.gpu": "arm,mali-valhall-csf"}, "driver", "rc=-19 soc="),
    ],
    ids=["none", "rk3588", "rk3576", "rk3588-core-top", "rk3576-accel-of-node", "unknown-soc", "known-wins",
         "rk3568-known", "not-an-npu"],
)
def test_soc_detection(harness: Path, tmp_path: Path, cores: dict[str, str], where: str, expect: str) -> None:
    root = _sysfs(tmp_path, cores, where)
    assert _run(harness, "detect", env={"TEFLON_SYSFS_ROOT": str(root)}).strip() == expect


def test_real_device_refuses_a_soc_the_devicetree_contradicts(delegate_library: None, tmp_path: Path) -> None:
    """With the devicetree naming RK3588 cores, asking for the RK3576 NPU (sim=0) is refused before any device
    node is opened; the simulator still serves rk3576 in auto mode."""
    root = _sysfs(tmp_path, {"fdab0000.npu": "rockchip,rk3588-rknn-core"})
    code = (
        "from teflon.native import Device, NativeError\n"
        "try:\n    Device('rk3576', sim=False)\nexcept NativeError as e:\n    print(e)\n"
        "print('auto sim', Device('rk3576', sim=None).is_sim)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "TEFLON_SYSFS_ROOT": str(root)})
    assert r.returncode == 0, r.stderr
    assert "the rocket NPU here is an rk3588 (devicetree compatible of its cores), not rk3576" in r.stdout
    assert "auto sim True" in r.stdout
