"""What both rocket generations' lowerings, splitters and encoders share about a convolution's shape and feature
layout."""

from __future__ import annotations

from dataclasses import dataclass

from .operations import RocketConv

FEATURE_ATOM = 16  # bytes (= channels of 8-bit data) per feature atom: the NC1HWC2 layout's C2 (rocket.md §3.1)


def align(x: int, a: int) -> int:
    return -(-x // a) * a


def same_pads(size: int, k: int, s: int) -> tuple[int, int]:
    """TFLite SAME padding along one axis: (before, after), before gets the smaller half."""
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2


class SplitError(ValueError):
    pass


@dataclass(frozen=True)
class Geometry:
    in_h: int
    in_w: int
    in_c: int  # real input channels
    out_h: int
    out_w: int
    out_c: int  # real output channels
    kh: int
    kw: int
    stride: int
    pad_top: int
    pad_bottom: int
    pad_left: int
    pad_right: int
    depthwise: bool
    stride_w: int | None = None  # column stride when it differs from `stride` (the row stride)

    @property
    def sx(self) -> int:
        """Column stride."""
        return self.stride if self.stride_w is None else self.stride_w


def geometry(c: RocketConv) -> Geometry:
    return Geometry(c.in_h, c.in_w, c.in_c, c.out_h, c.out_w, c.out_c, c.kh, c.kw, c.stride,
                    c.pad_top, c.pad_bottom, c.pad_left, c.pad_right, c.depthwise, c.stride_w)
