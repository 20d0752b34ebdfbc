"""RK3568: rocket convolutions -> teflon.program.Program (docs/hardware/rk3568.md).

Buffers: `t<index>` per feature-map tensor (NC1HWC2, C2 = 8), `op<k>.weights`, `op<k>.bias` (the per-tensor BS
stream: int32 per output channel, bias - zx_stored * sum(w - zw), padded to the declared channels), `op<k>.regcmd`.
One job per operation. Only layers that fit the CBUF in one task are encoded: row bands, channel groups and the
vendor's delta tasks are not written yet (EncodeError names the layer's CBUF need).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...hw.regmap import RegMap, RegMapError
from ...program import LAYOUT_NC1HWC2, Buffer, IOBinding, OpRecord, Program
from .. import assemble
from ..operations import RocketConv
from ..requant import bias_table, bounded_cvt, out_cvt
from ..stream import EncodeError, Stream, regcmd_bytes
from . import weights
from .layout import ATOM, BANK_BYTES, CBUF_BANKS, data_banks, dpu_plane
from .stream import Requant, conv_stream, out_channels, rows_read, terminate


@dataclass
class EncodedLayer:
    stream: Stream
    weights: bytes
    bias: bytes
    requant: Requant


def requant(rm: RegMap, c: RocketConv) -> Requant:
    """OUT_CVT (Q1.14 scale, carried into the shift at 2^15: requant.out_cvt) and a fused RELU/RELU6 [IAV T51/T57]."""
    if c.w_scales is not None:
        raise EncodeError("per-channel weights are not encoded on rk3568 yet (the 8-byte BS stream)")
    if c.ew is not None:
        raise EncodeError("a fused ADD is not encoded on rk3568 yet")
    try:
        scale, shift = out_cvt(c.in_scale, c.w_scale, c.out_scale, 0)
        scale, shift = bounded_cvt(scale, shift, rm.limits("DPU_OUT_CVT_SHIFT", "OUT_CVT_SHIFT")[1])
    except ValueError as e:
        raise EncodeError(str(e)) from e
    # The vendor's fused activation is the BN stage on the accumulator (after the bias): ReLU at 0, ReLU6 also at
    # round(6 / (s_in x s_w)), whether or not the output range already clips there [IAV T57; GOLD 0x12 / 0x92]. At
    # the bound this may differ from TFLite's clamp after requantization by one LSB (rk3568.md §4).
    if c.activation not in ("NONE", "RELU", "RELU6"):
        raise EncodeError(f"fused {c.activation} is not encoded on rk3568")
    relux = round(6.0 / (float(c.in_scale) * float(c.w_scale))) if c.activation == "RELU6" else None
    if relux is not None and not 0 < relux < 1 << 31:
        raise EncodeError(f"fused RELU6 bound {relux} outside the accumulator")
    return Requant(scale, shift, relux, c.activation != "NONE")


def check_fits(c: RocketConv, packed: int) -> None:
    banks = data_banks(c.in_w, rows_read(c), c.in_c)
    if banks >= CBUF_BANKS:
        raise EncodeError(f"input rows need {banks} CBUF banks (at most {CBUF_BANKS - 1} in one task; row bands and "
                          "channel groups are not encoded on rk3568 yet)")
    if packed > (CBUF_BANKS - banks) * BANK_BYTES:
        raise EncodeError(f"{packed} weight bytes do not fit the {CBUF_BANKS - banks} CBUF banks left beside the "
                          "input (weight streaming is not encoded on rk3568 yet)")


def encode_layer(rm: RegMap, c: RocketConv) -> EncodedLayer:
    """The layer's single task with its weights and BS stream; raises EncodeError."""
    if c.in_w > 2047 or c.out_w > 2047:  # 11-bit width fields [IAV T76]
        raise EncodeError(f"map width {max(c.in_w, c.out_w)} beyond the 11-bit width fields")
    if c.stride_w is not None and c.stride_w != c.stride:
        raise EncodeError("different row and column strides are not encoded on rk3568 yet")
    packed = weights.pack_depthwise(c.weights, c.w_zp) if c.depthwise else weights.pack_conv(c.weights, c.w_zp)
    check_fits(c, len(packed))
    rq = requant(rm, c)
    table = np.zeros(out_channels(c), "<i4")
    try:
        table[:c.out_c] = bias_table(c.bias, c.weights_q, c.w_zp_q, c.in_zp, c.depthwise, 0)
        stream = terminate(rm, conv_stream(rm, c, rq))
    except (ValueError, RegMapError) as e:
        raise EncodeError(str(e)) from e
    return EncodedLayer(stream, packed, table.tobytes(), rq)


def tensor_bytes(c: int, plane: int) -> int:
    return -(-c // ATOM) * plane * ATOM


def binding(t: int, direction: str, c: RocketConv, plane: int, pad: int = 0) -> IOBinding:
    h, w, ch = (c.in_h, c.in_w, c.in_c) if direction == "in" else (c.out_h, c.out_w, c.out_c)
    return IOBinding(t, direction, f"t{t}", c.dtype, h, w, ch, LAYOUT_NC1HWC2, ATOM, 0, w * ATOM, plane * ATOM,
                     assemble.xor(c.dtype), pad)


def compile_ops(rm: RegMap, device: str, convs: list[RocketConv], inputs: list[int], outputs: list[int]) -> Program:
    """A program of single-task convolutions chained by their tensors (each its own job)."""
    prog = Program(device=device)
    planes: dict[int, int] = {}
    for c in convs:
        planes.setdefault(c.input_tensor, c.in_h * c.in_w)  # host-written: W x H atoms [GOLD SURF_STRIDE]
        planes[c.output_tensor] = dpu_plane(c.out_h, c.out_w)
    produced = {c.output_tensor for c in convs}
    for c in convs:
        if c.input_tensor in produced:
            raise EncodeError("a convolution reading another's output is not encoded on rk3568 yet")
    assemble.check_outputs(convs, outputs)  # type: ignore[arg-type]
    channels = {c.input_tensor: c.in_c for c in convs} | {c.output_tensor: c.out_c for c in convs}
    for t, plane in planes.items():
        prog.add_buffer(Buffer(f"t{t}", tensor_bytes(channels[t], plane), tensor=True))
    for k, c in enumerate(convs):
        enc = encode_layer(rm, c)
        names = assemble.buffer_names(k, c)
        regcmd = regcmd_bytes([enc.stream], [0])
        assemble.add_operation(prog, names, (len(enc.weights), enc.weights), enc.bias, regcmd, [enc.stream], [0],
                               True, OpRecord(c.nodes, assemble.op_kind(c), [], _op_info(c, enc)))
    for c in convs:
        if c.input_tensor in inputs:
            prog.io.append(binding(c.input_tensor, "in", c, planes[c.input_tensor], c.in_zp & 0xFF))
        if c.output_tensor in outputs:
            prog.io.append(binding(c.output_tensor, "out", c, planes[c.output_tensor]))
    return prog


def _op_info(c: RocketConv, enc: EncodedLayer) -> dict[str, object]:
    return {"depthwise": c.depthwise, "per_channel": False, "out_cvt": [enc.requant.cvt_scale, enc.requant.cvt_shift],
            "input_tensor": c.input_tensor, "output_tensor": c.output_tensor, "macs": c.macs}
