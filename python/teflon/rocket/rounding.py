"""The NPU's rounding shift, and the inputs that round to a given output.

OUT_CVT's shift (CVT_ROUND 0, the value teflon, Mesa and the vendor write), the BS multiplier's shift and the PPU
average's 2^-32 all round to nearest with ties to even: third-party hardware sweeps on RK3588 and RK3576,
docs/hardware/rocket.md "OUT_CVT's tie rule". The simulator's rkt_shift_even (drivers/rocket/sim_dot.h) is the
same function; every proof of exactness the compiler makes (pool.py, const_elementwise.py, requant.clamp_bound,
rk3576/lut.py) goes through these two.
"""

from __future__ import annotations

import numpy as np

Ints = np.ndarray | int


def shift_even(x: Ints, shift: Ints) -> Ints:
    """x / 2^shift rounded to nearest, ties to even (x itself for shift 0); ints or int64 arrays, `shift` one value
    or one per element (the BS multiplier's shift chosen by the sign)."""
    if isinstance(shift, np.ndarray):
        s = np.maximum(shift, 1)
        return np.where(shift == 0, x, (x + (1 << (s - 1)) - 1 + ((x >> s) & 1)) >> s)
    if shift == 0:
        return x
    return (x + (1 << (shift - 1)) - 1 + ((x >> shift) & 1)) >> shift


def _ceil_div(a: Ints, b: int) -> Ints:
    return -((-a) // b)


def preimage(want: Ints, scale: int, shift: int) -> tuple[Ints, Ints]:
    """The integers t with shift_even(t * scale, shift) == want, as an inclusive interval [lo, hi] (empty when
    lo > hi); scale > 0. An even `want` keeps both ties (t·scale = want·2^shift ± 2^(shift-1)), an odd one
    neither; shift 0 is exact (t·scale == want)."""
    if scale <= 0:
        raise ValueError(f"scale {scale} must be positive")
    if shift == 0:
        return _ceil_div(want, scale), want // scale
    half = 1 << (shift - 1)
    base = want * (1 << shift)
    odd = want & 1
    return _ceil_div(base - half + odd, scale), (base + half - odd) // scale
