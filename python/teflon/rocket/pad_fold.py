"""A PAD whose only reader is a convolution, folded into that convolution's padding.

TFLite's quantized PAD fills with the output zero point, which equals the input's (PAD keeps the quantization);
the CNA pads every convolution's window with the input zero point (PAD_CON1, rocket.md §7). So PAD(x) -> CONV
(VALID or SAME) computes the same as the CONV reading x with the PAD's amounts added to its own pads: the
convolution reads the PAD's input, and the PAD node moves no byte. Only spatial pads (H, W) fold; each side's total
must stay below the kernel size, as SAME padding's does, so every output pixel still sees input.
"""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Operation
from .geometry import same_pads
from .operations import CONV_KINDS

PAD_KINDS = ("PAD",)
NOT_FOLDED = ("PAD: its only reader is not a claimed convolution that takes its amounts as padding (H/W pads that "
              "keep each side below the kernel size, the input's quantization)")


def spatial_pads(graph: Graph, pad: Operation) -> tuple[int, int, int, int] | None:
    """(top, bottom, left, right) of a PAD of a 4-D map that pads H and W only, with its input's quantization; None
    for any other."""
    if pad.kind not in PAD_KINDS or len(pad.inputs) != 2 or len(pad.outputs) != 1:
        return None
    x, p, y = graph.tensors[pad.inputs[0]], graph.tensors[pad.inputs[1]], graph.tensors[pad.outputs[0]]
    if p.data is None or len(x.shape) != 4 or x.is_constant:
        return None
    pads = np.asarray(p.data).reshape(-1)
    if pads.size != 8 or np.any(pads < 0) or pads[0] or pads[1] or pads[6] or pads[7]:
        return None
    if x.quant is None or y.quant is None or not x.quant.per_tensor or not y.quant.per_tensor:
        return None
    if x.dtype != y.dtype or x.quant.scale != y.quant.scale or x.quant.zero_point != y.quant.zero_point:
        return None
    return int(pads[2]), int(pads[3]), int(pads[4]), int(pads[5])


def folded_pad(graph: Graph, conv: Operation) -> tuple[Operation, tuple[int, int, int, int]] | None:
    """(the PAD feeding CONV_2D / DEPTHWISE_CONV_2D `conv` that folds into it, the total pads top, bottom, left,
    right: the PAD's plus the convolution's own SAME pads on the padded map), or None. The PAD's output must be read
    by this convolution alone (a partition that must also hand it to TFLite refuses to compile: lower_partition)."""
    if conv.kind not in CONV_KINDS or len(conv.inputs) < 2:
        return None
    pad = graph.producer(conv.inputs[0])
    if pad is None or pad.kind not in PAD_KINDS:
        return None
    amounts = spatial_pads(graph, pad)
    if amounts is None:
        return None
    readers = graph.consumers(pad.outputs[0])
    if len(readers) != 1 or readers[0].index != conv.index:
        return None
    w, padded = graph.tensors[conv.inputs[1]], graph.tensors[conv.inputs[0]]
    if len(w.shape) != 4 or len(padded.shape) != 4:
        return None
    kh, kw = int(w.shape[1]), int(w.shape[2])
    own = (0, 0, 0, 0)
    if conv.options.get("padding") == "SAME":
        own = (*same_pads(int(padded.shape[1]), kh, int(conv.options.get("stride_h", 1))),
               *same_pads(int(padded.shape[2]), kw, int(conv.options.get("stride_w", 1))))
    total = (amounts[0] + own[0], amounts[1] + own[1], amounts[2] + own[2], amounts[3] + own[3])
    if max(total[0], total[1]) >= kh or max(total[2], total[3]) >= kw:
        return None
    return pad, total


def pad_claims(graph: Graph, decisions: dict[int, tuple[bool, str]]) -> dict[int, tuple[bool, str]]:
    """Decisions for the graph's PAD nodes given the others': claimed when folded into a claimed convolution."""
    out: dict[int, tuple[bool, str]] = {}
    for op in graph.operations:
        if op.kind not in PAD_KINDS:
            continue
        readers = graph.consumers(op.outputs[0]) if op.outputs else []
        if len(readers) == 1 and decisions.get(readers[0].index, (False, ""))[0]:
            fold = folded_pad(graph, readers[0])
            if fold is not None and fold[0].index == op.index:
                out[op.index] = (True, f"folded into the padding of node {readers[0].index}")
                continue
        out[op.index] = (False, NOT_FOLDED)
    return out


__all__ = ["PAD_KINDS", "folded_pad", "pad_claims", "spatial_pads"]
