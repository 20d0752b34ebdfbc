"""The toolkit's split of a global average wider than 7 into two averaging convolutions (docs/hardware/rk3568.md §4
"The toolkit's split of a global average wider than 7"), modelled with the simulator's arithmetic: the OUT_CVT words
the rule gives are the ones the toolkit wrote for the probes named there, and the two roundings miss TFLite's single
one on far more than 0.5 % of the outputs, which is why teflon writes one averaging convolution (`average.solve`,
exact on every window sum) instead."""

from __future__ import annotations

import numpy as np
import pytest

from teflon.rocket.average import tflite_average
from teflon.rocket.rk3568.average import MIN_EXACT, TAP, cvt, solve
from teflon.rocket.rounding import shift_even

INT8 = (-128, 127)


def split_plan(d: int) -> tuple[int, int, int, int]:
    """(kernel, outputs, pad before, largest real-tap count) of one dimension of the toolkit's first convolution."""
    if d <= 7:
        return d, 1, 0, d
    m = -(-d // 7)
    top = (7 * m - d) // 2
    return 7, m, top, max(min(d, (i + 1) * 7 - top) - max(0, i * 7 - top) for i in range(m))


def split_cvts(h: int, w: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """OUT_CVT (scale, shift) of both convolutions for one input scale in and out (the intermediate keeps it)."""
    n1 = split_plan(h)[3] * split_plan(w)[3]
    s = np.float32(0.01)
    first = cvt(n1, s, s)  # s_in / (s_in x 255 n1)
    second = cvt(1, s, s * np.float32(h * w / n1))  # s_mid / (s_out x 255 (H W / n1)) with s_mid = s_out
    return first, second


@pytest.mark.parametrize(("h", "w", "first", "second"), [
    (14, 14, (0x53EB, 28), (0x4040, 24)), (10, 10, (0x523E, 27), (0x4040, 24)), (16, 16, (0x53EB, 28), (0x6262, 25)),
    (8, 8, (0x4040, 26), (0x4040, 24)), (16, 8, (0x496E, 27), (0x7070, 25)), (28, 28, (0x53EB, 28), (0x4040, 26)),
])
def test_split_rule_gives_the_toolkits_out_cvt(h: int, w: int, first: tuple[int, int], second: tuple[int, int]) -> None:
    """[TOOLKIT, built here: rknn-toolkit2 2.5.0 target rk3566, models avgpool-in{h}x{w}x64-k..-seed2]."""
    assert split_cvts(h, w) == (first, second)


def split_exact_share(h: int, w: int, zx: int, trials: int = 2000, seed: int = 0) -> tuple[float, int]:
    """Best exact share (and its worst LSB) of the two-stage average over a grid of both stages' bias offsets, on
    uniform random stored inputs (uint8 rounding), against TFLite's one rounding."""
    kh, mh, th, _ = split_plan(h)
    kw, mw, tw, _ = split_plan(w)
    (sc1, sh1), (sc2, sh2) = split_cvts(h, w)
    x = np.random.default_rng(seed).integers(*INT8, endpoint=True, size=(trials, h, w))
    want = tflite_average(x.sum(axis=(1, 2)), h * w, "uint8")
    xp = np.full((trials, kh * mh, kw * mw), zx, np.int64)
    xp[:, th:th + h, tw:tw + w] = x
    sums = xp.reshape(trials, mh, kh, mw, kw).sum(axis=(2, 4)) - zx * kh * kw  # padding holds the zero point
    best = (0.0, 0)
    for b1 in range(-TAP, TAP + 1, TAP // 5):
        mid = np.clip(shift_even((sums * TAP + b1) * sc1, sh1) + zx, *INT8)
        v2 = (mid.sum(axis=(1, 2)) - zx * mh * mw) * TAP
        for b2 in range(-2 * TAP, 2 * TAP + 1, TAP // 5):
            got = np.clip(shift_even((v2 + b2) * sc2, sh2) + zx, *INT8)
            share = float(np.mean(got == want))
            if share > best[0]:
                best = (share, int(np.abs(got - want).max()))
    return best


@pytest.mark.parametrize(("h", "w"), [(14, 14), (10, 10), (14, 7)])
def test_split_is_not_exact_where_one_convolution_is(h: int, w: int) -> None:
    zx = 26
    share, worst = split_exact_share(h, w, zx)
    print(f"avgpool {h}x{w} as the toolkit's two convolutions: {100 * share:.1f} % exact, worst {worst} LSB")
    assert share < MIN_EXACT and worst <= 1
    scale, shift = cvt(h * w, np.float32(0.01), np.float32(0.01))
    assert solve(h * w, "uint8", zx, zx, scale, shift).exact == 1.0
