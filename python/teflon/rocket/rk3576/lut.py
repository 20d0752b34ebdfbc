"""RK3576 per-element unary ops (a RocketUnary, ..unary_lower): the vendor's LUT-load task, then a 1x1 depthwise
copy convolution whose DPU EW stage reads the loaded table (docs/hardware/rocket-rk3576.md "The LUT on RK3576").

The convolution is the rk3576 encoder's own (stream.task_stream) with weight 1 per channel, so its accumulator is the
stored input s exactly. The coefficient stage (A = 128, C = 32, shift word 0) gives v = (s + 128) * 32, which lies in
[0, 8160]: inside the vendor's window (LE_START -16384, LO_END 16384, sel 5), in table 1 (v = 0: the join, where
T0[512] = T1[0]), on entry s + 128 with no fraction, so no interpolation and no tail ([INFERRED]: the measured gate
tolerates one output count, about 8 entries, so entry alignment awaits a board run; docs). Table 1 holds 256 times teflon.unary's exact stored output and OUT_CVT
(scale 2^14, shift 22) divides by 256 exactly. `exact_outputs` runs every stored input through that integer model;
the program is only emitted when it reproduces the table.

The stage arithmetic rests on [R76-USR] gregordinary/rocket-userspace (commit 33643e4,
include/npu_regcmd_rk3576.h, tests/rk3576_lut_probe.c), measured by its author on an RK3576: BS output
(acc + A) * C reaches the LUT with BN bypassed (0x4060 = 0x903), index = (v - LE_START) >> sel, table 1 from v = 0;
the register words of the consumer are the vendor's (../shared/golden/rocket-rk3576-ops, 24/24 consumers).
"""

from __future__ import annotations

import numpy as np

from ...hw.regmap import RegMap, RegMapError
from ...ir import Graph, memo
from ...program import Buffer, OpRecord, Program
from .. import assemble
from ..geometry import FEATURE_ATOM, SplitError, geometry
from ..identity_add import SINGLE_CHANNEL, depthwise_copy
from ..operations import RocketConv
from ..rounding import shift_even
from ..stream import (
    PINGPONG,
    ROLE_BIAS,
    ROLE_INPUT,
    ROLE_OUTPUT,
    ROLE_REGCMD,
    ROLE_SCRATCH,
    ROLE_WEIGHTS,
    Emitter,
    EncodeError,
    Stream,
    lut_words,
    regcmd_bytes,
)
from ..unary_lower import RocketUnary
from ..views import Views
from . import coefs, weights
from .regs import EW_CFG_BYPASS, EW_CFG_LUT, LUT_CFG_CONSUMER, LUT_CFG_LOAD, STREAM_ORDER
from .split import split
from .stream import NO_CLAMP, LayerParams, dpu_plane, link, task_stream

# The program's scratch buffer: the load task's 1x1x16 dummy cube (source and destination) and the consumers'
# DPU_RDMA 0x502C (BN_BASE_ADDR). [R76-USR] include/npu_regcmd_rk3576.h warns that a base left at 0 reads IOVA 0 and
# its probe gives that scratch 4 KiB; how much the NRDMA fetches there is not known, so teflon gives it as much.
SCRATCH = "scratch"
SCRATCH_BYTES = 4096
ENTRIES = 513  # per table: the vendor's load writes 513 words after each LUT_ACCESS_CFG [VENDOR76]
SEL = 5  # the vendor's window: 0x410C = 0x00050500, LE_START -16384, LO_END 16384 [VENDOR76]
LE_START = -(512 << SEL)
LO_END = 512 << SEL
BIAS_A = 128  # coefficient A: v = (s + 128) * C >= 0: table 1, and the join v = 0 (T0[512] = T1[0]) for s = -128
GAIN_C = 1 << SEL  # coefficient C: one entry per stored input
ENTRY_SHIFT = 8  # table entries hold 256 x the stored output (int16: -32768..32512)
OUT_CVT = (1 << 14, 22)  # (scale, shift): x 2^14 / 2^22 = / 256, exact on multiples of 256

# The vendor's LUT-load head (../shared/golden/rocket-rk3576-ops, every `dpu-lut-load` task, README §5): the conv
# program's DPU + DPU_RDMA registers in stream order with these values (absent: 0), over a 1x1x16 dummy cube.
LOAD_HEAD: dict[str, dict[str, int]] = {
    "DPU_S_POINTER": PINGPONG,
    "DPU_RDMA_S_POINTER": PINGPONG,
    "DPU_FEATURE_MODE_CFG": {"FLYING_MODE": 1, "OUTPUT_MODE": 2},
    "DPU_DST_SURF_STRIDE": {"DST_SURF_STRIDE": 1},
    "DPU_DATA_CUBE_CHANNEL": {"CHANNEL_M1": 15},
    "DPU_UNDOC_4030": {"LO": 0xF00, "CHANNEL_M1": 15},
    "DPU_UNDOC_4038": {"VALUE": 0x53},
    "DPU_BS_CFG": {"BS_MODE": 2},
    "DPU_BS_OW_CFG": {"N4": 2},
    **NO_CLAMP,
    "DPU_UNDOC_4060": {"VALUE": 0x903},
    "DPU_EW_CFG": {"VALUE": EW_CFG_BYPASS},
    "DPU_EW_CVT_SCALE_VALUE": {"EW_OP_CVT_SCALE": 1},
    "DPU_OUT_CVT_SCALE": {"OUT_CVT_SCALE": 1, "FP32TOFP16_EN": 1},
    "DPU_UNDOC_40C0": {"VALUE": 0x04440000},
    "DPU_UNDOC_40D0": {"VALUE": 0x0040FFFF},
    "DPU_UNDOC_4108": {"VALUE": LUT_CFG_LOAD},
    "DPU_RDMA_DATA_CUBE_CHANNEL": {"CHANNEL_M1": 15},
    "DPU_RDMA_ERDMA_CFG": {"ERDMA_DISABLE": 1},
    "DPU_RDMA_FEATURE_MODE_CFG": {"FLYING_MODE": 1, "EW_BIT3": 1},
}
LOAD_ADDRESSES = ("DPU_DST_BASE_ADDR", "DPU_RDMA_SRC_BASE_ADDR")  # the vendor stores 0; R76-USR a scratch buffer
HEAD_ORDER = ("DPU_S_POINTER", "DPU_RDMA_S_POINTER",
              *(n for n in STREAM_ORDER if n.startswith("DPU_") and not n.endswith("S_POINTER")))


def tables(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(table 0, table 1), int16[513] each: table 1 entry i = 256 x the stored output of stored input i - 128, the
    top entries repeat the last; table 0 holds the first output everywhere, so the two meet at the join v = 0
    (T0[512] = T1[0], as in every vendor load): s = -128 lands there, and either table gives its output."""
    t = np.asarray(table, np.int64) << ENTRY_SHIFT
    lo = np.full(ENTRIES, t[-1], np.int64)
    lo[: len(t)] = t
    return np.full(ENTRIES, t[0], np.int16), lo.astype(np.int16)


def exact_outputs(t0: np.ndarray, t1: np.ndarray) -> np.ndarray:
    """The stored output of every stored input -128..127 through the programmed stages, as integers: BS (acc + A)
    * C (shift word 0), the LUT ([R76-USR]: v < LE_START -> T0[0], v >= LO_END -> T1[512], else the table of v's
    sign at (v - start) >> sel; an input between entries is refused, and v = 0, the table join both measured ranges
    hold, only when T0's last entry equals T1[0]; an index past a table is refused), OUT_CVT (T * scale / 2^shift,
    rounding.shift_even, saturated). The entries are multiples of 256, so T * 2^14 is a multiple of 2^22 and the
    shift never meets a fraction, let alone a tie."""
    s = np.arange(-128, 128, dtype=np.int64)
    v = (s + BIAS_A) * GAIN_C
    step = 1 << SEL
    if np.any(v < LE_START) or np.any(v >= LO_END):
        raise EncodeError("LUT input outside the window")
    neg = v < 0
    pos = np.where(neg, v - LE_START, v)
    if np.any(pos % step):
        raise EncodeError("LUT input between two entries (interpolation)")
    idx = pos >> SEL
    if np.any(idx >= ENTRIES):
        raise EncodeError(f"LUT index past the {ENTRIES} entries of a table")
    if np.any(v == 0) and t0[-LE_START >> SEL] != t1[0]:
        raise EncodeError("LUT input on the table join 0 with T0[512] != T1[0]")
    t = np.where(neg, t0.astype(np.int64)[idx], t1.astype(np.int64)[idx])
    scale, shift = OUT_CVT
    return np.clip(shift_even(t * scale, shift), -128, 127)


def unary_conv(u: RocketUnary) -> RocketConv:
    """The 1x1 depthwise copy the table is applied to: weight 1 (zero point 0), so the accumulator is the stored
    input; its OUT_CVT and coefficients are set by `layer` (the scales here only name the identity)."""
    if u.in_c == 1:
        raise EncodeError(f"{u.kind} of a single-channel map: {SINGLE_CHANNEL}")
    one = np.float32(1.0)
    return depthwise_copy(u.nodes, u.input_tensor, u.output_tensor, u.dtype, (u.in_h, u.in_w, u.in_c), 1,
                          (u.in_zp, 0), (one, one, one))


def consumer_words(t0: np.ndarray, t1: np.ndarray) -> dict[str, dict[str, int]]:
    """The LUT registers of the consuming convolution: the vendor consumer's words (EW_CFG with the LUT on, LUT_CFG,
    the window, the end values = the tables' end entries, NRDMA_CFG 0x1A); BN stays bypassed (0x4060 0x903)."""
    lo, hi = int(t0[0]), int(t1[-1])
    return {
        "DPU_EW_CFG": {"VALUE": EW_CFG_LUT},
        "DPU_UNDOC_4108": {"VALUE": LUT_CFG_CONSUMER},
        "DPU_LUT_INFO": {"LUT_LE_INDEX_SELECT": SEL, "LUT_LO_INDEX_SELECT": SEL},
        **{f"DPU_LUT_LE_START_{i}": {"LUT_LE_START": LE_START} for i in range(4)},
        **{f"DPU_LUT_LO_END_{i}": {"LUT_LO_END": LO_END} for i in range(4)},
        "DPU_LUT_UFLOW_0": {"LUT_UFLOW_HI": lo},
        "DPU_LUT_UFLOW_1": {"LUT_UFLOW_LO": lo, "LUT_UFLOW_HI": lo},
        "DPU_LUT_OFLOW_0": {"LUT_OFLOW_HI": hi},
        "DPU_LUT_OFLOW_1": {"LUT_OFLOW_LO": hi, "LUT_OFLOW_HI": hi},
        "DPU_RDMA_UNDOC_5028": {"VALUE": 0x1A},
    }


def load_stream(rm: RegMap, t0: np.ndarray, t1: np.ndarray) -> Stream:
    """The vendor's LUT-load task body: the head, then each table from address 0 (write, table 0 / 1)."""
    e = Emitter(rm)
    for name in HEAD_ORDER:
        if name in LOAD_ADDRESSES:
            e.addr(name, ROLE_SCRATCH, 0)
        else:
            e.put(name, LOAD_HEAD.get(name, {}))
    lut_words(e, (t0.tolist(), t1.tolist()))
    return e.s


def layer(u: RocketUnary, in_plane: int) -> tuple[LayerParams, np.ndarray, np.ndarray, bytes]:
    """(the convolution's parameters, table 0, table 1, coefficient buffer); EncodeError when the integer model
    does not reproduce teflon.unary's table for every stored input."""
    t0, t1 = tables(u.table)
    got = exact_outputs(t0, t1)
    if not np.array_equal(got, np.asarray(u.table, np.int64)):
        bad = int(np.count_nonzero(got != u.table))
        raise EncodeError(f"{u.kind}: the RK3576 LUT program differs from the exact table on {bad} of 256 inputs")
    conv = unary_conv(u)
    try:
        sp = split(geometry(conv))
    except (SplitError, ValueError) as e:
        raise EncodeError(f"{u.kind}: {e}") from e
    c = u.in_c
    table = coefs.coefficient_table(np.full(c, BIAS_A), 0, np.full(c, GAIN_C), True)
    scale, shift = OUT_CVT
    p = LayerParams(conv, sp, in_plane, scale, shift, len(table), 0, lut=consumer_words(t0, t1))
    return p, t0, t1, coefs.coefficient_buffer(table, 0)


def streams(rm: RegMap, u: RocketUnary, in_plane: int,
            graph: Graph | None = None) -> tuple[list[Stream], list[int], bytes, bytes]:
    """([load, consumer] per task of the convolution, chained; their offsets; coefficient buffer; weights). With
    `graph` (the one `u` was lowered from) once per graph and input pitch: the support decision's check builds them,
    the partition's compile reuses them (a load task alone is 1121 words)."""
    return memo(graph, (__name__, tuple(u.nodes), in_plane), lambda: _streams(rm, u, in_plane))


def _streams(rm: RegMap, u: RocketUnary, in_plane: int) -> tuple[list[Stream], list[int], bytes, bytes]:
    p, t0, t1, coef = layer(u, in_plane)
    try:
        load = load_stream(rm, t0, t1)
        # one load before every consumer task, as the vendor's split programs do (rocket-rk3576-ops README "C,
        # non-conv ops": one LUT-load per conv half); nothing measured shows a table surviving a consumer task
        ss = [s for t in p.split.tasks for s in (Stream(list(load.words), list(load.relocs)), task_stream(rm, p, t))]
        offsets = link(rm, ss, range(0, len(ss), 2))
    except RegMapError as e:
        raise EncodeError(f"register limit: {e}") from e
    return ss, offsets, coef, bytes(weights.pack(p.conv.weights, 0, True))


def check(rm: RegMap, u: RocketUnary, graph: Graph | None = None) -> None:
    """The claim's check (unary_lower.claim): the program can be built, exactly (EncodeError otherwise); with a
    host-written input's pitch, which does not change what can be built."""
    streams(rm, u, u.in_h * u.in_w, graph)


def add_unary_op(prog: Program, rm: RegMap, k: int, u: RocketUnary, views: Views, plane: dict[int, int],
                 graph: Graph | None = None) -> None:
    """Operation k: one job of a LUT-load task before each of the convolution's tasks (the table lives in the LUT
    RAM between a load and its consumer, [R76-USR]: load and consumer in one job)."""
    in_plane = views.pitch(u.input_tensor, plane)
    if views.pitch(u.output_tensor, plane) != dpu_plane(u.in_h, u.in_w):
        raise EncodeError(f"tensor {u.output_tensor} lives in a buffer of another plane size than the {u.kind}'s map")
    names = {ROLE_INPUT: f"t{u.input_tensor}", ROLE_OUTPUT: f"t{u.output_tensor}", ROLE_WEIGHTS: f"op{k}.weights",
             ROLE_BIAS: f"op{k}.bias", ROLE_REGCMD: f"op{k}.regcmd", ROLE_SCRATCH: SCRATCH}
    names, addends = assemble.placed(names, views, lambda t: plane[t] * FEATURE_ATOM)
    ss, offsets, coef, packed = streams(rm, u, in_plane, graph)
    regcmd = assemble.patch_addends(regcmd_bytes(ss, offsets), ss, offsets, addends)
    if all(b.name != SCRATCH for b in prog.buffers):  # one per program, shared by its LUT operations
        prog.add_buffer(Buffer(SCRATCH, SCRATCH_BYTES))
    info = {"input_tensor": u.input_tensor, "output_tensor": u.output_tensor, "lut": u.kind, "macs": 0,
            "out_cvt": list(OUT_CVT), "shift_word": 0}
    assemble.add_operation(prog, names, (len(packed), packed), coef, regcmd, ss, offsets, True,
                           OpRecord(u.nodes, u.kind, [], info), also_written=(SCRATCH,))
