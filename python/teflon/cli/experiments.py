"""`python -m teflon doctor --experiments`: one tiny program per open hardware fact (docs/hardware/board-facts.md),
run on the device, its output compared with what each hypothesis predicts.

Each experiment builds its programs with the compiler and, where the fact is about one register word or stream
layout, changes exactly that word (`patch`) or compiles the layout each hypothesis implies. A hypothesis predicts,
for every run: the exact bytes (a model of the DPU stages the fact is about, every other value chosen so that the
rest of the datapath is an identity), the CPU reference within the single-op tolerance, a job timeout, or "not the
CPU's result" (wrong numbers or a refused program). The verdict is the one hypothesis every run agrees with, else
"none matched" (or "ambiguous"). On a board the device is the NPU (sim=0); without one the simulator runs each
fact on its SoC and the report says so; TEFLON_SIM_RULES switches the simulator's rule per fact (sim_rules.h), which
is how the tests show that the experiments tell every hypothesis apart.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from teflon import compiler, hw_facts
from teflon.fixedpoint import multiply_by_quantized_multiplier, quantize_multiplier
from teflon.ir import Graph, Operation, Quant, Tensor
from teflon.native import Device, NativeError, Runner
from teflon.program import Program
from teflon.rocket import target as rocket_target

NEAR_LSB = 1  # the single-op contract: a CPU reference is matched within 1 LSB


@dataclass(frozen=True)
class Expect:
    """What a hypothesis predicts for one run: kind "equal" (these bytes), "near" (the CPU reference within
    NEAR_LSB), "timeout" (the job never completes) or "other" (anything but the CPU's result)."""

    kind: str
    ref: np.ndarray | None = None


@dataclass
class Run:
    variant: str
    outcome: str  # ok, timeout, error
    ms: float
    message: str = ""
    output: np.ndarray | None = None
    cpu: np.ndarray | None = None  # the CPU reference of this run, where there is one


@dataclass
class Fact:
    id: str  # the TEFLON_SIM_RULES key
    number: int  # board-facts.md row
    title: str
    socs: tuple[str, ...]
    hypotheses: tuple[str, ...]
    run: Callable[[Device], tuple[list[Run], dict[str, list[Expect]]]]
    unbuilt: tuple[str, ...] = ()  # SoCs the fact concerns that have no experiment yet (said so in the report)


@dataclass
class Result:
    id: str
    number: int
    title: str
    soc: str | None
    hypotheses: list[str]
    verdict: str
    simulated: bool
    evidence: dict[str, Any] = field(default_factory=dict)
    runs: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""


# ---- building and running programs ------------------------------------------------------------------------------


def _q(scale: float, zp: int) -> Quant:
    return Quant(np.asarray([scale], np.float32), np.asarray([zp], np.int32), 0)


def _binary_graph(kind: str, shape: tuple[int, ...]) -> Graph:
    """ADD or MUL of two int8 maps; the first input has the coarser scale (the copy takes it, identity_add.py)."""
    return Graph({0: Tensor(0, "int8", shape, _q(0.05, 3)), 1: Tensor(1, "int8", shape, _q(0.04, -7)),
                  2: Tensor(2, "int8", shape, _q(0.1, 1))}, [Operation(0, kind, [0, 1], [2], {"activation": "NONE"})])


@dataclass(frozen=True)
class ConvSpec:
    """A convolution whose CPU reference conv_reference computes (TFLite's integer kernel arithmetic)."""

    h: int
    w: int
    c: int
    oc: int
    k: int
    padding: str  # SAME or VALID
    depthwise: bool = False
    dtype: str = "int8"
    seed: int = 0
    real_c: int | None = None  # channels beyond this carry zero weights and bias (a layer padded to whole groups)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, tuple[float, int, float, int, float, int]]:
        rng = np.random.default_rng(self.seed)
        oc = self.c if self.depthwise else self.oc
        lo = -127 if self.dtype == "int8" else 0
        hi = 127 if self.dtype == "int8" else 255
        zw = 0 if self.dtype == "int8" else 128
        shape = (1, self.k, self.k, self.c) if self.depthwise else (oc, self.k, self.k, self.c)
        w = rng.integers(lo, hi + 1, size=shape)
        bias = rng.integers(-2000, 2000, size=oc)
        if self.real_c is not None:  # the padding kernels (direct) or channels (depthwise) compute nothing
            if self.depthwise:
                w[..., self.real_c:] = zw
            else:
                w[self.real_c:] = zw
            bias[self.real_c:] = 0
        taps = self.k * self.k * (1 if self.depthwise else self.c)
        zx = 5 if self.dtype == "int8" else 120
        sx, sw = 0.02, 0.01
        sy = float(sx * sw * 60.0 * np.sqrt(taps))
        return w.astype(self.dtype), bias.astype(np.int32), (sx, zx, sw, zw, sy, -3 if self.dtype == "int8" else 128)

    def graph(self) -> Graph:
        w, bias, (sx, zx, sw, zw, sy, zy) = self.arrays()
        oh, ow = self.out_hw()
        oc = w.shape[-1] if self.depthwise else w.shape[0]
        kind = "DEPTHWISE_CONV_2D" if self.depthwise else "CONV_2D"
        opts: dict[str, object] = {"padding": self.padding, "stride_h": 1, "stride_w": 1, "dilation_h": 1,
                                   "dilation_w": 1, "activation": "NONE"}
        if self.depthwise:
            opts["depth_multiplier"] = 1
        return Graph({0: Tensor(0, self.dtype, (1, self.h, self.w, self.c), _q(sx, zx)),
                      1: Tensor(1, self.dtype, w.shape, _q(sw, zw), w),
                      2: Tensor(2, "int32", bias.shape, _q(sx * sw, 0), bias),
                      3: Tensor(3, self.dtype, (1, oh, ow, oc), _q(sy, zy))},
                     [Operation(0, kind, [0, 1, 2], [3], opts)])

    def out_hw(self) -> tuple[int, int]:
        if self.padding == "SAME":
            return self.h, self.w
        return self.h - self.k + 1, self.w - self.k + 1

    def input(self) -> np.ndarray:
        rng = np.random.default_rng(self.seed + 1)
        lo, hi = (-128, 127) if self.dtype == "int8" else (0, 255)
        x = rng.integers(lo, hi + 1, size=(1, self.h, self.w, self.c)).astype(self.dtype)
        if self.real_c is not None:
            x[..., self.real_c:] = self.arrays()[2][1]  # the input zero point: contributes nothing
        return x

    def reference(self, x: np.ndarray) -> np.ndarray:
        w, bias, (sx, zx, sw, zw, sy, zy) = self.arrays()
        oh, ow = self.out_hw()
        ph = (self.k - 1) // 2 if self.padding == "SAME" else 0
        xp = np.full((self.h + self.k, self.w + self.k, self.c), zx, np.int64)
        xp[ph:ph + self.h, ph:ph + self.w] = x[0]
        xs = xp - zx
        ws = w.astype(np.int64) - zw
        oc = w.shape[-1] if self.depthwise else w.shape[0]
        acc = np.zeros((oh, ow, oc), np.int64)
        for ky in range(self.k):
            for kx in range(self.k):
                win = xs[ky:ky + oh, kx:kx + ow]
                acc += win * ws[0, ky, kx] if self.depthwise else win @ ws[:, ky, kx, :].T
        acc += bias
        m, shift = quantize_multiplier(sx * sw / sy)
        y = multiply_by_quantized_multiplier(acc, m, shift) + zy
        lo, hi = (-128, 127) if self.dtype == "int8" else (0, 255)
        return np.clip(y, lo, hi).astype(self.dtype)[None]


def _task_words(prog: Program) -> Iterator[tuple[bytearray, int, int]]:
    """(buffer bytes to edit, byte offset of the task's first word, word count) of every task."""
    edited: dict[str, bytearray] = {}
    for op in prog.operations:
        for t in op.tasks:
            buf = prog.buffer(t.buffer)
            data = edited.setdefault(t.buffer, bytearray(buf.data or b""))
            yield data, t.offset, t.nbytes // 8
    for name, data in edited.items():
        prog.buffer(name).data = bytes(data)


def patch(prog: Program, soc: str, values: dict[str, int]) -> Program:
    """`prog` with every write of the named registers holding the given raw 32-bit values (the one word an
    experiment varies); every named register must be written."""
    rm = rocket_target(soc).regmap
    seen: set[str] = set()
    for data, off, n in _task_words(prog):
        for i in range(n):
            (w,) = struct.unpack_from("<Q", data, off + 8 * i)
            if not w:
                continue
            try:
                name = rm.decode(w)[1]
            except ValueError:
                continue
            if name in values:
                v = values[name] & 0xFFFFFFFF
                struct.pack_into("<Q", data, off + 8 * i, (w & ~(0xFFFFFFFF << 16)) | (v << 16))
                seen.add(name)
    missing = set(values) - seen
    if missing:
        raise ValueError(f"the program writes no {', '.join(sorted(missing))}")
    return prog


def run_program(dev: Device, variant: str, prog: Program, inputs: dict[int, np.ndarray], out: int) -> Run:
    """One run; a refused program, a fault and a job timeout are outcomes, not failures of the experiment."""
    t0 = time.perf_counter()
    try:
        runner = Runner(dev, prog)
    except NativeError as e:
        return Run(variant, "error", 0.0, str(e))
    try:
        y = runner.run(inputs)[out]
        return Run(variant, "ok", (time.perf_counter() - t0) * 1e3, output=y)
    except NativeError as e:
        msg = str(e)
        kind = "timeout" if "timed out" in msg or "timeout" in msg else "error"
        return Run(variant, kind, (time.perf_counter() - t0) * 1e3, msg)
    finally:
        runner.close()


@contextlib.contextmanager
def assumed(soc: str, fact: str, hypothesis: str) -> Iterator[None]:
    """Compile as if a report proved `hypothesis` of `fact` on `soc` (how an experiment gets each hypothesis's
    program out of the compiler's own gate)."""
    report = {"schema": hw_facts.SCHEMA, "soc": soc, "simulated": True,
              "facts": [{"id": fact, "soc": soc, "hypotheses": [hypothesis], "verdict": hypothesis}]}
    old = os.environ.get(hw_facts.ENV)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "assumed.json")
        with open(path, "w") as f:
            json.dump(report, f)
        os.environ[hw_facts.ENV] = path
        try:
            yield
        finally:
            if old is None:
                del os.environ[hw_facts.ENV]
            else:
                os.environ[hw_facts.ENV] = old


def _shift_even(x: np.ndarray, s: int) -> np.ndarray:
    """x / 2^s rounded half to even (OUT_CVT, measured)."""
    x = np.asarray(x, np.int64)
    return x if s == 0 else (x + (1 << (s - 1)) - 1 + ((x >> s) & 1)) >> s


def _shift_up(x: np.ndarray, s: int) -> np.ndarray:
    x = np.asarray(x, np.int64)
    return x if s == 0 else (x + (1 << (s - 1))) >> s


def _sat32(x: np.ndarray) -> np.ndarray:
    return np.clip(np.asarray(x, np.int64), -(1 << 31), (1 << 31) - 1)


def _out_cvt(v: np.ndarray, shift: int) -> np.ndarray:
    """OUT_CVT with scale 1, offset 0, then the int8 clamp."""
    return np.clip(_shift_even(v, shift), -128, 127).astype(np.int8)


# ---- fact 1: the EW multiply word -------------------------------------------------------------------------------

EW_MUL_WORD = 0x904002C4  # Mesa's fused-ADD word with EW_ALU_ALGO 0 and EW_OP_TYPE 1 [INFERRED], rocket.md
# 64 channels: the copy (a depthwise task) fills its DPU group, so the experiment stays valid whatever fact 5's
# verdict (a partial group may time out)
MUL_SHAPE = (1, 8, 8, 64)


def _product(u: np.ndarray, e: np.ndarray, rule: str, t: int) -> np.ndarray:
    p = np.asarray(u, np.int64) * np.asarray(e, np.int64)
    if rule == "wide_even":
        return _sat32(_shift_even(p, t))
    if rule == "sat32":
        return _shift_up(_sat32(p), t)
    if rule == "wrap32":
        return _shift_up(((p + (1 << 31)) % (1 << 32)) - (1 << 31), t)
    return _sat32(_shift_up(p, t))  # wide (and no_offset, with the offset left out by the caller)


def _ew_mul(dev: Device) -> tuple[list[Run], dict[str, list[Expect]]]:
    """Teflon's fused-ADD task (the copy of input a with input b through the EW stage) with the multiply word. The
    copy's input is 0 and the bias table holds u per channel, so the main value is u exactly; EW_CVT offset
    -zp(b) for zp(b) in {0, -128, 37}, scale 1, shift 0; two arms: odd products with EW_TRUNCATE 1 and OUT_CVT an
    identity (the truncate's tie), and |u x (b - zb)| straddling 2^31 with EW_TRUNCATE 8 and OUT_CVT shift 17
    (the product's width: wide, saturated or wrapped at 32 bits)."""
    soc = dev.soc
    rng = np.random.default_rng(11)
    hyps: dict[str, list[Expect]] = {h: [] for h in FACTS_BY_ID["ew_mul"].hypotheses}
    runs: list[Run] = []
    c = MUL_SHAPE[-1]
    odd = np.resize(np.array([1, 3, 5, 7, 9, 11, 13, 15, -1, -3, -5, -7, -9, -11, -13, -15], np.int64), c)
    big = (rng.integers(1 << 22, 1 << 24, size=c) * np.where(np.arange(c) % 2, -1, 1)).astype(np.int64)
    for zb in (0, -128, 37):
        off = -zb
        for arm, u, t, out_shift in (("ties", odd, 1, 0), ("wide", big, 8, 17)):
            if arm == "ties":
                e_target = rng.integers(-8, 9, size=MUL_SHAPE)
                b = np.clip(e_target - off, -128, 127).astype(np.int8)
            else:
                b = rng.integers(-128, 128, size=MUL_SHAPE).astype(np.int8)
            prog = compiler.compile(_binary_graph("ADD", MUL_SHAPE), [0], [0, 1], [2], soc)
            rm_values = {"DPU_EW_CFG": EW_MUL_WORD, "DPU_EW_CVT_OFFSET_VALUE": off,
                         "DPU_EW_CVT_SCALE_VALUE": 1 | (t << 22), "DPU_OUT_CVT_SCALE": 1,
                         "DPU_OUT_CVT_SHIFT": out_shift, "DPU_OUT_CVT_OFFSET": 0}
            patch(prog, soc, rm_values)
            prog.buffer("op0.bias").data = np.asarray(u, "<i4").tobytes()
            a = np.zeros(MUL_SHAPE, np.int8)
            runs.append(run_program(dev, f"zp(b)={zb} {arm} EW_TRUNCATE={t}", prog, {0: a, 1: b}, 2))
            uu = np.broadcast_to(u, MUL_SHAPE)
            for h, expects in hyps.items():
                if h == "timeout":
                    expects.append(Expect("timeout"))
                    continue
                e = b.astype(np.int64) + (0 if h == "no_offset" else off)
                expects.append(Expect("equal", _out_cvt(_product(uu, e, h, t), out_shift)))
    return runs, hyps


# ---- fact 2: the EW converter's tie rule ------------------------------------------------------------------------


def _ew_tie(dev: Device) -> tuple[list[Run], dict[str, list[Expect]]]:
    """The fused ADD with its main value 0 (input a at its zero point), EW_CVT scale 1 shift 1 offset 0, so every
    odd operand converts to a half, both signs; OUT_CVT an identity: the output is the converted operand."""
    b = np.resize(np.arange(-128, 128, dtype=np.int16), MUL_SHAPE).astype(np.int8)
    a = np.full(MUL_SHAPE, 3, np.int8)  # za
    prog = compiler.compile(_binary_graph("ADD", MUL_SHAPE), [0], [0, 1], [2], dev.soc)
    patch(prog, dev.soc, {"DPU_EW_CVT_OFFSET_VALUE": 0, "DPU_EW_CVT_SCALE_VALUE": 1 | (1 << 16),
                          "DPU_OUT_CVT_SCALE": 1, "DPU_OUT_CVT_SHIFT": 0, "DPU_OUT_CVT_OFFSET": 0})
    run = run_program(dev, "EW_CVT scale 1 shift 1: every odd operand a tie", prog, {0: a, 1: b}, 2)
    bb = b.astype(np.int64)
    return [run], {"half_even": [Expect("equal", _out_cvt(_shift_even(bb, 1), 0))],
                   "half_up": [Expect("equal", _out_cvt(_shift_up(bb, 1), 0))]}


# ---- fact 3: RK3576's direct-convolution output plane pitch -----------------------------------------------------


def _direct_pitch(dev: Device) -> tuple[list[Run], dict[str, list[Expect]]]:
    """A 7x7 direct layer (OW·OH = 49, two 16-channel surfaces) with DST_SURF_STRIDE as compiled (round4: 52) and
    with 49 (the output read at the pitch programmed)."""
    spec = ConvSpec(7, 7, 16, 32, 3, "SAME", seed=3)
    x = spec.input()
    ref = spec.reference(x)
    runs = []
    for variant, atoms in (("round4", 52), ("exact", 49)):
        prog = compiler.compile(spec.graph(), [0], [0], [3], dev.soc)
        patch(prog, dev.soc, {"DPU_DST_SURF_STRIDE": atoms})
        prog.io = [replace(b, plane_pitch=atoms * 16) if b.direction == "out" else b for b in prog.io]
        r = run_program(dev, f"DST_SURF_STRIDE {atoms} ({variant}; OW·OH {7 * 7})", prog, {0: x}, 3)
        r.cpu = ref
        runs.append(r)
    near, other = Expect("near", ref), Expect("other", ref)
    return runs, {"programmed": [near, near], "exact": [other, near], "round4": [near, other]}


# ---- fact 4: RK3576 PPU padding nibble order --------------------------------------------------------------------


def _pool_reference(x: np.ndarray, k: int, s: int) -> np.ndarray:
    """TFLite's MAX_POOL_2D, SAME: the largest value inside the input of each window."""
    _, h, w, c = x.shape
    oh, ow = -(-h // s), -(-w // s)
    pt = max((oh - 1) * s + k - h, 0) // 2
    pl = max((ow - 1) * s + k - w, 0) // 2
    y = np.full((1, oh, ow, c), -128, np.int8)
    for oy in range(oh):
        for ox in range(ow):
            y0, x0 = oy * s - pt, ox * s - pl
            win = x[0, max(y0, 0):min(y0 + k, h), max(x0, 0):min(x0 + k, w)]
            y[0, oy, ox] = win.max(axis=(0, 1))
    return y


def _ppu_pad(dev: Device) -> tuple[list[Run], dict[str, list[Expect]]]:
    """A SAME 3x3 stride-2 max pool over a 16x15 plane (pads left 1 / top 0, right 1 / bottom 1) compiled with each
    order of the pairs."""
    shape = (1, 16, 15, 16)
    g = Graph({0: Tensor(0, "int8", shape, _q(0.05, 2)), 1: Tensor(1, "int8", (1, 8, 8, 16), _q(0.05, 2))},
              [Operation(0, "MAX_POOL_2D", [0], [1], {"padding": "SAME", "stride_h": 2, "stride_w": 2,
                                                      "filter_h": 3, "filter_w": 3, "activation": "NONE"})])
    x = np.random.default_rng(4).integers(-128, 128, size=shape).astype(np.int8)
    ref = _pool_reference(x, 3, 2)
    runs = []
    for order in ("x_low", "y_low"):
        with assumed(dev.soc, "ppu_pad", order):
            prog = compiler.compile(g, [0], [0], [1], dev.soc)
        r = run_program(dev, f"POOLING_PADDING_CFG written {order}", prog, {0: x}, 1)
        r.cpu = ref
        runs.append(r)
    near, other = Expect("near", ref), Expect("other", ref)
    return runs, {"x_low": [near, other], "y_low": [other, near]}


# ---- fact 5: RK3588 partial channel groups ----------------------------------------------------------------------


def _partial_groups(dev: Device) -> tuple[list[Run], dict[str, list[Expect]]]:
    """An OC 16 direct layer and a 96-channel depthwise layer as Mesa programs them, and each padded to whole
    groups (zero weights, bias and input in the padding; the real channels compared)."""
    runs: list[Run] = []
    cases = (("direct OC 16", ConvSpec(8, 8, 16, 16, 3, "SAME", seed=5), ConvSpec(8, 8, 16, 32, 3, "SAME", seed=5,
                                                                                 real_c=16), 16),
             ("depthwise 96", ConvSpec(8, 8, 96, 96, 3, "SAME", True, seed=6),
              ConvSpec(8, 8, 128, 128, 3, "SAME", True, seed=6, real_c=96), 96))
    expect_exact: list[Expect] = []
    expect_timeout: list[Expect] = []
    for label, mesa, padded, n in cases:
        x = mesa.input()
        ref = mesa.reference(x)
        r = run_program(dev, f"{label} as Mesa programs it", compiler.compile(mesa.graph(), [0], [0], [3], dev.soc),
                        {0: x}, 3)
        r.cpu = ref
        runs.append(r)
        xp = x
        if padded.depthwise:  # the real channels' values, the zero point in the padding
            xp = padded.input()
            xp[..., :n] = x
        refp = padded.reference(xp)
        rp = run_program(dev, f"{label} padded to whole groups", compiler.compile(padded.graph(), [0], [0], [3],
                                                                                  dev.soc), {0: xp}, 3)
        if rp.output is not None:
            rp.output = rp.output[..., :n]
        rp.cpu = refp[..., :n]
        runs.append(rp)
        expect_exact += [Expect("near", ref), Expect("near", refp[..., :n])]
        expect_timeout += [Expect("timeout"), Expect("near", refp[..., :n])]
    return runs, {"exact": expect_exact, "timeout": expect_timeout}


# ---- fact 6: v7 coefficient order of a 1x1-output convolution ---------------------------------------------------


def _v7_fc_order(dev: Device) -> tuple[list[Run], dict[str, list[Expect]]]:
    """A 3x3 VALID convolution on a 3x3x16 map, 32 kernels, emitted as teflon does (the FC job over the planar input,
    one input plane) and as Mesa does (mesa_compat=True: the conv descriptor, kernel 3x3x16, with its interleaved
    planes); the descriptor of the second is the one whose order is unknown."""
    spec = ConvSpec(3, 3, 16, 32, 3, "VALID", dtype="uint8", seed=7)
    x = spec.input()
    ref = spec.reference(x)
    runs = []
    for variant, mesa in (("FC writer (input memory order)", False), ("Mesa's conv writers", True)):
        prog = compiler.compile(spec.graph(), [0], [0], [3], dev.soc, mesa_compat=mesa)
        r = run_program(dev, variant, prog, {0: x}, 3)
        r.cpu = ref
        runs.append(r)
    # the FC job's descriptor has a single input plane (kernel z 1), which both orders read alike
    near, other = Expect("near", ref), Expect("other", ref)
    return runs, {"flat": [near, other], "conv": [near, near]}


# ---- fact 7: the Ethos-U65's NATURAL rounding ------------------------------------------------------------------

# a 1x1 per-channel int8 convolution whose scales are powers of two: s_in * s_w[o] / s_out = 2^-(2 + o % 3), so
# each channel's record is (2^30, 32 + o % 3) and the doubling high multiply's rounding (acc / 2, a tie whenever
# acc is odd) carries across the final shift's half-way point for a quarter to a half of the odd accumulators
NATURAL_SHAPE = (1, 8, 8, 8)
NATURAL_OC = 16


def _natural_graph() -> tuple[Graph, np.ndarray, np.ndarray, np.ndarray]:
    """The graph, its weights (OC, 1, 1, C), bias and per-channel real scales s_in * s_w / s_out."""
    rng = np.random.default_rng(12)
    c = NATURAL_SHAPE[-1]
    w = rng.integers(-4, 5, size=(NATURAL_OC, 1, 1, c)).astype(np.int8)
    bias = rng.integers(-16, 17, size=NATURAL_OC).astype(np.int32)
    sx, sy = 2.0 ** -4, 2.0 ** -7
    sw = (2.0 ** -(5 + np.arange(NATURAL_OC) % 3)).astype(np.float32)
    oh, ow = NATURAL_SHAPE[1:3]
    zeros = np.zeros(NATURAL_OC, np.int32)
    g = Graph({0: Tensor(0, "int8", NATURAL_SHAPE, _q(sx, 0)),
               1: Tensor(1, "int8", w.shape, Quant(sw, zeros, 0), w),
               2: Tensor(2, "int32", bias.shape, Quant((sx * sw).astype(np.float32), zeros, 0), bias),
               3: Tensor(3, "int8", (1, oh, ow, NATURAL_OC), _q(sy, 0))},
              [Operation(0, "CONV_2D", [0, 1, 2], [3], {"padding": "VALID", "stride_h": 1, "stride_w": 1,
                                                        "dilation_h": 1, "dilation_w": 1, "activation": "NONE"})])
    return g, w, bias, sx * sw.astype(np.float64) / sy


def natural_scale(acc: np.ndarray, mult: np.ndarray, shift: np.ndarray, rule: str) -> np.ndarray:
    """acc * mult / 2^shift as NATURAL rounds it under `rule` (board-facts.md fact 7): `single`
    round_half_up(acc * mult / 2^shift); `double` TFL's left shift max(31 - shift, 0), q = (p + 2^30) >> 31 (the
    doubling high multiply, ties toward +inf), then (q + 2^(n-1)) >> n for n = max(shift - 31, 0)."""
    acc = np.asarray(acc, object)  # Python integers: acc * mult * 2^left may pass 63 bits
    mult = np.asarray(mult, object)
    shift = np.asarray(shift, np.int64)
    if rule == "single":
        return ((acc * mult + (1 << (shift - 1)).astype(object)) >> shift.astype(object)).astype(np.int64)
    left = np.maximum(31 - shift, 0).astype(object)
    n = np.maximum(shift - 31, 0)
    q = (acc * (1 << left) * mult + (1 << 30)) >> 31
    half = np.where(n > 0, 1 << np.maximum(n - 1, 0), 0).astype(object)
    return ((q + half) >> n.astype(object)).astype(np.int64)


def _eu_natural(dev: Device) -> tuple[list[Run], dict[str, list[Expect]]]:
    """The convolution compiled with NATURAL rounding (as a report proving `double` makes the compiler emit it),
    inputs -8..8: each hypothesis's exact bytes, from the accumulators computed here and the records' (2^30,
    shift)."""
    from teflon.ethosu import quant

    g, w, bias, real = _natural_graph()
    x = np.random.default_rng(13).integers(-8, 9, size=NATURAL_SHAPE).astype(np.int8)
    with assumed(dev.soc, "eu_natural", "double"):
        prog = compiler.compile(g, [0], [0], [3], dev.soc)
    run = run_program(dev, "1x1 per-channel conv, NATURAL rounding, records (2^30, 32..34)", prog, {0: x}, 3)
    acc = x[0].astype(np.int64) @ w[:, 0, 0, :].astype(np.int64).T + bias.astype(np.int64)
    mult, shift = quant.quantise_array(real)
    expects = {h: [Expect("equal", np.clip(natural_scale(acc, mult, shift, h), -128, 127).astype(np.int8)[None])]
               for h in ("single", "double")}
    return [run], expects


FACTS: tuple[Fact, ...] = (
    Fact("ew_mul", 1, "MUL of two tensors on the DPU EW path (the multiply word's arithmetic)", ("rk3588",),
         ("wide", "wide_even", "sat32", "wrap32", "no_offset", "timeout"), _ew_mul, unbuilt=("rk3576",)),
    Fact("ew_tie", 2, "the EW operand converter's tie rule", ("rk3588", "rk3576"), ("half_even", "half_up"), _ew_tie),
    Fact("direct_pitch", 3, "the direct convolution's output plane pitch (0x401C)", ("rk3576",),
         ("programmed", "exact", "round4"), _direct_pitch),
    Fact("ppu_pad", 4, "which nibble of each PPU padding pair is x", ("rk3576",), ("x_low", "y_low"), _ppu_pad),
    Fact("partial_groups", 5, "a channel count ending part way through a group", ("rk3588",), ("exact", "timeout"),
         _partial_groups),
    Fact("v7_fc_order", 6, "the v7 coefficient order of a 1x1-output, unpadded convolution", ("a311d",),
         ("flat", "conv"), _v7_fc_order),
    Fact("eu_natural", 7, "the Ethos-U65's NATURAL rounding: one rounding or two", ("imx93",), ("single", "double"),
         _eu_natural),
)
FACTS_BY_ID = {f.id: f for f in FACTS}


def _agrees(e: Expect, r: Run) -> bool:
    if e.kind == "timeout":
        return r.outcome == "timeout"
    near = r.outcome == "ok" and r.output is not None and e.ref is not None and r.output.shape == e.ref.shape and \
        int(np.max(np.abs(r.output.astype(np.int64) - e.ref.astype(np.int64)))) <= NEAR_LSB
    if e.kind == "other":
        return not near
    if e.kind == "near":
        return near
    return r.outcome == "ok" and r.output is not None and e.ref is not None and np.array_equal(r.output, e.ref)


def _diff(r: Run, ref: np.ndarray | None) -> dict[str, Any]:
    if r.outcome != "ok" or r.output is None or ref is None or r.output.shape != ref.shape:
        return {}
    d = np.abs(r.output.astype(np.int64) - ref.astype(np.int64))
    return {"exact_fraction": round(float(np.mean(d == 0)), 6), "max_abs_diff": int(d.max()),
            "mean_abs_diff": round(float(d.mean()), 4)}


def run_fact(fact: Fact, dev: Device, simulated: bool) -> Result:
    """Run one fact's experiment on `dev` and judge it."""
    runs, hyps = fact.run(dev)
    matched = [h for h, exp in hyps.items() if all(_agrees(e, r) for e, r in zip(exp, runs, strict=True))]
    if len(matched) == 1:
        verdict = matched[0]
    elif matched:
        verdict = "ambiguous: " + ", ".join(matched)
    else:
        verdict = "none matched"
    note = ""
    if not matched and all(r.outcome == "error" for r in runs):
        note = f"the device refused every variant: {runs[0].message}"
    evidence: dict[str, Any] = {}
    for h, exp in hyps.items():
        evidence[h] = {"agrees": [_agrees(e, r) for e, r in zip(exp, runs, strict=True)],
                       "runs": [_diff(r, e.ref) for e, r in zip(exp, runs, strict=True)]}
    out_runs = []
    for r in runs:
        d: dict[str, Any] = {"variant": r.variant, "outcome": r.outcome, "ms": round(r.ms, 3)}
        if r.message:
            d["message"] = r.message
        if r.outcome == "timeout":
            d["timeout"] = "the job never completed: the kernel's job timeout (500 ms on a board; the simulated " \
                           "kernel reports it at once)" if simulated else "the kernel's job timeout"
        if r.cpu is not None:
            d["vs_cpu"] = _diff(r, r.cpu)
        out_runs.append(d)
    return Result(fact.id, fact.number, fact.title, dev.soc, list(fact.hypotheses), verdict, simulated, evidence,
                  out_runs, note)


def run_all(soc: str | None, sim: bool) -> list[Result]:
    """Every documented fact: on `soc` (a board, or the shim's target) the facts about that SoC, the others "not
    applicable on this SoC"; with soc None (no NPU) each fact on the simulator of its own SoC. `sim`: the results
    are simulated (no NPU, or an ioctl shim serving the device node)."""
    results = []
    for fact in FACTS:
        if soc is not None and soc not in fact.socs:
            why = "no experiment for this SoC yet (no fused multiply word is known: rocket-rk3576.md)" \
                if soc in fact.unbuilt else "not applicable on this SoC"
            results.append(Result(fact.id, fact.number, fact.title, soc, list(fact.hypotheses), why, sim))
            continue
        on = soc or fact.socs[0]
        dev = Device(on, sim=soc is None)  # with a device node (a board's, or an ioctl shim's): sim=0
        try:
            results.append(run_fact(fact, dev, sim or soc is None))
        finally:
            dev.close()
    return results


def report(results: list[Result], soc: str | None, simulated: bool, system: dict[str, str]) -> dict[str, Any]:
    """The JSON report TEFLON_HW_FACTS reads (schema hw_facts.SCHEMA)."""
    from teflon import __version__

    return {"schema": hw_facts.SCHEMA, "teflon": __version__, "soc": soc, "simulated": simulated, **system,
            "facts": [{"id": r.id, "number": r.number, "title": r.title, "soc": r.soc, "hypotheses": r.hypotheses,
                       "verdict": r.verdict, "note": r.note, "simulated": r.simulated, "evidence": r.evidence,
                       "runs": r.runs}
                      for r in results]}


__all__ = ["FACTS", "FACTS_BY_ID", "Expect", "Fact", "Result", "Run", "natural_scale", "patch", "report", "run_all",
           "run_fact"]
