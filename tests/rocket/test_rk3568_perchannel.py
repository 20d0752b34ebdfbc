"""The rk3568 per-channel BS stream (docs/hardware/rk3568.md §4) is read by the simulator: every field it holds, and
the words that select it, change the output or make the simulator refuse the task (the mutation rule of
DEVELOPERS.md for fields a new encoder path writes).

The program is a per-channel int8 depthwise layer with a fused RELU6 (the stream's bias, OW and multiplier, BS_MUL
shift, BN bound) and a per-channel int8 convolution; each mutant runs on the simulated NPU once.
"""

from __future__ import annotations

import copy
import struct
from collections.abc import Callable

import numpy as np
import pytest

from teflon import compiler
from teflon.modelgen import ConvCase
from teflon.native import Device, NativeError, Runner
from teflon.program import Program
from teflon.rocket import target

from .graphs import conv_graph

pytestmark = pytest.mark.usefixtures("delegate_library")
RM = target("rk3568").regmap
CASES = [ConvCase("dwconv", 12, 10, 40, None, 3, 1, "same", "relu6", dtype="int8", per_channel=True),
         ConvCase("conv2d", 9, 11, 24, 20, 3, 2, "same", dtype="int8", per_channel=True)]


def _program(case: ConvCase) -> tuple[Program, np.ndarray]:
    g = conv_graph(case)
    (op,) = g.operations
    prog = compiler.compile(g, [op.index], [op.inputs[0]], list(op.outputs), "rk3568")
    assert prog.operations[0].info["per_channel"]
    x = np.random.default_rng(3).integers(-128, 128, case.input_shape, dtype=np.int8)
    return prog, x


def _run(dev: Device, prog: Program, x: np.ndarray) -> np.ndarray | str:
    try:
        (out,) = Runner(dev, prog).run({0: x}).values()
    except NativeError as e:
        return str(e)
    return out


def _set_word(prog: Program, reg: str, **fields: int) -> None:
    buf = prog.buffer(prog.operations[0].tasks[0].buffer)
    data = bytearray(buf.data)
    for off in range(0, len(data), 8):
        (w,) = struct.unpack_from("<Q", data, off)
        if w and RM.decode(w)[1] == reg:
            old = RM.decode(w)[2]
            struct.pack_into("<Q", data, off, RM.word(reg, **(old | fields)))
    buf.data = bytes(data)


def _poke_bias(prog: Program, offset: int, value: int, fmt: str) -> None:
    buf = prog.buffer(next(b.name for b in prog.buffers if b.name.endswith(".bias")))
    data = bytearray(buf.data)
    struct.pack_into(fmt, data, offset, value)
    buf.data = bytes(data)


def _field(prog: Program, reg: str, name: str) -> int:
    buf = prog.buffer(prog.operations[0].tasks[0].buffer)
    for (w,) in struct.iter_unpack("<Q", buf.data):
        if w and RM.decode(w)[1] == reg:
            return RM.decode(w)[2].get(name, 0)
    raise KeyError(reg)


# channel 5's entries in the grouped stream: group 1 (32 bytes), lane 1
MUTANTS: dict[str, Callable[[Program], None]] = {
    "bias": lambda p: _poke_bias(p, 32 + 4 * 1, 1 << 20, "<i"),
    "ow": lambda p: _poke_bias(p, 32 + 16 + 2 * 1, 37, "<h"),
    "multiplier": lambda p: _poke_bias(p, 32 + 24 + 2 * 1, 1000, "<H"),
    "multiplier-too-large": lambda p: _poke_bias(p, 32 + 24 + 2 * 1, 0x9000, "<H"),
    "bs-mul-shift": lambda p: (_set_word(p, "DPU_BS_MUL_CFG", BS_MUL_SHIFT_VALUE=_field(p, "DPU_BS_MUL_CFG",
                                                                                      "BS_MUL_SHIFT_VALUE") + 1),
                               _set_word(p, "DPU_DATA_FORMAT", BS_MUL_SHIFT_VALUE_NEG=_field(
                                   p, "DPU_DATA_FORMAT", "BS_MUL_SHIFT_VALUE_NEG") + 1)),
    "bs-mul-shift-neg-alone": lambda p: _set_word(p, "DPU_DATA_FORMAT", BS_MUL_SHIFT_VALUE_NEG=_field(
        p, "DPU_DATA_FORMAT", "BS_MUL_SHIFT_VALUE_NEG") + 1),
    "bs-cfg-per-tensor": lambda p: _set_word(p, "DPU_BS_CFG", BS_MUL_BYPASS=1),
    "ow-src": lambda p: _set_word(p, "DPU_BS_OW_CFG", OW_SRC=0),
    "brdma": lambda p: _set_word(p, "DPU_RDMA_BRDMA_CFG", BRDMA_DATA_USE=1),
    "bs-length": lambda p: _set_word(p, "DPU_RDMA_BS_LENGTH", BS_WORDS_M1=_field(p, "DPU_RDMA_BS_LENGTH",
                                                                                 "BS_WORDS_M1") // 2),
}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_stream_fields_are_read(case: ConvCase) -> None:
    prog, x = _program(case)
    dev = Device("rk3568", sim=True)
    try:
        base = _run(dev, prog, x)
        assert isinstance(base, np.ndarray), base
        silent = []
        for name, mutate in MUTANTS.items():
            p = copy.deepcopy(prog)
            mutate(p)
            out = _run(dev, p, x)
            if isinstance(out, np.ndarray) and np.array_equal(out, base):
                silent.append(name)
            print(f"{case.name} {name}: {'refused: ' + out[:90] if isinstance(out, str) else 'output changed'}")
        assert not silent, f"mutants the simulator does not see: {silent}"
    finally:
        dev.close()
