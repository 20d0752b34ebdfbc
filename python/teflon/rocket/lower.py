"""CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED -> RocketConv (operations.py): one CNA -> CORE -> DPU pass each.

Everything is expressed in the NPU's stored domain (quantization.py). A PAD that only feeds the convolution joins
its padding (pad_fold.py).
"""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Operation, Tensor
from .geometry import same_pads
from .operations import CONV_KINDS, RocketConv
from .pad_fold import folded_pad
from .quantization import LoweringError, activation_bounds, stored_bytes, stored_offset, tensor_quant

# Kernel sizes claimed: the weight-size fields hold 31 (5 bits, both generations), the pad fields 15 (4 bits); 7 is
# the largest the op sweeps prove on both simulators (docs/hardware/rocket.md "Kernels").
MAX_KERNEL = 7
# Strides claimed along each axis (CONV_X_STRIDE / CONV_Y_STRIDE are 3-bit fields; 3 is what the sweeps prove).
MAX_STRIDE = 3



def _weight_quant(w: Tensor, per_channel: bool) -> tuple[np.float32, int, np.ndarray | None]:
    """(first scale, zero point, per-channel scales or None). Per-channel weights need one zero point."""
    if not per_channel or w.quant is None or w.quant.per_tensor:
        return (*tensor_quant(w, "weight"), None)
    zps = w.quant.zero_points
    if not np.all(zps == zps[0]):
        raise LoweringError("per-channel weights with different zero points not supported")
    scales = np.asarray(w.quant.scales, np.float32)
    if np.any(scales <= 0):
        raise LoweringError("per-channel weight scale not positive")
    return np.float32(scales[0]), int(zps[0]), scales


def lower_conv(graph: Graph, op: Operation, per_channel: bool = False, clamp: bool = False,
               fold_pad: bool = True) -> RocketConv:
    """Build a RocketConv from a CONV_2D / DEPTHWISE_CONV_2D node, or raise LoweringError(reason).

    per_channel: accept per-output-channel weight scales (the DPU BS multiplier scales channels, ..perchannel).
    clamp: accept a fused RELU/RELU6 whose bounds fall inside the output range (the generation's DPU clamps; the
    bounds go to act_min / act_max), else only one the output range already applies.
    fold_pad: fold a foldable input PAD (pad_fold.py) into the padding; False reads the PAD's output as given."""
    if op.kind not in CONV_KINDS:
        raise LoweringError(f"{op.kind} is not a convolution")
    if len(op.inputs) < 2 or len(op.outputs) != 1:
        raise LoweringError("unexpected number of inputs/outputs")
    x = graph.tensors[op.inputs[0]]
    w = graph.tensors[op.inputs[1]]
    b = graph.tensors[op.inputs[2]] if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
    y = graph.tensors[op.outputs[0]]
    o = op.options
    dw = op.kind == "DEPTHWISE_CONV_2D"

    fold = folded_pad(graph, op) if fold_pad else None
    if fold is not None:  # read the PAD's input; its amounts join the padding (pad_fold.py)
        x = graph.tensors[fold[0].inputs[0]]
    if x.dtype not in ("uint8", "int8"):
        raise LoweringError(f"input type {x.dtype} not supported (uint8 or int8 per-tensor only)")
    if w.dtype != x.dtype or y.dtype != x.dtype:
        raise LoweringError(f"mixed types (input {x.dtype}, weights {w.dtype}, output {y.dtype})")
    if x.is_constant:
        raise LoweringError("constant input tensor")
    if w.data is None:
        raise LoweringError("weights are not constant")
    if b is not None and (b.data is None or b.dtype != "int32"):
        raise LoweringError("bias must be a constant int32 tensor")
    if len(x.shape) != 4 or len(y.shape) != 4 or len(w.shape) != 4:
        raise LoweringError("only 4-D NHWC tensors are supported")
    if x.shape[0] != 1 or y.shape[0] != 1:
        raise LoweringError(f"batch {x.shape[0]} not supported (batch 1 only)")

    sx, zx = tensor_quant(x, "input")
    sw, zw, w_scales = _weight_quant(w, per_channel)
    sy, zy = tensor_quant(y, "output")
    if w_scales is not None and (len(w_scales) != int(y.shape[3]) or w.quant.axis != (3 if dw else 0)):
        raise LoweringError(f"per-channel weight scales ({len(w_scales)}) do not follow the output channels")
    if b is not None and b.quant is not None and not b.quant.per_tensor and w_scales is None:
        raise LoweringError(f"per-channel bias quantization ({len(b.quant.scales)} scales) without per-channel weights")

    sh, sw_ = int(o.get("stride_h", 1)), int(o.get("stride_w", 1))
    if not (1 <= sh <= MAX_STRIDE and 1 <= sw_ <= MAX_STRIDE):
        raise LoweringError(f"stride {sh}x{sw_} not supported (1 to {MAX_STRIDE} along each axis)")
    if int(o.get("dilation_h", 1)) != 1 or int(o.get("dilation_w", 1)) != 1:
        raise LoweringError(f"dilation {o.get('dilation_h')}x{o.get('dilation_w')} not supported")
    padding = o.get("padding")
    if padding not in ("SAME", "VALID"):
        raise LoweringError(f"padding {padding} not supported")

    _, ih, iw, ic = x.shape
    _, oh, ow, oc = y.shape
    if dw:
        if int(o.get("depth_multiplier", 1)) != 1 or oc != ic:
            raise LoweringError(f"depthwise depth_multiplier {o.get('depth_multiplier')} not supported (1 only)")
        if w.shape[0] != 1 or w.shape[3] != ic:
            raise LoweringError(f"unexpected depthwise weight shape {w.shape}")
    elif w.shape[0] != oc or w.shape[3] != ic:
        raise LoweringError(f"unexpected weight shape {w.shape}")
    kh, kw = int(w.shape[1]), int(w.shape[2])
    if not (1 <= kh <= MAX_KERNEL and 1 <= kw <= MAX_KERNEL):
        raise LoweringError(f"kernel {kh}x{kw} not supported (1 to {MAX_KERNEL} rows and columns)")

    if fold is not None:
        pt, pb, pl, pr = fold[1]
    elif padding == "SAME":
        pt, pb = same_pads(ih, kh, sh)
        pl, pr = same_pads(iw, kw, sw_)
    else:
        pt = pb = pl = pr = 0
    if (ih + pt + pb - kh) // sh + 1 != oh or (iw + pl + pr - kw) // sw_ + 1 != ow:
        raise LoweringError(f"output shape {y.shape} inconsistent with input {x.shape} and kernel")

    act = o.get("activation", "NONE")
    bounds = activation_bounds(str(act), y.dtype, sy, zy, clamp)

    off = stored_offset(x.dtype)
    wq = np.asarray(w.data).reshape(w.shape)  # the graph's array: read, never written
    weights = stored_bytes(wq, off)
    bias = _bias(b, oc)

    # Mesa runs a "depthwise" conv with a single channel as a normal conv (rkt_is_depthwise).
    is_dw = dw and ic > 1
    if dw and not is_dw:
        wq = wq.reshape(1, kh, kw, 1)
        weights = weights.reshape(1, kh, kw, 1)

    return RocketConv(
        nodes=[op.index], kind=op.kind, input_tensor=x.index, output_tensor=y.index, dtype=x.dtype,
        in_h=ih, in_w=iw, in_c=ic, out_h=oh, out_w=ow, out_c=oc, kh=kh, kw=kw, stride=sh,
        pad_top=pt, pad_bottom=pb, pad_left=pl, pad_right=pr, depthwise=is_dw,
        in_zp=zx - off, out_zp=zy - off, w_zp=zw - off, in_scale=sx, out_scale=sy, w_scale=sw,
        weights=weights, weights_q=wq, bias=bias, activation=str(act), w_scales=w_scales,
        act_min=None if bounds[0] is None else bounds[0] - off, act_max=None if bounds[1] is None else bounds[1] - off,
        stride_w=None if sw_ == sh else sw_,
    )


def _bias(b: Tensor | None, oc: int) -> np.ndarray:
    if b is None:
        return np.zeros(oc, np.int32)
    bias = np.asarray(b.data).astype(np.int32).reshape(-1)
    if bias.size != oc:
        raise LoweringError(f"bias has {bias.size} entries for {oc} output channels")
    return bias


def lower_fc(graph: Graph, op: Operation, per_channel: bool = False, clamp: bool = False) -> RocketConv:
    """A FULLY_CONNECTED of a vector (N values) as a 1x1 convolution over a 1x1xN feature map: the NC1HWC2 layout of
    a 1x1 map is the vector itself, channel-major in planes of 16, as the host writes any input."""
    if len(op.inputs) < 2 or len(op.outputs) != 1:
        raise LoweringError("unexpected number of inputs/outputs")
    if int(op.options.get("weights_format", 0)) != 0:
        raise LoweringError("FULLY_CONNECTED with shuffled weights not supported")
    x = graph.tensors[op.inputs[0]]
    w = graph.tensors[op.inputs[1]]
    b = graph.tensors[op.inputs[2]] if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
    y = graph.tensors[op.outputs[0]]
    if x.dtype not in ("uint8", "int8") or w.dtype != x.dtype or y.dtype != x.dtype:
        raise LoweringError(f"types input {x.dtype}, weights {w.dtype}, output {y.dtype} (uint8 or int8, all equal)")
    if x.is_constant or w.data is None:
        raise LoweringError("FULLY_CONNECTED needs a non-constant input and constant weights")
    if b is not None and (b.data is None or b.dtype != "int32"):
        raise LoweringError("bias must be a constant int32 tensor")
    if len(w.shape) != 2:
        raise LoweringError(f"weights of shape {w.shape} (2-D only)")
    oc, n = int(w.shape[0]), int(w.shape[1])
    if int(np.prod(x.shape)) != n or int(np.prod(y.shape)) != oc:
        raise LoweringError(f"input {x.shape} / output {y.shape} are not one vector of {n} / {oc} values (batch 1)")
    sx, zx = tensor_quant(x, "input")
    sw, zw, w_scales = _weight_quant(w, per_channel)
    sy, zy = tensor_quant(y, "output")
    if w_scales is not None and (len(w_scales) != oc or w.quant.axis != 0):
        raise LoweringError(f"per-channel weight scales ({len(w_scales)}) do not follow the output channels")
    if b is not None and b.quant is not None and not b.quant.per_tensor and w_scales is None:
        raise LoweringError(f"per-channel bias quantization ({len(b.quant.scales)} scales) not supported")
    act = str(op.options.get("activation", "NONE"))
    bounds = activation_bounds(act, y.dtype, sy, zy, clamp)
    off = stored_offset(x.dtype)
    wq = np.asarray(w.data).reshape(oc, 1, 1, n)
    return RocketConv(
        nodes=[op.index], kind=op.kind, input_tensor=x.index, output_tensor=y.index, dtype=x.dtype,
        in_h=1, in_w=1, in_c=n, out_h=1, out_w=1, out_c=oc, kh=1, kw=1, stride=1,
        pad_top=0, pad_bottom=0, pad_left=0, pad_right=0, depthwise=False,
        in_zp=zx - off, out_zp=zy - off, w_zp=zw - off, in_scale=sx, out_scale=sy, w_scale=sw,
        weights=stored_bytes(wq, off), weights_q=wq, bias=_bias(b, oc), activation=act, w_scales=w_scales,
        act_min=None if bounds[0] is None else bounds[0] - off, act_max=None if bounds[1] is None else bounds[1] - off,
    )


# Node kinds the rocket encoders run as a convolution, and how each is lowered.
CONV_LOWERINGS = {"CONV_2D": lower_conv, "DEPTHWISE_CONV_2D": lower_conv, "FULLY_CONNECTED": lower_fc}
