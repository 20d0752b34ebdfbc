"""The rk3568 simulator (drivers/rocket/sim_rk3568.c) reads every register field the rk3568 encoder emits
(DEVELOPERS.md: "if flipping a register field does not change the simulated result, the simulator is not reading it").

Programs compiled by the delegate for cases chosen to cover the generation's task kinds and paths (a regular conv with
SAME padding and a fused ReLU6; a depthwise conv of two 32-channel groups, stride 2, int8, fused ReLU; a FULLY_CONNECTED;
the packed-pixel first layer of 3, 1 and 4 channels; a 1x1 conv split into three row bands, the third a delta task, with WEIGHT_REUSE and
chain words; the DPU-only ADD; an average pool as its depthwise convolution; a global average as the vendor's
averaging convolution and an int8 per-channel conv with ReLU6, both with the 8-byte BS stream). In every task, every register field
written (not overwritten later in the same task) gets its lowest and its highest bit flipped, one at a time, the
special words (SYNC, op-enable) too, and a few weight, bias and operand bytes. Each mutant must change the output or
make the simulator report an error; a mutant that changes nothing is accepted only for the fields in DONT_CARE, each
with its reason and the cases it holds for (mirrored in docs/hardware/rk3568.md §7).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from teflon import bridge, modelgen, reference
from teflon.hw.regmap import Field
from teflon.modelgen import AddCase, ConvCase, FcCase, PoolCase
from teflon.native import Device, NativeError, Runner
from teflon.program import Program
from teflon.rocket import target

pytestmark = pytest.mark.usefixtures("delegate_library")

Case = ConvCase | FcCase | AddCase | PoolCase
CASES: list[Case] = [
    ConvCase("conv2d", 12, 12, 20, out_c=24, kernel=3, stride=1, padding="same", activation="relu6"),
    ConvCase("dwconv", 16, 16, 40, kernel=3, stride=2, padding="same", dtype="int8", activation="relu"),
    FcCase(64, 40),
    ConvCase("conv2d", 16, 16, 3, out_c=16, kernel=3, stride=2, padding="same"),  # packed pixels
    # 1- and 4-byte packed pixels, 13 wide: the DMA and CBUF take whole 8-pixel groups (16)
    ConvCase("conv2d", 13, 13, 1, out_c=16, kernel=3, stride=1, padding="same"),
    ConvCase("conv2d", 13, 11, 4, out_c=16, kernel=3, stride=2, padding="same"),
    ConvCase("conv2d", 96, 96, 64, out_c=16, kernel=1, padding="valid"),  # three row bands, the third a delta task
    AddCase(16, 16, 32),
    PoolCase(32, 32, 16, filter=2, stride=2, op="avg"),  # the exact depthwise convolution
    PoolCase(7, 7, 40, filter=7, stride=1, op="avg"),  # a global average: the vendor's averaging convolution
    ConvCase("conv2d", 10, 10, 24, out_c=40, kernel=3, padding="same", dtype="int8", per_channel=True,
             activation="relu6"),  # the 8-byte BS stream with per-channel multipliers
]
SPECIAL = ("SYNC", "OP_ENABLE", "NOP")


def _lowest_bit(bit: int, f: Field) -> bool:
    return bit == f.lo


def _global(c: Case) -> bool:
    return isinstance(c, PoolCase) and (c.filter, c.kernel_w) == (c.in_h, c.in_w)


def _one_output_pixel(c: Case) -> bool:
    return isinstance(c, FcCase) or _global(c)


def _eight_byte_stream(c: Case) -> bool:
    """The 8-byte BS stream (per group of four channels: 4 int32 biases, 4 int16 OW, 4 uint16 multipliers)."""
    return _global(c) or (isinstance(c, ConvCase) and c.per_channel)


def _bias_byte(c: Case, channel: int) -> int:
    """Byte 2 (bits 16..23) of the channel's bias term in the BS stream."""
    return (channel // 4) * 32 + (channel % 4) * 4 + 2 if _eight_byte_stream(c) else 4 * channel + 2


def _no_padding_read(c: Case) -> bool:
    return isinstance(c, (FcCase, PoolCase)) or (isinstance(c, ConvCase) and (c.padding == "valid" or c.kernel == 1))


def _one_input_plane(c: Case) -> bool:
    return isinstance(c, ConvCase) and c.in_c <= 8


# (register, field) -> (reason, whether it holds for the case and the flipped bit)
DONT_CARE: dict[tuple[str, str], tuple[str, Callable[[Case, int, Field], bool]]] = {
    ("CNA_CONV_CON2", "FEATURE_GRAINS"): (
        ("input rows the CNA gathers ahead: no numeric effect known [INF]; the simulator checks 1 .. 3 x stride + kh "
        "(the highest bit is refused)"), lambda c, b, f: _lowest_bit(b, f)),
    ("CNA_CONV_CON3", "CONV_X_STRIDE"): ("a 1x1 output never moves the window (the lowest bit, stride 0, is refused)",
                                         lambda c, b, f: _one_output_pixel(c) and not _lowest_bit(b, f)),
    ("CNA_CONV_CON3", "CONV_Y_STRIDE"): ("a 1x1 output never moves the window (the lowest bit, stride 0, is refused)",
                                         lambda c, b, f: _one_output_pixel(c) and not _lowest_bit(b, f)),
    ("CNA_PAD_CON0", "PAD_VALUE"): ("the pad value: unused when no window reaches into padding",
                                    lambda c, b, f: _no_padding_read(c)),
    ("CNA_DMA_CON2", "SURF_STRIDE"): ("plane pitch of the input: unused when it has a single 8-channel plane",
                                      lambda c, b, f: _one_input_plane(c)),
    ("DPU_BN_RELUX_CMP_VALUE", "BN_RELUX_CMP_DAT"): (
        ("read: its lowest bit moves the ReLU6 bound by one accumulator unit, far below an output LSB (the highest "
        "bit, a negative bound, is refused)"), lambda c, b, f: _lowest_bit(b, f)),
    ("DPU_OUT_CVT_SCALE", "OUT_CVT_SCALE"): (
        ("read: its lowest bit moves an output by under 2^-14 of its value, which no output of a small case brings "
        "across a rounding boundary (the highest bit is caught)"), lambda c, b, f: _lowest_bit(b, f)),
    ("DPU_EW_CVT_SCALE_VALUE", "EW_OP_CVT_SCALE"): (
        "read: as OUT_CVT_SCALE, for the operand's converter", lambda c, b, f: _lowest_bit(b, f)),
    ("CNA_CBUF_CON0", "WEIGHT_REUSE"): (
        ("clearing it on a later band only reloads the same weights from memory (setting it without resident weights "
        "is an error)"), lambda c, b, f: True),
    ("PC_BASE_ADDRESS", "PC_SOURCE_ADDR"): (
        ("in-stream chain pointer: accel/rocket kicks every task itself with TASK_NUMBER 1, so the PC never follows it; "
        "the simulator only checks it points into a buffer"), lambda c, b, f: _lowest_bit(b, f)),
    ("PC_REGISTER_AMOUNTS", "PC_DATA_AMOUNT"): (
        "in-stream chain length: not followed under one-task kicks; only checked against the chained buffer",
        lambda c, b, f: _lowest_bit(b, f)),
}


def _program(case: Case) -> Program:
    model = case.build()
    with bridge.capture() as cap:
        run = reference.run_delegate(model, modelgen.random_inputs(model, seed=3), device="rk3568", sim="1")
    assert run.delegated and len(cap.programs) == 1, run.delegated
    return cap.programs[0][1]


def _inputs(prog: Program) -> dict[int, np.ndarray]:
    rng = np.random.default_rng(5)
    out = {}
    for b in prog.io:
        if b.direction == "in":
            lo, hi = (-128, 128) if b.dtype == "int8" else (0, 256)
            out[b.tensor] = rng.integers(lo, hi, (1, b.h, b.w, b.c)).astype(np.dtype(b.dtype))
    return out


def _out_channels(c: Case) -> int:
    if isinstance(c, FcCase):
        return c.out_n
    if isinstance(c, ConvCase) and c.op == "conv2d":
        return c.out_c or c.in_c
    return c.in_c


def _mutants(prog: Program) -> list[tuple[str, Field, int, Any, int, int]]:
    """(register, field, bit, task, word index, mutated word) of every field written in every task."""
    rm = target("rk3568").regmap
    out = []
    for op in prog.operations:
        for ti, task in enumerate(op.tasks):
            words = struct.unpack_from(f"<{task.nbytes // 8}Q", prog.buffer(task.buffer).data or b"", task.offset)
            for i, w in enumerate(words):
                if w == 0:
                    continue
                _unit, name, _ = rm.decode(w)
                if name in SPECIAL:
                    fields = [Field("value", b, b) for b in (0, 3, 5)]
                else:
                    if any((v & 0xFFFF_0000_0000_FFFF) == (w & 0xFFFF_0000_0000_FFFF) for v in words[i + 1:]):
                        continue  # overwritten before the op-enable: no effect by definition
                    fields = list(rm.register(name).fields) or [Field("VALUE", 0, 31)]
                for f in fields:
                    for bit in sorted({f.lo, f.hi}):
                        out.append((name, f, bit, (ti, task), i, w ^ (1 << (16 + bit))))
    return out


def _outcome(dev: Device, prog: Program, x: dict[int, np.ndarray], out_t: int, base: np.ndarray) -> str:
    try:
        out = Runner(dev, prog).run(x)[out_t]
    except NativeError:
        return "error"
    return "unchanged" if np.array_equal(out, base) else "changed"


def _flip(prog: Program, name: str, pos: int, value: bytes) -> bytes:
    buf = prog.buffer(name)
    orig = buf.data or b""
    data = bytearray(orig)
    data[pos:pos + len(value)] = value
    buf.data = bytes(data)
    return orig


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_field_is_read(case: Case) -> None:
    prog = _program(case)
    x = _inputs(prog)
    out_t = next(b.tensor for b in prog.io if b.direction == "out")
    counts = {"changed": 0, "error": 0, "unchanged": 0}
    unread: list[str] = []
    with Device("rk3568", sim=True) as dev:
        base = Runner(dev, prog).run(x)[out_t]
        for name, f, bit, (ti, task), i, word in _mutants(prog):
            orig = _flip(prog, task.buffer, task.offset + 8 * i, struct.pack("<Q", word))
            result = _outcome(dev, prog, x, out_t, base)
            prog.buffer(task.buffer).data = orig
            counts[result] += 1
            dc = DONT_CARE.get((name, f.name))
            if result == "unchanged" and not (dc and dc[1](case, bit, f)):
                unread.append(f"task {ti} word {i} {name}.{f.name} bit {bit}")
        # a few weight and bias bytes: the first two weights (two channels of the first kernel and tap) and the
        # bias (bit 22) of the first and the last real output channel. Not the global average's weights: one tap
        # carries 1/49 of an output, so a flipped bit moves it by under one LSB (the other cases catch weight bytes)
        last = _out_channels(case) - 1
        # (one input channel: its padding channel 1 meets zeros; the second kernel's channel 0 instead)
        weights = () if _global(case) else (0, 8) if isinstance(case, ConvCase) and case.in_c == 1 else (0, 1)
        checks = ((".weights", weights), (".bias", (2, _bias_byte(case, last))))
        for suffix, positions in checks:
            for buf in [b for b in prog.buffers if b.name.endswith(suffix)]:
                for pos in positions:
                    orig = _flip(prog, buf.name, pos, bytes([(buf.data or b"")[pos] ^ 0x40]))
                    result = _outcome(dev, prog, x, out_t, base)
                    prog.buffer(buf.name).data = orig
                    counts[result] += 1
                    if result == "unchanged":
                        unread.append(f"{buf.name} byte {pos}")
        # every input's elements are read: one element of the first and of the last channel
        for t, arr in x.items():
            for c in (0, arr.shape[3] - 1):
                y = dict(x)
                y[t] = arr.copy()
                y[t][0, arr.shape[1] // 2, arr.shape[2] // 2, c] ^= 0x40
                if _outcome(dev, prog, y, out_t, base) == "unchanged":
                    unread.append(f"input {t} element ({arr.shape[1] // 2}, {arr.shape[2] // 2}, {c})")
    print(f"rk3568 {case.name}: {sum(counts.values())} mutants {counts}")
    assert not unread, "mutations with no effect (field not read by the simulator?):\n  " + "\n  ".join(unread)
