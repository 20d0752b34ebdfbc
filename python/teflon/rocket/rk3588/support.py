"""Which graph nodes the rocket backend claims, and a human reason for every node."""

from __future__ import annotations

from ...hw.regmap import RegMap
from ...ir import Graph
from ..lower import ADD_REASON, CONV_LOWERINGS, LoweringError, RocketConv, lower_conv_like
from ..pool import POOL_KINDS, RocketPool, describe_pool, lower_pool_ops
from ..stream import EncodeError
from ..unary_lower import claim
from ..views import VIEW_KINDS, claims
from .encoder import checked_streams, pool_streams
from .stream import OpParams


def _check(regmap: RegMap, conv: RocketConv, graph: Graph) -> OpParams:
    return checked_streams(regmap, conv, graph=graph)[0]  # every register value must fit its field


def _describe(conv: RocketConv, params: OpParams) -> str:
    what = "depthwise" if conv.depthwise else "fully connected as conv" if conv.kind == "FULLY_CONNECTED" else "conv"
    n = len(params.split.tasks)
    s = f"{conv.stride}" if conv.sx == conv.stride else f"{conv.stride}x{conv.sx}"
    return f"{what} {conv.kh}x{conv.kw} s{s}, {n} task{'s' * (n > 1)}"


def supported(graph: Graph, regmap: RegMap) -> dict[int, tuple[bool, str]]:
    """{node index: (claimed, reason)} for every operation of the graph on rk3588."""
    out: dict[int, tuple[bool, str]] = {}
    single_channel: dict[int, int] = {}  # node -> its input tensor, for ops on the raw-rows input path
    for op in graph.operations:
        lut = claim(graph, op)  # table ops and the MUL of a SiLU pair (unary_lower)
        if lut is not None:
            out[op.index] = lut
            continue
        if op.kind == "ADD":
            out[op.index] = (False, ADD_REASON)
            continue
        if op.kind in POOL_KINDS:
            try:
                ops = lower_pool_ops(graph, op)
                for c in ops:  # every register value must fit its field
                    if isinstance(c, RocketPool):
                        pool_streams(regmap, c)
                    else:
                        _check(regmap, c, graph)
                out[op.index] = (True, describe_pool(ops))
            except (LoweringError, EncodeError) as e:
                out[op.index] = (False, str(e))
            continue
        if op.kind in VIEW_KINDS:
            continue  # decided below, from its neighbours' decisions
        if op.kind not in CONV_LOWERINGS:
            out[op.index] = (False, f"{op.kind} is not supported by the rocket backend")
            continue
        try:
            conv = lower_conv_like(graph, op)
            params = _check(regmap, conv, graph)
        except (LoweringError, EncodeError) as e:
            out[op.index] = (False, str(e))
            continue
        out[op.index] = (True, _describe(conv, params))
        if conv.single_channel_input:
            single_channel[op.index] = conv.input_tensor

    # A single-channel input is read as raw rows, a layout only the host writes: its producer must not
    # run on the NPU. Reject the consumer when the producer is claimed.
    for node, tensor in single_channel.items():
        prod = graph.producer(tensor)
        if prod is not None and out.get(prod.index, (False, ""))[0]:
            why = f"single-channel input produced by NPU node {prod.index} (raw-rows layout is written by the host only)"
            out[node] = (False, why)
    out.update(claims(graph, out, frozenset(single_channel.values())))
    return out
