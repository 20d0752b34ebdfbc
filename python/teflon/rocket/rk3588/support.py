"""Which graph nodes the rocket backend claims, and a human reason for every node."""

from __future__ import annotations

from ... import hw_facts
from ...hw.regmap import RegMap
from ...ir import Graph
from ..claims import claim_fused_add, claim_mul, claim_pool
from ..convlike import conv_label, is_conv_like, lower_conv_like
from ..fused_add import ELEMENTWISE_FUSED, EXACT_PRODUCT
from ..lower import CONV_LOWERINGS
from ..operations import RocketConv
from ..pad_fold import PAD_KINDS, pad_claims
from ..pool import POOL_KINDS
from ..quantization import LoweringError
from ..stream import EncodeError
from ..unary_lower import claim
from ..views import VIEW_KINDS, claims
from .encoder import checked_streams, pool_streams
from .stream import OpParams


def _check(regmap: RegMap, conv: RocketConv, graph: Graph) -> OpParams:
    return checked_streams(regmap, conv, graph=graph)[0]  # every register value must fit its field


def _check_fused(regmap: RegMap, graph: Graph, fused: RocketConv, other: int) -> None:
    """RK3588's own refusal of a fused ADD, then its streams: the operand must not also be a single-channel
    convolution input (that reader takes the raw-rows layout, not the element-wise reader's)."""
    if any(c.kind in CONV_LOWERINGS and graph.tensors[c.inputs[0]].shape[-1] == 1 for c in graph.consumers(other)):
        raise LoweringError(f"element-wise operand {other} is also a single-channel convolution input (raw-rows "
                            "layout, not the element-wise reader's)")
    _check(regmap, fused, graph)


def _describe(conv: RocketConv, params: OpParams) -> str:
    what = conv_label(conv)
    n = len(params.split.tasks)
    s = f"{conv.stride}" if conv.sx == conv.stride else f"{conv.stride}x{conv.sx}"
    return f"{what} {conv.kh}x{conv.kw} s{s}, {n} task{'s' * (n > 1)}"


def supported(graph: Graph, regmap: RegMap) -> dict[int, tuple[bool, str]]:
    """{node index: (claimed, reason)} for every operation of the graph on rk3588."""
    out: dict[int, tuple[bool, str]] = {}
    single_channel: dict[int, int] = {}  # node -> its input tensor, for ops on the raw-rows input path
    by_output: dict[int, RocketConv] = {}  # claimed convolutions (fused ADDs included) by output tensor
    for op in graph.operations:
        lut = claim(graph, op)  # table ops and the MUL of a SiLU pair (unary_lower)
        if lut is not None:
            out[op.index] = lut
            continue
        if op.kind in ELEMENTWISE_FUSED and not is_conv_like(graph, op):
            out[op.index] = claim_fused_add(graph, op, by_output,
                                            lambda fused, other: _check_fused(regmap, graph, fused, other))
            continue
        if op.kind == "MUL" and not is_conv_like(graph, op):
            if hw_facts.proved("rk3588", "ew_mul") in EXACT_PRODUCT:
                out[op.index] = claim_mul(graph, op, by_output,
                                          lambda fused, other: _check_fused(regmap, graph, fused, other))
            else:
                why = ("MUL of two tensors: the DPU multiply's arithmetic is not known (docs/hardware/board-facts.md "
                       f"fact 1; {hw_facts.status('rk3588', 'ew_mul')})")
                out[op.index] = (False, why)
            continue
        if op.kind in POOL_KINDS:
            out[op.index] = claim_pool(graph, op, lambda p: pool_streams(regmap, p),
                                       lambda c: _check(regmap, c, graph))  # type: ignore[func-returns-value]
            continue
        if op.kind in VIEW_KINDS or op.kind in PAD_KINDS:
            continue  # decided below, from its neighbours' decisions
        if not is_conv_like(graph, op):
            out[op.index] = (False, f"{op.kind} is not supported by the rocket backend")
            continue
        try:
            conv = lower_conv_like(graph, op, per_channel=True, clamp=True)
            params = _check(regmap, conv, graph)
        except (LoweringError, EncodeError) as e:
            out[op.index] = (False, str(e))
            continue
        out[op.index] = (True, _describe(conv, params))
        by_output[conv.output_tensor] = conv
        if conv.single_channel_input:
            single_channel[op.index] = conv.input_tensor

    # A single-channel input is read as raw rows, a layout only the host writes: its producer must not
    # run on the NPU. Reject the consumer when the producer is claimed.
    for node, tensor in single_channel.items():
        prod = graph.producer(tensor)
        if prod is not None and out.get(prod.index, (False, ""))[0]:
            why = f"single-channel input produced by NPU node {prod.index} (raw-rows layout is written by the host only)"
            out[node] = (False, why)
    out.update(pad_claims(graph, out))
    out.update(claims(graph, out, frozenset(single_channel.values())))
    return out
