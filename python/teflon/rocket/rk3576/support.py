"""Which graph nodes the RK3576 encoder claims, and why not (docs/hardware/rocket-rk3576.md, "Claims")."""

from __future__ import annotations

from ...hw.regmap import RegMap
from ...ir import Graph
from ..claims import claim_fused_add, claim_pool
from ..convlike import conv_label, is_conv_like, lower_conv_like
from ..fused_add import ELEMENTWISE_FUSED
from ..operations import RocketConv, synthetic_ids
from ..pad_fold import PAD_KINDS, pad_claims
from ..perchannel import ScaleSpreadError
from ..pool import POOL_KINDS
from ..quantization import LoweringError
from ..stream import EncodeError
from ..unary_lower import claim
from ..views import VIEW_KINDS, claims
from .encoder import encode_layer, pool_streams
from .groups import grouped, split_channels
from .lut import check as lut_check

# A conv with at most 4 input channels (an RGB/RGBA image) could use Rockchip's ARGB first-layer sub-encoding
# (CONV_MODE 6, CORE 0x3018 = 0x10000081). Its weight byte order and CVT arithmetic are not pinned down by
# any capture we hold (docs/hardware/rocket-rk3576.md, "ARGB first-layer path"), so such layers run on the
# direct path with the input channels zero-padded to 16; the claim says so.
IMAGE_INPUT_MAX_C = 4
ARGB_NOT_USED = ("direct path, {ic} input channels padded to 16 (ARGB first-layer sub-encoding not used: "
                 "weight byte order and input CVT unknown, see docs/hardware/rocket-rk3576.md)")


def supported(graph: Graph, regmap: RegMap) -> dict[int, tuple[bool, str]]:
    """{node index: (claimed, reason)} for every operation of the graph on rk3576."""
    out: dict[int, tuple[bool, str]] = {}
    by_output: dict[int, RocketConv] = {}  # claimed convolutions (fused ADDs included) by output tensor
    for op in graph.operations:
        lut = claim(graph, op, lambda u: lut_check(regmap, u, graph))  # table ops and a SiLU's MUL (unary_lower, lut.py)
        if lut is not None:
            out[op.index] = lut
            continue
        if op.kind in ELEMENTWISE_FUSED and not is_conv_like(graph, op):  # SUB: the vendor's Sub programs use the add with a negative scale
            # a host-written operand's pitch (the pitch does not change which values fit)
            out[op.index] = claim_fused_add(graph, op, by_output, lambda fused, _: encode_layer(
                regmap, fused, fused.in_h * fused.in_w, graph, ew_plane=fused.out_h * fused.out_w),  # type: ignore[func-returns-value]
                lambda c: not grouped(c))
            continue
        if op.kind in POOL_KINDS:
            out[op.index] = claim_pool(graph, op, lambda p: pool_streams(regmap, p, p.in_h * p.in_w),
                                       lambda c: encode_layer(regmap, c, c.in_h * c.in_w, graph))  # type: ignore[func-returns-value]
            continue
        if op.kind in VIEW_KINDS or op.kind in PAD_KINDS:
            continue  # decided below, from its neighbours' decisions
        if not is_conv_like(graph, op):
            out[op.index] = (False, f"{op.kind} is not supported by the rocket backend")
            continue
        try:
            conv = lower_conv_like(graph, op, per_channel=True, clamp=True)
            # every register value must fit its field: build the whole layer (the input plane pitch
            # does not change which values fit)
            try:
                n = len(encode_layer(regmap, conv, conv.in_h * conv.in_w, graph).streams)
                groups = ""
                by_output[conv.output_tensor] = conv  # an ADD may fuse into it (not into a channel-grouped layer)
            except ScaleSpreadError:
                parts = [p for p in split_channels(conv, synthetic_ids(graph, op.index)) if isinstance(p, RocketConv)]
                n = sum(len(encode_layer(regmap, p, p.in_h * p.in_w, graph).streams) for p in parts)
                groups = f" in {len(parts)} channel groups (per-channel scales too far apart for one multiplier)"
        except (LoweringError, EncodeError) as e:
            out[op.index] = (False, str(e))
            continue
        what = conv_label(conv)
        pc = ", per-channel" if conv.w_scales is not None else ""
        path = ""
        if not conv.depthwise and conv.in_c <= IMAGE_INPUT_MAX_C:
            path = ", " + ARGB_NOT_USED.format(ic=conv.in_c)
        out[op.index] = (True, f"{what} {conv.kh}x{conv.kw} s{conv.stride}{'' if conv.sx == conv.stride else f'x{conv.sx}'}{pc}{groups}, {n} task{'s' * (n > 1)}{path}")
    out.update(pad_claims(graph, out))
    out.update(claims(graph, out))
    return out
