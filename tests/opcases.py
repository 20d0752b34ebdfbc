"""Case tables for the single-op suites.

Axes (from the op-sweep issue, after Mesa's Teflon suite): input size {3, 5, 8, 14, 28, 56, 112}, channels
{1, 3, 16, 32, 64, 120, 256}, kernel {1, 3, 5}, stride {1, 2}, padding {same, valid}, uint8 and int8, weight
zero point {random, 74, 95, 122, 151, 211} (uint8; int8 weights are symmetric).

- DEFAULT_* : covering arrays in which every pair of axis values occurs (twice for CONV_2D), under a per-case
  MAC cap, plus a short list of named layers (MobileNet-like, non-square, one big 112x112x256 k5 case),
  activations, per-channel fallbacks, ADD and a CPU-only op.
- SLOW_*    : the full product of size x in/out channels x kernel x stride x padding x dtype for both ops
  (the weight zero point cycles through its values), a zero-point grid, MobileNetV1's layers, large layers
  beyond the CBUF, RELU/RELU6 variants; marked `slow`.

All tables are deterministic (seeded `random.Random`, no set iteration), so pytest-xdist workers collect
identical test ids.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from teflon.etnaviv.chips import CHIPS
from teflon.etnaviv.lower import (
    MAX_CHANNEL_JOBS,
    MAX_V7_POOL_SPLIT_WEIGHTS,
    MAX_V7_POOL_WEIGHTS,
    V7_POOL_GROUP,
    same_pads,
)
from teflon.etnaviv.pool_requant import average_encoding, mean_encoding, pool_post_scale
from teflon.etnaviv.requant import RequantError
from teflon.modelgen import (
    AddCase,
    ConstOpCase,
    ConvCase,
    ElementwiseCase,
    FcCase,
    PadConvCase,
    PoolCase,
    UnaryCase,
)

SIZES = (3, 5, 8, 14, 28, 56, 112)
CHANNELS = (1, 3, 16, 32, 64, 120, 256)
KERNELS = (1, 3, 5)
STRIDES = (1, 2)
PADDINGS = ("same", "valid")
DTYPES = ("uint8", "int8")
WEIGHT_ZPS: tuple[int | None, ...] = (None, 74, 95, 122, 151, 211)  # None: drawn from the case's seed

DEFAULT_MAC_CAP = 400_000_000

Row = dict[str, Any]


# --------------------------------------------------------------------------------------------------------------
# Covering arrays
# --------------------------------------------------------------------------------------------------------------


def covering_array(axes: dict[str, Sequence[Any]], accept: Callable[[Row], bool], seed: int,
                   candidates: int = 16, tries: int = 60) -> list[Row]:
    """Rows in which every pair of values of two different axes occurs, where `accept` allows it (greedy AETG).

    Pairs no accepted row can hold (e.g. int8 with a forced weight zero point) are dropped.
    """
    names = list(axes)
    values = [list(axes[n]) for n in names]
    rng = random.Random(seed)
    # dict, not set: insertion order keeps the result identical in every process
    uncovered: dict[tuple[int, int, int, int], None] = {
        (i, a, j, b): None
        for i, j in itertools.combinations(range(len(names)), 2)
        for a in range(len(values[i]))
        for b in range(len(values[j]))
    }

    def gain(row: list[int]) -> int:
        return sum((i, row[i], j, row[j]) in uncovered for i, j in itertools.combinations(range(len(row)), 2))

    def partial_gain(idx: list[int], k: int, v: int) -> int:
        """Uncovered pairs that value v of axis k completes with the axes assigned so far."""
        total = 0
        for m, w in enumerate(idx):
            if m != k and w >= 0:
                total += ((k, v, m, w) if k < m else (m, w, k, v)) in uncovered
        return total

    def to_row(idx: list[int]) -> Row:
        return {n: values[k][idx[k]] for k, n in enumerate(names)}

    rows: list[Row] = []
    while uncovered:
        i, a, j, b = next(iter(uncovered))
        best: list[int] | None = None
        best_gain = 0
        for attempt in range(tries):
            idx = [-1] * len(names)
            idx[i], idx[j] = a, b
            order = [k for k in range(len(names)) if k not in (i, j)]
            rng.shuffle(order)
            greedy = attempt < candidates
            for k in order:
                choices = list(range(len(values[k])))
                rng.shuffle(choices)  # random tie-breaking: max() keeps the first best
                idx[k] = max(choices, key=lambda v, k=k: partial_gain(idx, k, v)) if greedy else choices[0]
            if not accept(to_row(idx)):
                continue
            g = gain(idx)
            if g > best_gain:
                best, best_gain = idx[:], g
            if attempt + 1 >= candidates and best is not None:
                break
        if best is None:
            del uncovered[(i, a, j, b)]  # no acceptable row holds this pair
            continue
        for p, q in itertools.combinations(range(len(names)), 2):
            uncovered.pop((p, best[p], q, best[q]), None)
        rows.append(to_row(best))
    return rows


# --------------------------------------------------------------------------------------------------------------
# Building cases
# --------------------------------------------------------------------------------------------------------------


def conv_case(row: Row) -> ConvCase:
    op = row["op"]
    return ConvCase(
        op,
        row.get("height", row["size"]),
        row.get("width", row["size"]),
        row["in_c"],
        None if op == "dwconv" else row["out_c"],
        kernel=row["kernel"],
        stride=row["stride"],
        padding=row["padding"],
        activation=row.get("activation", "none"),
        dtype=row["dtype"],
        per_channel=row.get("per_channel", False),
        weight_zp=row.get("weight_zp"),
    )


def acceptable(op: str, cap: int) -> Callable[[Row], bool]:
    def accept(row: Row) -> bool:
        case = conv_case(_expand({**row, "op": op}))
        return case.valid and case.macs <= cap
    return accept


def unique(cases: Iterable[ConvCase], exclude: Iterable[ConvCase] = ()) -> list[ConvCase]:
    """Drop invalid geometries, duplicates and anything in `exclude`, keeping the first occurrence."""
    seen = {c.name for c in exclude}
    out = []
    for c in cases:
        if c.valid and c.name not in seen:
            seen.add(c.name)
            out.append(c)
    return out


# dtype and weight zero point form one axis (int8 weights are symmetric): every forced uint8 zero point, the
# seeded random one, and int8 given enough weight to make up about a third of the cases.
QUANT_AXIS: tuple[tuple[str, int | None], ...] = tuple(("uint8", zp) for zp in WEIGHT_ZPS) + (("int8", None),) * 3


def _expand(row: Row) -> Row:
    if "quant" not in row:
        return row
    row = dict(row)
    row["dtype"], row["weight_zp"] = row.pop("quant")
    return row


def sweep(op: str, seed: int, cap: int, candidates: int = 16) -> list[ConvCase]:
    """A covering array of one op over all axes (see the module docstring) under a per-case MAC cap."""
    axes: dict[str, Sequence[Any]] = {
        "size": SIZES,
        "in_c": CHANNELS,
        "kernel": KERNELS,
        "stride": STRIDES,
        "padding": PADDINGS,
        "quant": QUANT_AXIS,
    }
    if op == "conv2d":
        axes = {**axes, "out_c": CHANNELS}
    rows = covering_array(axes, acceptable(op, cap), seed, candidates=candidates)
    return [conv_case(_expand({**r, "op": op})) for r in rows]


def _named(specs: Sequence[tuple[Any, ...]]) -> list[ConvCase]:
    """Cases from (op, h, w, in_c, out_c, kernel, stride, padding, dtype[, extras]) tuples."""
    out = []
    for op, h, w, ic, oc, k, s, pad, dt, *extra in specs:
        kwargs = dict(extra[0]) if extra else {}
        out.append(ConvCase(op, h, w, ic, oc, k, s, pad, dtype=dt, **kwargs))
    return out


# --------------------------------------------------------------------------------------------------------------
# Default suite
# --------------------------------------------------------------------------------------------------------------

_NAMED_DEFAULT = _named([
    ("conv2d", 112, 112, 32, 64, 3, 2, "same", "uint8"),       # the example id
    ("conv2d", 112, 112, 3, 32, 3, 2, "same", "uint8"),        # MobileNet stem
    ("conv2d", 112, 112, 3, 16, 3, 2, "valid", "int8"),
    ("dwconv", 112, 112, 32, None, 3, 1, "same", "uint8"),
    ("dwconv", 112, 112, 256, None, 5, 1, "same", "uint8"),    # the big one: 112x112x256 k5
    ("conv2d", 56, 56, 64, 64, 3, 1, "same", "int8"),
    ("conv2d", 28, 28, 120, 256, 1, 1, "valid", "uint8", {"weight_zp": 122}),
    ("conv2d", 14, 14, 256, 256, 1, 1, "same", "uint8"),
    ("conv2d", 14, 14, 256, 256, 3, 1, "same", "int8"),
    ("dwconv", 28, 28, 64, None, 3, 1, "valid", "int8"),       # the example id
    ("dwconv", 56, 56, 120, None, 3, 2, "same", "uint8", {"weight_zp": 211}),
    # non-square inputs catch swapped width/height
    ("conv2d", 14, 28, 16, 32, 3, 1, "same", "uint8"),
    ("conv2d", 5, 56, 3, 16, 3, 2, "valid", "int8"),
    ("dwconv", 28, 8, 32, None, 5, 2, "same", "uint8", {"weight_zp": 74}),
    ("dwconv", 3, 112, 16, None, 3, 1, "valid", "int8"),
])

_ACTIVATION_DEFAULT = _named([
    ("conv2d", 14, 14, 16, 32, 3, 1, "same", "uint8", {"activation": "relu"}),
    ("conv2d", 14, 14, 16, 32, 3, 2, "same", "uint8", {"activation": "relu6"}),
    ("conv2d", 8, 8, 32, 64, 1, 1, "valid", "int8", {"activation": "relu"}),
    ("conv2d", 28, 28, 32, 32, 3, 1, "valid", "int8", {"activation": "relu6"}),
    ("dwconv", 28, 28, 32, None, 3, 1, "same", "uint8", {"activation": "relu"}),
    ("dwconv", 14, 14, 64, None, 3, 2, "same", "uint8", {"activation": "relu6", "weight_zp": 151}),
    ("dwconv", 8, 8, 120, None, 5, 1, "same", "int8", {"activation": "relu"}),
    ("dwconv", 56, 56, 16, None, 3, 1, "same", "int8", {"activation": "relu6"}),
])

# fused RELU/RELU6 whose bounds fall inside the output range (output zero point above the minimum, RELU6's top
# zp + round(6 / scale) below the maximum): the DPU clamp stage, not the output range, must apply them
CLAMP_DEFAULT = _named([
    ("conv2d", 14, 14, 16, 32, 3, 1, "same", "uint8", {"activation": "relu6", "output_zp": 30, "output_scale": 0.06}),
    ("conv2d", 14, 14, 32, 32, 3, 1, "same", "int8", {"activation": "relu", "output_zp": -30}),
    ("conv2d", 8, 8, 32, 64, 1, 1, "valid", "int8", {"activation": "relu6", "output_scale": 0.03}),
    ("conv2d", 28, 28, 16, 24, 3, 2, "same", "uint8", {"activation": "relu", "output_zp": 100, "weight_zp": 122}),
    ("dwconv", 28, 28, 32, None, 3, 1, "same", "uint8", {"activation": "relu", "output_zp": 100}),
    ("dwconv", 14, 14, 64, None, 3, 2, "same", "int8", {"activation": "relu6", "output_zp": -100, "output_scale": 0.03}),
    ("dwconv", 56, 56, 16, None, 3, 1, "same", "uint8",
     {"activation": "relu6", "output_zp": 20, "output_scale": 0.05, "input_scale": 0.2}),
])

DEFAULT_CONV: list[ConvCase] = unique(
    _NAMED_DEFAULT + _ACTIVATION_DEFAULT + CLAMP_DEFAULT
    + sweep("conv2d", seed=1, cap=DEFAULT_MAC_CAP)
    + sweep("conv2d", seed=2, cap=DEFAULT_MAC_CAP)
    + sweep("dwconv", seed=3, cap=DEFAULT_MAC_CAP)
)

# Feature maps wider than the CNA width fields (RK3588 11 bits, RK3576 13 bits) or whose rows overflow the CBUF:
# run as column windows (docs/hardware/rocket.md "Column windows").
WIDE_CONV: list[ConvCase] = _named([
    ("conv2d", 1, 8400, 64, 64, 1, 1, "same", "int8"),       # a detection head's 1x8400 map
    ("conv2d", 2, 3000, 16, 16, 3, 1, "same", "uint8"),
    ("dwconv", 4, 4100, 32, None, 3, 2, "same", "uint8"),
    ("conv2d", 3, 2500, 64, 32, 3, 2, "valid", "int8"),
    ("dwconv", 2, 9000, 16, None, 5, 1, "same", "int8"),
    ("conv2d", 6, 700, 256, 32, 5, 1, "same", "uint8"),      # rows of 700x256 overflow the CBUF stripe
])

# Kernels up to 7x7, non-square kernels, unequal strides and stride 3 (docs/hardware/rocket.md "Kernels and strides").
KERNEL_CONV: list[ConvCase] = _named([
    ("dwconv", 28, 28, 32, None, 7, 1, "same", "uint8"),
    ("dwconv", 56, 56, 64, None, 7, 2, "same", "int8"),
    ("dwconv", 112, 112, 64, None, 7, 1, "same", "uint8"),    # row split with 7-row windows
    ("conv2d", 14, 14, 16, 32, 7, 2, "same", "int8"),
    ("conv2d", 112, 112, 3, 64, 7, 2, "same", "uint8"),       # ResNet-like stem
    ("conv2d", 20, 20, 64, 64, 7, 1, "valid", "uint8", {"weight_zp": 151}),
    ("conv2d", 14, 20, 16, 32, 3, 1, "same", "uint8", {"kernel_w": 5}),
    ("dwconv", 14, 20, 32, None, 1, 1, "same", "int8", {"kernel_w": 7}),
    ("conv2d", 9, 30, 16, 16, 7, 1, "valid", "uint8", {"kernel_w": 1}),
    ("dwconv", 24, 17, 48, None, 5, 2, "same", "uint8", {"kernel_w": 3}),
    ("conv2d", 28, 28, 16, 32, 3, 3, "same", "uint8"),
    ("dwconv", 30, 30, 32, None, 3, 3, "valid", "int8"),
    ("conv2d", 56, 56, 32, 16, 5, 3, "same", "int8"),
    ("dwconv", 29, 31, 16, None, 7, 3, "same", "uint8"),
    ("conv2d", 28, 28, 32, 32, 3, 2, "same", "uint8", {"stride_w": 1}),
    ("dwconv", 28, 40, 32, None, 5, 1, "same", "int8", {"kernel_w": 3, "stride_w": 2}),
    ("conv2d", 30, 45, 16, 32, 1, 3, "valid", "int8", {"stride_w": 2}),
    ("conv2d", 2, 3000, 16, 16, 3, 1, "same", "uint8", {"kernel_w": 7, "stride_w": 3}),  # with column windows
    ("conv2d", 15, 16, 8, 16, 2, 1, "same", "int8"),          # even kernels: SAME pads more after than before
    ("dwconv", 17, 13, 24, None, 4, 2, "same", "uint8"),
    ("conv2d", 11, 12, 16, 16, 6, 3, "same", "uint8", {"kernel_w": 2}),
    ("conv2d", 56, 56, 1, 16, 7, 2, "same", "uint8"),         # RK3588's raw single-channel path
    ("conv2d", 30, 40, 1, 16, 3, 1, "same", "int8", {"kernel_w": 5, "stride_w": 2}),
])

# int8 per-channel weights: delegated by targets with the per_channel capability (both rocket SoCs), else the
# CPU result unchanged.
DEFAULT_PER_CHANNEL: list[ConvCase] = _named([
    ("conv2d", 14, 14, 16, 32, 3, 1, "same", "int8", {"per_channel": True}),
    ("conv2d", 28, 28, 32, 64, 1, 1, "valid", "int8", {"per_channel": True}),
    ("conv2d", 8, 8, 3, 16, 5, 2, "same", "int8", {"per_channel": True, "activation": "relu6"}),
    ("dwconv", 28, 28, 32, None, 3, 1, "same", "int8", {"per_channel": True}),
    ("dwconv", 14, 14, 120, None, 3, 2, "valid", "int8", {"per_channel": True, "activation": "relu"}),
    ("conv2d", 14, 14, 16, 32, 3, 1, "same", "int8",
     {"per_channel": True, "activation": "relu6", "output_zp": -20, "output_scale": 0.06}),
    ("dwconv", 28, 28, 32, None, 3, 1, "same", "int8", {"per_channel": True, "activation": "relu", "output_zp": 10}),
])

# int8 per-channel weights claimed by rk3576: MobileNetV2-like layers with the weight-scale spreads of real
# post-training-quantized models (tf2_mobilenet_v2_1.0_224_ptq: 2 to 28575 between a layer's channels).
_PER_CHANNEL_SPREAD = [
    ConvCase("dwconv", 112, 112, 32, None, 3, 1, "same", dtype="int8", per_channel=True, scale_spread=1000.0),
    ConvCase("conv2d", 224, 224, 3, 32, 3, 2, "same", dtype="int8", per_channel=True, scale_spread=3e4),
    ConvCase("dwconv", 7, 7, 960, None, 3, 1, "same", "relu6", dtype="int8", per_channel=True, scale_spread=150.0),
    ConvCase("conv2d", 7, 7, 960, 320, 1, 1, "same", dtype="int8", per_channel=True, scale_spread=30.0),
    ConvCase("conv2d", 56, 56, 24, 144, 1, 1, "same", dtype="int8", per_channel=True, scale_spread=4000.0),
    ConvCase("dwconv", 56, 56, 144, None, 3, 2, "same", dtype="int8", per_channel=True, scale_spread=130.0),
    ConvCase("conv2d", 28, 28, 64, 64, 5, 2, "valid", dtype="int8", per_channel=True, scale_spread=30.0),
    ConvCase("dwconv", 3, 112, 16, None, 5, 1, "same", dtype="int8", per_channel=True, scale_spread=1000.0),
]
SPREAD_DEFAULT_PER_CHANNEL: list[ConvCase] = DEFAULT_PER_CHANNEL + _PER_CHANNEL_SPREAD

DEFAULT_ADD: list[AddCase] = [
    AddCase(8, 8, 16),
    AddCase(14, 14, 32, dtype="int8"),
    AddCase(28, 28, 3, activation="relu"),
    AddCase(5, 5, 120, dtype="int8", activation="relu6"),
    AddCase(14, 14, 16, "conv", out_c=32, kernel=3),
    AddCase(8, 8, 32, "conv", out_c=16, kernel=1, dtype="int8"),
    AddCase(14, 14, 32, "conv2", out_c=32, kernel=1),
    AddCase(8, 8, 16, "conv2", out_c=64, kernel=3, dtype="int8"),
    AddCase(72, 72, 64, "conv", out_c=16, kernel=1, dtype="int8"),  # the fused ADD in two row tasks (both rockets)
    AddCase(7, 7, 32, "conv2", out_c=48, kernel=3, dtype="int8"),  # rk3576: operand written by the NPU, pitch 52 != 49
    AddCase(14, 14, 32, "conv", out_c=32, kernel=1, op="sub"),  # SUB fused with a negative operand scale (rk3576)
    AddCase(8, 8, 16, "conv2", out_c=32, kernel=3, dtype="int8", op="sub"),
]

# Pools on the rocket PPU (opcheck.check_pool); pool_cpu_reason says which stay on the CPU and why.
DEFAULT_POOL: list[PoolCase] = [
    PoolCase(28, 28, 32, filter=3, stride=2, padding="same", dtype="int8", op="max"),
    PoolCase(16, 16, 32, filter=2, stride=2, op="max"),
    PoolCase(15, 18, 24, filter=3, stride=3, padding="same", op="max"),
    PoolCase(7, 7, 64, filter=7, stride=1),
    PoolCase(4, 4, 256, filter=4, stride=1),
    PoolCase(14, 14, 32, filter=3, stride=1, dtype="int8"),
    PoolCase(9, 9, 40, filter=5, stride=2, dtype="int8"),
    PoolCase(7, 7, 1280, op="mean", dtype="int8"),
    PoolCase(7, 7, 1280, op="mean", dtype="int8", requant=True),
    PoolCase(7, 7, 64, op="mean", requant=True, seed=1),
    # MobileNetV3Large at 160x160 (Keras, int8): its 5x5 MEANs shrink the scale 3-4x; on the PPU + requantization
    # they were 2-3 LSB off on 60-73 % of the channels (pool.MAX_REQUANT_GAIN); the per-plane convolutions'
    # one rounding matches 98.4 % of the sums (< flat_pool.MEAN_MIN_SHARE): on the CPU now
    PoolCase(5, 5, 960, op="mean", dtype="int8", requant=True, requant_scale=0.28),
    PoolCase(8, 8, 16),
    PoolCase(8, 8, 16, dtype="int8"),
    PoolCase(14, 14, 32, filter=3, stride=1, padding="same", dtype="int8"),
    PoolCase(6, 6, 32, filter=6, stride=1),
    PoolCase(14, 14, 16, after_conv=True),
    PoolCase(8, 8, 32, after_conv=True, conv_kernel=1, dtype="int8"),
    # averages the PPU cannot round like TFLite (uint8 6x6; int8 2x2, 4x4): a depthwise convolution on the DPU
    PoolCase(6, 6, 768, filter=6, stride=1),  # MobileNetV1 0.75_192's global pool
    PoolCase(4, 4, 128, filter=4, stride=1, dtype="int8"),
    PoolCase(14, 14, 24, filter=6, stride=2),
    PoolCase(9, 9, 24, filter=4, stride=1, dtype="int8"),
    PoolCase(15, 15, 40, filter=4, stride=3, dtype="int8", seed=1),
    PoolCase(13, 13, 40, filter=2, stride=3, dtype="int8"),
    PoolCase(12, 12, 16, filter=2, stride=2, padding="same", dtype="int8"),
    PoolCase(12, 12, 32, filter=6, stride=1, after_conv=True, conv_kernel=1),
    PoolCase(7, 9, 24, filter=2, filter_w=3, stride=1),  # 6 taps, non-square
    PoolCase(10, 8, 16, filter=4, filter_w=2, stride=2, dtype="int8"),
    PoolCase(9, 12, 16, filter=7, filter_w=4, stride=2),  # uint8 28 taps: weight 2
    # global averages wider than the PPU's 8: one 1x1 convolution per 16-channel plane (rocket/flat_pool.py)
    PoolCase(16, 16, 32, filter=16, stride=1),
    PoolCase(16, 16, 40, filter=16, stride=1, dtype="int8"),  # int8 n = 256: weight 3
    PoolCase(12, 20, 24, filter=12, filter_w=20, stride=1, dtype="int8"),
    PoolCase(16, 16, 32, op="mean"),
    PoolCase(16, 16, 256, op="mean", dtype="int8"),  # TFLite rounds twice: the closest single rounding
    PoolCase(16, 16, 64, op="mean", requant=True),
    PoolCase(12, 20, 33, op="mean", requant=True, dtype="int8", after_conv=True, conv_kernel=1),
    PoolCase(15, 15, 16, filter=15, stride=1, after_conv=True, conv_kernel=1),
    PoolCase(2, 2, 32, op="mean", dtype="int8"),  # its double rounding: on the CPU
    PoolCase(16, 16, 1, op="mean"),  # one channel: on the CPU
]
# MEAN: TFLite's integer MEAN rounds through its own fixed-point multiplier, not (sum + n/2) / n as the average
# pool does; the PPU computes the pool's rounding (docs/hardware/rocket.md, "Pooling"). Measured bound.
MEAN_MIN_EXACT = 0.98
# A requantizing MEAN rounds twice (the PPU average in input LSB, then the 1x1 depthwise requantization): <= 1 LSB,
# measured 65.8 % exact on mean-in7x7x1280-rq-i8 (docs/hardware/rocket.md §6a).
MEAN_REQUANT_MIN_EXACT = 0.6


def pool_cpu_reason(case: PoolCase, device: str | None = None) -> str | None:
    """Why the rocket backends leave this case's pool on the CPU, or None (python/teflon/rocket/pool.py)."""
    from teflon.modelgen import out_size
    from teflon.rocket.average import average_conv, average_recips
    from teflon.rocket.geometry import same_pads
    from teflon.rocket.lower import MAX_KERNEL
    from teflon.rocket.pool import KERNEL_RANGE, MAX_REQUANT_GAIN

    if case.op != "avg" and device == "rk3568":
        return RK3568_POOL_CPU if case.op == "max" else RK3568_MEAN_CPU
    if case.op == "max":
        return None
    kh, kw = (case.in_h, case.in_w) if case.op == "mean" else (case.filter, case.kernel_w)
    if case.op == "avg" and case.padding == "same":
        for size, k in ((case.in_h, kh), (case.in_w, kw)):
            out = out_size(size, k, case.stride, "same")
            if same_pads(size, k, case.stride)[0] or (out - 1) * case.stride + k > size:
                return "average pool whose windows reach into the padding"
    if device == "rk3568":  # no PPU: the vendor's global averaging convolution, else the exact depthwise one
        if (kh, kw) == (case.in_h, case.in_w) and rk3568_pool_cpu_reason(case) is None:
            return None
        # a single output row (column) programs stride 1 there: the encoder takes equal strides only
        strides = {1 if out_size(n, k, case.stride, case.padding) == 1 else case.stride
                   for n, k in ((case.in_h, kh), (case.in_w, kw))}
        ok = (max(kh, kw) <= MAX_KERNEL and case.in_c > 1 and len(strides) == 1
              and average_conv(kh, kw, case.dtype) is not None)
        return None if ok else RK3568_AVG_CPU
    ppu = (max(kh, kw) <= KERNEL_RANGE[1] and average_recips(kh, kw, case.dtype) is not None
           and not (case.op == "mean" and case.requant and mean_gain(case) >= MAX_REQUANT_GAIN))
    if ppu or (case.op == "avg" and max(kh, kw) <= MAX_KERNEL and case.in_c > 1
               and average_conv(kh, kw, case.dtype) is not None):
        return None
    if case.op == "mean" or (kh, kw) == (case.in_h, case.in_w):  # a global average: per-plane convolutions
        return flat_cpu_reason(case)
    return f"{kh}x{kw} {case.dtype} average: the PPU's reciprocal multiply cannot round like TFLite"


def rk3568_pool_cpu_reason(case: PoolCase) -> str | None:
    """rk3568 runs a global AVERAGE_POOL_2D as the vendor's averaging depthwise convolution when its bias makes it
    exact enough over every window sum (rocket/rk3568/average.py); every other pool stays on the CPU."""
    from teflon.rocket.rk3568.average import cvt, solve
    from teflon.runtime import make_interpreter

    if case.op != "avg" or (case.filter, case.kernel_w) != (case.in_h, case.in_w):
        return RK3568_POOL_CPU
    tensors = {d["name"]: d["quantization"] for d in make_interpreter(case.build()).get_tensor_details()}
    sx, zx = tensors["conv" if case.after_conv else "input"]
    zs = zx - (128 if case.dtype == "uint8" else 0)
    n = case.in_h * case.in_w
    ab = solve(n, case.dtype, zs, zs, *cvt(n, sx, sx))
    return None if ab.accepted else f"global average exact on {100 * ab.exact:.2f} % of the window sums only"


def _mean_quant(case: PoolCase) -> tuple[tuple[float, int], tuple[float, int]]:
    """((input scale, zero point), (output scale, zero point)) of a MEAN case as built."""
    from teflon.runtime import make_interpreter

    tensors = {d["name"]: d["quantization"] for d in make_interpreter(case.build()).get_tensor_details()}
    return tensors["conv" if case.after_conv else "input"], tensors["output"]


def mean_gain(case: PoolCase) -> float:
    """A MEAN case's input scale over its output scale (rocket/pool.py MAX_REQUANT_GAIN)."""
    (sx, _), (sy, _) = _mean_quant(case)
    return sx / sy


def flat_cpu_reason(case: PoolCase) -> str | None:
    """Why a global average the PPU cannot take stays on the CPU as per-plane 1x1 convolutions
    (rocket/flat_pool.py), or None; the cases keep H·W <= 256 (the RK3588 CNA's 4096 input channels)."""
    from teflon.rocket.average import average_conv, mean_conv
    from teflon.rocket.flat_pool import MEAN_MIN_SHARE

    if case.in_c == 1:
        return "global average of one channel"
    n = case.in_h * case.in_w
    if case.op == "avg":
        return None if average_conv(case.in_h, case.in_w, case.dtype) else "no exact OUT_CVT"
    (sx, zx), (sy, zy) = _mean_quant(case)
    a = mean_conv(n, case.dtype, sx, zx, sy, zy)
    return None if a is not None and a.exact >= MEAN_MIN_SHARE else "TFLite's double rounding"

# The other runtime (ai_edge_litert) on a few cases of each kind.
LITERT_CASES: list[ConvCase | AddCase] = [
    ConvCase("conv2d", 28, 28, 16, 32, 3, 2, "same"),
    ConvCase("conv2d", 14, 14, 32, 64, 1, 1, "valid", dtype="int8"),
    ConvCase("dwconv", 28, 28, 32, None, 3, 1, "same", "relu6", dtype="int8"),
    ConvCase("conv2d", 14, 14, 16, 32, 3, 1, "same", dtype="int8", per_channel=True),
    AddCase(8, 8, 16, "conv2", out_c=16, kernel=3),
]


# --------------------------------------------------------------------------------------------------------------
# Slow sweep
# --------------------------------------------------------------------------------------------------------------


def full_product(op: str, dtype: str) -> list[ConvCase]:
    """Every size x channels x kernel x stride x padding of one op and dtype; uint8 cycles the weight zero point."""
    cases = []
    out_channels = CHANNELS if op == "conv2d" else (None,)
    for i, (size, ic, oc, k, s, pad) in enumerate(itertools.product(SIZES, CHANNELS, out_channels, KERNELS,
                                                                    STRIDES, PADDINGS)):
        zp = WEIGHT_ZPS[i % len(WEIGHT_ZPS)] if dtype == "uint8" else None
        case = ConvCase(op, size, size, ic, oc, k, s, pad, dtype=dtype, weight_zp=zp)
        if case.valid:
            cases.append(case)
    return cases


def _zero_point_grid() -> list[ConvCase]:
    """Each forced weight zero point (uint8) on a few shapes of both ops, with and without activations."""
    cases = []
    for zp in (*WEIGHT_ZPS[1:], 0, 1, 128, 254, 255):
        for op, size, c, k in (("conv2d", 14, 32, 3), ("conv2d", 8, 120, 1), ("dwconv", 28, 64, 3),
                               ("dwconv", 14, 16, 5)):
            for act in ("none", "relu6"):
                cases.append(ConvCase(op, size, size, c, None, k, 1, "same", act, "uint8",
                                      weight_zp=zp))
    return cases


def _mobilenet_layers() -> list[ConvCase]:
    """The CONV_2D / DEPTHWISE_CONV_2D shapes of MobileNetV1 1.0/224, in both dtypes."""
    layers = [("conv2d", 224, 3, 32, 3, 2)]
    chans = [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1), (256, 512, 2),
             (512, 512, 1), (512, 1024, 2), (1024, 1024, 1)]
    size = 112
    for cin, cout, s in chans:
        layers.append(("dwconv", size, cin, cin, 3, s))
        size = (size + s - 1) // s
        layers.append(("conv2d", size, cin, cout, 1, 1))
    cases = []
    for dt in DTYPES:
        for op, size, cin, cout, k, s in layers:
            cases.append(ConvCase(op, size, size, cin, None if op == "dwconv" else cout, k, s, "same",
                                  dtype=dt))
    return cases


# Large layers: weights or feature maps far beyond the 384 KiB CBUF (row splitting, partial weights).
_NAMED_SLOW = _named([
    ("conv2d", 112, 112, 256, 256, 5, 1, "same", "uint8"),
    ("conv2d", 112, 112, 120, 120, 3, 2, "valid", "uint8", {"weight_zp": 95}),
    ("conv2d", 56, 56, 256, 256, 3, 1, "same", "int8"),
    ("conv2d", 28, 28, 256, 256, 5, 2, "valid", "int8", {"activation": "relu6"}),
    ("dwconv", 112, 112, 256, None, 5, 2, "valid", "int8"),
    ("dwconv", 112, 112, 120, None, 3, 1, "same", "uint8", {"activation": "relu", "weight_zp": 151}),
])

SLOW_CONV: list[ConvCase] = unique(
    _NAMED_SLOW
    + [c for op in ("conv2d", "dwconv") for dt in DTYPES for c in full_product(op, dt)]
    + _zero_point_grid()
    + _mobilenet_layers()
    + [ConvCase(c.op, c.in_h, c.in_w, c.in_c, c.out_c, c.kernel, c.stride, c.padding, act, c.dtype,
                weight_zp=c.weight_zp)
       for act in ("relu", "relu6") for c in sweep("conv2d", seed=14, cap=DEFAULT_MAC_CAP)
       + sweep("dwconv", seed=15, cap=DEFAULT_MAC_CAP)],
    exclude=DEFAULT_CONV,
)

# One output channel makes "per-channel" weights per-tensor (one scale): those are left out.
SLOW_PER_CHANNEL: list[ConvCase] = unique(
    ConvCase(c.op, c.in_h, c.in_w, c.in_c, c.out_c, c.kernel, c.stride, c.padding, c.activation, "int8",
             per_channel=True)
    for c in sweep("conv2d", seed=16, cap=DEFAULT_MAC_CAP) + sweep("dwconv", seed=17, cap=DEFAULT_MAC_CAP)
    if c.channels_out > 1
)

# Targets that delegate per-channel weights: the per-channel covering arrays again with real-model scale spreads.
SPREAD_SLOW_PER_CHANNEL: list[ConvCase] = SLOW_PER_CHANNEL + unique(
    ConvCase(c.op, c.in_h, c.in_w, c.in_c, c.out_c, c.kernel, c.stride, c.padding, c.activation, "int8",
             per_channel=True, scale_spread=spread)
    for spread, seed in ((100.0, 18), (10000.0, 19))
    for c in sweep("conv2d", seed=seed, cap=DEFAULT_MAC_CAP) + sweep("dwconv", seed=seed + 10, cap=DEFAULT_MAC_CAP)
    if c.channels_out > 1
)

# MUL / ADD / SUB with a constant of one value per channel (bcast-c) or one value (bcast-1): a 1x1 depthwise
# convolution (rocket/const_elementwise.py), judged as single ops
DEFAULT_CONST: list[ConstOpCase] = [
    ConstOpCase(14, 14, 32, "mul"),
    ConstOpCase(14, 14, 32, "mul", dtype="int8"),
    ConstOpCase(9, 9, 40, "mul", "1", "relu"),
    ConstOpCase(20, 20, 96, "mul", dtype="int8", seed=2),
    ConstOpCase(14, 14, 64, "add"),
    ConstOpCase(14, 14, 64, "add", dtype="int8"),
    ConstOpCase(10, 10, 16, "add", "c", "relu6", "int8"),
    ConstOpCase(8, 8, 24, "sub", "1"),
    ConstOpCase(8, 8, 24, "rsub", dtype="int8"),
    ConstOpCase(28, 28, 3, "mul"),
    ConstOpCase(8, 8, 1, "mul"),  # one channel: on the CPU (a single-channel convolution reads host rows)
    # an un-folded batch norm's multiplier and offset (DenseNet): one channel's weight is 255 (rk3576: 3 x 85)
    ConstOpCase(16, 16, 64, "mul", dtype="int8", const="bn"),
    ConstOpCase(12, 12, 48, "mul", const="bn", seed=1),
    ConstOpCase(16, 16, 64, "add", "c", "relu", "int8", const="bn"),
    # ... whose one rounding matches TFLite on < 99.5 %: the multiplier stage rounds first (two_rounding_plan)
    ConstOpCase(16, 16, 64, "mul", dtype="int8", seed=13, const="bn"),
    ConstOpCase(16, 16, 64, "mul", seed=3, const="bn"),
]
SLOW_CONST: list[ConstOpCase] = [
    ConstOpCase(size, size, c, op, bcast, act, dt, seed)
    for (size, c), op, bcast, act, dt, seed in itertools.product(
        ((7, 16), (16, 64), (28, 24)), ("mul", "add", "sub", "rsub"), ("c", "1"), ("none", "relu", "relu6"), DTYPES,
        (0, 1))
] + [
    ConstOpCase(size, size, c, op, "c", act, dt, seed, "bn")
    for (size, c), op, act, dt, seed in itertools.product(
        ((8, 32), (16, 96), (4, 256)), ("mul", "add"), ("none", "relu"), DTYPES, (0, 1, 2))
] + [  # seeds whose MUL takes the two-rounding plan (measured 2026-11-29)
    ConstOpCase(16, 16, 64, "mul", "c", act, dt, seed, "bn")
    for dt, seeds in (("int8", (13, 16, 17, 32, 38)), ("uint8", (1, 3, 5, 7, 8, 14, 18))) for seed in seeds
    for act in ("none", "relu")
]

# PAD -> VALID convolution (explicit padding as PyTorch / Keras exports write it): the PAD folds into the
# convolution's padding (rocket/pad_fold.py) while each side stays below the kernel size
DEFAULT_PAD_CONV: list[PadConvCase] = [
    PadConvCase("conv2d", 16, 16, 16, 32),
    PadConvCase("dwconv", 15, 15, 32, None, 3, 2, (1, 1, 1, 1), "int8"),
    PadConvCase("conv2d", 28, 28, 3, 16, 3, 2, (1, 1, 1, 1)),
    PadConvCase("dwconv", 14, 14, 48, None, 5, 1, (2, 2, 2, 2)),
    PadConvCase("conv2d", 9, 11, 16, 24, 7, 2, (3, 3, 3, 3), "int8"),
    PadConvCase("conv2d", 20, 20, 32, 32, 3, 1, (3, 0, 0, 0)),  # 3 rows on top of a 3x3 kernel: the PAD stays
]
SLOW_PAD_CONV: list[PadConvCase] = [
    PadConvCase(op, size, size, c, None if op == "dwconv" else 2 * c, k, s, pads, dt)
    for op, (size, c), k, s, pads, dt in itertools.product(
        ("conv2d", "dwconv"), ((14, 16), (31, 24)), (3, 5), (1, 2), ((0, 1, 0, 1), (1, 1, 1, 1), (2, 1, 0, 2)), DTYPES)
]


def pad_cpu_reason(case: PadConvCase, device: str | None = None) -> str | None:
    """Why the PAD of a PadConvCase stays on the CPU (its convolution still runs on the NPU), or None."""
    if max(case.pads[0], case.pads[1]) >= case.kernel or max(case.pads[2], case.pads[3]) >= case.kernel:
        return "a side's padding reaches the kernel size"
    return None


SLOW_ADD: list[AddCase] = [
    AddCase(size, size, c, prod, out_c=None if prod == "inputs" else oc, kernel=k, activation=act, dtype=dt)
    for (size, c, oc, k), prod, act, dt in itertools.product(
        ((3, 1, 1, 1), (14, 16, 32, 3), (28, 32, 32, 1), (56, 3, 16, 3)), ("inputs", "conv", "conv2"),
        ("none", "relu", "relu6"), DTYPES)
]


# ---------------------------------------------------------------------------------------------------------------
# Known limitations (like Mesa CI's expectation files): cases a backend deliberately leaves on the CPU today. The
# tests then require an exact CPU fallback and report xfail; once the backend claims such a case it is checked
# like any other, and the entry here should go.
# ---------------------------------------------------------------------------------------------------------------


# (shape predicate, reason) pairs; empty while the backend claims every per-tensor convolution in the tables.
# Example entry: (lambda shape: shape[1] < 4, "input height < 4 (CNA surface stride would be negative)").
RK3588_KNOWN_CPU: list[tuple[Callable[[Sequence[int]], bool], str]] = []


def rk3588_known_cpu_conv(input_shape: Sequence[int]) -> str | None:
    """Why rk3588 is expected to leave a convolution with this NHWC input on the CPU today, or None."""
    for applies, reason in RK3588_KNOWN_CPU:
        if applies(input_shape):
            return reason
    return None


def rk3588_known_cpu(case: ConvCase | AddCase | PoolCase) -> str | None:
    """Why the rk3588 backend is expected to leave this case's convolutions on the CPU, or None."""
    for c in _convs(case):
        reason = rk3588_known_cpu_conv(c.input_shape)
        if reason:
            return reason
    return None


def _clamp_inside_range(case: ConvCase) -> bool:
    """A fused RELU/RELU6 whose zero point or RELU6 top lies inside the output range (the DPU must clamp)."""
    if case.activation not in ("relu", "relu6"):
        return False
    qmin = 0 if case.dtype == "uint8" else -128
    zp = qmin if case.output_zp is None else case.output_zp
    return zp > qmin or _relu6_wider_than_6(case)


# (case predicate, reason) pairs for rk3576 (python/teflon/rocket/support_rk3576.py, docs/hardware/rocket-rk3576.md).
RK3576_KNOWN_CPU: list[tuple[Callable[[ConvCase], bool], str]] = [
    (lambda c: c.per_channel and _clamp_inside_range(c),
     ("fused RELU/RELU6 inside the output range with per-channel weights: the vendor's clamp is seen on per-tensor "
      "layers only, its place relative to the per-channel multiplier is not known")),
    (lambda c: c.op == "dwconv" and c.dtype == "uint8" and c.weight_zp == 0,
     ("uint8 depthwise weights with zero point 0: w - zw reaches 255, one more than the two int8 bytes of the "
      "RK3576 depthwise weight pair add up to (no B term on the depthwise path)")),
]


def rk3576_known_cpu(case: ConvCase | AddCase | PoolCase) -> str | None:
    """Why the rk3576 backend is expected to leave this case's convolutions on the CPU, or None."""
    for c in _convs(case):
        for applies, reason in RK3576_KNOWN_CPU:
            if applies(c):
                return reason
    return None


# (case predicate, reason) pairs for rk3568 (python/teflon/rocket/rk3568/support.py, docs/hardware/rk3568.md §6).
RK3568_KNOWN_CPU: list[tuple[Callable[[ConvCase], bool], str]] = [
    (lambda c: c.stride_w is not None and c.stride_w != c.stride,
     "different row and column strides: no vendor program shows the RK3568's word for them"),
    (lambda c: max(c.in_w, c.out_w) > 2047, "map wider than the 11-bit width fields (maps > 2047 fail [IAV T76])"),
    (lambda c: _rk3568_rows_beyond_cbuf(c), "the kernel's input rows do not fit seven CBUF data banks (no column split)"),
]


def _rk3568_rows_beyond_cbuf(c: ConvCase) -> bool:
    from teflon.rocket.rk3568.layout import BANK_ENTRIES, CBUF_BANKS, data_entries

    return data_entries(c.in_w, 32 if c.op == "dwconv" else c.in_c) * c.kernel > (CBUF_BANKS - 1) * BANK_ENTRIES
# Op families rk3568 leaves on the CPU whole (docs/hardware/rk3568.md §6-§7).
RK3568_POOL_CPU = ("a max pool needs the PPU, which raises no interrupt bit on RK3568 [IAV T60/T61]: one-task kicks "
                   "never complete it")
RK3568_MEAN_CPU = "MEAN is not lowered on rk3568 (its averaging convolutions are RK3588/RK3576 programs)"
RK3568_AVG_CPU = "an average the depthwise convolution cannot take exactly (window > 7, one channel, no exact OUT_CVT)"
RK3568_UNARY_CPU = "no LUT program on rk3568 (the vendor loads its tables from the kernel: IAV's UAPI extension)"
# ADDs of two maps: the form rk3568 delegates (the DPU-only task, rocket/rk3568/add.py), on the vendor's two
# planes and others (DPU_RDMA 0x503C holds the plane bytes - 8, as in both vendor ADDs and the third party's fused
# ADDs on silicon [IAV T55/T57])
RK3568_ADD: list[AddCase] = [AddCase(16, 16, 32), AddCase(16, 16, 5, seed=1), AddCase(16, 16, 32, seed=3),
                             AddCase(28, 40, 64), AddCase(28, 40, 64, seed=5), AddCase(40, 28, 9, seed=2),
                             AddCase(13, 13, 24, seed=1), AddCase(7, 7, 128, seed=2), AddCase(56, 56, 24, seed=3),
                             AddCase(1, 1, 40, seed=4)]


def rk3568_known_cpu(case: ConvCase | AddCase | PoolCase) -> str | None:
    """Why the rk3568 backend is expected to leave this case's convolutions on the CPU, or None."""
    for c in _convs(case):
        for applies, reason in RK3568_KNOWN_CPU:
            if applies(c):
                return reason
    return None


def _convs(case: Any) -> list[ConvCase]:
    if isinstance(case, ConvCase):
        return [case]
    if isinstance(case, (AddCase, PoolCase)) and case.macs:
        return [case.conv]
    return []


def known_cpu_add(case: AddCase, device: str) -> str | None:
    """Why `device`'s backend leaves the ADD of an AddCase on the CPU (a conv-fed one's convolutions still run on the
    NPU), or None: rk3588 takes Mesa's element-wise reader strides of at least 12 atoms (docs/hardware/rocket.md);
    an ADD of two single-channel inputs would copy one through a single-channel convolution (host rows only)."""
    if device == "rk3588" and case.in_h * case.in_w < 12:
        return "fused ADD on a plane below 12 atoms (Mesa's minimum element-wise surface stride)"
    if device == "rk3568" and (case.op != "add" or case.activation != "none"):
        return "rk3568 encodes the vendor's ADD of two maps without activation only"
    if case.producers == "inputs" and case.in_c == 1 and device != "rk3568":  # rk3568: the DPU-only ADD takes it
        return "ADD of single-channel maps"
    return None


def separate_add(case: AddCase, device: str) -> bool:
    """True when `device` runs a conv-fed ADD as its own task reading the convolutions' outputs (rk3568: the vendor's
    DPU-only ADD; no ADD fused into a convolution is encoded there), not fused into a convolution."""
    return device == "rk3568" and case.producers != "inputs" and known_cpu_add(case, device) is None


def known_cpu(case: ConvCase | AddCase | PoolCase, device: str) -> str | None:
    """Why `device`'s backend is expected to leave this case's convolutions on the CPU today, or None."""
    return KNOWN_CPU[device](case)


def total_macs(cases: Iterable[ConvCase | AddCase | PoolCase]) -> int:
    return sum(c.macs for c in cases)


# Slow-sweep cases whose outputs differ from TFLite on more than 0.5 % of the elements (never by more than
# 1 LSB) for a reason in the hardware's arithmetic, not in the encoder or the simulator: in every one an exact
# integer model of the programmed DPU (accumulator, OUT_CVT scale/shift, round half to even) equals the simulator's
# output. docs/hardware/rocket.md, "Requantization", explains both groups.
_DOUBLE_ROUNDING = (  # fan-in 1-16, large M: TFLite's second rounding moves its threshold by 2^-(s+1)
    "conv2d-in112x112x1-oc1-k1-s1-same-i8", "conv2d-in112x112x1-oc1-k1-s1-valid-u8-wzp74",
    "conv2d-in28x28x1-oc1-k1-s1-same-i8", "conv2d-in28x28x1-oc1-k1-s1-same-u8", "conv2d-in28x28x1-oc1-k1-s2-same-i8",
    "conv2d-in3x3x1-oc1-k1-s1-valid-i8", "dwconv-in112x112x1-k1-s1-valid-u8-wzp74", "dwconv-in112x112x1-k1-s2-same-i8",
    "dwconv-in112x112x1-k1-s2-same-u8-wzp95", "dwconv-in112x112x1-k1-s2-valid-i8",
    "dwconv-in112x112x16-k1-s1-valid-i8-relu", "dwconv-in112x112x3-k1-s2-valid-u8-wzp122",
    "dwconv-in28x28x1-k1-s1-valid-i8", "dwconv-in28x28x3-k1-s1-valid-i8-relu6", "dwconv-in56x56x1-k1-s1-same-u8",
    "dwconv-in56x56x1-k1-s1-valid-i8", "dwconv-in56x56x1-k1-s1-valid-u8-wzp74", "dwconv-in56x56x1-k1-s2-same-i8",
    "dwconv-in8x8x1-k1-s2-same-u8-wzp95",
)
_MULTIPLIER_PRECISION = (  # tiny M, outputs spanning ~255 steps: the 15-bit scale's 2.4-2.9e-5 relative error
    "conv2d-in112x112x256-oc120-k5-s1-same-u8-wzp95", "conv2d-in112x112x256-oc256-k5-s1-same-u8",
    "conv2d-in112x112x256-oc32-k5-s2-valid-u8-wzp211", "conv2d-in112x112x64-oc32-k5-s1-same-u8-wzp95",
)
KNOWN_REQUANT_LIMIT: dict[str, str] = {
    **{n: "TFLite's double rounding vs the DPU's single rounding (low fan-in, large multiplier)"
       for n in _DOUBLE_ROUNDING},
    **{n: "15-bit OUT_CVT multiplier precision (relative error ~2.5e-5, outputs spanning 255 steps)"
       for n in _MULTIPLIER_PRECISION},
}


def known_requant_limit(name: str, device: str) -> str | None:
    """Why a delegated case may miss the exact rate on `device` for a reason in the hardware's arithmetic.

    rk3576 runs per-tensor layers through the very same arithmetic as rk3588 (coefficient stage C = 2^14 >> 14
    as an identity, the same OUT_CVT scale, shift and rounding, no CORE truncation): the same cases hit the same
    limits, and in each the simulator's output equals the exact integer model of the programmed DPU
    (an earlier numpy model of the contract). Per-channel cases have no entry: all of them pass. rk3568 writes the
    same OUT_CVT (requant.out_cvt: a Q1.14 scale and shift, one rounding after the accumulator) and its simulator
    rounds the same way: the same cases hit the same limits (measured: exactly these 23 slow cases)."""
    limits = {"rk3588": KNOWN_REQUANT_LIMIT, "rk3576": KNOWN_REQUANT_LIMIT, "rk3568": KNOWN_REQUANT_LIMIT,
              "a311d": ETNAVIV_REQUANT_LIMIT, "imx8mp": ETNAVIV_REQUANT_LIMIT}
    return limits.get(device, {}).get(name)


# etnaviv: the NN engine multiplies the accumulator once and rounds once. In these fan-in-1 cases (1x1 kernels on
# one channel, large multipliers) TFLite's two roundings land on the other side of a tie for a few % of the
# elements; the simulator's output equals the exactly rounded result of every element
# (tests/etnaviv/test_ops.py::test_single_rounding_limit checks that, as the rocket model did for the DPU).
_ETNAVIV_DOUBLE_ROUNDING = _DOUBLE_ROUNDING + (
    "conv2d-in56x56x1-oc1-k1-s1-valid-i8", "conv2d-in112x112x1-oc1-k1-s1-same-i8", "conv2d-in112x112x1-oc1-k1-s2-same-i8",
    "dwconv-in112x112x16-k1-s1-valid-i8-relu", "dwconv-in28x28x3-k1-s1-valid-i8-relu6",
)
ETNAVIV_REQUANT_LIMIT: dict[str, str] = {
    n: "TFLite's double rounding vs the NN engine's single rounding (fan-in 1, large multiplier)"
    for n in _ETNAVIV_DOUBLE_ROUNDING
}


# Per device: why its backend leaves a case's convolutions on the CPU today (None: it must delegate them).
KNOWN_CPU: dict[str, Callable[[ConvCase | AddCase | PoolCase], str | None]] = {
    "rk3588": rk3588_known_cpu,
    "rk3576": rk3576_known_cpu,
    "rk3568": rk3568_known_cpu,
}


def etnaviv_known_cpu(case: Any) -> str | None:
    """Why the etnaviv backends leave a case on the CPU today (teflon.etnaviv.lower.support), or None."""
    for applies, reason in ETNAVIV_KNOWN_CPU:
        if applies(case):
            return reason
    return None


def etnaviv_v7_known_cpu(case: Any) -> str | None:
    """etnaviv_known_cpu plus the refusals of the v7 (A311D) path only."""
    for applies, reason in ETNAVIV_V7_KNOWN_CPU:
        if applies(case):
            return reason
    return etnaviv_known_cpu(case)


# (case predicate, reason) pairs for a311d and imx8mp (docs/hardware/etnaviv-nn.md): measured refusals
def _relu6_wider_than_6(case: Any) -> bool:
    """A fused RELU6 whose output quantization reaches past 6 (TFLite's clamp top zp + round(6/scale) below the
    type's maximum). The generator's default RELU6 output scale is 6/255, which does not."""
    if not isinstance(case, ConvCase) or case.activation != "relu6" or case.output_scale is None:
        return False
    qmin, qmax = (0, 255) if case.dtype == "uint8" else (-128, 127)
    zp = qmin if case.output_zp is None else case.output_zp
    return zp + math.floor(6.0 / case.output_scale + 0.5) < qmax


ETNAVIV_KNOWN_CPU: list[tuple[Callable[[Any], bool], str]] = [
    (_relu6_wider_than_6, ("fused RELU6 only when the output quantization range already ends at <= 6 (the NN "
                           "engine's relu bit clamps at the zero point only)")),
]
# ... and for a311d (v7) only
ETNAVIV_V7_KNOWN_CPU: list[tuple[Callable[[Any], bool], str]] = [
    (lambda c: isinstance(c, AddCase) and c.op == "sub",
     ("SUB on the v7 path not supported (Mesa lowers it as an ADD; a difference needs a negative addition_offset "
      "word, which Mesa never programs: unverified)")),
]
# ... and for imx8mp (v8) only: cases whose requantization scale is >= 1 (the v8 post shift, 127 - exponent, would
# be negative; the 7-bit field has no sign, etnaviv.md §4; v7's form, 142 - exponent, still reaches them)
_V8_SCALE_ABOVE_ONE = ("dwconv-in3x3x1-k1-s1-same-u8",)
ETNAVIV_V8_KNOWN_CPU: list[tuple[Callable[[Any], bool], str]] = [
    (lambda c: getattr(c, "name", "") in _V8_SCALE_ABOVE_ONE,
     "requantization scale >= 1 needs a negative post_shift, which the v8 NN descriptor cannot encode"),
]


def etnaviv_v8_known_cpu(case: Any) -> str | None:
    """etnaviv_known_cpu plus the refusals of the v8 (i.MX8M Plus) path only."""
    for applies, reason in ETNAVIV_V8_KNOWN_CPU:
        if applies(case):
            return reason
    return etnaviv_known_cpu(case)


KNOWN_CPU["a311d"] = etnaviv_v7_known_cpu
KNOWN_CPU["imx8mp"] = etnaviv_v8_known_cpu


def etnaviv_per_channel_jobs(case: Any, device: str) -> int:
    """NN jobs of an int8 per-channel case on `device` (teflon.etnaviv.lower: one per run of output channels with one
    requantization; modelgen draws a distinct scale per run, one for all channels with scale_spread 1; the v8 native depthwise path cuts runs of
    2..cores-1 channels into single channels), 0 for per-tensor cases."""
    if not getattr(case, "per_channel", False):
        return 0
    oc = case.out_n if isinstance(case, FcCase) else case.channels_out
    run = case.scale_runs or 1
    if getattr(case, "scale_spread", None) == 1:  # a spread of 1 draws one scale for every channel
        run = oc
    runs = [min(run, oc - a) for a in range(0, oc, run)]
    chip = CHIPS[device]
    if chip.version == 8 and isinstance(case, ConvCase) and case.op == "dwconv" and case.in_c >= chip.nn_core_count:
        runs = [r for n in runs for r in ([n] if n == 1 or n >= chip.nn_core_count else [1] * n)]
    return len(runs)


_PC_LIMIT = ("per-channel weight scales need more NN jobs than MAX_CHANNEL_JOBS (one per run of output channels "
             "with the same requantization; docs/hardware/etnaviv-per-channel.md)")
ETNAVIV_V7_KNOWN_CPU.append((lambda c: etnaviv_per_channel_jobs(c, "a311d") > MAX_CHANNEL_JOBS, _PC_LIMIT))
ETNAVIV_V8_KNOWN_CPU.append((lambda c: etnaviv_per_channel_jobs(c, "imx8mp") > MAX_CHANNEL_JOBS, _PC_LIMIT))

# etnaviv AVERAGE_POOL_2D: a depthwise NN job with unit weights and a multiplier proven against TFLite's rounding
# (teflon.etnaviv.pool_requant). Padded windows, strides other than 1 and 2, windows over 15 and (v7) non-square
# windows wider than 3 or dense forms over MAX_V7_POOL_WEIGHTS stay on the CPU with the reason.
ETNAVIV_DEFAULT_POOL: list[PoolCase] = [c for c in DEFAULT_POOL if c.op == "avg"] + [
    PoolCase(7, 7, 1024, filter=7, stride=1),  # MobileNetV1's head: on v7 past MAX_V7_POOL_SPLIT_WEIGHTS (CPU)
    PoolCase(7, 7, 96, filter=7, stride=1, dtype="int8"),
    PoolCase(14, 14, 96, filter=14, stride=1),  # v7 uint8: n = 196 needs the bias (pool_requant.average_encoding)
    PoolCase(14, 14, 48, filter=14, stride=1, dtype="int8"),
    PoolCase(3, 3, 8, filter=3, stride=1, dtype="int8"),
    # v7's channel runs reading a convolution's planar output; a channel count no run size divides: CPU on v7
    PoolCase(4, 4, 1024, filter=4, stride=1, after_conv=True, conv_kernel=1),
    PoolCase(7, 7, 1020, filter=7, stride=1, dtype="int8"),
    PoolCase(16, 16, 24, filter=16, stride=16),  # DeepLab's image pooling: one window, its stride never applies
    # whole planes past 15 as the FC job: v7 int8 28x28 with weight 13; 56x56 int8 has no v7 encoding (CPU there)
    PoolCase(28, 28, 16, filter=28, stride=1, dtype="int8"), PoolCase(56, 56, 8, filter=56, stride=1, dtype="int8"),
    PoolCase(56, 56, 16, filter=56, stride=1),  # MobileNetV3-small's first squeeze-excite pool
]


def _v7_dense_refused(case: PoolCase, version: int, kh: int, kw: int) -> bool:
    """A v7 average over MAX_V7_POOL_WEIGHTS dense coefficients that is not split into channel runs (only a
    whole-plane window of a multiple of the 8 cores is, lower.V7_POOL_GROUP)."""
    over = version == 7 and case.in_c * case.in_c * kh * kw > MAX_V7_POOL_WEIGHTS
    runs = [min(V7_POOL_GROUP, case.in_c - c0) for c0 in range(0, case.in_c, V7_POOL_GROUP)]
    split_over = sum(r * r for r in runs) * kh * kw > MAX_V7_POOL_SPLIT_WEIGHTS
    return over and ((kh, kw) != (case.in_h, case.in_w) or case.in_c % 8 != 0 or split_over)


def _wide_window_refused(case: PoolCase, version: int, kh: int, kw: int) -> bool:
    """A window over the NN kernel's 15 not taken as the FC job over the whole plane (lower._lower_unit_window:
    whole-plane windows only, on v8 within MAX_V7_POOL_WEIGHTS dense coefficients)."""
    if (kh, kw) != (case.in_h, case.in_w):
        return True
    return version == 8 and case.in_c * case.in_c * kh * kw > MAX_V7_POOL_WEIGHTS


def etnaviv_pool_cpu_reason(case: PoolCase, device: str) -> str | None:
    """Why an etnaviv AVERAGE_POOL_2D case stays on the CPU, or None (it must be delegated)."""
    version = CHIPS[device].version
    kh, kw = case.filter, case.kernel_w
    if case.stride not in (1, 2) and ((kh, kw) != (case.in_h, case.in_w) or case.padding == "same"):
        return "stride other than 1 or 2"
    if (kh > 15 or kw > 15) and _wide_window_refused(case, version, kh, kw):
        return "window over the NN kernel's 15"
    if case.padding == "same" and any((*same_pads(case.in_h, kh, case.stride), *same_pads(case.in_w, kw, case.stride))):
        return "padded window (TFLite divides by the pixels inside)"
    if version == 7 and kh != kw and max(kh, kw) > 3 and (kh, kw) != (case.in_h, case.in_w):
        return "non-square window wider than 3 on v7"
    if _v7_dense_refused(case, version, kh, kw):
        return "v7 dense form over MAX_V7_POOL_WEIGHTS"
    try:
        pool_post_scale(kh * kw, case.dtype, version)
    except RequantError as exc:
        if average_encoding(kh * kw, case.dtype, version) is None:
            return str(exc)
    return None


# MEAN over H, W as a whole-plane unit-weight NN job (docs/hardware/etnaviv-pool.md): heads like the held-out models'
# (ResNet50's 4x4x2048 without keep_dims, MobileNetV3's 5x5x960 and 4x4x576 with; input after a ReLU / hard-swish,
# zero points at the type's lowest value, scales 2.9-3.4x smaller), uint8 / int8, keep_dims or not, with and
# without a change of quantization, non-square, after a convolution; and the refusals: v7's dense-form limit, windows
# over 15, TFLite's double rounding where its argument changes sign inside the output range (random zero points:
# the best single rounding matches 87.6 % of a 2x2 int8 MEAN's sums, 98.1 % of the 4x4 nokeep one's)
ETNAVIV_DEFAULT_MEAN: list[PoolCase] = [
    PoolCase(4, 4, 2048, op="mean", dtype="int8", requant=True, requant_scale=0.59, keep_dims=False, input_zp=-128,
             output_zp=-128),
    PoolCase(5, 5, 960, op="mean", dtype="int8", requant=True, requant_scale=0.31, input_zp=-128, output_zp=-128),
    PoolCase(4, 4, 576, op="mean", dtype="int8", requant=True, requant_scale=0.34, input_zp=-128, output_zp=-128),
    PoolCase(4, 4, 128, op="mean", dtype="int8", requant=True, requant_scale=0.34, keep_dims=False, input_zp=-128,
             output_zp=-128),
    PoolCase(7, 7, 64, op="mean", dtype="int8", requant=True, requant_scale=0.3, input_zp=-128, output_zp=-128),
    PoolCase(3, 3, 24, op="mean", dtype="int8", requant=True, keep_dims=False, input_zp=-128, output_zp=-128),
    PoolCase(7, 7, 64, op="mean"), PoolCase(7, 7, 64, op="mean", requant=True, seed=1),
    PoolCase(10, 10, 96, op="mean", requant=True, dtype="int8", seed=3),
    PoolCase(6, 6, 40, op="mean", keep_dims=False, input_zp=0),
    PoolCase(6, 6, 40, op="mean", requant=True, requant_scale=0.4, keep_dims=False, input_zp=0, output_zp=0),
    PoolCase(3, 5, 24, op="mean", requant=True),
    PoolCase(8, 8, 33, op="mean", requant=True, dtype="int8", after_conv=True, conv_kernel=1, seed=1),
    PoolCase(4, 4, 128, op="mean", dtype="int8", requant=True, requant_scale=0.34, keep_dims=False),
    PoolCase(2, 2, 32, op="mean", dtype="int8"),
    # planes wider than the NN kernel's 15 as the FC job over the whole plane (movenet's 16x16 head)
    PoolCase(16, 16, 32, op="mean"), PoolCase(16, 16, 64, op="mean", dtype="int8", requant=True, requant_scale=0.3,
                                                input_zp=-128, output_zp=-128),
    PoolCase(8, 20, 24, op="mean", requant=True),
]


def etnaviv_mean_cpu_reason(case: PoolCase, device: str) -> str | None:
    """Why an etnaviv MEAN case stays on the CPU, or None (it must be delegated)."""
    version = CHIPS[device].version
    kh, kw = case.in_h, case.in_w
    if (kh > 15 or kw > 15) and _wide_window_refused(case, version, kh, kw):
        return "window over the NN kernel's 15"
    if _v7_dense_refused(case, version, kh, kw):
        return "v7 dense form over MAX_V7_POOL_WEIGHTS"
    (sx, zx), (sy, zy) = _mean_quant(case)
    try:
        mean_encoding(kh * kw, case.dtype, sx, zx, sy, zy, case.keep_dims, version)
    except RequantError as exc:
        return str(exc)
    return None


# ---------------------------------------------------------------------------------------------------------------
# etnaviv: beyond convolutions (FULLY_CONNECTED, ADD/SUB, PAD, RELU, LOGISTIC) and non-square convolutions
# ---------------------------------------------------------------------------------------------------------------

# FULLY_CONNECTED on rocket: a 1x1 convolution over a 1x1xN map. Classifier heads (MobileNet 1024 -> 1001, 1280
# -> 1000), a one-value input (the raw-rows input path), a few channels, fused activations, int8.
ROCKET_DEFAULT_FC: list[FcCase] = [
    FcCase(1024, 1001), FcCase(1280, 1000, dtype="int8"), FcCase(1, 8), FcCase(3, 40, dtype="int8"),
    FcCase(100, 37, activation="relu"), FcCase(2048, 64, activation="relu6"), FcCase(4096, 8, dtype="int8"),
]
SLOW_ROCKET_FC: list[FcCase] = [
    FcCase(n, m, activation=act, dtype=dt, seed=seed)
    for seed, (n, m, act, dt) in enumerate(itertools.product((5, 16, 33, 256, 1001), (1, 10, 64, 130), ("none", "relu"),
                                                               ("uint8", "int8")))
]

ETNAVIV_DEFAULT_FC: list[FcCase] = [
    FcCase(64, 10), FcCase(120, 16, dtype="int8"), FcCase(256, 100), FcCase(1000, 128, activation="relu"),
    FcCase(1024, 32, dtype="int8"),
]
# int8 per-channel weights on etnaviv: a distinct scale per channel (one NN job each, up to MAX_CHANNEL_JOBS), runs
# of equal scales (`scale_runs`: several channels per job, v7 phantom planes landing on the next job's channels),
# the v7 conv-as-FC and space-to-depth paths, v8 native (input offsets) and dense depthwise, FC; two past the limit
# (CPU, with the job count in the reason).
ETNAVIV_DEFAULT_PER_CHANNEL: list[ConvCase | FcCase] = [
    ConvCase("conv2d", 16, 16, 8, 16, 3, 1, "same", dtype="int8", per_channel=True),
    ConvCase("conv2d", 8, 8, 3, 16, 5, 2, "same", "relu6", dtype="int8", per_channel=True),
    ConvCase("conv2d", 16, 16, 8, 12, 3, 2, "same", dtype="int8", per_channel=True),
    ConvCase("conv2d", 3, 3, 16, 8, 3, 1, "valid", dtype="int8", per_channel=True),
    ConvCase("conv2d", 14, 14, 16, 64, 1, 1, "same", dtype="int8", per_channel=True, scale_runs=6),
    ConvCase("dwconv", 28, 28, 16, None, 3, 1, "same", dtype="int8", per_channel=True),
    ConvCase("dwconv", 16, 16, 3, None, 3, 2, "same", dtype="int8", per_channel=True),
    ConvCase("dwconv", 28, 28, 48, None, 3, 2, "same", "relu", dtype="int8", per_channel=True, scale_runs=12),
    FcCase(120, 16, dtype="int8", per_channel=True),
    FcCase(1024, 32, "relu", dtype="int8", per_channel=True, scale_runs=4),
    ConvCase("conv2d", 14, 14, 16, 32, 3, 1, "same", dtype="int8", per_channel=True),
    ConvCase("dwconv", 14, 14, 40, None, 3, 1, "same", "relu", dtype="int8", per_channel=True, scale_runs=5),
]
# slow: the per-channel covering arrays (SLOW_PER_CHANNEL) with runs of equal scales where a layer has more than 16
# channels (runs of at least 8 channels: both chips' core counts), and per-channel FC heads
ETNAVIV_SLOW_PER_CHANNEL: list[ConvCase | FcCase] = [
    *(replace(c, scale_runs=None if c.channels_out <= MAX_CHANNEL_JOBS else
              max(8, -(-c.channels_out // MAX_CHANNEL_JOBS))) for c in SLOW_PER_CHANNEL),
    *(FcCase(n, m, act, "int8", seed, per_channel=True, scale_runs=None if m <= MAX_CHANNEL_JOBS else
             max(8, -(-m // MAX_CHANNEL_JOBS)))
      for seed, (n, m, act) in enumerate(itertools.product((16, 256, 1001), (10, 64, 130), ("none", "relu")))),
]
ETNAVIV_DEFAULT_ADD: list[AddCase] = [
    AddCase(8, 8, 16), AddCase(14, 14, 32), AddCase(28, 28, 24, dtype="int8"), AddCase(7, 7, 96),
    AddCase(5, 5, 20, dtype="int8"), AddCase(14, 14, 48, op="sub"), AddCase(9, 9, 16, op="sub", dtype="int8"),
    # fused RELU / RELU6: the descriptor's relu bit (the clamp at the output zero point); the output zero point
    # inside the range makes the clamp bite (the converter's own RELU range starts at real 0, where it is a no-op)
    AddCase(14, 14, 32, activation="relu", output_zp=120), AddCase(8, 8, 24, dtype="int8", activation="relu",
                                                                   output_zp=-10),
    AddCase(7, 7, 64, activation="relu"), AddCase(10, 10, 16, dtype="int8", activation="relu6"),
    AddCase(8, 8, 32, producers="conv", activation="relu", dtype="int8", output_zp=5),
    AddCase(9, 9, 16, op="sub", activation="relu", output_zp=100),
]
ETNAVIV_DEFAULT_ELEMENTWISE: list[ElementwiseCase] = [
    ElementwiseCase("relu", 28, 28, 32), ElementwiseCase("relu", 4, 4, 8, "int8"),
    ElementwiseCase("relu", 14, 14, 16, requant=True), ElementwiseCase("logistic", 8, 8, 16),
    ElementwiseCase("logistic", 14, 14, 32, "int8"), ElementwiseCase("pad", 28, 28, 16),
    ElementwiseCase("pad", 14, 14, 8, "int8", pads=(0, 2, 2, 0, 0, 0)), ElementwiseCase("pad", 7, 7, 3, pads=(1, 1, 1, 1, 0, 1)),
    ElementwiseCase("padv2", 28, 28, 24, "int8"), ElementwiseCase("padv2", 9, 7, 5, pads=(0, 2, 1, 0, 1, 2)),
    # pads over 2 per side as a cascade of TP pad jobs: ResNet's 3x3 stem pad (int8 RGB), up to 6 and uneven
    ElementwiseCase("pad", 32, 32, 3, "int8", pads=(3, 3, 3, 3, 0, 0)), ElementwiseCase("pad", 9, 11, 8, pads=(5, 1, 0, 6, 3, 0)),
    ElementwiseCase("padv2", 10, 6, 4, "int8", pads=(4, 4, 2, 3, 0, 3)),
]
# RESIZE_NEAREST_NEIGHBOR x2 as four TP copies (YOLOv5n's two upsamples: half-pixel centres, int8), odd and
# one-column shapes
ETNAVIV_DEFAULT_RESIZE: list[ElementwiseCase] = [
    ElementwiseCase("resize", 20, 20, 128, "int8", half_pixel=True), ElementwiseCase("resize", 7, 9, 3),
    ElementwiseCase("resize", 5, 1, 4, "int8"), ElementwiseCase("resize", 1, 6, 1),
    # larger powers of two as x2 steps: DeepLab's image-pooling broadcast 1x1 -> 16x16, x4 with half-pixel centres
    ElementwiseCase("resize", 1, 1, 32, factor=16), ElementwiseCase("resize", 3, 5, 8, "int8", half_pixel=True, factor=4),
]
# MAX_POOL_2D as TP max-pooling jobs: ShuffleNet's 3x3 s2 VALID stem pool, YOLOv5n's 5x5 s1 SAME SPPF pools (a
# cascade of two 3x3 jobs), 7x7 (three), 2x2 / 3x3 at stride 1 and 2, SAME and VALID, non-square, wide rows (one-row
# tiles, several tile columns), after a convolution (planar input); and the refusals
ETNAVIV_DEFAULT_MAXPOOL: list[PoolCase] = [
    PoolCase(114, 114, 24, filter=3, stride=2, op="max"),
    PoolCase(20, 20, 128, filter=5, stride=1, padding="same", dtype="int8", op="max"),
    PoolCase(28, 28, 32, filter=3, stride=2, padding="same", dtype="int8", op="max"),
    PoolCase(16, 16, 32, filter=2, stride=2, op="max"),
    PoolCase(13, 17, 8, filter=2, stride=1, padding="same", op="max"),
    PoolCase(9, 70, 16, filter=3, stride=1, padding="same", dtype="int8", op="max"),
    PoolCase(11, 11, 5, filter=3, filter_w=2, stride=2, padding="same", op="max"),
    PoolCase(20, 20, 8, filter=7, stride=1, padding="same", op="max"),
    PoolCase(12, 12, 8, filter=5, stride=1, dtype="int8", op="max"),
    PoolCase(14, 14, 16, filter=2, stride=2, after_conv=True, op="max"),
    PoolCase(15, 18, 24, filter=3, stride=3, padding="same", op="max"),  # stride 3: CPU
    PoolCase(12, 12, 8, filter=4, stride=2, op="max"),  # 4x4: CPU
]


def etnaviv_maxpool_cpu_reason(case: PoolCase) -> str | None:
    """Why an etnaviv MAX_POOL_2D case stays on the CPU, or None (it must be delegated)."""
    kh, kw = case.filter, case.kernel_w
    if case.stride not in (1, 2):
        return "stride other than 1 or 2"
    if max(kh, kw) <= 3:
        return None
    if case.stride == 1 and kh == kw and kh % 2 and kh <= 7:
        return None
    return "window beyond 3x3 (and no stride-1 square odd window up to 7x7)"


ETNAVIV_NON_SQUARE: list[ConvCase] = [
    ConvCase("conv2d", 96, 160, 16, 32, kernel=3), ConvCase("conv2d", 96, 160, 16, 32, kernel=5, kernel_w=3),
    ConvCase("conv2d", 96, 160, 8, 16, kernel=3, stride=2, dtype="int8"),
    ConvCase("dwconv", 96, 160, 16, kernel=3), ConvCase("conv2d", 96, 160, 16, 16, kernel=5, kernel_w=3,
                                                         padding="valid", dtype="int8"),
]


# Per-element unary ops through the DPU's lookup table (teflon.unary + rocket/unary_lower.py): exact by
# construction, both types, odd shapes and channel counts that leave a partial 16-channel surface.
DEFAULT_UNARY: list[UnaryCase] = [
    UnaryCase("logistic", 8, 8, 16, "int8"), UnaryCase("logistic", 14, 14, 32, "uint8"),
    UnaryCase("silu", 16, 16, 32, "uint8"), UnaryCase("silu", 7, 9, 20, "int8"),
    UnaryCase("hardswish", 8, 8, 24, "int8"), UnaryCase("hardswish", 5, 5, 3, "uint8"),
    UnaryCase("leakyrelu", 8, 8, 24, "int8"), UnaryCase("leakyrelu", 14, 14, 8, "uint8"),
    UnaryCase("tanh", 8, 8, 16, "int8"), UnaryCase("tanh", 3, 5, 40, "uint8"),
    UnaryCase("relu", 8, 8, 16, "int8"), UnaryCase("relu6", 8, 8, 16, "uint8"),
    UnaryCase("relun1", 6, 6, 17, "int8"), UnaryCase("quantize", 10, 10, 24, "int8"),
    UnaryCase("quantize", 7, 7, 16, "uint8"),
]
SLOW_UNARY: list[UnaryCase] = [
    UnaryCase(op, size, size, ch, dtype, seed)  # type: ignore[arg-type]
    for op in ("logistic", "silu", "hardswish", "leakyrelu", "tanh", "relu", "relu6", "relun1", "quantize")
    for size, ch in ((1, 1), (28, 16), (56, 64), (112, 33))
    for dtype in DTYPES
    for seed in (0, 1)
]
# Devices whose rocket generation does not emit a LUT program: the ops stay on the CPU, unchanged (none: rk3588 runs
# the DPU alone, rk3576 a LUT-load task and a copy convolution, docs/hardware/rocket-rk3576.md).
UNARY_KNOWN_CPU: dict[str, str] = {"rk3568": RK3568_UNARY_CPU}


# Per-element maps of one 8-bit tensor on etnaviv: one TP job whose PWL table and input zero point reproduce
# teflon.unary's TFLite table (etnaviv/pwl_table.py, lower_unary.py; docs/hardware/etnaviv-tp.md §6 "TABLE").
ETNAVIV_TABLE_OPS = ("tanh", "hardswish", "leakyrelu", "relu6", "relun1", "silu", "quantize")
ETNAVIV_DEFAULT_TABLE: list[UnaryCase | ConstOpCase] = [
    UnaryCase("tanh", 8, 8, 16, "int8"), UnaryCase("hardswish", 14, 14, 8, "uint8"),
    UnaryCase("hardswish", 5, 5, 3, "int8"), UnaryCase("leakyrelu", 8, 8, 24, "int8"),
    UnaryCase("relu6", 5, 5, 3, "uint8"), UnaryCase("relun1", 6, 6, 17, "int8"),
    UnaryCase("silu", 16, 16, 32, "uint8"), UnaryCase("silu", 7, 9, 20, "int8"),
    UnaryCase("quantize", 14, 14, 16, "int8"), UnaryCase("quantize", 3, 5, 40, "uint8"),
    ConstOpCase(9, 9, 16, "mul", "1", "relu"), ConstOpCase(9, 9, 16, "add", "1", dtype="int8"),
    ConstOpCase(8, 8, 24, "rsub", "1"), ConstOpCase(8, 8, 24, "sub", "1", dtype="int8"),
    ConstOpCase(7, 7, 32, "max", "1", dtype="int8"), ConstOpCase(7, 7, 32, "min", "1"),
    # MUL(x, x): YOLOv5's box-size square, a function of one byte
    *(UnaryCase("square", 8, 8, 16, dtype, seed) for dtype in DTYPES for seed in range(3)),
]
ETNAVIV_SLOW_TABLE: list[UnaryCase | ConstOpCase] = [
    *(UnaryCase(op, size, size, ch, dtype, seed)  # type: ignore[arg-type]
      for op in ETNAVIV_TABLE_OPS for size, ch in ((1, 1), (28, 16), (56, 64)) for dtype in DTYPES
      for seed in (0, 1, 2)),
    *(ConstOpCase(size, size, ch, op, "1", act, dtype, seed)  # type: ignore[arg-type]
      for op in ("mul", "add", "sub", "rsub", "max", "min") for size, ch in ((1, 1), (28, 16))
      for act in ("none", "relu") for dtype in DTYPES for seed in (0, 1) if act == "none" or op not in ("max", "min")),
]
# SILU's measured limit (lower_unary.MIN_EXACT): TFLite rounds the sigmoid to 1/256 before the MUL
ETNAVIV_TABLE_MIN_EXACT = {"silu": 0.95}
