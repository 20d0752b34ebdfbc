"""teflon IR graph partition -> etnaviv job list (`EtnaOp`s), as etnaviv.md §1.2-§1.4 describe.

Jobs come out in execution order: for every operation, the TP transposes its planar inputs need, the TP
reshuffle of a space-to-depth stride-2 convolution, the operation's own NN or TP job, and a TP detranspose when
it produces a partition output that must be NHWC again. NN jobs carry their lowered weights (uint8, the
canonical order of etnaviv.md §3) and int32 biases.

Everything is in the NPU's stored domain: activations are uint8, int8 tensors are shifted by +128 (their zero
points too) and int8 weights are shifted the same way, so the coefficient writers only ever see uint8.

Tensor numbering follows Mesa: internal tensors (transpose/reshuffle outputs, a convolution's planar output
before its detranspose) get indices after the largest IR tensor index, in creation order.

`mesa_compat=True` reproduces Mesa's lowered operations exactly (including its quirks, e.g. SUB on v7 lowered
as ADD, a reshuffle's output_tensor_size equal to its input size). The default fixes what Mesa only gets right
for square tensors and refuses what it cannot be sure of; docs/hardware/etnaviv-nn.md lists the differences.
(Weight lowering lives here for now; teflon.etnaviv.lower_weights may take it over.)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..ir import Graph, Operation, Tensor
from ..lone import drop_lone_cheap, via_cpu
from .check import job_violations
from .chips import Chip
from .lower_unary import TABLE_OPS, claim_reason, is_table_binary, silu_only, table_plan
from .nn import IMAGE_SIZE_MAX, DescriptorError, fc_factors, nn_geometry
from .ops import KIND_NN, KIND_TP, TP_TYPES, EtnaOp
from .pool_requant import average_encoding, mean_encoding, pool_post_scale
from .pwl_table import TableFit, fit_table
from .requant import PostScale, RequantError, conv_scale, post_scale
from .tiling import TilingError
from .views import (
    PART_KINDS,
    RESHAPE_KINDS,
    SLICE_KINDS,
    TO_NCHW,
    TO_NHWC,
    VIEW_KINDS,
    PartsPlan,
    concat_requant_table,
    parts_plan,
    reshape_plan,
    slice_plan,
)

CONV_KINDS = ("CONV_2D", "DEPTHWISE_CONV_2D")
ELEMENTWISE_TP = {"RELU": "RELU", "ABS": "ABSOLUTE", "LOGISTIC": "LOGISTIC"}
FC_MAX_INPUT = 1280  # Mesa refuses FC inputs of this many channels or more (so does teflon: _lower_fc)
PAD_MAX = 2  # largest pad per side one TP pad job handles (Mesa's limit; the z over-fetch fields hold 0..2 planes)
PAD_JOBS_MAX = 3  # wider pads as a cascade of up to this many jobs, each padding at most PAD_MAX per side
NHWC = "NHWC"
PLANAR = "NCHW"  # Mesa's name for the planar channel-major layout


class LoweringError(ValueError):
    """The node cannot run on the etnaviv NPU; the message is the human reason."""


def _tp(name: str) -> int:
    return TP_TYPES.index(name)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


# ---- tensors -----------------------------------------------------------------------------------------------

def nhwc(shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """TFLite shape padded to 4 dims by prepending 1s (as Teflon does)."""
    if len(shape) > 4:
        raise LoweringError(f"{len(shape)}-D tensor not supported")
    s = (1,) * (4 - len(shape)) + tuple(int(d) for d in shape)
    return s[0], s[1], s[2], s[3]


def _dtype_shift(dtype: str) -> int:
    if dtype == "uint8":
        return 0
    if dtype == "int8":
        return 128
    raise LoweringError(f"tensor type {dtype} not supported (uint8 or int8 per-tensor only)")


@dataclass(frozen=True)
class _Act:
    """An activation tensor as the NPU stores it."""

    index: int
    h: int
    w: int
    c: int
    zp: int  # stored (shifted) zero point
    scale: float
    dtype: str

    @property
    def size(self) -> int:
        return self.h * self.w * self.c


def _quant(t: Tensor, what: str) -> tuple[float, int]:
    if t.quant is None or len(t.quant.scales) == 0:
        raise LoweringError(f"{what} tensor {t.index} is not quantized")
    if not t.quant.per_tensor:
        raise LoweringError(f"per-channel {what} quantization ({len(t.quant.scales)} scales) not supported")
    return float(np.float32(t.quant.scale)), t.quant.zero_point


def _act(t: Tensor, what: str) -> _Act:
    if t.is_constant:
        raise LoweringError(f"constant {what} tensor not supported")
    n, h, w, c = nhwc(t.shape)
    if n != 1:
        raise LoweringError(f"batch {n} not supported (batch 1 only)")
    shift = _dtype_shift(t.dtype)
    scale, zp = _quant(t, what)
    if not scale > 0:
        raise LoweringError(f"{what} scale {scale} not positive")
    return _Act(t.index, h, w, c, zp + shift, scale, t.dtype)


def _stored_weights(w: Tensor, oc: int | None = None, axis: int = 0) -> tuple[np.ndarray, int, float,
                                                                            np.ndarray | None]:
    """(uint8 weights in the stored domain, stored zero point, scale, per-channel scales or None).

    Per-channel (per-axis) weights need `oc` and the quantized axis (output channels: 0 for CONV_2D and
    FULLY_CONNECTED, 3 for DEPTHWISE_CONV_2D) and one zero point for every channel; `scale` is then channel 0's."""
    if w.data is None:
        raise LoweringError("weights are not constant")
    shift = _dtype_shift(w.dtype)
    q = w.quant
    if q is not None and len(q.scales) > 0 and not q.per_tensor and oc is not None:
        scales = np.asarray(q.scales, np.float32).reshape(-1)
        if scales.size != oc or q.axis != axis:
            raise LoweringError(f"per-channel weight scales ({scales.size} along axis {q.axis}) not along the "
                                f"{oc} output channels (axis {axis})")
        zps = np.asarray(q.zero_points).reshape(-1)
        if (zps != zps[0]).any():
            raise LoweringError("per-channel weight zero points differ (the NN engine has one weight zero point)")
        if not (scales > 0).all() or not np.isfinite(scales).all():
            raise LoweringError("per-channel weight scale not positive")
        zp, per_channel = int(zps[0]), scales
        scale = float(scales[0])
    else:
        scale, zp = _quant(w, "weight")
        per_channel = None
    data = np.asarray(w.data)
    stored = (data.astype(np.int16) + shift).astype(np.uint8) if shift else data.astype(np.uint8)
    return stored, zp + shift, scale, per_channel


def _bias(graph: Graph, op: Operation, oc: int, per_channel: bool = False) -> np.ndarray:
    if len(op.inputs) < 3 or op.inputs[2] < 0:
        return np.zeros(oc, np.int32)
    b = graph.tensors[op.inputs[2]]
    if b.data is None or b.dtype != "int32":
        raise LoweringError("bias must be a constant int32 tensor")
    if not per_channel and b.quant is not None and len(b.quant.scales) > 1 and not b.quant.per_tensor:
        raise LoweringError("per-channel bias quantization not supported")
    bias = np.asarray(b.data, np.int32).reshape(-1)
    if bias.size != oc:
        raise LoweringError(f"bias has {bias.size} values for {oc} output channels")
    return bias


def _relu(activation: object, out: _Act) -> bool:
    """Fused activation -> the descriptor's relu bit (ReLU6 only when the output range already ends <= 6)."""
    if activation in (None, "NONE"):
        return False
    if activation == "RELU":
        return True
    if activation == "RELU6":
        # TFLite's clamp top is zp + round(6 / scale) (CalculateActivationRangeQuantized); when it reaches the
        # top of the stored range the clamp is a no-op and the relu bit (clamp at the zero point) is all there is.
        # (Mesa's float test (255 - zp) * scale <= 6 says the same up to rounding: a 6/255 float32 scale gives
        # 6.0000001 in double precision.) The NN engine has no upper clamp.
        qmax = 255  # stored domain
        if out.zp + int(np.floor(np.float32(6.0) / np.float32(out.scale) + np.float32(0.5))) >= qmax:
            return True
        raise LoweringError("fused RELU6 only when the output quantization range already ends at <= 6 (the NN "
                            "engine's relu bit clamps at the zero point only)")
    raise LoweringError(f"fused activation {activation} not supported")


def same_pads(size: int, k: int, s: int) -> tuple[int, int]:
    """TFLite SAME padding along one axis: (before, after); before gets the smaller half."""
    out = _ceil(size, s)
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2


# ---- weight lowering (uint8, canonical [oc][ic][kh][kw] order of etnaviv.md §3) ---------------------------

def conv_weights(w_ohwi: np.ndarray) -> np.ndarray:
    """TFLite OHWI -> [OC][IC][KH][KW]."""
    return np.ascontiguousarray(w_ohwi.transpose(0, 3, 1, 2))


def single_channel_pointwise(w: np.ndarray, zp: int) -> np.ndarray:
    """1x1 kernel on a 1-channel input -> 2x2 kernel, the weight at (0, 0), the zero point elsewhere."""
    out = np.full((w.shape[0], 1, 2, 2), zp, np.uint8)
    out[:, 0, 0, 0] = w.reshape(w.shape[0])
    return out


def depthwise_dense(w_1hwc: np.ndarray, zp: int) -> np.ndarray:
    """v7: depthwise [1][KH][KW][C] -> dense [C][C][KH][KW], real taps on the diagonal, zero point elsewhere."""
    _, kh, kw, c = w_1hwc.shape
    out = np.full((c, c, kh, kw), zp, np.uint8)
    idx = np.arange(c)
    out[idx, idx] = w_1hwc[0].transpose(2, 0, 1)
    return out


def _depthwise_dense(st: _Lowering, c: _Conv) -> np.ndarray:
    if st.weights:
        return depthwise_dense(c.w, c.wzp)
    _, kh, kw, ch = c.w.shape
    return np.broadcast_to(np.uint8(c.wzp), (ch, ch, kh, kw))


def depthwise_v8(w_1hwc: np.ndarray) -> np.ndarray:
    """v8: depthwise [1][KH][KW][C] -> [C][KH*KW]."""
    _, kh, kw, c = w_1hwc.shape
    return np.ascontiguousarray(w_1hwc.reshape(kh * kw, c).T)


def space_to_depth_weights(w: np.ndarray, zp: int) -> np.ndarray:
    """[OC][IC][KH][KW] -> [OC][4*IC][ceil(KH/2)][ceil(KW/2)]: input channel 4*ic + 2*row_parity + col_parity
    holds tap (2r + row_parity, 2s + col_parity), or the zero point past the original kernel."""
    oc, ic, kh, kw = w.shape
    kh2, kw2 = _ceil(kh, 2), _ceil(kw, 2)
    padded = np.full((oc, ic, 2 * kh2, 2 * kw2), zp, np.uint8)
    padded[:, :, :kh, :kw] = w
    out = padded.reshape(oc, ic, kh2, 2, kw2, 2).transpose(0, 1, 3, 5, 2, 4)
    return np.ascontiguousarray(out.reshape(oc, 4 * ic, kh2, kw2))


# ---- the lowering state ------------------------------------------------------------------------------------

@dataclass
class _Lowering:
    graph: Graph
    nodes: list[int]
    chip: Chip
    mesa_compat: bool
    next_tensor: int
    layout: dict[int, str] = field(default_factory=dict)  # IR tensor -> layout of its current data
    where: dict[int, int] = field(default_factory=dict)  # IR tensor -> tensor index holding it (planar copy)
    jobs: list[EtnaOp] = field(default_factory=list)
    outputs: set[int] = field(default_factory=set)
    # The two-input NN add reads its operands from one buffer, the second right after the first: tensor -> the
    # tensor some add reads right after it (and back). The encoder places these chains in one buffer each.
    after: dict[int, int] = field(default_factory=dict)
    before: dict[int, int] = field(default_factory=dict)
    requested: set[int] = field(default_factory=set)  # the partition outputs the runtime asked for
    # Views (views.py): tensor -> (holder tensor, byte offset): the tensor's bytes are the holder's from that offset
    # on (a concatenation part, a split part, a reshape). A tensor is a view of at most one holder; a holder may be a
    # view itself. `held`: the size of every holder (it may be written only through its views).
    alias: dict[int, tuple[int, int]] = field(default_factory=dict)
    held: dict[int, int] = field(default_factory=dict)
    # False for the support decision, which reads no weight value: v7's dense depthwise weights ([C][C][kh][kw],
    # 44 M bytes over MobileNetV2) are then a zero-point view of their shape
    weights: bool = True

    def new_tensor(self) -> int:
        t = self.next_tensor
        self.next_tensor += 1
        return t

    def tp_job(self, tp_name: str, src: _Act, dst_index: int, dst: _Act | None = None, **kw: object) -> EtnaOp:
        dst = dst or src
        op = EtnaOp(type=KIND_TP, tp_type=_tp(tp_name), input_tensor=src.index, output_tensor=dst_index,
                    input_width=src.h, input_height=src.w, input_channels=src.c, input_zero_point=src.zp,
                    input_scale=src.scale, output_width=dst.h, output_height=dst.w, output_channels=dst.c,
                    output_zero_point=dst.zp, output_scale=dst.scale, input_tensor_sizes=(src.size, 0),
                    output_tensor_size=dst.size)
        for k, v in kw.items():
            setattr(op, k, v)
        self.jobs.append(op)
        return op

    def planar_input(self, a: _Act) -> _Act:
        """The tensor holding `a` in planar layout, inserting a TP transpose for NHWC data."""
        if self.layout.get(a.index, NHWC) == PLANAR:
            return _replace_index(a, self.where.get(a.index, a.index))
        if a.index in self.where:  # transposed already for an earlier consumer
            return _replace_index(a, self.where[a.index])
        t = self.new_tensor()
        self.tp_job("TRANSPOSE", a, t, stride=0)
        self.where[a.index] = t
        return _replace_index(a, t)

    def current(self, a: _Act) -> tuple[_Act, str]:
        """Where `a`'s data is now and in which layout (element-wise ops do not care)."""
        lay = self.layout.get(a.index, NHWC)
        if lay == PLANAR:
            return _replace_index(a, self.where.get(a.index, a.index)), lay
        return a, lay

    def needs_detranspose(self, out: _Act) -> bool:
        if out.index not in self.outputs:
            return False
        if self.mesa_compat:
            return out.h > 1 and out.w > 1 and out.c > 1
        return out.c > 1 and out.h * out.w > 1  # planar and NHWC bytes differ exactly then

    def output_for(self, out: _Act, layout: str) -> tuple[int, bool]:
        """(tensor the job writes, whether a detranspose to the IR tensor must follow)."""
        self.layout[out.index] = layout
        if layout == PLANAR and self.needs_detranspose(out):
            t = self.new_tensor()
            self.where[out.index] = t
            return t, True
        if layout == PLANAR:
            self.where[out.index] = out.index
        # NHWC data has no planar copy yet: an entry here would make planar_input skip the TRANSPOSE
        return out.index, False

    def pairable(self, a: int, b: int) -> bool:
        """Whether `b` can sit right after `a` in one buffer, given the pairs placed so far (a view sits in its
        holder already)."""
        if self.after.get(a) == b:
            return True
        if a == b or a in self.after or b in self.before or a in self.alias or b in self.alias:
            return False
        head = a  # b must not be the head of a's chain already (a cycle)
        while head in self.before:
            head = self.before[head]
        return head != b

    def written_at(self, t: int) -> int:
        """Position in the job list of the last job writing tensor `t` (-1: a partition input)."""
        return max((i for i, j in enumerate(self.jobs) if j.output_tensor == t), default=-1)

    def phantom_overlap(self, a: int, b: int) -> bool:
        """Whether `a`'s producer writes planes past `a`'s end (a v7 NN job whose output channels are not a
        multiple of the cores: its stream's phantom kernels, docs/hardware/etnaviv-coefficients.md) after `b`,
        which would sit there, was written. A holder of views (a concatenation) is written through its parts."""
        if a in self.held:
            end, last = self.extent(a)
            return end > self.held[a] and max(self.extent(b)[1], self.written_at(b)) < last
        i = self.written_at(a)
        if i < 0 or self.chip.version != 7:
            return False
        job = self.jobs[i]
        phantom = job.type == KIND_NN and not job.addition and job.output_channels % self.chip.nn_core_count != 0
        return phantom and self.written_at(b) < i

    def copy(self, a: _Act, layout: str) -> _Act:
        """`a` copied (a TP pad of zero amounts, byte-exact) to a fresh tensor in the same layout."""
        t = self.new_tensor()
        self.tp_job("PAD", a, t, stride=1, pad=(0,) * 6, in_planar=layout == PLANAR)
        return _replace_index(a, t)

    def pair(self, a: _Act, b: _Act, layout: str) -> tuple[_Act, _Act]:
        """The operands of a two-input add, copied where needed so that `b` sits right after `a` in one buffer
        and nothing written later overwrites it. Two views that already sit back to back in one holder (the halves
        of a split, in order) are read where they are."""
        if self.adjacent(a, b):
            return a, b
        if self.phantom_overlap(a.index, b.index):
            a = self.copy(a, layout)
        if not self.pairable(a.index, b.index):
            if not self.pairable(a.index, self.next_tensor):
                a = self.copy(a, layout)
            if not self.pairable(a.index, b.index):
                b = self.copy(b, layout)
        self.after[a.index], self.before[b.index] = b.index, a.index
        return a, b

    def detranspose(self, out: _Act, src_index: int) -> None:
        self.tp_job("DETRANSPOSE", _replace_index(out, src_index), out.index, out, stride=0)

    # ---- views (views.py) ----

    def view(self, t: int, holder: int, offset: int, holder_size: int) -> None:
        """Make tensor `t` the bytes of `holder` from `offset` on."""
        assert t not in self.alias and t != holder
        self.alias[t] = (holder, offset)
        self.held[holder] = max(self.held.get(holder, 0), holder_size)

    def placed_in(self, t: int) -> tuple[int, int]:
        """(the tensor whose buffer holds `t`, t's byte offset in it) through the chain of views."""
        off = 0
        while t in self.alias:
            t, o = self.alias[t]
            off += o
        return t, off

    def adjacent(self, a: _Act, b: _Act) -> bool:
        """Whether views `a` and `b` sit back to back in one holder, `b` right after `a`."""
        if a.index not in self.alias or b.index not in self.alias:
            return False
        (ha, oa), (hb, ob) = self.placed_in(a.index), self.placed_in(b.index)
        return ha == hb and ob == oa + a.size

    def inside(self, t: int) -> dict[int, int]:
        """{tensor: byte offset from t's start} of t and of every view placed inside t (transitively)."""
        out = {t: 0}
        grew = True
        while grew:
            grew = False
            for v, (h, off) in self.alias.items():
                if h in out and v not in out:
                    out[v] = out[h] + off
                    grew = True
        return out

    def extent(self, t: int) -> tuple[int, int]:
        """(bytes from t's start that jobs write into t or its views, position of the last such job; -1 when no
        job writes there)."""
        at = self.inside(t)
        ends = [(at[j.output_tensor] + write_extent(j, self.chip), i) for i, j in enumerate(self.jobs)
                if j.output_tensor in at]
        return max((e for e, _ in ends), default=0), max((i for _, i in ends), default=-1)

    def aliasable(self, t: int) -> bool:
        """Whether `t` may become a view: not one already, not an ADD operand placed in a pair's buffer."""
        return t not in self.alias and t not in self.after and t not in self.before

    def nhwc_bytes(self, a: _Act) -> _Act:
        """The tensor holding `a` in NHWC order: its own data, the IR tensor a detranspose wrote, or a new
        DETRANSPOSE."""
        cur, lay = self.current(a)
        if lay == NHWC or a.c == 1 or a.h * a.w == 1:  # flat: the planar bytes are the NHWC bytes
            return cur
        if cur.index != a.index and any(j.output_tensor == a.index and j.tp_name == "DETRANSPOSE" for j in self.jobs):
            return a
        t = self.new_tensor()
        self.tp_job("DETRANSPOSE", cur, t, stride=0)
        return _replace_index(a, t)


def write_extent(job: EtnaOp, chip: Chip) -> int:
    """Bytes from the start of a job's output tensor the job writes: a v7 NN job's stream gives every core
    ceil(OC / cores) kernels, and the phantom ones past OC write their (zero-weight) planes after the job's channels
    (docs/hardware/etnaviv-coefficients.md)."""
    if job.type != KIND_NN:
        return job.output_tensor_size
    if job.addition:
        plane = job.output_tensor_size // max(job.output_channels, 1)
    else:
        plane = job.output_width * job.output_height
    channels = -(-job.output_channels // chip.nn_core_count) * chip.nn_core_count if chip.version == 7 else \
        job.output_channels
    return job.output_offset + plane * channels


def _replace_index(a: _Act, index: int) -> _Act:
    return _Act(index, a.h, a.w, a.c, a.zp, a.scale, a.dtype)


# ---- per-operation lowering --------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Conv:
    x: _Act
    y: _Act
    w: np.ndarray  # stored uint8, TFLite layout
    wzp: int
    wscale: float
    bias: np.ndarray
    kh: int
    kw: int
    stride: int
    pads: tuple[int, int, int, int]  # top, bottom, left, right
    depthwise: bool
    relu: bool
    wscales: np.ndarray | None = None  # per-channel weight scales (one per output channel), None: per-tensor


def _read_conv(graph: Graph, op: Operation, chip: Chip, mesa_compat: bool) -> _Conv:
    if len(op.inputs) < 2 or len(op.outputs) != 1:
        raise LoweringError("unexpected number of inputs/outputs")
    o = op.options
    dw = op.kind == "DEPTHWISE_CONV_2D"
    x = _act(graph.tensors[op.inputs[0]], "input")
    y = _act(graph.tensors[op.outputs[0]], "output")
    wt = graph.tensors[op.inputs[1]]
    if not (x.dtype == y.dtype == wt.dtype):
        raise LoweringError(f"mixed types (input {x.dtype}, weights {wt.dtype}, output {y.dtype})")
    w, wzp, wscale, wscales = _stored_weights(wt, y.c, 3 if dw else 0)
    sh, sw = int(o.get("stride_h", 1)), int(o.get("stride_w", 1))
    if sh != sw:
        raise LoweringError(f"unequal strides {sh}x{sw} not supported")
    if sh not in (1, 2):
        raise LoweringError(f"stride {sh} not supported (1 or 2)")
    if int(o.get("dilation_h", 1)) != 1 or int(o.get("dilation_w", 1)) != 1:
        raise LoweringError(f"dilation {o.get('dilation_h')}x{o.get('dilation_w')} not supported")
    padding = o.get("padding")
    if padding not in ("SAME", "VALID"):
        raise LoweringError(f"padding {padding} not supported")
    if w.ndim != 4:
        raise LoweringError(f"unexpected weight shape {w.shape}")
    if dw:
        if int(o.get("depth_multiplier", 1)) != 1 or y.c != x.c or w.shape[0] != 1 or w.shape[3] != x.c:
            raise LoweringError("depthwise with depth_multiplier != 1 not supported")
    elif w.shape[0] != y.c or w.shape[3] != x.c:
        raise LoweringError(f"unexpected weight shape {w.shape}")
    kh, kw = int(w.shape[1]), int(w.shape[2])
    if kh > 15 or kw > 15:
        raise LoweringError(f"kernel {kh}x{kw} larger than 15")
    if (kh != kw) and mesa_compat:
        raise LoweringError(f"non-square kernel {kh}x{kw} (Mesa mixes the kernel axes)")
    if padding == "SAME":
        pt, pb = same_pads(x.h, kh, sh)
        pl, pr = same_pads(x.w, kw, sh)
    else:
        pt = pb = pl = pr = 0
    if (x.h + pt + pb - kh) // sh + 1 != y.h or (x.w + pl + pr - kw) // sh + 1 != y.w:
        raise LoweringError(f"output shape {y.h}x{y.w} inconsistent with input {x.h}x{x.w} and kernel")
    bias = _bias(graph, op, y.c, wscales is not None)
    return _Conv(x, y, w, wzp, wscale, bias, kh, kw, sh, (pt, pb, pl, pr), dw, _relu(o.get("activation"), y),
                 wscales)


def _stride2_plan(c: _Conv, chip: Chip, mesa_compat: bool) -> tuple[bool, bool]:
    """(first-pixel pooling, space-to-depth reshuffle) for a stride-2 conv (etnaviv.md §1.3)."""
    pointwise = c.kh == 1 and c.kw == 1

    def mesa(width: int) -> tuple[bool, bool]:  # Mesa's rule on its "width" (TFLite H)
        if chip.version == 7:
            pool = c.depthwise or pointwise
            if c.depthwise and 2 < width < 8:
                pool = False
            reshuffle = not ((c.depthwise and (width > 5 or width < 3)) or pointwise)
            return pool, reshuffle
        if c.depthwise:
            return True, False
        if pointwise and ((width >= 3 and c.x.c > 1) or any(c.pads)):
            return True, False
        return False, True

    if mesa_compat:
        return mesa(c.x.h)
    plan_h, plan_w = mesa(c.x.h), mesa(c.x.w)
    if plan_h != plan_w:
        raise LoweringError(f"stride-2 lowering choice differs between H={c.x.h} and W={c.x.w} "
                            "(non-square input; unverified)")
    pool, reshuffle = plan_h
    if not pool and not reshuffle:
        reshuffle = True  # v7 depthwise on 6/7-wide inputs: Mesa does neither; space-to-depth is exact
    return pool, reshuffle


def _covers_input(c: _Conv) -> bool:
    """A single output pixel whose window lies inside the input (no padding): an FC over the whole input."""
    return c.y.h == 1 and c.y.w == 1 and not any(c.pads) and c.x.h * c.x.w > 1


def _lower_conv_as_fc(st: _Lowering, c: _Conv, nn_fields: dict[str, Any] | None = None) -> None:
    """v7: a convolution with one output pixel and no padding, lowered as Mesa's FULLY_CONNECTED over the planar
    input (weights [OC][C][H][W], the zero point where the window does not reach). The v7 coefficient order of a
    descriptor whose kernel covers the whole input with a 1x1 output is Mesa's FC order (input memory order,
    golden fc-* files); Mesa's conv writers would interleave planes for the same descriptor, which one reader
    cannot both follow (docs/hardware/etnaviv-nn.md §1)."""
    if c.depthwise:
        w = _depthwise_dense(st, c)
    else:
        w = conv_weights(c.w)
    oc, ic = w.shape[0], w.shape[1]
    full = np.full((oc, ic, c.x.h, c.x.w), c.wzp, np.uint8)
    full[:, :, : c.kh, : c.kw] = w
    n = ic * c.x.h * c.x.w
    xin = st.planar_input(c.x)
    out_index, detr = st.output_for(c.y, PLANAR)
    job = EtnaOp(type=KIND_NN, fully_connected=True, relu=c.relu, stride=1, input_tensor=xin.index,
                 input_count=1, output_tensor=out_index, input_width=n, input_height=1, input_channels=1,
                 input_zero_point=c.x.zp, input_scale=c.x.scale, output_width=1, output_height=1,
                 output_channels=c.y.c, output_zero_point=c.y.zp, output_scale=c.y.scale, weight_width=n,
                 weight_height=1, weight_zero_point=c.wzp, weight_scale=c.wscale, weight_tensor_size=full.size,
                 bias_tensor_size=4 * c.y.c, input_tensor_sizes=(n, 0), output_tensor_size=c.y.size,
                 weights=full.reshape(oc, n), bias=c.bias)
    _emit_nn(st, replace(job, **(nn_fields or {})), c.wscales)
    if detr:
        st.detranspose(c.y, out_index)


def _dense_depthwise(c: _Conv) -> _Conv:
    """A depthwise convolution as the equivalent dense one (TFLite OHWI weights, zero point off the diagonal)."""
    _, kh, kw, ch = c.w.shape
    w = np.full((ch, kh, kw, ch), c.wzp, np.uint8)
    idx = np.arange(ch)
    w[idx, :, :, idx] = c.w[0].transpose(2, 0, 1)
    return replace(c, w=w, depthwise=False)


def _lower_conv(st: _Lowering, op: Operation) -> None:
    lower_conv(st, _read_conv(st.graph, op, st.chip, st.mesa_compat))


def lower_conv(st: _Lowering, c: _Conv, nn_fields: dict[str, Any] | None = None) -> None:
    """The jobs of one convolution; `nn_fields` replaces fields of its NN job (an AVERAGE_POOL_2D lowered as a
    unit-weight depthwise convolution sets its own requantization: teflon.etnaviv.lower_pool)."""
    chip, v = st.chip, st.chip.version
    if not st.mesa_compat and v == 7 and _covers_input(c):
        _lower_conv_as_fc(st, c, nn_fields)
        return
    if not st.mesa_compat and v == 8 and c.depthwise and 1 < c.x.c < chip.nn_core_count:
        # Mesa's v8 depthwise channel map (etnaviv.md §3.1) folds below channel 0 when C < the core count (an
        # out-of-bounds read; no golden has it); the dense form uses the contiguous map every v8 conv has
        c = _dense_depthwise(c)
    if not st.mesa_compat and v == 7 and c.depthwise and c.x.c == 1 and c.kw > 3:
        # v7 has no depthwise bit: Mesa's single-channel writer splits the columns of a depthwise kernel wider
        # than 3 but not those of a conv on an input of <= 64 rows, for the same descriptor. A 1-channel
        # depthwise conv is that conv (same TFLite weight bytes): write it as one.
        c = replace(c, depthwise=False)
    pointwise = c.kh == 1 and c.kw == 1
    padded = any(c.pads)
    pool = reshuffle = False
    if c.stride > 1:
        pool, reshuffle = _stride2_plan(c, chip, st.mesa_compat)
    if c.stride > 1 and not st.mesa_compat and not (c.pads[0] == c.pads[2] and c.pads[1] == c.pads[3]):
        raise LoweringError(f"SAME padding differs between H and W ({c.pads}); unverified for stride 2")

    if reshuffle and padded and not st.mesa_compat and max(c.kh, c.kw) not in (3, 5):
        # measured (tests/test_random.py): with SAME padding the reshuffled conv is right for 3x3 and 5x5 kernels
        # only; 2x2, 4x4, 6x6 and 7x7 give wrong outputs on some input sizes
        raise LoweringError(f"stride-2 SAME {c.kh}x{c.kw} kernel through the space-to-depth reshuffle (padding "
                            "verified for 3x3 and 5x5 only)")
    x = st.planar_input(c.x)
    # weights in the canonical order
    block = 0
    if c.depthwise and v == 8:
        w = depthwise_v8(c.w)
    elif c.depthwise and c.w.shape[3] > 1:
        # v7's dense [C][C][kh][kw] form kept block-diagonal (ops.dense_weights): kernel o reads input channel o
        w = np.ascontiguousarray(c.w[0].transpose(2, 0, 1)[:, None])
        block = 1
    elif c.depthwise:
        w = depthwise_dense(c.w, c.wzp)  # one channel: the dense form is the kernel itself
    else:
        w = conv_weights(c.w)
    in_c = c.x.c
    kh, kw = c.kh, c.kw
    nn_in = x
    if reshuffle:
        p = (2 if kh == 5 else 1) if padded else 0
        if not st.mesa_compat:
            p = (2 if max(kh, kw) == 5 else 1) if padded else 0
        r_out = _Act(st.new_tensor(), _ceil(x.h, 2) + p, _ceil(x.w, 2) + p, 4 * in_c, x.zp, x.scale, x.dtype)
        size = x.size if st.mesa_compat else r_out.size  # Mesa records the input size here
        st.tp_job("RESHUFFLE", x, r_out.index, r_out, padding_same=padded, stride=c.stride,
                  weight_width=kh, weight_height=kw, output_tensor_size=size)
        w = space_to_depth_weights(w, c.wzp)  # a block-diagonal kernel o then reads input channels 4o .. 4o + 3
        block *= 4
        nn_in, in_c, kh, kw = r_out, 4 * in_c, _ceil(kh, 2), _ceil(kw, 2)
    flag_pointwise = pointwise and not reshuffle
    if pointwise and in_c == 1 and not (c.depthwise and v == 8):
        w = single_channel_pointwise(w, c.wzp)
        kh = kw = 2
        flag_pointwise = False
    out_index, detr = st.output_for(c.y, PLANAR)
    job = EtnaOp(type=KIND_NN, depthwise=c.depthwise, pointwise=flag_pointwise, pooling_first_pixel=pool,
                 padding_same=padded, relu=c.relu, stride=c.stride, input_tensor=nn_in.index, input_count=1,
                 output_tensor=out_index, input_width=nn_in.h, input_height=nn_in.w, input_channels=nn_in.c,
                 input_zero_point=nn_in.zp, input_scale=nn_in.scale, output_width=c.y.h, output_height=c.y.w,
                 output_channels=c.y.c, output_zero_point=c.y.zp, output_scale=c.y.scale, weight_width=kh,
                 weight_height=kw, weight_zero_point=c.wzp, weight_scale=c.wscale,
                 weight_tensor_size=w.size * (nn_in.c // block if block else 1),
                 bias_tensor_size=4 * c.y.c, input_tensor_sizes=(nn_in.size, 0), output_tensor_size=c.y.size,
                 weights=w, weights_block=block, bias=c.bias)
    _emit_nn(st, replace(job, **(nn_fields or {})), c.wscales, nn_in.h * nn_in.w)
    if detr:
        st.detranspose(c.y, out_index)


# The densest v7 depthwise form an average pool may take ([C][C][kh][kw] coefficients, most of them the zero
# point): MobileNetV2's widest depthwise layer on a311d (960 channels, 3x3) is 8.3 M, and its compile and first
# run already take most of a second (docs/hardware/etnaviv-sim.md).
MAX_V7_POOL_WEIGHTS = 9_000_000
# A whole-plane average (MEAN, a global pool) past that limit runs as one job per run of this many channels (a
# multiple of the v7 core count, so no job writes phantom planes past its run): 64²·H·W coefficients each
V7_POOL_GROUP = 64
# The split runs' coefficients together: MobileNetV1/V2's 7x7x1024/1280 heads would be 3.2 M / 4.0 M, whose
# compression alone added ~57 ms to MobileNetV2's cold compile on a311d (128 -> 185 ms, past the 150 ms budget of
# docs/PERFORMANCE.md; measured 2026-11-30); ResNet50's 4x4x2048 (2.1 M) and MobileNetV3Large's 5x5x960 (1.5 M)
# heads and MobileNetV3-small's 14x14x240 squeeze-excite pools (2.9 M) stay within it.
MAX_V7_POOL_SPLIT_WEIGHTS = 3_000_000


def _read_pool(st: _Lowering, op: Operation, no_activation: str) -> tuple[_Act, _Act, int, int, int, bool]:
    """(input, output, kh, kw, stride, SAME) of an AVERAGE_POOL_2D / MAX_POOL_2D that keeps its input's quantization
    and has no fused activation (`no_activation`: why not), with stride 1 or 2 in both directions."""
    if len(op.inputs) != 1 or len(op.outputs) != 1:
        raise LoweringError("unexpected number of inputs/outputs")
    o = op.options
    if "filter_h" not in o:
        raise LoweringError(f"{op.kind} options not decoded")
    x = _act(st.graph.tensors[op.inputs[0]], "input")
    y = _act(st.graph.tensors[op.outputs[0]], "output")
    if x.dtype != y.dtype or x.zp != y.zp or np.float32(x.scale) != np.float32(y.scale):
        raise LoweringError(f"{op.kind} with different input and output quantization")
    if o.get("activation", "NONE") not in ("NONE", None):
        raise LoweringError(f"{op.kind} with a fused {o.get('activation')} ({no_activation})")
    kh, kw = int(o["filter_h"]), int(o["filter_w"])
    sh, sw = int(o.get("stride_h", 1)), int(o.get("stride_w", 1))
    if (kh, kw) == (x.h, x.w) and (y.h, y.w) == (1, 1) and o.get("padding") != "SAME":
        sh = sw = 1  # one window over the whole plane: its stride never applies
    if sh != sw or sh not in (1, 2):
        raise LoweringError(f"stride {sh}x{sw} (1 or 2, equal)")
    return x, y, kh, kw, sh, o.get("padding") == "SAME"


def _lower_avgpool(st: _Lowering, op: Operation) -> None:
    """AVERAGE_POOL_2D as a depthwise convolution with unit weights whose NN job adds the raw window (bias: n times
    TFLite's zero point) and divides by the window count n with a multiplier proven to round every reachable sum as
    TFLite does (teflon.etnaviv.pool_requant; docs/hardware/etnaviv-pool.md). Windows without padding only (a
    padded window's count varies)."""
    x, y, kh, kw, sh, same = _read_pool(st, op, "not characterised")
    pads = (*same_pads(x.h, kh, sh), *same_pads(x.w, kw, sh)) if same else (0, 0, 0, 0)
    if any(pads):
        raise LoweringError("AVERAGE_POOL_2D whose window reaches the padding (TFLite divides by the pixels inside, "
                            "one multiplier cannot)")
    if (x.h - kh) // sh + 1 != y.h or (x.w - kw) // sh + 1 != y.w:
        raise LoweringError(f"output shape {y.h}x{y.w} inconsistent with input {x.h}x{x.w} and window")
    count = kh * kw
    try:
        ps = pool_post_scale(count, x.dtype, st.chip.version)
    except RequantError as exc:
        # a weight, bias and output offset may still round every sum as TFLite does (as for a MEAN)
        enc = average_encoding(count, x.dtype, st.chip.version)
        if enc is None:
            raise LoweringError(f"{exc}; no weight, bias and output offset does either") from None
        _lower_unit_window(st, x, y, kh, kw, sh, enc.weight, enc.bias, enc.scale, enc.zero_point)
        return
    _lower_unit_window(st, x, y, kh, kw, sh, 1, 0, ps, 0)


def _lower_unit_window(st: _Lowering, x: _Act, y: _Act, kh: int, kw: int, stride: int, weight: int, bias: int,
                       ps: PostScale, zero_point: int) -> None:
    """An average over kh x kw windows (no padding) as a depthwise convolution whose every weight is `weight`: the
    bias folds the input zero point so the accumulator holds weight·S + `bias` (S the raw window sum), the job's
    real multiplier is `ps` (scales 1 and m give it exactly) and its output offset the raw value `zero_point`
    (docs/hardware/etnaviv-pool.md)."""
    whole = (kh, kw) == (x.h, x.w) and x.h * x.w > 1
    # a whole-plane window wider than the NN kernel's 15 as the FC job over the planar input (the v7 path of every
    # whole-plane window, _lower_conv_as_fc; its kernel volume is factorised, x, y <= 15)
    as_fc = whole and (kh > 15 or kw > 15)
    if (kh > 15 or kw > 15) and not as_fc:
        raise LoweringError(f"window {kh}x{kw} larger than the NN kernel's 15")
    if st.chip.version == 7 and kh != kw and max(kh, kw) > 3 and not whole:
        # the v7 dense depthwise form's coefficient order is Mesa's square-kernel one (teflon.etnaviv.coefs_v7); a
        # whole-plane window is the FC job over the planar input, whose equal weights have no order to get wrong
        raise LoweringError(f"non-square {kh}x{kw} window wider than 3 on v7 (no known coefficient order)")
    if as_fc and st.chip.version == 8 and x.c * x.c * kh * kw > MAX_V7_POOL_WEIGHTS:
        raise LoweringError(f"window {kh}x{kw} larger than the NN kernel's 15, and its FC form over {x.c} channels "
                            f"would be {x.c * x.c * kh * kw} dense coefficients (limit {MAX_V7_POOL_WEIGHTS})")
    groups = [(0, x.c)]
    if st.chip.version == 7 and x.c * x.c * kh * kw > MAX_V7_POOL_WEIGHTS:
        if (kh, kw) != (x.h, x.w) or x.c % st.chip.nn_core_count:
            raise LoweringError(f"v7 has no depthwise form: {x.c} channels x {kh}x{kw} would be "
                                f"{x.c * x.c * kh * kw} dense coefficients (limit {MAX_V7_POOL_WEIGHTS}; a "
                                f"whole-plane window of a multiple of {st.chip.nn_core_count} channels is split)")
        groups = [(c0, min(c0 + V7_POOL_GROUP, x.c)) for c0 in range(0, x.c, V7_POOL_GROUP)]
        split = sum((c1 - c0) ** 2 for c0, c1 in groups) * kh * kw
        if split > MAX_V7_POOL_SPLIT_WEIGHTS:
            raise LoweringError(f"v7 has no depthwise form: {x.c} channels x {kh}x{kw} split into "
                                f"{len(groups)} runs of {V7_POOL_GROUP} channels would still be {split} dense "
                                f"coefficients (limit {MAX_V7_POOL_SPLIT_WEIGHTS})")
    shift = _dtype_shift(x.dtype)
    count = kh * kw
    fields = {"input_scale": 1.0, "output_scale": 1.0, "weight_scale": ps.real(st.chip.version),
              "output_zero_point": zero_point + shift}
    parts = [(x, y)]
    if len(groups) > 1:
        # one job per run of channels: planar channel planes are consecutive, so a run's input is a byte range of
        # the planar input and its 1x1 output a byte range of the output (views, as a concatenation's parts)
        xin = st.planar_input(x)
        holder, _ = st.output_for(y, PLANAR)  # a 1x1 map: planar and NHWC are the same bytes
        parts = []
        for c0, c1 in groups:
            tin, tout = st.new_tensor(), st.new_tensor()
            st.view(tin, xin.index, c0 * x.h * x.w, xin.size)
            st.layout[tin] = PLANAR
            st.view(tout, holder, c0, y.size)
            parts.append((_Act(tin, x.h, x.w, c1 - c0, x.zp, x.scale, x.dtype),
                          _Act(tout, 1, 1, c1 - c0, y.zp, y.scale, y.dtype)))
    # Mesa has no pooling job to reproduce: `--mesa-compat` emits teflon's own jobs for the pool, as for the other
    # ops Mesa lacks (its convolution choices would give another job list for the same op)
    mesa_compat, st.mesa_compat = st.mesa_compat, False
    try:
        for xa, ya in parts:
            c = _Conv(xa, ya, np.full((1, kh, kw, xa.c), weight, np.uint8), 0, 1.0,
                      np.full(xa.c, weight * count * (x.zp - shift) + bias, np.int32), kh, kw, stride, (0, 0, 0, 0),
                      True, False)
            if as_fc:
                _lower_conv_as_fc(st, c, fields)
            else:
                lower_conv(st, c, fields)
    finally:
        st.mesa_compat = mesa_compat


def _lower_mean(st: _Lowering, op: Operation) -> None:
    """MEAN over H and W (keep_dims or not) as one whole-plane unit-weight window whose weight, multiplier, bias
    and output offset are proven to round every reachable sum as TFLite's MEAN does (pool_requant.mean_encoding;
    docs/hardware/etnaviv-pool.md)."""
    g = st.graph
    if len(op.inputs) != 2 or len(op.outputs) != 1:
        raise LoweringError("unexpected number of inputs/outputs")
    tx, taxes = g.tensors[op.inputs[0]], g.tensors[op.inputs[1]]
    if taxes.data is None:
        raise LoweringError("MEAN axes are not constant")
    if len(tx.shape) != 4:
        raise LoweringError(f"MEAN of a {len(tx.shape)}-D tensor (4-D only)")
    axes = sorted({int(a) % 4 for a in np.asarray(taxes.data).reshape(-1)})
    if axes != [1, 2]:
        raise LoweringError(f"MEAN over axes {axes} (only over H and W, axes 1 and 2)")
    x = _act(tx, "input")
    y = _act(g.tensors[op.outputs[0]], "output")
    rank = len(g.tensors[op.outputs[0]].shape)
    if (y.h, y.w, y.c) != (1, 1, x.c) or rank not in (2, 4):
        raise LoweringError(f"MEAN output shape {g.tensors[op.outputs[0]].shape} inconsistent with its input")
    keep = rank == 4  # keep_dims (not among the option slots the delegate passes) is the output's rank
    if x.dtype != y.dtype:
        raise LoweringError("MEAN with different input and output types")
    shift = _dtype_shift(x.dtype)
    try:
        enc = mean_encoding(x.h * x.w, x.dtype, float(x.scale), x.zp - shift, float(y.scale), y.zp - shift, keep,
                            st.chip.version)
    except RequantError as exc:
        raise LoweringError(str(exc)) from None
    _lower_unit_window(st, x, y, x.h, x.w, 1, enc.weight, enc.bias, enc.scale, enc.zero_point)


# MAX_POOL_2D on the TP (docs/hardware/etnaviv-maxpool.md): windows up to 3x3 in one job (the vendor runs stride 1
# only up to 3); square odd windows up to MAXPOOL_CASCADE_MAX at stride 1 as a cascade of 3x3 jobs (a max over a
# (2r + 1)-wide window is r nested 3-wide maxima, with SAME padding as well: padding never wins).
MAXPOOL_DIRECT_MAX = 3
MAXPOOL_CASCADE_MAX = 7


def _lower_maxpool(st: _Lowering, op: Operation) -> None:
    """MAX_POOL_2D as TP max-pooling jobs on the planar input (the vendor's TP_MAX_POOLING form; its stride field
    has one bit)."""
    x, y, kh, kw, sh, same = _read_pool(st, op, "the TP pooling job has no clamp")
    if min(kh, kw) < sh:
        raise LoweringError(f"window {kh}x{kw} narrower than its stride {sh}")
    if max(kh, kw) <= MAXPOOL_DIRECT_MAX:
        stages = [(kh, kw)]
    elif sh == 1 and kh == kw and kh % 2 and kh <= MAXPOOL_CASCADE_MAX:
        stages = [(3, 3)] * (kh // 2)
    else:
        raise LoweringError(f"window {kh}x{kw} stride {sh}: the TP pools up to {MAXPOOL_DIRECT_MAX}x"
                            f"{MAXPOOL_DIRECT_MAX}, and square odd windows up to {MAXPOOL_CASCADE_MAX} at stride 1 as "
                            "a cascade of 3x3 jobs")
    out_h = _ceil(x.h, sh) if same else (x.h - kh) // sh + 1
    out_w = _ceil(x.w, sh) if same else (x.w - kw) // sh + 1
    if (out_h, out_w) != (y.h, y.w) or y.c != x.c:
        raise LoweringError(f"output shape {y.h}x{y.w}x{y.c} inconsistent with input {x.h}x{x.w}x{x.c} and window")
    src = st.planar_input(x)
    for i, (ph, pw) in enumerate(stages):
        last = i == len(stages) - 1
        pads = (*same_pads(src.h, ph, sh), *same_pads(src.w, pw, sh)) if same else (0, 0, 0, 0)
        oh = _ceil(src.h, sh) if same else (src.h - ph) // sh + 1
        ow = _ceil(src.w, sh) if same else (src.w - pw) // sh + 1
        if last:
            out_index, detr = st.output_for(y, PLANAR)
            dst = _replace_index(y, out_index)
        else:
            dst, detr = _Act(st.new_tensor(), oh, ow, x.c, x.zp, x.scale, x.dtype), False
        st.tp_job("MAXPOOL", src, dst.index, dst, stride=sh, weight_width=ph, weight_height=pw,
                  pad=(*pads, 0, 0), padding_same=any(pads), in_planar=True)
        src = dst
    if detr:
        st.detranspose(y, out_index)


RESIZE_FACTORS = (2, 4, 8, 16)  # nearest-neighbour factors run as x2 steps of four TP copies each


def _lower_resize(st: _Lowering, op: Operation) -> None:
    """RESIZE_NEAREST_NEIGHBOR by 2 in H and W: four TP copies, each writing every input pixel to one position of its
    output 2x2 block (any layout; byte-exact); by 4, 8 or 16 as that many x2 steps."""
    if len(op.inputs) != 2 or len(op.outputs) != 1:
        raise LoweringError("unexpected number of inputs/outputs")
    o = op.options
    if "align_corners" not in o:
        raise LoweringError("RESIZE_NEAREST_NEIGHBOR options not decoded")
    if o["align_corners"]:
        raise LoweringError("RESIZE_NEAREST_NEIGHBOR with align_corners (its source pixels are not out // 2)")
    x = _act(st.graph.tensors[op.inputs[0]], "input")
    y = _act(st.graph.tensors[op.outputs[0]], "output")
    size = st.graph.tensors[op.inputs[1]]
    if size.data is None or [int(v) for v in np.asarray(size.data).ravel()] != [y.h, y.w]:
        raise LoweringError("RESIZE_NEAREST_NEIGHBOR needs a constant size equal to the output's H, W")
    f = y.h // x.h
    if (y.h, y.w, y.c) != (f * x.h, f * x.w, x.c) or f not in RESIZE_FACTORS:
        raise LoweringError(f"resize {x.h}x{x.w} -> {y.h}x{y.w}: only the same factor of 2, 4, 8 or 16 in H and W "
                            "runs on the TP (x2 steps)")
    if x.dtype != y.dtype or x.zp != y.zp or np.float32(x.scale) != np.float32(y.scale):
        raise LoweringError("RESIZE_NEAREST_NEIGHBOR with different input and output quantization")
    # with a factor of 2 both TFLite source rules (floor(o / 2) and, with half-pixel centres, floor((o + 0.5) / 2))
    # give o // 2: output pixel (2h + a, 2w + b) is input pixel (h, w). A factor 2^k is k such steps: both rules
    # give o // 2^k, and nested floors of halvings are that floor.
    cx, lay = st.current(x)
    out_index, detr = st.output_for(y, lay)
    while True:
        last = cx.h * 2 == y.h
        dst = _replace_index(y, out_index) if last else _Act(st.new_tensor(), 2 * cx.h, 2 * cx.w, cx.c, cx.zp,
                                                             cx.scale, cx.dtype)
        for phase in range(4):
            st.tp_job("UPSAMPLE", cx, dst.index, dst, stride=2, phase=phase, in_planar=lay == PLANAR)
        if last:
            break
        cx = dst
    if detr:
        st.detranspose(y, out_index)


def _lower_fc(st: _Lowering, op: Operation) -> None:
    g = st.graph
    if len(op.inputs) < 2 or len(op.outputs) != 1:
        raise LoweringError("unexpected number of inputs/outputs")
    if "activation" not in op.options:
        raise LoweringError("FULLY_CONNECTED options (fused activation) not decoded")
    if op.options.get("weights_format", 0) != 0:
        raise LoweringError("FULLY_CONNECTED with shuffled weights not supported")
    x = _act(g.tensors[op.inputs[0]], "input")
    y = _act(g.tensors[op.outputs[0]], "output")
    wt = g.tensors[op.inputs[1]]
    if not (x.dtype == y.dtype == wt.dtype):
        raise LoweringError(f"mixed types (input {x.dtype}, weights {wt.dtype}, output {y.dtype})")
    n = x.size
    if x.c >= FC_MAX_INPUT:
        # Mesa's limit, kept in every mode: the wider factorised form is exact in the op sweeps, but its kernel
        # (1280 inputs: 10x8x16) has no fast datapath in the simulator yet, which made MobileNetV2's simulated
        # invoke 1.5x slower on both chips (measured 2026-11-30; docs/hardware/etnaviv-nn.md)
        raise LoweringError(f"FULLY_CONNECTED input of {x.c} channels (limit {FC_MAX_INPUT - 1}, Mesa's; the wider "
                            f"form is not on the simulator's fast datapath yet)")
    if not st.mesa_compat and x.c > 1 and x.h * x.w > 1:
        raise LoweringError("FULLY_CONNECTED over a spatial input (planar order differs from TFLite's flatten)")
    if y.size != y.c or y.h * y.w != 1:
        raise LoweringError(f"FULLY_CONNECTED output {y.h}x{y.w}x{y.c} not supported (1-D only)")
    if fc_factors(n)[:2] == (1, 1) and y.c > 8 and st.chip.version == 7:
        # the descriptor would equal a pointwise convolution's, whose coefficients the v7 core reads in blocks
        # of six input channels; this FC's stream is sequential (docs/hardware/etnaviv-nn.md)
        raise LoweringError(f"FULLY_CONNECTED of {n} inputs (no factor 2..15) with more than 8 outputs on v7")
    w, wzp, wscale, wscales = _stored_weights(wt, y.c, 0)
    if w.size != n * y.c:
        raise LoweringError(f"weights of {w.size} values for {n} inputs and {y.c} outputs")
    w = np.ascontiguousarray(w.reshape(y.c, n))
    bias = _bias(g, op, y.c, wscales is not None)
    relu = _relu(op.options.get("activation"), y)
    xin = st.planar_input(x)
    out_index, detr = st.output_for(y, PLANAR)
    job = EtnaOp(type=KIND_NN, fully_connected=True, relu=relu, stride=1, input_tensor=xin.index, input_count=1,
                 output_tensor=out_index, input_width=n, input_height=1, input_channels=1, input_zero_point=x.zp,
                 input_scale=x.scale, output_width=1, output_height=1, output_channels=y.c,
                 output_zero_point=y.zp, output_scale=y.scale, weight_width=n, weight_height=1,
                 weight_zero_point=wzp, weight_scale=wscale, weight_tensor_size=w.size,
                 bias_tensor_size=4 * y.c, input_tensor_sizes=(n, 0), output_tensor_size=y.size, weights=w,
                 bias=bias)
    _emit_nn(st, job, wscales)
    if detr:
        st.detranspose(y, out_index)


def _f32(x: float) -> np.float32:
    return np.float32(x)


def _lower_add(st: _Lowering, op: Operation) -> None:
    g = st.graph
    if len(op.inputs) != 2 or len(op.outputs) != 1:
        raise LoweringError("unexpected number of inputs/outputs")
    ta, tb = g.tensors[op.inputs[0]], g.tensors[op.inputs[1]]
    if ta.is_constant or tb.is_constant:
        raise LoweringError(f"{op.kind} with a constant operand not supported")
    a, b = _act(ta, "input"), _act(tb, "input")
    y = _act(g.tensors[op.outputs[0]], "output")
    if (a.h, a.w, a.c) != (b.h, b.w, b.c) or (a.h, a.w, a.c) != (y.h, y.w, y.c):
        raise LoweringError(f"{op.kind} with broadcasting not supported")
    if not (a.dtype == b.dtype == y.dtype):
        raise LoweringError(f"{op.kind} with mixed types")
    # A fused RELU (or a RELU6 whose clamp the output range already makes) is TFLite's clamp of the quantized
    # output at its zero point: the descriptor's relu bit, which clamps the requantized output of every NN job
    # (docs/hardware/etnaviv-nn.md §3.1). Mesa accepts the activation and drops it: `--mesa-compat` does too.
    relu = False if st.mesa_compat else _relu(op.options.get("activation", "NONE"), y)
    sub = op.kind == "SUB"
    v7 = st.chip.version == 7
    if v7 and sub and not st.mesa_compat:
        raise LoweringError("SUB on the v7 path not supported (Mesa lowers it as an ADD; a difference needs a "
                            "negative addition_offset word, which Mesa never programs: unverified)")

    ca, la = st.current(a)
    cb, lb = st.current(b)
    if la != lb:  # element-wise on raw bytes: both operands must be in the same layout
        ca, cb, la = st.planar_input(a), st.planar_input(b), PLANAR
    ca, cb = st.pair(ca, cb, la)
    out_index, detr = st.output_for(y, la)
    sa, sb = _f32(a.scale), _f32(b.scale)
    ratio = sb / sa
    common = {"type": KIND_NN, "stride": 1, "input_tensor": ca.index, "input_tensor_1": cb.index,
              "input_count": 2, "output_tensor": out_index, "input_zero_point": a.zp, "input_scale": a.scale,
              "output_zero_point": y.zp, "output_scale": y.scale, "input_tensor_sizes": (a.size, b.size),
              "output_tensor_size": y.size, "relu": relu}
    if v7:
        if st.mesa_compat:
            wscale = _f32(max(ratio, _f32(1.0)) / _f32(255.0))
            weight = int(np.round(_f32(1.0) / wscale))
            offset = int(np.round(ratio / wscale))
            # Mesa's bias ~ -offset * zp_b (the writer subtracts weight * zp_a); uint8 zero points only
            bias = int(np.round(_f32(a.zp - b.zp) * sb / (wscale * sa))) - offset * a.zp
            wscale_out: float = float(wscale)
        else:
            # acc = q * (A - zp_a) + p * (B - zp_b) with p / q the best approximation of s_b / s_a (q <= 255
            # the stream weight, p the 32-bit addition_offset); weight scale 1 / q makes the output scale
            # exact. The coefficient writer subtracts q * zp_a; the bias carries -p * zp_b (stored zero points).
            weight, offset = add_ratio(float(sb) / float(sa), 255, 255)
            bias = -offset * b.zp
            wscale_out = 1.0 / weight
        w = np.zeros(8, np.uint8)
        w[0] = min(weight, 255)
        job = EtnaOp(addition=True, input_width=a.h, input_height=a.w, input_channels=a.c, output_width=y.h,
                     output_height=y.w, output_channels=y.c, weight_width=2, weight_height=2, weight_zero_point=0,
                     weight_scale=wscale_out, weight_tensor_size=8, bias_tensor_size=4, addition_offset=offset,
                     weights=w, bias=np.array([bias], np.int32), **common)
    else:
        job = _v8_add(a, b.zp, ratio, float(sb) / float(sa), sub, st.mesa_compat, common)
    _check_nn(job, st.chip, st.mesa_compat)
    st.jobs.append(job)
    if detr:
        st.detranspose(y, out_index)


def add_ratio(ratio: float, q_max: int, p_max: int, sum_max: int | None = None) -> tuple[int, int]:
    """(q, p): the integers 1 <= q <= q_max, 1 <= p <= p_max (p + q <= sum_max when given) whose p / q is
    nearest `ratio`, the smallest q on ties. ADD/SUB multiply input A by q and input B by p."""
    qs = np.arange(1, q_max + 1, dtype=np.int64)
    ps = np.clip(np.rint(qs * ratio), 1, p_max).astype(np.int64)
    if sum_max is not None:
        ps = np.minimum(ps, sum_max - qs)
    ok = ps >= 1
    if not ok.any():
        raise LoweringError(f"input scale ratio {ratio:.6g} outside what the weights express")
    err = np.where(ok, np.abs(ps / qs - ratio), np.inf)
    i = int(np.argmin(err))
    return int(qs[i]), int(ps[i])


def _exact_scale_multiple(q: int, most: int, common: dict) -> int:
    """The multiple `up` <= most of the ADD/SUB weight q to use: the largest whose requantization multiplier
    s_a / (up·q·s_y) the v8 post multiplier (requant.post_scale) holds exactly, else `most`. Where TFLite's
    result can be an exact tie (s_y a power-of-two multiple of s_a, e.g. a difference of two halves of one
    tensor at twice its scale), an inexact multiplier moves every tie the same way: the box decode's SUB was
    50 % exact with q = 127 (multiplier 1/254), 100 % with q = 64 (1/128)."""
    for up in range(most, 0, -1):
        # the scale as nn.py derives it for the descriptor (weight scale 1 / (up·q)), encoded as the encoder does
        scale = float(common["input_scale"]) * (1.0 / (up * q)) / float(common["output_scale"])
        try:
            if post_scale(scale, 8, nearest=True).real(8) == scale:
                return up
        except RequantError:
            continue
    return most


def _v8_add(a: _Act, b_zp: int, ratio: np.float32, ratio_d: float, sub: bool, mesa_compat: bool,
            common: dict) -> EtnaOp:
    """v8 element-wise add/sub as a chunk-selecting convolution over both inputs back to back (§1.3)."""
    h, w, c = a.h, a.w, a.c
    if not mesa_compat and not (h % 2 == 0 and w * c <= IMAGE_SIZE_MAX):
        # An element-wise op reads both operands as flat byte arrays in one layout: any even row count R that
        # divides the N bytes (rows of N / R bytes) gives view A. Views B and C would need a kernel of 2C or 2C/3
        # x C weights (a YOLOv8 box decode, 1x2x8400: 141 M coefficients, minutes of compile); R = 2 or 4 needs 8
        # or 32.
        n = h * w * c
        rows_a = next((r for r in range(2, n + 1, 2) if n % r == 0 and n // r <= IMAGE_SIZE_MAX), None)
        if rows_a is not None:
            h, w, c = rows_a, n // rows_a, 1
    if h % 2 == 0 and w * c <= IMAGE_SIZE_MAX:  # view A: rows of W*C bytes, 4 rows per plane
        rows, cols, in_z, out_z, k = 4, w * c, h // 2, h, 4
        out_rows, out_cols = 1, w * c
    elif c % 3 == 0 and h * w <= IMAGE_SIZE_MAX:  # view B
        rows, cols, in_z, out_z, k = 3, h * w, 2 * c // 3, c, 3
        out_rows, out_cols = 1, h * w
    else:  # view C: the tensors as they are, 2C channels
        rows, cols, in_z, out_z, k = h, w, 2 * c, c, 1
        out_rows, out_cols = h, w
    if mesa_compat:
        mn = -ratio if sub else ratio
        hi, lo = (max(_f32(1.0), mn), min(_f32(1.0), mn))
        scale = _f32((hi - min(lo, _f32(0.0))) / _f32(255.0))
        zp = int(np.clip(np.round(-min(lo, _f32(0.0)) / scale), 0, 255))
        wa = int(np.clip(zp + np.round(_f32(1.0) / scale), 0, 255))
        wb = int(np.clip(zp + np.round(mn / scale), 0, 255))
        factor = int(np.round(ratio / scale))  # == round(sB / (sA * scale))
        bias_v = (a.zp - b_zp) * (-factor if sub else factor)  # shifted zero points
        wscale: float = float(scale)
    else:
        # acc = q * (A - zp_a) +/- p * (B - zp_b), p / q the best approximation of s_b / s_a with weights
        # zp + q and zp - p (SUB) or q and p (ADD, zp 0) inside 0..255; weight scale 1 / q (exact output
        # scale). The MAC subtracts zp_a from both inputs; the bias restores B's own zero point.
        q, p = add_ratio(ratio_d, 255, 255, 255 if sub else None)
        # The same ratio with the largest weights that fit: the v8 stream codes a weight by its distance from the
        # zero point read as an int8, so weights near 255 code short (measured: MobileNetV2's first ADD 944
        # instead of 1200 bytes); the accumulator only gains precision.
        up = _exact_scale_multiple(q, 255 // (p + q) if sub else 255 // max(p, q), common)
        q, p = up * q, up * p
        zp = p if sub else 0
        wa, wb = zp + q, zp - p if sub else p
        bias_v = (a.zp - b_zp) * (-p if sub else p)
        wscale = 1.0 / q
    kk = k * in_z  # flattened kernel length == 2 * out_z
    wts = np.full((out_z, kk), zp, np.uint8)
    idx = np.arange(out_z)
    wts[idx, idx] = wa
    wts[idx, idx + out_z] = wb
    # Mesa's naming: width = rows. Its lowered op calls the 1-column kernel "width 1, height k";
    # in our convention weight_width counts kernel rows.
    ww, wh = (1, k) if mesa_compat else (k, 1)
    return EtnaOp(input_width=rows, input_height=cols, input_channels=in_z, output_width=out_rows,
                  output_height=out_cols, output_channels=out_z, weight_width=ww, weight_height=wh,
                  weight_zero_point=zp, weight_scale=wscale, weight_tensor_size=wts.size,
                  bias_tensor_size=4 * out_z, weights=wts, bias=np.full(out_z, bias_v, np.int32), **common)


def _lower_elementwise_tp(st: _Lowering, op: Operation) -> None:
    g = st.graph
    if op.kind == "LOGISTIC" and not st.mesa_compat and silu_only(g, op, st.nodes, st.outputs | st.requested):
        return  # its SiLU MULs compute it from x themselves (lower_unary.py)
    if len(op.inputs) != 1 or len(op.outputs) != 1:
        raise LoweringError("unexpected number of inputs/outputs")
    x = _act(g.tensors[op.inputs[0]], "input")
    y = _act(g.tensors[op.outputs[0]], "output")
    if (x.h, x.w, x.c) != (y.h, y.w, y.c) or x.dtype != y.dtype:
        raise LoweringError("input and output shapes/types differ")
    cx, lay = st.current(x)
    out_index, detr = st.output_for(y, lay)
    st.tp_job(ELEMENTWISE_TP[op.kind], cx, out_index, _replace_index(y, out_index), stride=1)
    if detr:
        st.detranspose(y, out_index)


def _lower_table(st: _Lowering, op: Operation) -> None:
    """A per-element map of one 8-bit tensor as a TP TABLE job (lower_unary.py)."""
    if op.kind in ("ADD", "SUB") and not is_table_binary(st.graph, op):
        return _lower_add(st, op)  # two feature maps: the NN job
    plan = table_plan(st.graph, op)
    if isinstance(plan, str):
        raise LoweringError(plan)
    x, y = _act(st.graph.tensors[plan.input], "input"), _act(st.graph.tensors[plan.output], "output")
    if (x.h, x.w, x.c) != (y.h, y.w, y.c):
        raise LoweringError("input and output shapes differ")
    cx, lay = st.current(x)
    out_index, detr = st.output_for(y, lay)
    st.tp_job("TABLE", cx, out_index, _replace_index(y, out_index), stride=1, lut=plan.fit.lut,
              input_zero_point=plan.fit.in_zp)
    if detr:
        st.detranspose(y, out_index)


def _lower_parts(st: _Lowering, op: Operation) -> None:
    """CONCATENATION / SPLIT / SPLIT_V / SLICE / STRIDED_SLICE as byte ranges of one buffer, planar or NHWC
    (views.py)."""
    plan = slice_plan(st.graph, op) if op.kind in SLICE_KINDS else parts_plan(st.graph, op)
    if isinstance(plan, str):
        raise LoweringError(plan)
    if op.kind == "CONCATENATION":
        _concat_in_place(st, plan)
        return
    x = _act(st.graph.tensors[plan.whole], "input")
    whole = st.nhwc_bytes(x) if plan.nhwc else st.planar_input(x)
    for t, offset in zip(plan.parts, plan.offsets):
        y = _act(st.graph.tensors[t], "output")
        if plan.nhwc:  # NHWC bytes: what the runtime reads too
            st.layout[y.index] = NHWC
            st.view(y.index, whole.index, offset, x.size)
            continue
        out_index, detr = st.output_for(y, PLANAR)
        st.view(out_index, whole.index, offset, x.size)
        if detr:
            st.detranspose(y, out_index)


def _concat_in_place(st: _Lowering, plan: PartsPlan) -> None:
    """Every part's producer writes into the whole's buffer at the part's offset. A part that cannot be a view
    there (a view of another buffer already, an ADD operand in its pair's buffer, named twice, or a v7 producer
    whose phantom planes would land on a part written before it) is copied in by a byte-exact TP job."""
    g = st.graph
    y = _act(g.tensors[plan.whole], "output")
    tables = [_requant_fit(g, t, plan.whole) for t in plan.parts]
    layout = NHWC if plan.nhwc else PLANAR
    holder, detr = st.output_for(y, layout)
    fetch = st.nhwc_bytes if plan.nhwc else st.planar_input
    srcs = [fetch(_act(g.tensors[t], "input")) for t in plan.parts]
    keep = [tables[k] is None and st.aliasable(s.index) and s.index != holder
            and s.index not in {p.index for p in srcs[:k]} for k, s in enumerate(srcs)]
    extents = [st.extent(s.index) for s in srcs]
    for k, s in enumerate(srcs):
        end, last = extents[k]
        if keep[k] and end > s.size:  # phantom planes past the part's end: parts written earlier must not sit there
            keep[k] = not any(keep[j] and plan.offsets[j] < plan.offsets[k] + end and extents[j][1] < last
                              for j in range(k + 1, len(srcs)))
    for k, s in enumerate(srcs):
        fit = tables[k]
        if fit is not None:  # requantized into its range by a TABLE job
            t = st.new_tensor()
            dst = _Act(t, s.h, s.w, s.c, y.zp, y.scale, y.dtype)
            st.tp_job("TABLE", s, t, dst, stride=1, lut=fit.lut, input_zero_point=fit.in_zp)
            st.view(t, holder, plan.offsets[k], y.size)
        else:
            st.view(s.index if keep[k] else st.copy(s, layout).index, holder, plan.offsets[k], y.size)
    if detr:
        st.detranspose(y, holder)


def _requant_fit(g: Graph, part: int, whole: int) -> TableFit | None:
    """The TP table of a uint8 concatenation part TFLite requantizes (None: same quantization), or LoweringError
    when the table cannot reproduce TFLite's bytes exactly."""
    target = concat_requant_table(g, part, whole)
    if target is None:
        return None
    pq, wq = g.tensors[part].quant, g.tensors[whole].quant
    assert pq is not None and wq is not None
    fit = fit_table(target, pq.zero_point, wq.zero_point)
    if fit.max_diff > 0:
        raise LoweringError(f"CONCATENATION part {part} of another quantization: the TP table reproduces TFLite's "
                            f"requantization on {round(fit.exact * 256)}/256 input values only (zero-copy needs the "
                            "same quantization)")
    return fit


def _lower_reshape(st: _Lowering, op: Operation) -> None:
    """RESHAPE / SQUEEZE / EXPAND_DIMS / a layout TRANSPOSE as a view of the bytes that already hold the result
    (views.py); a reshape that regroups channels of planar data reads the NHWC bytes (a detranspose)."""
    plan = reshape_plan(st.graph, op)
    if isinstance(plan, str):
        raise LoweringError(plan)
    x = _act(st.graph.tensors[plan.x], "input")
    y = _act(st.graph.tensors[plan.y], "output")
    if plan.perm == TO_NCHW:  # the NCHW tensor's row-major bytes are the input's planes
        src, lay = st.planar_input(x), NHWC
    elif plan.perm == TO_NHWC:  # the NHWC tensor's planes are the input's row-major bytes
        src, lay = st.nhwc_bytes(x), PLANAR
    else:
        src, lay = st.current(x)
        if lay == PLANAR and not plan.planar_same:
            src, lay = st.nhwc_bytes(x), NHWC
    if lay == NHWC:
        st.layout[y.index] = NHWC
        st.view(y.index, src.index, 0, x.size)
        return
    out_index, detr = st.output_for(y, PLANAR)
    st.view(out_index, src.index, 0, x.size)
    if detr:
        st.detranspose(y, out_index)


def _pad_amounts(g: Graph, op: Operation) -> np.ndarray:
    if len(op.inputs) != (3 if op.kind == "PADV2" else 2) or len(op.outputs) != 1:
        raise LoweringError(f"{op.kind} with unexpected inputs/outputs")
    p = g.tensors[op.inputs[1]]
    if p.data is None or p.dtype != "int32":
        raise LoweringError("PAD paddings must be a constant int32 tensor")
    pads = np.asarray(p.data).reshape(-1, 2)
    if pads.shape[0] > 4:
        raise LoweringError("PAD of more than 4 dims")
    pads = np.concatenate([np.zeros((4 - pads.shape[0], 2), pads.dtype), pads])
    if pads[0].any():
        raise LoweringError("PAD of the batch dimension not supported")
    if (pads < 0).any() or (pads > PAD_MAX * PAD_JOBS_MAX).any():
        raise LoweringError(f"PAD amounts {pads[1:].tolist()} outside 0..{PAD_MAX * PAD_JOBS_MAX} ({PAD_JOBS_MAX} TP "
                            f"jobs of at most {PAD_MAX} per side)")
    return pads


def _pad_value(g: Graph, op: Operation, y: _Act) -> int:
    """The stored value a PADV2 pads with: its constant, quantized like the output (TFLite writes it as it is)."""
    v = g.tensors[op.inputs[2]]
    data = None if v.data is None else np.asarray(v.data).reshape(-1)
    if data is None or data.size != 1 or v.dtype != y.dtype:
        raise LoweringError(f"PADV2 pad value must be one constant {y.dtype} value")
    if v.quant is not None and len(v.quant.scales) and (
            v.quant.zero_point + _dtype_shift(v.dtype) != y.zp or np.float32(v.quant.scale) != np.float32(y.scale)):
        raise LoweringError("PADV2 pad value quantized unlike its output")
    return int(data[0]) + _dtype_shift(y.dtype)


def _lower_pad(st: _Lowering, op: Operation) -> None:
    g = st.graph
    pads = _pad_amounts(g, op)
    if st.mesa_compat and (pads > PAD_MAX).any():
        raise LoweringError(f"PAD amounts {pads[1:].tolist()} outside 0..{PAD_MAX} (Mesa's limit, --mesa-compat)")
    x = _act(g.tensors[op.inputs[0]], "input")
    y = _act(g.tensors[op.outputs[0]], "output")
    if (y.h, y.w, y.c) != (x.h + pads[1].sum(), x.w + pads[2].sum(), x.c + pads[3].sum()):
        raise LoweringError("PAD output shape inconsistent with the paddings")
    if x.zp != y.zp or x.dtype != y.dtype:
        raise LoweringError("PAD with different input and output quantization")
    if not st.mesa_compat and pads[3].any() and x.h == 1:
        raise LoweringError("channel padding on a single-row tensor (Mesa's one-core TP pad drops it)")
    zp = x.zp
    if op.kind == "PADV2":
        zp = _pad_value(g, op, y)
        if st.mesa_compat and pads[3].any():
            raise LoweringError("PADV2 of the channels in --mesa-compat (Mesa's TP pad drops z padding)")
    cx, lay = st.current(x)
    out_index, detr = st.output_for(y, lay)
    # a pad wider than PAD_MAX: jobs of at most PAD_MAX per side, each padding what is left with the same value (a
    # pad of a pad with one constant is the wider pad)
    left = pads[1:].copy()
    first = True
    while first or left.any():  # one job at least (a pad of nothing is a copy)
        first = False
        step = np.minimum(left, PAD_MAX)
        left -= step
        if left.any():
            grown = _Act(st.new_tensor(), cx.h + int(step[0].sum()), cx.w + int(step[1].sum()),
                         cx.c + int(step[2].sum()), y.zp, y.scale, y.dtype)
            dst, dst_index = grown, grown.index
        else:
            dst, dst_index = _replace_index(y, out_index), out_index
        # pad tuple as Mesa stores it: (x = TFLite H, y = W, z = C), before/after each
        pad6 = tuple(int(v) for v in step.reshape(-1))
        # PADV2: the padding reads as in_zp and the copy subtracts and adds the same value, so both zero points set to
        # the stored constant pad with it and keep every input byte (docs/hardware/etnaviv-tp.md §5)
        st.tp_job("PAD", cx, dst_index, dst, stride=1, pad=pad6, in_planar=lay == PLANAR, input_zero_point=zp,
                  output_zero_point=zp)
        cx = dst
    if detr:
        st.detranspose(y, out_index)


_LOWER = {"CONV_2D": _lower_conv, "DEPTHWISE_CONV_2D": _lower_conv, "FULLY_CONNECTED": _lower_fc,
          "AVERAGE_POOL_2D": _lower_avgpool, "MEAN": _lower_mean, "MAX_POOL_2D": _lower_maxpool, "RESIZE_NEAREST_NEIGHBOR": _lower_resize,
          "ADD": _lower_add, "SUB": _lower_add, "PAD": _lower_pad, "PADV2": _lower_pad, "RELU": _lower_elementwise_tp,
          "ABS": _lower_elementwise_tp, "LOGISTIC": _lower_elementwise_tp} | dict.fromkeys(TABLE_OPS, _lower_table) \
    | dict.fromkeys((*PART_KINDS, *SLICE_KINDS), _lower_parts) \
    | dict.fromkeys((*RESHAPE_KINDS, "TRANSPOSE"), _lower_reshape)


# Per-channel weights: the NN descriptor holds one post multiplier and shift, and neither of the two chips has the
# vendor's per-channel requantization feature in the public feature database (docs/hardware/etnaviv-per-channel.md).
# A layer with per-channel scales runs as one NN job per run of consecutive output channels whose requantization,
# as the descriptor encodes it, is identical (exactly what one job with per-channel multipliers would compute).
# Real models give every channel its own scale (one job per channel, measured on the zoo); every job reads the
# whole input again, so the split is claimed only up to this many jobs (the measurement behind the number:
# docs/hardware/etnaviv-per-channel.md).
MAX_CHANNEL_JOBS = 16


def channel_groups(input_scale: float, wscales: np.ndarray, output_scale: float, version: int) -> list[tuple[int, int]]:
    """Runs [a, b) of output channels whose NN requantization (post multiplier and shift as the descriptor encodes
    them: the real scale in double from the float32 scales, as TFLite's per-channel multiplier) is the same."""
    keys: list[tuple[int, int]] = []
    for s in np.asarray(wscales, np.float32).tolist():
        try:
            ps = post_scale(float(input_scale) * float(s) / float(output_scale), version, nearest=True)
        except RequantError as exc:
            raise LoweringError(str(exc)) from None
        keys.append((ps.multiplier, ps.shift))
    groups: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(keys) + 1):
        if i == len(keys) or keys[i] != keys[start]:
            groups.append((start, i))
            start = i
    return groups


def _emit_nn(st: _Lowering, job: EtnaOp, wscales: np.ndarray | None, in_plane: int = 0) -> None:
    """Append an NN job, or for per-channel weights one job per channel group (each writing its channels' planes of
    the same output tensor; v8 native depthwise jobs also read only their channels' input planes)."""
    if wscales is None:
        _check_nn(job, st.chip, st.mesa_compat)
        st.jobs.append(job)
        return
    if st.mesa_compat:
        raise LoweringError("per-channel weight quantization (Mesa refuses per-axis scales)")
    native_dw = job.depthwise and st.chip.version == 8
    groups = channel_groups(job.input_scale, wscales, job.output_scale, st.chip.version)
    if native_dw:  # a native depthwise job of 2..cores-1 channels has no verified channel map (see _lower_conv)
        groups = [g for a, b in groups for g in
                  ([(a, b)] if b - a == 1 or b - a >= st.chip.nn_core_count else [(i, i + 1) for i in range(a, b)])]
    if len(groups) > MAX_CHANNEL_JOBS:
        raise LoweringError(
            f"per-channel weight scales need {len(groups)} NN jobs (one per run of output channels with the same "
            f"requantization; limit {MAX_CHANNEL_JOBS}): the NN descriptor has one post multiplier and neither "
            "chip lists the per-channel requantization feature (docs/hardware/etnaviv-per-channel.md)")
    plane = job.output_width * job.output_height
    assert job.weights is not None and job.bias is not None
    for a, b in groups:
        k = b - a
        w = job.weights[a:b]
        block = job.weights_block  # a block-diagonal form's kernels a .. b - 1 keep their input channels
        sub = replace(job, output_channels=k, weight_scale=float(np.float32(wscales[a])), weights=w,
                      weights_first=job.weights_first + a if block else 0, bias=job.bias[a:b],
                      weight_tensor_size=w.size * (job.input_channels // block if block else 1),
                      bias_tensor_size=4 * k, output_offset=a * plane)
        if native_dw:
            sub = replace(sub, input_channels=k, input_offset=a * in_plane)
        _check_nn(sub, st.chip, st.mesa_compat)
        st.jobs.append(sub)


def _check_nn(job: EtnaOp, chip: Chip, mesa_compat: bool) -> None:
    """Refuse what the descriptor or requantization cannot express (the coefficient size does not matter)."""
    try:
        nn_geometry(job, chip, mesa_compat)
        post_scale(float(conv_scale(job.input_scale, job.weight_scale, job.output_scale)), chip.version)
    except (DescriptorError, RequantError, TilingError) as exc:
        raise LoweringError(str(exc)) from None
    if job.input_channels > 0x3FFF or job.output_channels > 0x3FFF:
        raise LoweringError("more than 16383 channels")


# ---- entry points ------------------------------------------------------------------------------------------

def partition_outputs(graph: Graph, nodes: list[int]) -> set[int]:
    """Tensors produced by `nodes` that something outside them (or nobody) reads."""
    inside = set(nodes)
    produced = {t for op in graph.operations if op.index in inside for t in op.outputs}
    out = set()
    for t in produced:
        consumers = graph.consumers(t)
        if not consumers or any(c.index not in inside for c in consumers):
            out.add(t)
    return out


@dataclass(frozen=True)
class Lowered:
    jobs: list[EtnaOp]
    planar: frozenset[int]  # IR tensors whose own buffer ends up holding planar (not NHWC) bytes
    aliases: dict[int, tuple[int, int]] = field(default_factory=dict)  # view -> (holder, byte offset)
    held: dict[int, int] = field(default_factory=dict)  # holder -> its size in bytes


def lower(graph: Graph, nodes: list[int], chip: Chip, mesa_compat: bool = False, outputs: Iterable[int] = (),
          weights: bool = True) -> Lowered:
    """The job list of a partition (node indices in execution order) and the layout its outputs end in;
    raises LoweringError with the reason. `outputs`: the partition outputs the runtime binds (a graph output
    read inside the partition too is one; a SiLU's sigmoid among them keeps its LOGISTIC job). weights=False: the
    jobs' weight arrays have their shapes but not necessarily their values (what the support decision needs)."""
    by_index = {op.index: op for op in graph.operations}
    st = _Lowering(graph, list(nodes), chip, mesa_compat, max(graph.tensors, default=-1) + 1, weights=weights)
    st.outputs = partition_outputs(graph, nodes)
    st.requested = set(outputs)
    for n in nodes:
        op = by_index[n]
        fn = _LOWER.get(op.kind)
        if fn is None:
            raise LoweringError(f"{op.kind} not supported on etnaviv")
        fn(st, op)
    written = {j.output_tensor: j for j in st.jobs}  # the last job writing each tensor
    # a view or a holder no job writes directly holds planar bytes when its layout says so and no detranspose
    # moved its data elsewhere
    planar = frozenset(t for t, lay in st.layout.items() if lay == PLANAR and (
        (t in written and written[t].tp_name != "DETRANSPOSE")
        or ((t in st.alias or t in st.held) and st.where.get(t, t) == t)))
    return Lowered(st.jobs, planar, dict(st.alias), dict(st.held))


def lower_graph(graph: Graph, nodes: list[int], chip: Chip, mesa_compat: bool = False,
                weights: bool = True) -> list[EtnaOp]:
    """The job list of a partition (see `lower`)."""
    return lower(graph, nodes, chip, mesa_compat, weights=weights).jobs


def support(graph: Graph, chip: Chip) -> dict[int, tuple[bool, str]]:
    """Per node: (claimed, human reason). A node is claimed when it lowers on its own (default mode)."""
    result: dict[int, tuple[bool, str]] = {}
    for op in graph.operations:
        if op.kind not in _LOWER:
            why = f"{op.kind} not supported on etnaviv (no NPU job for it in teflon, nor in Mesa's etnaviv)"
            result[op.index] = (False, why)
            continue
        try:
            jobs = lower_graph(graph, [op.index], chip, weights=False)
        except LoweringError as exc:
            result[op.index] = (False, str(exc))
            continue
        except (ValueError, KeyError, IndexError) as exc:  # malformed node (missing tensor, odd shape, …)
            result[op.index] = (False, f"malformed {op.kind} node: {exc}")
            continue
        bad = [v for job in jobs for v in job_violations(job, chip)]
        if bad:
            # the encoding falls outside what the hardware takes (teflon.etnaviv.check): the layer stays on the CPU
            result[op.index] = (False, f"descriptor outside the hardware's ranges: {'; '.join(bad)}")
            continue
        result[op.index] = (True, claim_reason(graph, op) or _claim_reason(op, chip, sum(j.type == KIND_NN for j in jobs)))
    return _near_npu(graph, drop_lone_cheap(graph, result, _CHEAP_KINDS, VIEW_KINDS, CHEAP_GROUP_LIMIT))


# Single-map jobs with no weights worth moving to the NPU: alone between CPU nodes each would be a partition of its
# own, paying the layout conversions and a CPU <-> NPU round trip for less work than the CPU does in place.
_CHEAP_KINDS = frozenset(("AVERAGE_POOL_2D", "MEAN", "MAX_POOL_2D", "RESIZE_NEAREST_NEIGHBOR", "ADD", "SUB", "RELU", "ABS",
                          "LOGISTIC", "PAD", "PADV2", *TABLE_OPS))
# Up to two such nodes together (a squeeze-excite MEAN with the HARD_SWISH before it, a residual ADD with its RELU)
# between CPU nodes still cost two layout conversions and a round trip for two passes the CPU makes over the map.
CHEAP_GROUP_LIMIT = 2


def _near_npu(graph: Graph, result: dict[int, tuple[bool, str]]) -> dict[int, tuple[bool, str]]:
    """A view node (views.py) moves no byte on the NPU: it is claimed only where it can join NPU work (a claimed
    producer or reader, possibly through other views, with no path through a CPU node between them, which would
    keep the two in different partitions); alone it would be a partition of copies."""
    views = [op for op in graph.operations if op.kind in VIEW_KINDS and result[op.index][0]]
    claimed = {i for i, (ok, _) in result.items() if ok} - {op.index for op in views}
    grew = True
    while grew:
        grew = False
        for op in views:
            if op.index in claimed:
                continue
            before = [p for p in (graph.producer(t) for t in op.inputs if t >= 0) if p is not None]
            after = [c for t in op.outputs for c in graph.consumers(t)]
            # joining a producer's partition needs every input there: an input the CPU writes later would start
            # a partition of its own (TFLite's partitioning)
            by_producer = all(p.index in claimed for p in before) and any(
                not via_cpu(graph, p.index, op.index, claimed) for p in before)
            if by_producer or any(c.index in claimed and not via_cpu(graph, op.index, c.index, claimed)
                                  for c in after):
                claimed.add(op.index)
                grew = True
    for op in views:
        if op.index not in claimed:
            why = (f"{op.kind} is not next to NPU work (it moves no byte on the NPU; the CPU runs it where its "
                   "neighbours run)")
            result[op.index] = (False, why)
    return result


def _claim_reason(op: Operation, chip: Chip, nn_jobs: int = 1) -> str:
    if op.kind in (*CONV_KINDS, "FULLY_CONNECTED") and nn_jobs > 1:
        return (f"{op.kind} with per-channel weights runs as {nn_jobs} NN jobs on the v{chip.version} path (one per "
                "run of output channels with the same requantization)")
    if op.kind in CONV_KINDS:
        return f"{op.kind} runs as an NN job on the v{chip.version} path"
    if op.kind == "FULLY_CONNECTED":
        return "FULLY_CONNECTED runs as an NN job (input factorised into a 3-D kernel)"
    if op.kind in ("ADD", "SUB"):
        return f"{op.kind} runs as a two-input NN convolution"
    if op.kind == "AVERAGE_POOL_2D":
        return "AVERAGE_POOL_2D runs as a unit-weight depthwise NN job (TFLite's rounding, proven for its window)"
    if op.kind == "MEAN":
        return "MEAN runs as a whole-plane unit-weight depthwise NN job (TFLite's MEAN rounding, proven for its sums)"
    if op.kind == "MAX_POOL_2D":
        return "MAX_POOL_2D runs as TP max-pooling jobs (the vendor's TP pooling; 5x5 and 7x7 as cascades of 3x3)"
    if op.kind == "RESIZE_NEAREST_NEIGHBOR":
        return ("RESIZE_NEAREST_NEIGHBOR runs as four TP copies per x2 step, one per pixel of each output 2x2 "
                "block")
    if op.kind in SLICE_KINDS:
        return f"{op.kind} in place: the kept channels are a plane range of the input's buffer"
    if op.kind in PART_KINDS:
        return (f"{op.kind} in place: its parts are plane ranges of one buffer (producers write into it, readers "
                "read from it; a part that cannot sit there is copied in by a TP job)")
    if op.kind in VIEW_KINDS:
        return (f"{op.kind} in place: the output is the bytes of its input (a reshape regrouping the channels of "
                "planar data reads them after a TP detranspose)")
    return f"{op.kind} runs as a TP job"
