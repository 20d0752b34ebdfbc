"""Any per-element map of one 8-bit tensor as a PWL TP job: the 1024-entry table and the input zero point that make
the TP ALU reproduce a given 256-entry target (teflon.unary's TFLite-exact tables) byte for byte where it can.

The job's arithmetic (docs/hardware/etnaviv-tp.md §6, §8): v = byte - in_zp, y = PWL(v), out = round(y * scale)
+ out_zp saturated to 0..255. Table jobs use scale 1 (multiplier 0, shift 0), so the table holds the output
relative to the output zero point. v is converted to fp21, whose top 10 bits pick an entry and whose low 11
mantissa bits interpolate linearly towards the next entry [INFERRED, §6]. For the integer inputs this means:

- |v| <= 31: every input has an entry of its own, hit exactly (fraction 0): any value, exact by construction;
- 32 <= |v| < 64, 64..127, 128..255: entries 2, 4, 8 inputs apart; the inputs between are the linear
  interpolation of the two entries around them (the entry of 256 closes the last segment).

So outside |v| < 32 the table is a chain of linear segments, and an entry is shared by the segments on both of
its sides. `fit_table` finds, per half, entry values that put every interpolated input inside its rounding
interval (a saturated target — 0 or 255 — only bounds one side), by propagating the feasible interval of each
entry outwards (each step a two-variable linear feasibility problem) and choosing the entries back inwards at the
middle of what is left. A segment whose inputs no line can round right (a kink of the target between two entries,
e.g. a clamp at an unsaturated output value) allows one LSB on as few of its inputs as it can; the input zero point
is then moved onto the kinks or the missed inputs (`in_zp` candidates), which puts them among the exact entries of
the middle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations

import numpy as np

from .pwl import HALF, LUT_ENTRIES, entry_index, f32_to_fp21, fp21_value

EXACT = 32  # |v| below this has an entry of its own
SAT = 64.0  # how far beyond a saturated target an entry may go (keeps the fp21 values fine-grained)
MARGIN = 1e-3  # kept from each rounding boundary (LSB)
RELAXED = 1.0  # the widening of an infeasible segment's intervals (LSB): within one LSB
MAX_RELAXED = 3  # inputs of one segment allowed one LSB before the whole segment is
KINK_CANDIDATES = 6  # input zero points tried beyond the tensor's own


def _chain() -> list[int]:
    """Magnitudes of the entries at and above EXACT: 32, 34, ..., 64, 68, ..., 128, 136, ..., 256."""
    return list(range(32, 64, 2)) + list(range(64, 128, 4)) + list(range(128, 257, 8))


CHAIN = _chain()


@dataclass(frozen=True)
class TableFit:
    lut: np.ndarray  # 1024 fp21 words
    in_zp: int  # the descriptor's input zero point (a stored byte)
    exact: float  # share of the 256 stored inputs reproduced exactly
    max_diff: int  # worst |hardware - target| over the 256 inputs (LSB)
    mean_diff: float


def hw_outputs(lut: np.ndarray, in_zp: int, out_zp: int) -> np.ndarray:
    """The TP ALU's uint8 outputs for the 256 stored inputs under scale 1 (the model of etna_sim_tp.c: linear
    interpolation on the low 11 mantissa bits, rounding half away from zero, saturation)."""
    v = np.arange(256, dtype=np.int64) - in_zp
    mag = np.abs(v)
    e = np.floor(np.log2(np.maximum(mag, 1))).astype(np.int64)
    mant = ((mag << 15) >> e) & 0x7FFF
    c = np.where(mag > 0, ((e + 15) << 15) | mant, 0) | np.where(v < 0, 0x100000, 0)
    i, frac = c >> 11, (c & 0x7FF) / 2048.0
    vals = fp21_value(lut)
    nxt = np.where((i & (HALF - 1)) == HALF - 1, i, i + 1)
    y = vals[i] + frac * (vals[nxt] - vals[i])
    r = np.where(y >= 0, np.floor(y + 0.5), -np.floor(-y + 0.5))
    return np.clip(r + out_zp, 0, 255).astype(np.int64)


def _word(y: float) -> int:
    """The fp21 word of a value _quantized returned (the array path outside the normal range)."""
    if not 2.0**-14 <= abs(y) < 2.0**15:
        return int(f32_to_fp21(np.float32(y)))
    m, e = math.frexp(abs(y))  # abs(y) = m 2^e, 1/2 <= m < 1, m a multiple of 2^-16
    return (1 << 20 if y < 0 else 0) | ((e - 1 + 15) << 15) | (int(m * 65536.0) - 32768)


def _quantized(y: float) -> float:
    """y as the table holds it: float32, then the significand rounded to 16 bits half to even (f32_to_fp21 on a
    normal value; the array path for the rest)."""
    f = float(np.float32(y))
    if not 2.0**-14 <= abs(f) < 2.0**15:
        return float(fp21_value(f32_to_fp21(np.float32(y))))
    m, e = math.frexp(f)
    return math.ldexp(round(m * 65536.0), e - 16)


def _bounds(rel: np.ndarray, stored: np.ndarray, widen: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Rounding interval [lo, hi] of each relative target (saturated targets are open on their side)."""
    half = 0.5 - MARGIN + widen
    lo = np.where(stored <= 0, rel - SAT, rel - half).astype(np.float64)
    hi = np.where(stored >= 255, rel + SAT, rel + half).astype(np.float64)
    return lo, hi


def _project(fa: tuple[float, float], fb: tuple[float, float], t: np.ndarray, lo: np.ndarray, hi: np.ndarray
             ) -> tuple[float, float] | None:
    """The range of the outer entry b over one segment's feasible set: a in fa, b in fb, lo <= (1-t) a + t b <= hi
    (None when empty). For a given b every constraint bounds a from below or above by a line in b; b is feasible
    when every lower line stays under every upper line, one linear inequality in b per pair."""
    w = 1 - t
    p = np.concatenate([[fa[0]], lo / w])  # lower bounds of a: p + q b
    r = np.concatenate([[fa[1]], hi / w])  # upper bounds of a: r + q b (the same slopes)
    q = np.concatenate([[0.0], -t / w])
    c = q[:, None] - q[None, :]  # lower i under upper j:  c b <= d
    d = r[None, :] - p[:, None]
    flat = np.abs(c) < 1e-12
    if np.any(flat & (d < -1e-9)):
        return None
    neg, pos = c < -1e-12, c > 1e-12
    b_lo = max(fb[0], float(np.max(d[neg] / c[neg], initial=-np.inf)))
    b_hi = min(fb[1], float(np.min(d[pos] / c[pos], initial=np.inf)))
    return (b_lo, b_hi) if b_lo <= b_hi + 1e-9 else None


def _relax(fa: tuple[float, float], fb: tuple[float, float], t: np.ndarray, r: np.ndarray, s: np.ndarray
           ) -> tuple[tuple[float, float] | None, np.ndarray, np.ndarray]:
    """An infeasible segment: allow one LSB on as few of its inputs as possible (up to MAX_RELAXED, else all),
    keeping the widest interval of the outer entry; (that interval or None, the bounds used)."""
    strict, loose = _bounds(r, s), _bounds(r, s, RELAXED)
    for n in range(1, min(MAX_RELAXED, len(t)) + 1):
        best: tuple[tuple[float, float] | None, np.ndarray, np.ndarray] = (None, strict[0], strict[1])
        for drop in combinations(range(len(t)), n):
            pick = np.zeros(len(t), bool)
            pick[list(drop)] = True
            lo, hi = np.where(pick, loose[0], strict[0]), np.where(pick, loose[1], strict[1])
            got = _project(fa, fb, t, lo, hi)
            if got is not None and (best[0] is None or got[1] - got[0] > best[0][1] - best[0][0]):
                best = (got, lo, hi)
        if best[0] is not None:
            return best
    return _project(fa, fb, t, *loose), loose[0], loose[1]


def _fit_half(lut: np.ndarray, sign: int, target: np.ndarray, in_zp: int, out_zp: int) -> None:
    """Entries of one half (sign +1: entries 0..511, -1: 512..1023) for the stored targets `target`."""
    def known(v: int) -> bool:
        return 0 <= v + in_zp <= 255

    def rel(vs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        stored = target[vs + in_zp]
        return stored - out_zp, stored

    exact = [sign * m for m in range(0 if sign > 0 else 1, EXACT) if known(sign * m)]
    if exact:
        values = np.array([target[v + in_zp] - out_zp for v in exact], np.float32)
        lut[[entry_index(v) for v in exact]] = f32_to_fp21(values)
    segments = []  # per segment: (t, lo, hi) of its known interior inputs, with the relaxation applied
    node = []  # per chain entry: its own interval
    for p in CHAIN:
        v = sign * p
        if known(v):
            r, s = rel(np.array([v]))
            lo, hi = _bounds(r, s)
            node.append((float(lo[0]), float(hi[0])))
        else:
            node.append((-256.0 - SAT, 256.0 + SAT))
    feasible = [node[0]]
    for k in range(len(CHAIN) - 1):
        p0, p1 = CHAIN[k], CHAIN[k + 1]
        ms = np.array([m for m in range(p0 + 1, p1) if known(sign * m)], np.int64)
        t = (ms - p0) / (p1 - p0)
        r, s = rel(sign * ms) if len(ms) else (np.zeros(0), np.zeros(0))
        lo, hi = _bounds(r, s)
        got = _project(feasible[k], node[k + 1], t, lo, hi)
        if got is None:
            got, lo, hi = _relax(feasible[k], node[k + 1], t, r, s)
        if got is None:  # no line keeps the inside within one LSB: the ends alone
            lo, hi = np.full(len(t), -1e9), np.full(len(t), 1e9)
            got = node[k + 1]
        segments.append((t, lo, hi))
        feasible.append(got)
    # choose back inwards: each entry in the middle of what its outer neighbour (already fp21) leaves it
    b = _quantized(0.5 * sum(feasible[-1]))
    lut[entry_index(sign * CHAIN[-1])] = _word(b)
    for k in range(len(CHAIN) - 2, -1, -1):
        t, lo, hi = segments[k]
        a_lo, a_hi = feasible[k]
        if len(t):
            a_lo = max(a_lo, float(np.max((lo - t * b) / (1 - t))))
            a_hi = min(a_hi, float(np.min((hi - t * b) / (1 - t))))
        if a_lo > a_hi:  # only fp21 rounding of b can cause this: stay as close as possible
            a_lo = a_hi = 0.5 * (a_lo + a_hi)
        b = _quantized(0.5 * (a_lo + a_hi))
        lut[entry_index(sign * CHAIN[k])] = _word(b)


def _fit(target: np.ndarray, in_zp: int, out_zp: int) -> TableFit:
    lut = np.zeros(LUT_ENTRIES, np.uint32)
    for sign in (1, -1):
        _fit_half(lut, sign, target, in_zp, out_zp)
    d = np.abs(hw_outputs(lut, in_zp, out_zp) - target)
    return TableFit(lut, in_zp, float(np.mean(d == 0)), int(d.max()), float(d.mean()))


def _kinks(target: np.ndarray) -> list[int]:
    """Input zero points to try: the stored inputs where the target bends most (largest second difference),
    strongest first, then the midpoints of two of them (two bends less than 64 inputs apart, e.g. RELU_N1_TO_1's
    -1 and +1, both fall inside the exact |v| < 32)."""
    d2 = np.abs(np.diff(target.astype(np.int64), 2))
    order = np.argsort(-d2, kind="stable")
    bends = [int(i) + 1 for i in order[:KINK_CANDIDATES] if d2[i] > 0]
    mids = [(a + b) // 2 for i, a in enumerate(bends) for b in bends[i + 1:] if 0 < abs(a - b) < 2 * EXACT]
    return list(dict.fromkeys(bends + mids))


def _misses(fit: TableFit, target: np.ndarray, out_zp: int) -> list[int]:
    """Input zero points that move the inputs `fit` misses into the exact middle: the misses' centre, then each."""
    miss = np.nonzero(hw_outputs(fit.lut, fit.in_zp, out_zp) != target)[0]
    if not len(miss):
        return []
    return list(dict.fromkeys([int(np.median(miss)), *(int(m) for m in miss[:KINK_CANDIDATES])]))


def fit_table(target: np.ndarray, in_zp: int, out_zp: int) -> TableFit:
    """The table reproducing `target` (256 stored outputs, indexed by the stored input byte) best: with the
    tensor's own input zero point `in_zp` first, else with the input zero point moved onto the bends of the target
    or onto the inputs the first fit misses. Cached: the support decision and the partition fit the same node."""
    return _fit_cached(np.asarray(target, np.int64).tobytes(), int(in_zp), int(out_zp))


@lru_cache(maxsize=512)
def _fit_cached(target_bytes: bytes, in_zp: int, out_zp: int) -> TableFit:
    target = np.frombuffer(target_bytes, np.int64)
    best = _fit(target, in_zp, out_zp)
    tried = {in_zp}
    for z in [*_kinks(target), *_misses(best, target, out_zp)]:
        if best.exact == 1.0:
            break
        if z in tried:
            continue
        tried.add(z)
        f = _fit(target, z, out_zp)
        if (f.exact, -f.max_diff) > (best.exact, -best.max_diff):
            best = f
    return best
