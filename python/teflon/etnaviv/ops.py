"""The lowered etnaviv operation: one NN or TP job before encoding.

Its fields are those of Mesa's lowered operation (`struct etna_operation`, as recorded per job in
../shared/golden/etnaviv-v*/ under `mesa_lowered_operation`), so the lowering can be checked field by field
against Mesa and the descriptor encoders can be tested on Mesa's own lowered operations. Mesa's naming is kept:
`input_width` is the TFLite H (etnaviv.md §0). Scales are float32 values (the golden stores their bit patterns).

Weights and biases of NN jobs travel beside the operation (`weights`: uint8 array in the lowered layout,
`bias`: int32 per output channel), not in it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

KIND_NN = 0  # Mesa `type`: ETNA_JOB_TYPE_NN
KIND_TP = 1  # ETNA_JOB_TYPE_TP

# Mesa `tp_type` values, by name (etnaviv.md §5; the golden's job `tp_type` strings)
EXTRA_FIELDS = ("weights", "weights_block", "weights_first", "bias", "in_planar", "input_offset", "output_offset",
                "lut", "phase")  # not Mesa's

# TABLE is teflon's: a PWL job whose table reproduces any 8-bit map (pwl_table.py); Mesa has no such job.
# MAXPOOL (the vendor's TP max pooling, docs/hardware/etnaviv-maxpool.md) and UPSAMPLE (one of the four phases of a
# nearest-neighbour x2 resize: a copy whose out loops write every second pixel) are teflon's too.
TP_TYPES = ("TRANSPOSE", "DETRANSPOSE", "RESHUFFLE", "PAD", "RELU", "ABSOLUTE", "LOGISTIC", "TABLE", "MAXPOOL",
            "UPSAMPLE")


def f32_bits(x: float) -> int:
    return int(struct.unpack("<I", struct.pack("<f", x))[0])


def f32_from_bits(bits: int | str) -> float:
    return float(np.frombuffer(struct.pack("<I", int(bits, 16) if isinstance(bits, str) else bits), "<f4")[0])


@dataclass
class EtnaOp:
    type: int
    tp_type: int = 0
    addition: bool = False
    depthwise: bool = False
    pointwise: bool = False
    fully_connected: bool = False
    pooling_first_pixel: bool = False
    padding_same: bool = False
    relu: bool = False
    stride: int = 1
    input_tensor: int = 0
    input_tensor_1: int = 0
    input_count: int = 1
    output_tensor: int = 0
    input_width: int = 0  # Mesa naming: TFLite H
    input_height: int = 0  # TFLite W
    input_channels: int = 0
    input_zero_point: int = 0
    input_scale: float = 0.0
    output_width: int = 0
    output_height: int = 0
    output_channels: int = 0
    output_zero_point: int = 0
    output_scale: float = 0.0
    weight_width: int = 0
    weight_height: int = 0
    weight_zero_point: int = 0
    weight_scale: float = 0.0
    weight_signed: bool = False
    weight_tensor_size: int = 0
    bias_tensor_size: int = 0
    addition_offset: int = 0
    input_tensor_sizes: tuple[int, int] = (0, 0)
    output_tensor_size: int = 0
    pad: tuple[int, int, int, int, int, int] = (0, 0, 0, 0, 0, 0)
    # beside Mesa's fields: the coefficient inputs of NN jobs, and whether a TP job's input holds planar data
    # (PAD reads either layout; Mesa keeps that in its tensor table, not in the operation)
    weights: np.ndarray | None = field(default=None, repr=False, compare=False)
    # v7 depthwise weights kept block-diagonal (`dense_weights` expands them): with weights_block = g > 0,
    # `weights` is [OC][g][kh][kw] and kernel o reads input channels (o + weights_first) * g .. + g - 1 only, the
    # weight zero point everywhere else of the lowered [OC][IC][kh][kw] array (which is OC * IC * kh * kw bytes,
    # mostly the zero point, e.g. 44 M over MobileNetV2)
    weights_block: int = field(default=0, compare=False)
    weights_first: int = field(default=0, compare=False)
    bias: np.ndarray | None = field(default=None, repr=False, compare=False)
    in_planar: bool = field(default=False, compare=False)
    # byte offsets into the input / output tensor: one job of a per-channel layer split into jobs of output
    # channels with one requantization each reads and writes those channels' planes (docs/hardware/etnaviv-per-channel.md)
    input_offset: int = field(default=0, compare=False)
    output_offset: int = field(default=0, compare=False)
    lut: np.ndarray | None = field(default=None, repr=False, compare=False)  # a TABLE job's 1024 fp21 words
    phase: int = field(default=0, compare=False)  # UPSAMPLE: which output pixel of each 2x2 block, 2 * row + column

    @property
    def tp_name(self) -> str | None:
        return TP_TYPES[self.tp_type] if self.type == KIND_TP else None

    @classmethod
    def from_golden(cls, d: dict[str, Any]) -> EtnaOp:
        """From a golden file's `mesa_lowered_operation` (weights/bias not included)."""
        kw: dict[str, Any] = {}
        for f in fields(cls):
            if f.name in EXTRA_FIELDS:
                continue
            if f.name.endswith("_scale"):
                kw[f.name] = f32_from_bits(d[f.name + "_bits"])
            elif f.name in ("input_tensor_sizes", "pad"):
                kw[f.name] = tuple(d[f.name])
            elif isinstance(d[f.name], int) and f.type == "bool":
                kw[f.name] = bool(d[f.name])
            else:
                kw[f.name] = d[f.name]
        return cls(**kw)

    def to_golden(self) -> dict[str, Any]:
        """The same keys and value forms as a golden `mesa_lowered_operation` (for field-by-field comparison)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name in EXTRA_FIELDS:
                continue
            v = getattr(self, f.name)
            if f.name.endswith("_scale"):
                out[f.name + "_bits"] = f"0x{f32_bits(v):08x}"
            elif isinstance(v, tuple):
                out[f.name] = list(v)
            else:
                out[f.name] = int(v)
        return out


def dense_weights(op: EtnaOp) -> np.ndarray:
    """An NN job's weights in the lowered layout [OC][IC][kh][kw] (flat for FC / ADD as lowered), a block-diagonal
    depthwise form (`weights_block`) expanded."""
    assert op.weights is not None
    if not op.weights_block:
        return op.weights
    w = np.asarray(op.weights, dtype=np.uint8)
    oc, g = w.shape[0], op.weights_block
    out = np.full((oc, op.input_channels, *w.shape[2:]), op.weight_zero_point, np.uint8)
    for i in range(g):
        out[np.arange(oc), (np.arange(oc) + op.weights_first) * g + i] = w[:, i]
    return out
