"""RK3576 channel groups: a per-channel layer whose weight scales are too far apart for one 16-bit multiplier runs
as several operations over channel ranges, each with its own multipliers, shift word and OUT_CVT
(docs/hardware/rocket-rk3576.md, "Channel groups").

A group starts on a 16-channel plane (the DPU writes whole 16-channel surfaces), reads the input through a view of
the input tensor's planes (depthwise: its own channels; direct: the whole input) and writes its planes of the same
output buffer through a view (views.py: a view is a holder's buffer from a plane on, placed by assemble.placed's
address addends). Groups are grown plane by plane as long as the layer's own error bound (encoder.coefficients,
coefs.multiplier_error: at most 1 LSB) holds; a 16-channel plane whose own scales are too far apart is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from ...ir import Graph
from .. import perchannel
from ..geometry import FEATURE_ATOM
from ..operations import RocketConv, TensorInfo, synthetic_ids
from ..perchannel import ScaleSpreadError
from ..stream import EncodeError
from ..views import RocketView
from .encoder import coefficients

GROUP_KIND = "CHANNEL_GROUP"  # the views' kind (no graph node of its own)
GROUP_MAX_ERROR = perchannel.MAX_ERROR_LSB  # the bound a whole layer is claimed with


def _part(c: RocketConv, c0: int, c1: int, in_view: int | None, out_view: int) -> RocketConv:
    """The layer's output channels c0..c1-1 as a convolution of their own."""
    dw = c.depthwise
    ws = c.w_scales[c0:c1]  # type: ignore[index]
    return replace(
        c, input_tensor=c.input_tensor if in_view is None else in_view, output_tensor=out_view,
        in_c=c1 - c0 if dw else c.in_c, out_c=c1 - c0,
        weights=c.weights[..., c0:c1] if dw else c.weights[c0:c1],
        weights_q=c.weights_q[..., c0:c1] if dw else c.weights_q[c0:c1],
        bias=c.bias[c0:c1], w_scales=ws, w_scale=np.float32(ws[0]), channel0=c.channel0 + c0)


def _fits(c: RocketConv, c0: int, c1: int) -> bool:
    try:
        coefficients(_part(c, c0, c1, None, c.output_tensor), GROUP_MAX_ERROR)
    except ScaleSpreadError:
        return False
    return True


def ranges(c: RocketConv) -> list[tuple[int, int]]:
    """Channel ranges [c0, c1), each starting on a plane, whose multipliers fit; raises ScaleSpreadError when one
    plane's own scales do not."""
    planes = -(-c.out_c // FEATURE_ATOM)
    out: list[tuple[int, int]] = []
    p = 0
    while p < planes:
        lo, hi = p + 1, planes  # the group ends after plane lo..hi: find the last that fits (binary search)
        if not _fits(c, p * FEATURE_ATOM, min(lo * FEATURE_ATOM, c.out_c)):
            raise ScaleSpreadError(f"per-channel weight scales of channels {p * FEATURE_ATOM}.."
                                   f"{min(lo * FEATURE_ATOM, c.out_c) - 1} too far apart for the 16-bit multiplier, "
                                   "even as a channel group of its own")
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if _fits(c, p * FEATURE_ATOM, min(mid * FEATURE_ATOM, c.out_c)):
                lo = mid
            else:
                hi = mid - 1
        out.append((p * FEATURE_ATOM, min(lo * FEATURE_ATOM, c.out_c)))
        p = lo
    return out


def split_channels(c: RocketConv, ids: Iterator[int]) -> list[RocketConv | list[RocketView]]:
    """The views and convolutions of the layer's channel groups (synthetic view tensors numbered from `ids`)."""
    whole_in = TensorInfo(c.in_h, c.in_w, c.in_c, c.dtype)
    whole_out = TensorInfo(c.out_h, c.out_w, c.out_c, c.dtype)
    views: list[RocketView] = []
    parts: list[RocketConv | list[RocketView]] = []
    for c0, c1 in ranges(c):
        plane = c0 // FEATURE_ATOM
        in_view = None
        if c.depthwise:
            in_view = next(ids)
            views.append(RocketView(list(c.nodes), GROUP_KIND, c.input_tensor, in_view, plane,
                                    TensorInfo(c.in_h, c.in_w, c1 - c0, c.dtype), whole_in))
        out_view = next(ids)
        views.append(RocketView(list(c.nodes), GROUP_KIND, c.output_tensor, out_view, plane,
                                TensorInfo(c.out_h, c.out_w, c1 - c0, c.dtype), whole_out))
        parts.append(_part(c, c0, c1, in_view, out_view))
    return [views, *parts]


def grouped(c: RocketConv) -> bool:
    """A per-channel layer whose scales do not fit one multiplier: it runs as channel groups, and no ADD fuses into
    it (the support decision and lower_partition both ask this)."""
    if c.w_scales is None:
        return False
    try:
        coefficients(c)
    except ScaleSpreadError:
        return True
    return False


def expand(graph: Graph, ops: list[object]) -> list[object]:
    """`ops` (lower_partition's) with every per-channel layer whose scales do not fit one multiplier replaced by
    its channel groups."""
    out: list[object] = []
    for op in ops:
        if isinstance(op, RocketConv) and grouped(op):
            if op.ew is not None:  # the support decision never fuses an ADD into a grouped layer
                raise EncodeError(f"node {op.nodes[0]}: a fused ADD into a layer split into channel groups")
            out.extend(split_channels(op, synthetic_ids(graph, op.nodes[-1])))
            continue
        out.append(op)
    return out
