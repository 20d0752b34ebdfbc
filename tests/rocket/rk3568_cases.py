"""Generated rk3568 layer cases shared by the tests and scripts/rk3568_heldout.py (teflon.modelgen only, no pytest:
the script imports this module inside the toolkit's own environment).

- SHAPES: layers of the golden set's kinds beyond its 29 files (test_rk3568_shapes.py runs them).
- FIRST_LAYER: first convolutions on 1-, 2-, 3- and 4-channel uint8 graph inputs (the packed-pixel path,
  docs/hardware/rk3568.md §3), every scale and zero point explicit as in the golden README §2.
- DW_TAILS: depthwise layers of 8-72 channels (the partial last channel group, rk3568.md §3 "Weights").
- VALID_BANKS: VALID layers whose unread last input row decides the data banks (rk3568.md §3 "Splitting").
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from teflon.modelgen import AddCase, ConvCase, FcCase, PoolCase, conv_params


def _zps(rng: random.Random) -> dict[str, int]:
    pick = [z for z in range(1, 256) if z != 128]
    return {"input_zp": rng.choice(pick), "weight_zp": rng.choice(pick), "output_zp": rng.choice(pick)}


def _conv(op: str, h: int, w: int, c: int, oc: int | None, k: int, s: int, pad: str, act: str = "none") -> ConvCase:
    rng = random.Random(f"{op}{h}x{w}x{c}-{oc}-{k}-{s}-{pad}-{act}")
    return ConvCase(op, h, w, c, out_c=oc, kernel=k, stride=s, padding=pad, activation=act, **_zps(rng))


def _sig4(x: float) -> float:
    return float(f"{x:.4g}")


def explicit(case: ConvCase) -> ConvCase:
    """The case with the scales modelgen would draw written out (4 significant digits), so its words do not depend
    on modelgen's random draws (golden README §2)."""
    p = conv_params(case, case.rng())
    return replace(case, input_scale=_sig4(float(p.input_quant.scale[0])),
                   weight_scale=_sig4(float(p.weight_quant.scale[0])),
                   output_scale=_sig4(float(p.output_quant.scale[0])))


SHAPES: list[Any] = [
    _conv("conv2d", 48, 64, 16, 32, 3, 1, "same"),
    _conv("conv2d", 64, 48, 32, 24, 5, 2, "same", "relu"),
    _conv("conv2d", 30, 40, 3, 16, 5, 2, "valid"),  # packed-pixel first layer
    _conv("conv2d", 13, 19, 64, 64, 1, 1, "valid"),
    _conv("conv2d", 20, 12, 8, 24, 7, 1, "same", "relu"),
    _conv("conv2d", 19, 27, 120, 40, 3, 2, "same", "relu6"),
    _conv("conv2d", 28, 28, 1, 8, 3, 1, "same"),
    _conv("conv2d", 1, 1, 256, 512, 1, 1, "valid"),
    _conv("conv2d", 14, 14, 256, 256, 3, 1, "same"),  # weights streamed beyond the weight banks
    _conv("conv2d", 56, 56, 256, 128, 1, 2, "valid"),
    _conv("conv2d", 112, 112, 32, 64, 1, 1, "same"),  # row bands, delta tasks
    _conv("conv2d", 112, 112, 64, 128, 3, 2, "same", "relu6"),
    _conv("conv2d", 160, 160, 16, 24, 3, 1, "same"),
    _conv("conv2d", 224, 224, 3, 32, 3, 2, "same", "relu"),  # packed pixels in row bands
    _conv("conv2d", 96, 96, 32, 16, 7, 1, "valid"),
    _conv("dwconv", 56, 56, 144, None, 3, 1, "same"),  # channel groups
    _conv("dwconv", 40, 30, 200, None, 3, 2, "same", "relu6"),
    _conv("dwconv", 112, 112, 64, None, 5, 1, "same"),  # 32-channel groups in row bands
    _conv("dwconv", 160, 160, 32, None, 3, 2, "same", "relu"),
    _conv("dwconv", 7, 7, 8, None, 3, 1, "same"),
    _conv("dwconv", 14, 14, 1024, None, 5, 1, "same"),
    _conv("dwconv", 28, 28, 256, None, 5, 2, "valid", "relu"),
    # int8, per-tensor and per-channel (the 8-byte BS stream) through groups and bands
    ConvCase("conv2d", 48, 64, 32, 40, 3, 2, "same", "relu6", dtype="int8", input_zp=-7, output_zp=12),
    ConvCase("dwconv", 56, 56, 144, None, 3, 1, "same", dtype="int8", per_channel=True),
    ConvCase("conv2d", 112, 112, 32, 64, 3, 1, "same", dtype="int8", per_channel=True, scale_spread=100.0),
    FcCase(16, 8, seed=1), FcCase(1280, 1000, seed=1), FcCase(512, 10, activation="relu", seed=2),
    FcCase(784, 100, seed=3),
    PoolCase(28, 28, 32, filter=3, stride=2, seed=1, op="max"), PoolCase(16, 16, 64, filter=2, stride=2, seed=2),
    PoolCase(7, 7, 256, filter=7, stride=1, seed=1), PoolCase(14, 14, 64, filter=14, stride=1, seed=2),
    AddCase(14, 14, 96, seed=1), AddCase(56, 56, 24, seed=1), AddCase(7, 7, 160, seed=2), AddCase(13, 19, 40, seed=1),
]


def _first(c: int, w: int, k: int, s: int, oc: int = 16) -> ConvCase:
    return explicit(_conv("conv2d", w, w, c, oc, k, s, "same"))


FIRST_LAYER: list[ConvCase] = [
    *[_first(c, w, k, s) for c in (1, 2, 4) for w in (28, 30, 224) for k, s in ((3, 1), (7, 2))],
    *[_first(3, w, 3, 1) for w in (28, 30, 56)],
]

DW_TAILS: list[ConvCase] = [_conv("dwconv", 10, 10, c, None, 3, 1, "same") for c in (8, 16, 24, 40, 48, 56, 72)]
VALID_BANKS: list[ConvCase] = [_conv("conv2d", 17, 32, 64, 16, 2, 2, "valid"), _conv("dwconv", 17, 32, 64, None, 2, 2, "valid"),
                               _conv("conv2d", 33, 32, 32, 16, 3, 2, "valid")]
