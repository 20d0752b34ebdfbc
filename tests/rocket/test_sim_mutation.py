"""The simulator reads every register field Mesa's streams set (DEVELOPERS.md: "if flipping a register field
does not change the simulated result, the simulator is not reading it").

For a few golden streams chosen to cover the features (multi-plane input, several output surfaces and
groups, padding, pad values, the raw single-channel path, depthwise, CLIP_TRUNCATE, a two-task operation
with WEIGHT_REUSE), every register field written by the first task is mutated (its lowest and its highest
bit flipped, one at a time), and so are the special words and a few weight and bias bytes. Each mutant must
either change the output or make the simulator report an error. A mutant that changes nothing is only
accepted for the fields in DONT_CARE, each with its reason and the condition under which it holds; the
list is mirrored in docs/hardware/rocket-sim.md.
"""

from __future__ import annotations

import base64
import copy
import struct
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from teflon import compiler
from teflon.hw.regmap import Field
from teflon.modelgen import ConvCase, PoolCase
from teflon.native import Device, NativeError, Runner
from teflon.program import Program
from teflon.rocket import target
from teflon.rocket.rounding import shift_even

from .graphs import conv_add_graph
from .sim_golden import GOLDEN, VALUE_MASK, golden_program, load, random_input, task_words

pytestmark = pytest.mark.usefixtures("delegate_library")

STREAMS = [
    "conv-in14x14x120-oc32-k3-s1-valid-zp122-izp100",  # 8 input planes, pad value irrelevant (VALID)
    "conv-in28x28x16-oc64-k3-s2-same-zp151",  # SAME padding (right/bottom only), stride 2
    "conv-in8x8x32-oc128-k5-s1-valid-zp122",  # 4 output groups of 2 surfaces
    "conv-in28x28x32-oc32-k3-s1-same-zp74-izp0",  # pad value 0xFFFF8080
    "conv-in28x28x64-oc32-k5-s1-same-zp74-trunc",  # CLIP_TRUNCATE
    "conv-in28x28x1-oc16-k3-s1-same-zp95",  # raw single-channel (ARGB/CVT) path
    "dwconv-in14x14x96-k3-s2-same-zp151",  # depthwise, 2 groups of 64 channels
    "conv-in56x56x120-oc32-k3-s1-same-zp74",  # two tasks, WEIGHT_REUSE, chain words
]
AVAILABLE = [s for s in STREAMS if (GOLDEN / f"{s}.json").is_file()]

Params = dict[str, Any]


def _in_planes(p: Params) -> int:
    return -(-p["input"]["shape_nhwc"][3] // 16)


def _out_surfaces(p: Params) -> int:
    return -(-p["output"]["shape_nhwc"][3] // 16)


def _always(p: Params) -> bool:
    return True


# (register, field) -> (reason, condition on the golden params under which "no change" is expected)
DONT_CARE: dict[tuple[str, str], tuple[str, Callable[[Params], bool]]] = {
    ("PC_BASE_ADDRESS", "PC_SOURCE_ADDR"): (
        (
            "in-stream chain pointer: accel/rocket kicks every task itself with TASK_NUMBER 1, so the PC never "
            "follows it; the simulator only checks it points into a buffer"
        ),
        _always,
    ),
    ("PC_REGISTER_AMOUNTS", "PC_DATA_AMOUNT"): (
        "in-stream chain length: not followed under per-task kicks; only checked against the chained buffer",
        _always,
    ),
    ("CNA_CBUF_CON0", "DATA_BANK"): (
        "CBUF bank split: any split in which the task's rows and weights still fit computes the same",
        _always,
    ),
    ("CNA_CBUF_CON0", "WEIGHT_BANK"): (
        "CBUF bank split: any split in which the task's rows and weights still fit computes the same",
        _always,
    ),
    ("CNA_CBUF_CON0", "WEIGHT_REUSE"): (
        ("clearing it only reloads the same weights from memory (setting it without resident weights is an error)"),
        _always,
    ),
    ("CNA_DMA_CON2", "SURF_STRIDE"): (
        "plane pitch of the input: unused when the input has a single 16-channel plane",
        lambda p: _in_planes(p) == 1,
    ),
    ("CNA_DATA_SIZE1", "DATAIN_CHANNEL_REAL"): (
        (
            "raising it within the last 16-channel group: those channels carry padding weights (zw - 0x80), whose "
            "products cancel exactly against the OW term whatever the input bytes"
        ),
        _always,
    ),
    ("CNA_PAD_CON1", "PAD_VALUE"): (
        "pad value: unused when no window reaches into padding (VALID)",
        lambda p: p["padding"] == "VALID",
    ),
    ("DPU_DST_SURF_STRIDE", "DST_SURF_STRIDE"): (
        "pitch between the 16-channel surfaces of a group: unused when the output has one surface",
        lambda p: _out_surfaces(p) == 1,
    ),
    ("DPU_SURFACE_ADD", "SURF_ADD"): (
        "pitch between groups of 32 (64 depthwise) channels: unused when the output has one group",
        lambda p: _out_surfaces(p) <= (4 if p["depthwise"] else 2),
    ),
}


def _program_with(d: dict[str, Any], task: int, index: int, word: int) -> Program:
    prog = golden_program(d)
    buf = prog.buffer("op0.regcmd")
    data = bytearray(buf.data or b"")
    off = d["outputs"]["operations"][0]["tasks"][task]["regcmd_offset_in_bo"]
    struct.pack_into("<Q", data, off + 8 * index, word)
    buf.data = bytes(data)
    return prog


def _program_with_byte(d: dict[str, Any], name: str, pos: int, mask: int) -> Program:
    prog = golden_program(d)
    buf = prog.buffer(name)
    data = bytearray(buf.data or b"")
    data[pos] ^= mask
    buf.data = bytes(data)
    return prog


def _outcome(dev: Device, prog: Program, x: np.ndarray, base: np.ndarray) -> str:
    try:
        out = Runner(dev, prog).run({0: x})[3]
    except NativeError:
        return "error"
    return "unchanged" if np.array_equal(out, base) else "changed"


def _mutants(d: dict[str, Any]) -> list[tuple[str, str, int, int, int]]:
    """(register, field, task, word index, mutated word) for every field of task 0 (and task 1's
    WEIGHT_REUSE), the lowest and highest bit of each field flipped."""
    rm = target("rk3588").regmap
    tasks = d["outputs"]["operations"][0]["tasks"]
    out = []
    for ti, task in enumerate(tasks[:2]):
        words = task_words(task)  # address words hold offsets (relocated at load)
        for i, w in enumerate(words):
            _unit, name, _ = rm.decode(w)
            if ti == 1 and name != "CNA_CBUF_CON0":
                continue
            if name in ("SYNC", "OP_ENABLE", "NOP"):
                for bit in (0, 3, 31):  # value bits
                    out.append((name, "value", ti, i, w ^ (1 << (16 + bit))))
                out.append((name, "offset", ti, i, w ^ (1 << 2)))
                out.append((name, "target", ti, i, w ^ (1 << 49)))
                continue
            later = [
                j
                for j in range(i + 1, len(words))
                if (words[j] & 0xFFFF) == (w & 0xFFFF) and (words[j] >> 48) == (w >> 48)
            ]
            if later:
                continue  # overwritten before the op-enable: no effect by definition
            for f in rm.register(name).fields:
                for bit in sorted({f.lo, f.hi}):
                    out.append((name, f.name, ti, i, w ^ (1 << (16 + bit))))
    return out


@pytest.fixture(scope="module")
def sim() -> Device:
    dev = Device("rk3588", sim=True)
    yield dev
    dev.close()


@pytest.mark.skipif(not AVAILABLE, reason=f"no golden rocket-rk3588 files under {GOLDEN}")
@pytest.mark.parametrize("stem", AVAILABLE)
def test_every_field_is_read(sim: Device, stem: str) -> None:
    d = load(GOLDEN / f"{stem}.json")
    p = d["params"]
    x = random_input(d, seed=1)
    base = Runner(sim, golden_program(d)).run({0: x})[3]
    counts = {"changed": 0, "error": 0, "unchanged": 0}
    unread = []
    for reg, field, ti, i, word in _mutants(d):
        result = _outcome(sim, _program_with(d, ti, i, word), x, base)
        counts[result] += 1
        if result == "unchanged":
            dc = DONT_CARE.get((reg, field))
            if dc is None or not dc[1](p):
                unread.append(f"task {ti} word {i} {reg}.{field} -> 0x{word:016x}")
    # a few weight and bias bytes
    op = d["outputs"]["operations"][0]
    nw = len(base64.b64decode(op["weights_bo"]["packed_b64"]))
    wi = 16 if _in_planes(p) == 1 else 32
    taps = p["kernel_hw"][0] * p["kernel_hw"][1]
    for pos in sorted({0, 1 if p["depthwise"] else wi, (taps // 2) * wi}):
        if pos < nw:
            r = _outcome(sim, _program_with_byte(d, "op0.weights", pos, 0x40), x, base)
            counts[r] += 1
            if r == "unchanged":
                unread.append(f"weight byte {pos}")
    oc = p["output"]["shape_nhwc"][3]
    for ch in (0, oc - 1):
        r = _outcome(sim, _program_with_byte(d, "op0.bias", 4 * ch + 2, 0x40), x, base)
        counts[r] += 1
        if r == "unchanged":
            unread.append(f"bias of channel {ch}")
    print(f"{stem}: {counts}")
    assert not unread, "mutations with no effect (field not read by the simulator?):\n  " + "\n  ".join(unread)


# ---- the fused ADD's element-wise operand (DPU EW stage, DPU_RDMA operand read), both generations -------------

# The registers that carry the fused ADD: every field of each must change the output or be refused.
EW_REGISTERS = {
    "rk3588": ("DPU_EW_CFG", "DPU_EW_CVT_OFFSET_VALUE", "DPU_EW_CVT_SCALE_VALUE", "DPU_RDMA_SRC_BASE_ADDR",
               "DPU_RDMA_ERDMA_CFG", "DPU_RDMA_EW_BASE_ADDR", "DPU_RDMA_EW_SURF_STRIDE", "DPU_RDMA_FEATURE_MODE_CFG",
               "DPU_RDMA_SURF_NOTCH", "DPU_RDMA_EW_SURF_NOTCH"),
    "rk3576": ("DPU_EW_CFG", "DPU_EW_CVT_OFFSET_VALUE", "DPU_EW_CVT_SCALE_VALUE", "DPU_RDMA_SRC_BASE_ADDR",
               "DPU_RDMA_ERDMA_CFG", "DPU_RDMA_EW_BASE_ADDR", "DPU_RDMA_EW_SURF_STRIDE", "DPU_RDMA_FEATURE_MODE_CFG",
               "DPU_RDMA_SURF_NOTCH", "DPU_RDMA_EW_SURF_NOTCH"),
}
# 16x16x32 -> 32 1x1: two operand surfaces, a plane of 256 atoms (above Mesa's 12-atom minimum stride)
EW_CASE = ConvCase("conv2d", 16, 16, 32, 32, 1, 1, "same", dtype="int8", seed=3)


@pytest.mark.parametrize("soc", ["rk3588", "rk3576"])
def test_every_ew_field_is_read(soc: str) -> None:
    prog = compiler.compile(conv_add_graph(EW_CASE), [0, 1], [0, 4], [5], soc)
    assert len(prog.operations) == 1 and prog.operations[0].kind == "CONV_2D+ADD"
    rm = target(soc).regmap
    task = prog.operations[0].tasks[0]
    words = struct.unpack_from(f"<{task.nbytes // 8}Q", prog.buffer(task.buffer).data or b"", task.offset)
    rng = np.random.default_rng(5)
    inputs = {0: rng.integers(-128, 128, size=EW_CASE.input_shape, dtype=np.int8),
              4: rng.integers(-128, 128, size=EW_CASE.output_shape, dtype=np.int8)}
    dev = Device(soc, sim=True)
    try:
        runner = Runner(dev, prog)
        base = runner.run(inputs)[5]
        # the operand is feature traffic: the input rows (2 planes of 16x16 atoms) plus the operand's 2 surfaces
        (counters,) = runner.task_counters()
        assert counters["feature_rd"] == 2 * 256 * 16 + 2 * 256 * 16, counters
        runner.close()

        def outcome(p: Program, x: dict[int, np.ndarray]) -> str:
            try:
                out = Runner(dev, p).run(x)[5]
            except NativeError:
                return "error"
            return "unchanged" if np.array_equal(out, base) else "changed"

        unread, seen = [], set()
        for i, w in enumerate(words):
            _unit, name, _ = rm.decode(w)
            if name not in EW_REGISTERS[soc]:
                continue
            seen.add(name)
            for f in rm.register(name).fields or (Field("VALUE", 0, 31),):
                for bit in sorted({f.lo, f.hi}):
                    mutant = copy.deepcopy(prog)
                    buf = mutant.buffer(task.buffer)
                    data = bytearray(buf.data or b"")
                    struct.pack_into("<Q", data, task.offset + 8 * i, w ^ (1 << (16 + bit)))
                    buf.data = bytes(data)
                    if outcome(mutant, inputs) == "unchanged":
                        unread.append(f"word {i} {name}.{f.name} bit {bit}")
        assert seen == set(EW_REGISTERS[soc]), f"not emitted: {set(EW_REGISTERS[soc]) - seen}"
        # the operand's bytes are read: one element of each 16-channel surface
        for c in (0, EW_CASE.out_c - 1):
            x = dict(inputs)
            x[4] = inputs[4].copy()
            x[4][0, 5, 7, c] ^= 0x40
            if outcome(prog, x) == "unchanged":
                unread.append(f"operand element (5, 7, {c})")
    finally:
        dev.close()
    assert not unread, "mutations with no effect (field not read by the simulator?):\n  " + "\n  ".join(unread)


# ---------------------------------------------------------------------------------------------------------------
# PPU pooling tasks (op-enable 0x60) of both generations: every field of the pool task is read or rejected
# ---------------------------------------------------------------------------------------------------------------

POOL_CASES = [
    PoolCase(28, 28, 32, filter=3, stride=2, padding="same", dtype="int8", op="max"),  # pads consumed, 2 planes
    PoolCase(9, 9, 40, filter=5, stride=2, dtype="int8"),  # average, 3 planes, stride 2
    PoolCase(7, 7, 16, filter=7, stride=1),  # global average, one plane, uint8
]
# Fields that cannot change a pool's result, with the condition that makes them so.
POOL_DONT_CARE: dict[tuple[str, str], Callable[[PoolCase], bool]] = {
    # one output row/column never moves the window: the stride is not used
    ("PPU_POOLING_KERNEL_CFG", "KERNEL_STRIDE_WIDTH"): lambda c: c.op != "max" and c.filter == c.in_w,
    ("PPU_POOLING_KERNEL_CFG", "KERNEL_STRIDE_HEIGHT"): lambda c: c.op != "max" and c.filter == c.in_h,
    # a single 16-channel surface: the surface strides are never applied
    ("PPU_RDMA_SRC_SURF_STRIDE", "SRC_SURF_STRIDE"): lambda c: c.in_c <= 16,
    # read: its lowest bit moves sum x recip by far less than half an LSB, which no window sum of this input
    # brings across a rounding boundary (higher bits are caught)
    ("PPU_RECIP_KERNEL_WIDTH", "RECIP_KERNEL_WIDTH"): lambda c: c.op != "max",
    ("PPU_RECIP_KERNEL_HEIGHT", "RECIP_KERNEL_HEIGHT"): lambda c: c.op != "max",
    # the trailer's next-task pointer: the kernel kicks every task itself; it only has to point into a buffer
    ("PC_BASE_ADDRESS", "PC_SOURCE_ADDR"): lambda c: True,
}


def _pool_program(case: PoolCase, device: str) -> Program:
    from teflon import bridge, load_delegate
    from teflon.reference import make_interpreter

    with bridge.capture() as cap:
        make_interpreter(case.build(), [load_delegate(device=device, sim="1")], reference=True)
    assert len(cap.programs) == 1 and cap.programs[0][1].operations[0].kind.endswith(("POOL_2D", "MEAN"))
    return cap.programs[0][1]


@pytest.mark.parametrize("device", ["rk3588", "rk3576"])
@pytest.mark.parametrize("case", POOL_CASES, ids=str)
def test_every_pool_field_is_read(device: str, case: PoolCase) -> None:
    prog = _pool_program(case, device)
    rm = target(device).regmap
    regcmd = prog.buffer("op0.regcmd").data or b""
    words = list(struct.unpack(f"<{len(regcmd) // 8}Q", regcmd))
    inp = next(b for b in prog.io if b.direction == "in")
    out_t = next(b.tensor for b in prog.io if b.direction == "out")
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (1, case.in_h, case.in_w, case.in_c)).astype(np.dtype(case.dtype))
    dev = Device(device, sim=True)
    try:
        base = Runner(dev, prog).run({inp.tensor: x})[out_t]
        unread, counts = [], {"changed": 0, "error": 0, "unchanged": 0}
        for i, w in enumerate(words):
            if w == 0:
                continue
            _unit, name, _ = rm.decode(w)
            fields = [("value", b) for b in (0, 5)] if name in ("SYNC", "OP_ENABLE", "NOP") else \
                [(f.name, b) for f in rm.register(name).fields for b in sorted({f.lo, f.hi})]
            for fname, bit in fields:
                original = prog.buffer("op0.regcmd").data
                data = bytearray(regcmd)
                struct.pack_into("<Q", data, 8 * i, w ^ (1 << (16 + bit)))
                prog.buffer("op0.regcmd").data = bytes(data)
                try:
                    out = Runner(dev, prog).run({inp.tensor: x})[out_t]
                    result = "unchanged" if np.array_equal(out, base) else "changed"
                except NativeError:
                    result = "error"
                finally:
                    prog.buffer("op0.regcmd").data = original
                counts[result] += 1
                dc = POOL_DONT_CARE.get((name, fname))
                if result == "unchanged" and not (dc and dc(case) and (bit == 0 or "RECIP" not in name)):
                    unread.append(f"word {i} {name}.{fname} bit {bit}")
    finally:
        dev.close()
    print(f"{device} {case}: {counts}")
    assert not unread, "mutations with no effect:\n  " + "\n  ".join(unread)


# --------------------------------------------------------------------------------------------------------------
# The DPU-only LUT program (rocket/rk3588/dpu.py): compiled here from a graph, no golden file needed
# --------------------------------------------------------------------------------------------------------------

# (register, field) -> why flipping it may leave the output unchanged in the LUT program
LUT_DONT_CARE: dict[tuple[str, str], str] = {
    ("DPU_LUT_CFG", "LUT_HYBRID_PRIORITY"): (
        "consulted only when an input hits both tables: never with START..END hits (the ranges are disjoint); set "
        "to LO for hardware that decides hits by table depth as NVDLA does"),
    ("DPU_LUT_CFG", "LUT_UFLOW_PRIORITY"): "consulted only when an input underflows both tables (none does)",
    ("DPU_LUT_CFG", "LUT_OFLOW_PRIORITY"): "consulted only when an input overflows both tables (none does)",
    ("PC_REGISTER_AMOUNTS", "PC_DATA_AMOUNT"): DONT_CARE[("PC_REGISTER_AMOUNTS", "PC_DATA_AMOUNT")][0],
}


def _lut_graph(dtype: str, silu: bool) -> Any:
    from teflon.ir import Graph, Operation, Quant, Tensor

    def t(i: int, scale: float, zp: int) -> Tensor:
        return Tensor(i, dtype, (1, 5, 7, 20), Quant(np.array([scale], np.float32), np.array([zp], np.int32)))

    qmin = -128 if dtype == "int8" else 0
    tensors = {0: t(0, 0.04, qmin + 120), 1: t(1, 1 / 256, qmin)}
    ops = [Operation(0, "LOGISTIC", [0], [1])]
    if silu:
        tensors[2] = t(2, 0.02, qmin + 40)
        ops.append(Operation(1, "MUL", [0, 1], [2], {"activation": "NONE"}))
    return Graph(tensors, ops)


def _field_flips(rm: Any, name: str, w: int) -> list[tuple[str, int]]:
    """(field, word) for the lowest and highest bit of each field of `w` flipped (SYNC / OP_ENABLE: value bits)."""
    if name in ("SYNC", "OP_ENABLE"):
        return [("value", w ^ (1 << (16 + b))) for b in (0, 3, 31)]
    return [(f.name, w ^ (1 << (16 + bit))) for f in rm.register(name).fields for bit in sorted({f.lo, f.hi})]


@pytest.mark.parametrize("silu", [False, True], ids=["logistic-in5x7x20-i8", "silu-in5x7x20-i8"])
def test_lut_program_fields_are_read(sim: Device, silu: bool) -> None:
    rm = target("rk3588").regmap
    graph = _lut_graph("int8", silu)
    out_t = 2 if silu else 1
    nodes = [op.index for op in graph.operations]
    prog = target("rk3588").compile(graph, nodes, [0], [out_t])
    x = np.random.default_rng(3).integers(-128, 128, (1, 5, 7, 20)).astype(np.int8)
    x.reshape(-1)[:256] = np.arange(-128, 128)  # every table entry is used
    base = Runner(sim, prog).run({0: x})[out_t]
    buf = prog.buffer("op0.regcmd")
    words = list(struct.unpack(f"<{len(buf.data or b'') // 8}Q", buf.data or b""))
    counts = {"changed": 0, "error": 0, "unchanged": 0}
    unread = []
    data_seen = 0
    for i, w in enumerate(words):
        if w == 0:
            continue
        _unit, name, _ = rm.decode(w)
        if name == "DPU_LUT_ACCESS_DATA":
            data_seen += 1
            if data_seen % 37 != 1:  # a sample of the 512 table words
                continue
        if name not in ("SYNC", "OP_ENABLE"):
            later = [j for j in range(i + 1, len(words)) if (words[j] & 0xFFFF) == (w & 0xFFFF) and j > i]
            if later and name not in ("DPU_LUT_ACCESS_CFG", "DPU_LUT_ACCESS_DATA"):
                continue  # overwritten before the op-enable
        for field, word in _field_flips(rm, name, w):
            mutant = golden_free_program(prog, i, word)
            try:
                out = Runner(sim, mutant).run({0: x})[out_t]
                result = "unchanged" if np.array_equal(out, base) else "changed"
            except NativeError:
                result = "error"
            counts[result] += 1
            if result == "unchanged" and (name, field) not in LUT_DONT_CARE:
                unread.append(f"word {i} {name}.{field} -> 0x{word:016x}")
    print(f"LUT program{' (SiLU)' if silu else ''}: {counts}")
    assert not unread, "mutations with no effect (field not read by the simulator?):\n  " + "\n  ".join(unread)


def golden_free_program(prog: Program, index: int, word: int) -> Program:
    """A copy of `prog` with regcmd word `index` of op0 replaced."""
    import copy

    p = copy.deepcopy(prog)
    buf = p.buffer("op0.regcmd")
    data = bytearray(buf.data or b"")
    struct.pack_into("<Q", data, 8 * index, word)
    buf.data = bytes(data)
    return p


# ---- the DPU BS stage beyond Mesa's words: per-channel operands from the BS stream and the ReLU / ReLUX clamp ----
# (programs compiled by the teflon encoder: no Mesa stream uses these registers)

BS_REGISTERS = ("DPU_BS_CFG", "DPU_BS_ALU_CFG", "DPU_BS_MUL_CFG", "DPU_BS_RELUX_CMP_VALUE", "DPU_BS_OW_CFG",
                "DPU_BS_OW_OP", "DPU_RDMA_BRDMA_CFG")
RK3576_CLAMP_REGISTERS = ("DPU_UNDOC_4060", "DPU_CLAMP2_MIN", "DPU_CLAMP2_MAX", "DPU_CLAMP3_MIN", "DPU_CLAMP3_MAX")
_PC_RELU6 = ConvCase("conv2d", 14, 14, 16, 32, 3, 1, "same", "relu6", dtype="int8", per_channel=True, output_zp=-20,
                     output_scale=0.06)
_PC_DW_RELU = ConvCase("dwconv", 28, 28, 32, None, 3, 1, "same", "relu", dtype="int8", per_channel=True, output_zp=10)
_U8_RELU6 = ConvCase("conv2d", 14, 14, 16, 32, 3, 1, "same", "relu6", dtype="uint8", output_zp=30, output_scale=0.06)
_I8_DW_RELU = ConvCase("dwconv", 28, 28, 32, None, 3, 1, "same", "relu", dtype="int8", output_zp=10)
_PC_PLAIN = ConvCase("conv2d", 14, 14, 16, 32, 3, 1, "same", dtype="int8", per_channel=True)
BS_CASES = [  # (device, case, registers mutated)
    # per-channel without a ReLU (which would hide negative products): DATA_FORMAT's BS_MUL_SHIFT_VALUE_NEG
    ("rk3588", _PC_PLAIN, ("DPU_DATA_FORMAT", "DPU_BS_MUL_CFG")),
    ("rk3588", _PC_RELU6, BS_REGISTERS),  # per-channel direct, ReLUX
    ("rk3588", _PC_DW_RELU, BS_REGISTERS),  # per-channel depthwise, ReLU
    ("rk3588", _U8_RELU6, BS_REGISTERS),  # per-tensor, ReLUX
    ("rk3576", _U8_RELU6, RK3576_CLAMP_REGISTERS),  # CLAMP2/3 (0, X)
    ("rk3576", _I8_DW_RELU, RK3576_CLAMP_REGISTERS),  # CLAMP2/3 (0, INT32_MAX)
]
BOUND_FIELDS = ("BS_RELUX_CMP_DAT", "CLAMP2_MAX")


def _bs_dont_care(field: str, word: int, info: dict[str, Any]) -> str | None:
    """Why a mutant may leave the output unchanged: an upper clamp bound raised within the OUT_CVT step it clamps
    to (requant.clamp_bound: every bound X' with R(X') == R(X) gives the same bytes)."""
    clamp = info.get("clamp")
    if field not in BOUND_FIELDS or not clamp or clamp[1] is None:
        return None
    scale, shift = info["out_cvt"]
    x, x2 = int(clamp[1]), (word >> 16) & 0xFFFFFFFF

    def r(u: int) -> int:
        return shift_even(u * scale, shift)

    return "bound moved inside its OUT_CVT step" if x2 < 1 << 31 and r(x2) == r(x) else None


@pytest.mark.parametrize(("device", "case", "registers"), BS_CASES, ids=lambda v: v.name if isinstance(v, ConvCase)
                         else v if isinstance(v, str) else None)
def test_bs_stage_fields_are_read(device: str, case: ConvCase, registers: tuple[str, ...]) -> None:
    """Every field of the DPU stages the encoder programs beyond Mesa's words (RK3588 BS per-channel operands and
    ReLU/ReLUX, RK3576 CLAMP2/3) changes the output or is refused; so does every operand of the BS stream."""
    from teflon import compiler
    from teflon.modelgen import random_inputs

    from .graphs import conv_graph

    g = conv_graph(case)
    assert compiler.supported(g, device)[0][0]
    prog = compiler.compile(g, [0], [0], [3], device)
    info = prog.operations[0].info
    x = random_inputs(case.build(), seed=1)[0]
    rm = target(device).regmap
    task = prog.operations[0].tasks[0]
    regcmd = prog.buffer(task.buffer).data or b""
    words = struct.unpack_from(f"<{task.nbytes // 8}Q", regcmd, task.offset)
    with Device(device, sim=True) as dev:
        base = Runner(dev, prog).run({0: x})[3]

        def run(name: str, data: bytes) -> str:
            p2 = compiler.compile(g, [0], [0], [3], device)
            p2.buffer(name).data = data
            try:
                out = Runner(dev, p2).run({0: x})[3]
            except NativeError:
                return "error"
            return "unchanged" if np.array_equal(out, base) else "changed"

        unread, counts = [], {"changed": 0, "error": 0, "unchanged": 0}
        for i, w in enumerate(words):
            _unit, name, _ = rm.decode(w)
            if name not in registers:
                continue
            for f in rm.register(name).fields:
                for bit in sorted({f.lo, f.hi}):
                    word = w ^ (1 << (16 + bit))
                    data = bytearray(regcmd)
                    struct.pack_into("<Q", data, task.offset + 8 * i, word)
                    r = run(task.buffer, bytes(data))
                    counts[r] += 1
                    if r == "unchanged" and not _bs_dont_care(f.name, word, info):
                        unread.append(f"{name}.{f.name} bit {bit} -> 0x{word:016x}")
        if device == "rk3576":
            # CLAMP3 must repeat CLAMP2, so a bound is moved in both pairs at once: to half the upper bound
            hi = info["clamp"][1] or 1 << 16
            data = bytearray(regcmd)
            for i, w in enumerate(words):
                if rm.decode(w)[1] in ("DPU_CLAMP2_MAX", "DPU_CLAMP3_MAX"):
                    struct.pack_into("<Q", data, task.offset + 8 * i, (w & ~VALUE_MASK) | (hi // 2) << 16)
            r = run(task.buffer, bytes(data))
            counts[r] += 1
            if r != "changed":
                unread.append(f"CLAMP2/3_MAX both {hi // 2}: {r}")
        if device == "rk3588":
            # the BS stream: per-tensor int32 bias; per-channel 64-byte groups of 8 channels (int32 A[8], int16 OW[8],
            # int16 MUL[8]): the offsets of channel ch's operands (its int32 halves, OW, MUL)
            bias = prog.buffer("op0.bias").data or b""
            for ch in (0, case.channels_out - 1):
                if info["per_channel"]:
                    grp, j = 64 * (ch // 8), ch % 8
                    offsets = (grp + 4 * j, grp + 4 * j + 2, grp + 32 + 2 * j, grp + 48 + 2 * j)
                else:
                    offsets = (4 * ch, 4 * ch + 2)
                for pos in offsets:
                    data = bytearray(bias)
                    data[pos + 1] ^= 0x01  # bit 8 of each operand: large enough to move an output
                    r = run("op0.bias", bytes(data))
                    counts[r] += 1
                    if r == "unchanged":
                        unread.append(f"BS stream channel {ch} byte {pos + 1}")
    print(f"{device} {case.name}: {counts}")
    assert not unread, "mutations with no effect (field not read by the simulator?):\n  " + "\n  ".join(unread)


# --------------------------------------------------------------------------------------------------------------
# The RK3576 LUT program (rocket/rk3576/lut.py): the vendor's LUT-load task, then a 1x1 depthwise copy convolution
# with the LUT in its EW stage
# --------------------------------------------------------------------------------------------------------------

# (register, field) -> why flipping it may leave the output unchanged in the RK3576 LUT program
LUT76_DONT_CARE: dict[tuple[str, str], str] = {
    ("PC_BASE_ADDRESS", "PC_SOURCE_ADDR"): DONT_CARE[("PC_BASE_ADDRESS", "PC_SOURCE_ADDR")][0],
    ("PC_REGISTER_AMOUNTS", "PC_DATA_AMOUNT"): DONT_CARE[("PC_REGISTER_AMOUNTS", "PC_DATA_AMOUNT")][0],
    ("CNA_PAD_CON1", "PAD_VALUE"): "a 1x1 convolution without padding reads no padded tap",
    ("DPU_SURFACE_ADD", "SURF_ADD"): "20 channels are one depthwise group of 64: the jump to a next group is not taken",
    ("DPU_RDMA_BS_SHIFT_ADDR", "BS_SHIFT_ADDR"): "the shift word is 0 in a zeroed 256-byte block: a byte later reads 0 too",
    ("DPU_OUT_CVT_SCALE", "OUT_CVT_SCALE"): "bit 0: T * (2^14 + 1) differs from T * 2^14 by |T| <= 2^15, far below the "
                                            "shift's half (2^21), so the exact division by 256 is unchanged",
    ("DPU_LUT_ACCESS_DATA", "LUT_ACCESS_DATA"): "bit 0 of an entry: OUT_CVT divides the entries (256 y) by 256 with "
                                                "rounding, so bits 0..6 never reach the output (bit 15 is caught)",
}
# Also don't-care: every field of the head's LUT_ACCESS_CFG pair, and of table 0's LUT_ACCESS_CFG word where the
# mutant still loads T0[512] (table 1 is rewritten in full by the second load).
LUT76_JOIN = 512  # table 0's last entry: v = 0 (s = -128) is the table join, read as T0[512] = T1[0]


def _lut76_read_entry(table: int, index: int) -> bool:
    """Table words the program reads: v = 32 (s + 128) in [0, 8160] reads table 1 entries 0..255, and v = 0 (the
    join) needs table 0's last entry as well."""
    return (table == 1 and index < 256) or (table == 0 and index == LUT76_JOIN)


def test_lut_program_fields_are_read_rk3576(delegate_library: None) -> None:
    rm = target("rk3576").regmap
    graph = _lut_graph("int8", False)
    prog = target("rk3576").compile(graph, [0], [0], [1])
    x = np.random.default_rng(3).integers(-128, 128, (1, 5, 7, 20)).astype(np.int8)
    x.reshape(-1)[:256] = np.arange(-128, 128)  # every table 1 entry 0..255 is used
    with Device("rk3576", sim=True) as sim:
        base = Runner(sim, prog).run({0: x})[1]
        buf = prog.buffer("op0.regcmd")
        words = list(struct.unpack(f"<{len(buf.data or b'') // 8}Q", buf.data or b""))
        counts = {"changed": 0, "error": 0, "unchanged": 0}
        unread = []
        table, index = 0, 0
        for i, w in enumerate(words):
            if w == 0:
                continue
            _unit, name, fields_now = rm.decode(w)
            if name == "DPU_LUT_ACCESS_CFG":
                table, index = int(fields_now.get("LUT_TABLE_ID", 0)), 0
            if name == "DPU_LUT_ACCESS_DATA":
                index += 1
                if not _lut76_read_entry(table, index - 1) or (index % 37 != 1 and index - 1 != LUT76_JOIN):
                    continue  # a sample of the table words the program reads
            later = [j for j in range(i + 1, len(words)) if (words[j] & 0xFFFF) == (w & 0xFFFF)]
            if later and name == "CNA_UNDOC_1038" and words[later[0]] == w:
                continue  # written twice per task: the first word is overwritten before the op-enable
            for field, word in _field_flips(rm, name, w):
                mutant = golden_free_program(prog, i, word)
                try:
                    out = Runner(sim, mutant).run({0: x})[1]
                    result = "unchanged" if np.array_equal(out, base) else "changed"
                except NativeError:
                    result = "error"
                counts[result] += 1
                table0 = name == "DPU_LUT_ACCESS_CFG" and table == 0  # the head's pair or table 0's load
                if result == "unchanged" and (name, field) not in LUT76_DONT_CARE and not table0:
                    unread.append(f"word {i} {name}.{field} -> 0x{word:016x}")
    print(f"RK3576 LUT program: {counts}")
    assert not unread, "mutations with no effect (field not read by the simulator?):\n  " + "\n  ".join(unread)


def test_lut_consumer_needs_its_own_load_rk3576(delegate_library: None) -> None:
    """A split rk3576 LUT op runs load, consumer, load, consumer (the vendor's per-conv-half reload); without the
    second load the simulator refuses the second consumer instead of reusing the first load's tables; a consumer
    whose BN_BASE_ADDR is left at 0 is refused too."""
    from teflon.ir import Graph, Operation, Quant, Tensor

    def t(i: int, scale: float, zp: int) -> Tensor:
        return Tensor(i, "int8", (1, 96, 96, 64), Quant(np.array([scale], np.float32), np.array([zp], np.int32)))

    graph = Graph({0: t(0, 0.04, -8), 1: t(1, 1 / 256, -128)}, [Operation(0, "LOGISTIC", [0], [1])])
    prog = target("rk3576").compile(graph, [0], [0], [1])
    (job,) = prog.jobs
    assert len(job.tasks) == 4 and job.tasks[0].nbytes == job.tasks[2].nbytes != job.tasks[1].nbytes
    x = np.random.default_rng(5).integers(-128, 128, (1, 96, 96, 64)).astype(np.int8)
    mutant = copy.deepcopy(prog)
    mutant.jobs[0].tasks = [job.tasks[0], job.tasks[1], job.tasks[3]]
    # BN_BASE_ADDR (0x502C) left at 0 instead of relocated to the scratch buffer: refused (R76-USR's IOVA 0 warning)
    data = prog.buffer("op0.regcmd").data or b""
    bn = {8 * i for i, (w,) in enumerate(struct.iter_unpack("<Q", data)) if w >> 48 and (w & 0xFFFF) == 0x502C}
    at_zero = copy.deepcopy(prog)
    at_zero.relocs = [r for r in prog.relocs if not (r.buffer == "op0.regcmd" and r.offset in bn)]
    assert len(at_zero.relocs) == len(prog.relocs) - 2  # one per consumer task
    with Device("rk3576", sim=True) as sim:
        Runner(sim, prog).run({0: x})
        with pytest.raises(NativeError, match="loaded by the task immediately before it"):
            Runner(sim, mutant).run({0: x})
        with pytest.raises(NativeError, match="not IOVA 0"):
            Runner(sim, at_zero).run({0: x})
