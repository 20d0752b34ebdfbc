"""A global average (AVERAGE_POOL_2D whose window is the whole map, MEAN over H, W) wider than the PPU's kernel
fields, as one 1x1 convolution per 16-channel plane over that plane read as a single pixel.

In NC1HWC2 (rocket.md §3.1) the 16-channel plane k of an H x W map is H·W·16 consecutive bytes: channel c2 of pixel
p at k·plane + 16·p + c2. Read from its first byte as a 1 x 1 map of H·W·16 channels (the layout of a 1 x 1 map is
its channels in order), that plane is one "pixel" whose channel 16·p + c2 is input channel c2 at pixel p. A 1x1
convolution whose output channel o weighs the input channels 16·p + o with g and every other with 0 then sums
channel o over the whole map in one int32 accumulator — the window sum the PPU cannot take beyond 8 x 8 — and its
OUT_CVT divides (or requantizes) once. Its 16 outputs are plane k of the 1 x 1 x C result. The planes are views
(views.RocketView) of the input and output buffers, so nothing is copied.

Rounding: the weight g, bias and OUT_CVT come from an exhaustive check over every window sum the map can produce:
average.average_conv for an AVERAGE_POOL_2D (TFLite's (sum + n/2) / n rounding), average.mean_conv for a MEAN with or
without its own output quantization (TFLite's fixed-point multiplier, average.tflite_mean). Those are exact, except
an int8 MEAN whose double rounding no single rounding reproduces: the closest OUT_CVT serves when it agrees on at
least MEAN_MIN_SHARE of all window sums (every other one 1 LSB off; docs/hardware/rocket.md §6a), else the node
stays on the CPU.
"""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Operation
from .average import average_conv, mean_conv
from .geometry import FEATURE_ATOM
from .operations import RocketConv, RocketPool, TensorInfo, synthetic_ids
from .quantization import LoweringError, quantized, tensor_quant
from .views import RocketView

FLAT_KINDS = ("AVERAGE_POOL_2D", "MEAN")
# TFLite's int8 MEAN rounds twice (average.mean_conv); where no single OUT_CVT rounding reproduces it, the closest one
# is used when it agrees on at least this share of all window sums, every other sum one step off
MEAN_MIN_SHARE = 0.99


def is_global(p: RocketPool) -> bool:
    """A window over the whole map with one output pixel and no padding read."""
    return (p.out_h, p.out_w) == (1, 1) and (p.kh, p.kw) == (p.in_h, p.in_w) and not p.pads_consumed


def plane_weights(channels: int, pixels: int, g: int, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Stored weights (w - zw, OHWI) and their quantized bytes (stored zero point 0) of one plane's convolution:
    output o takes input channel 16·p + o of every pixel p with weight g."""
    w = np.zeros((channels, pixels, FEATURE_ATOM), np.int8)
    o = np.arange(channels)
    w[o, :, o] = g
    w = w.reshape(channels, 1, 1, pixels * FEATURE_ATOM)
    return w, quantized(w, dtype)


def flat_average_ops(graph: Graph, op: Operation, pool: RocketPool) -> list[RocketConv | list[RocketView]]:
    """The views and per-plane convolutions of the global average `pool` (a RocketPool of node `op`, any kernel
    size, requantizing MEAN allowed); raises LoweringError when the rounding cannot be reproduced."""
    if op.kind not in FLAT_KINDS or not is_global(pool):
        raise LoweringError(f"{op.kind} is not a global average")
    if pool.in_c == 1:
        raise LoweringError("global average of one channel: a single-channel map's device layout is host rows")
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    (sx, zx), (sy, zy) = tensor_quant(x, "input"), tensor_quant(y, "output")
    n = pool.in_h * pool.in_w
    if op.kind == "MEAN":  # TFLite's MEAN rounds through its own multiplier, with or without requantization
        a = mean_conv(n, pool.dtype, float(sx), int(zx), float(sy), int(zy))
    elif sx == sy and zx == zy:
        a = average_conv(pool.kh, pool.kw, pool.dtype)
    else:
        raise LoweringError(f"average pool output quantization differs from its input (scale {sx:g} -> {sy:g})")
    if a is None or a.exact < MEAN_MIN_SHARE:
        share = "" if a is None else f" (the best one-rounding match agrees on {100 * a.exact:.2f} % of the sums)"
        raise LoweringError(f"{pool.kh}x{pool.kw} {pool.dtype} global {op.kind}: no weight, bias and OUT_CVT round "
                            f"like TFLite for every window sum{share}")
    # the bias g·n·zxs leaves g·(sum of stored inputs) + a.bias whatever the zero point (pool.average_pool_conv);
    # the OUT_CVT result is the stored output itself (offset 0)
    bias, w_scale = a.bias + a.weight * n * pool.in_zp, np.float32(a.scale / (1 << a.shift))
    holder_in = TensorInfo(pool.in_h, pool.in_w, pool.in_c, pool.dtype)
    holder_out = TensorInfo(1, 1, pool.in_c, pool.dtype)
    views: list[RocketView] = []
    convs: list[RocketConv] = []
    planes = -(-pool.in_c // FEATURE_ATOM)
    ids = synthetic_ids(graph, op.index)
    for k in range(planes):
        ck = min(FEATURE_ATOM, pool.in_c - k * FEATURE_ATOM)
        t_in, t_out = next(ids), next(ids)
        flat = TensorInfo(1, 1, n * FEATURE_ATOM, pool.dtype)
        views.append(RocketView([op.index], op.kind, x.index, t_in, k, flat, holder_in))
        views.append(RocketView([op.index], op.kind, y.index, t_out, k, TensorInfo(1, 1, ck, pool.dtype), holder_out))
        w, wq = plane_weights(ck, n, a.weight, pool.dtype)
        convs.append(RocketConv(
            nodes=[op.index], kind=op.kind, input_tensor=t_in, output_tensor=t_out, dtype=pool.dtype,
            in_h=1, in_w=1, in_c=n * FEATURE_ATOM, out_h=1, out_w=1, out_c=ck, kh=1, kw=1, stride=1,
            pad_top=0, pad_bottom=0, pad_left=0, pad_right=0, depthwise=False, in_zp=pool.in_zp, out_zp=0,
            w_zp=0, in_scale=np.float32(sx), out_scale=np.float32(sy), w_scale=w_scale, weights=w, weights_q=wq,
            bias=np.full(ck, bias, np.int32), cvt=(a.scale, a.shift), channel0=k * FEATURE_ATOM))
    return [views, *convs]


def describe(ops: list[RocketConv | list[RocketView]]) -> str:
    convs = [c for c in ops if isinstance(c, RocketConv)]
    c = convs[0]
    n = c.in_c // FEATURE_ATOM
    how = ("fitted to TFLite's MEAN over every window sum: exact, or >= 99 % of the sums where its int8 MEAN rounds "
           "twice" if c.kind == "MEAN" else "proved to give TFLite's average rounding for every window sum")
    return (f"global average over {n} pixels as {len(convs)} 1x1 convolution(s), one per 16-channel plane read as "
            f"one pixel of {c.in_c} channels (OUT_CVT {how})")


__all__ = ["FLAT_KINDS", "MEAN_MIN_SHARE", "describe", "flat_average_ops", "is_global", "plane_weights"]
