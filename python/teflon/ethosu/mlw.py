"""The Ethos-U55/U65 compressed weight stream ("mlw"): encoder and reference decoder.

Format: docs/hardware/ethosu-weights.md §2 (written from Arm's codec as shipped in Mesa and Vela; clean room).
A stream carries signed values -255..255 (weights minus their zero point, in brick order: teflon.ethosu.bricks)
as slices of Golomb-Rice (GRC) coded palette/direct indices, ends with an end-of-stream marker and is padded to
a multiple of 16 bytes.

`encode(values)` writes a stream. It chooses, per stream, a palette (up to 32 most frequent values) or none and
whether zeros travel as GRC-coded zero runs; it cuts the stream into slices by a dynamic programme over
fixed-size segments, each slice with the cheapest of the 13 weight GRC settings (divisor 0..5 plain or
truncated, or uncompressed). `encode(values, uncompressed=True)` writes plain fixed-width indices instead.
The passes over every value run in libteflon.so (teflon.native: the code histogram and zero-run sums, the
chosen variant's indices, zero runs and per-segment histograms, the slice plan's dynamic programme, the stream
writer); the choices stay here, and the Python forms of those passes (`segment_costs`, `_split_zero_runs`,
`_viterbi_reference`, `_write_reference`) are the references the tests compare them with.

`decode(data)` is a scalar reference decoder for tests; the simulator decodes with drivers/ethosu/ethosu_mlw.c.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np

# Slice header field values (§2.2): ZDIV 0..3 zero-run divisor, 6 no zero runs, 7 end of stream; WDIV 0..5
# divisor, 7 uncompressed. Mesa mlw_codec/source/ml_encoder_internal.hpp (ZDIV_DISABLE, ZDIV_EOS,
# WDIV_UNCOMPRESSED, ETHOSU_SLICELEN_BITS).
ZDIV_DISABLE = 6
ZDIV_EOS = 7
WDIV_UNCOMPRESSED = 7
SLICELEN_BITS = 15
MAX_SLICE = 1 << SLICELEN_BITS  # SLICELEN holds the weight count minus one
PALETTE_MAX = 32  # PALSIZE is 5 bits of size-1 (§2.3)
DIROFS_MAX = 31  # DIROFS is 5 bits
NEGATIVE_ZERO = 1  # the sign-magnitude code no value has: a safe filler entry
INDEX_MAX = 511  # weight indices are 9 bits (Mesa mlw_decode.cpp: "HW supports 9bit")
GRC_Q_MAX = 31  # largest GRC quotient Arm's encoder writes (mlw_encode.cpp search_grc_params); inferred limit
CHUNK = 12  # unary positions per weight chunk; 8 when uncompressed wider than 5 bits (§2.4)
STREAM_ALIGN = 16  # streams end 128-bit aligned with 0xFF (mlw_encode.cpp ml_encode_eos)

# Weight GRC settings the encoder chooses from: (divisor, truncated) and None = uncompressed.
W_CONFIGS: tuple[tuple[int, bool] | None, ...] = (*((d, False) for d in range(6)), *((d, True) for d in range(6)),
                                                   None)
Z_DIVS = (0, 1, 2, 3)
SEGMENT = 1024  # values per segment of the slice plan (a power of two)
SEGMENT_SHIFT = SEGMENT.bit_length() - 1
VITERBI_SETTINGS = 4  # settings the slice plan considers (the best ones for the whole stream)
ZERO_RUN_MIN_FRACTION = 0.1  # zero runs are only tried when at least this share of the values is zero
SLICE_COST = 36  # bits a new slice costs: its 23-bit header plus about half a chunk of padding (estimate)


class MlwError(ValueError):
    """A stream that does not decode."""


# ---------------------------------------------------------------------------------------------------------------
# Bit packing


class BitWriter:
    """Collects fields at absolute bit positions, LSB first (stream bit k is bit k % 8 of byte k // 8), in groups
    in any order; `tobytes` adds them up per 32-bit word (np.bincount). Every value must fit its width
    (< 2**width, widths <= 32) and fields must not overlap: adding is then OR-ing."""

    def __init__(self) -> None:
        self.groups: list[tuple[np.ndarray, np.ndarray]] = []
        self.nbits = 0

    def put(self, starts: np.ndarray, values: np.ndarray, end: int) -> None:
        """A group of fields at `starts`; `end` is the bit after the group's last field."""
        self.groups.append((np.asarray(starts, dtype=np.int64), np.asarray(values)))
        self.nbits = max(self.nbits, end)

    def put_fields(self, values: np.ndarray, widths: np.ndarray) -> None:
        """Fields back to back from the current end."""
        widths = np.asarray(widths, dtype=np.int64)
        ends = self.nbits + np.cumsum(widths)
        self.put(ends - widths, values, int(ends[-1]) if ends.size else self.nbits)

    def tobytes(self) -> bytes:
        if not self.groups:
            return b""
        starts = np.concatenate([g[0] for g in self.groups])
        values = np.concatenate([g[1].astype(np.uint64) for g in self.groups])
        nwords = self.nbits // 32 + 2
        word = starts >> 5
        # a field shifted into place within its 32-bit word fits 63 bits: split it over the two words; the sums
        # per word stay below 2**32, exact in float64
        placed = values << (starts & 31).astype(np.uint64)
        low = np.bincount(word, weights=(placed & np.uint64(0xFFFFFFFF)).astype(np.float64), minlength=nwords)
        high = np.bincount(word + 1, weights=(placed >> np.uint64(32)).astype(np.float64), minlength=nwords)
        return (low + high)[:nwords].astype(np.uint64).astype("<u4").tobytes()[: (self.nbits + 7) // 8]


def pack(values: np.ndarray, widths: np.ndarray) -> tuple[bytes, int]:
    """Fields back to back from bit 0 (see BitWriter); returns (bytes, bit length)."""
    writer = BitWriter()
    writer.put_fields(values, widths)
    return writer.tobytes(), writer.nbits


# ---------------------------------------------------------------------------------------------------------------
# Palette and indices (§2.3)


def sign_magnitude(values: np.ndarray) -> np.ndarray:
    """-255..255 -> the 9-bit code (|v| << 1) | (v < 0) that palette entries and direct indices use."""
    v = np.asarray(values, dtype=np.int32)
    return (np.abs(v) << 1) | (v < 0)


def from_sign_magnitude(codes: np.ndarray) -> np.ndarray:
    c = np.asarray(codes, dtype=np.int64)
    return np.where(c & 1, -(c >> 1), c >> 1).astype(np.int16)


@dataclass(frozen=True)
class Palette:
    """A stream's palette: `entries` are sign-magnitude codes (index i decodes to entries[i]); an index >= the
    palette size decodes to the code index - size + dirofs. `bits` is PALBITS (the entry width, or without a
    palette the uncompressed index width)."""

    entries: tuple[int, ...]
    dirofs: int
    bits: int

    @property
    def size(self) -> int:
        return len(self.entries)


def _bits_for(value: int) -> int:
    """PALBITS for entries up to `value`: 2..9 bits."""
    return max(2, int(value).bit_length())


def choose_palette(freq: np.ndarray, use_palette: bool) -> Palette:
    """The most frequent codes of the histogram `freq` (512 sign-magnitude codes) as a palette, or none."""
    used = np.flatnonzero(freq)
    max_code = int(used[-1]) if used.size else 0
    if not use_palette or used.size == 0:
        dirofs = min(int(used[0]) if used.size else 0, DIROFS_MAX)
        return Palette((), dirofs, _bits_for(max_code))
    order = [int(c) for c in np.argsort(-freq, kind="stable")[: min(PALETTE_MAX, used.size)]]

    def fits(entries: list[int]) -> tuple[bool, int]:
        """Whether every code outside `entries` has a 9-bit direct index; and the DIROFS that gives it."""
        rest = freq > 0
        rest[entries] = False
        left = np.flatnonzero(rest)
        dirofs = min(int(left[0]), DIROFS_MAX) if left.size else 0
        return (not left.size or int(left[-1]) - dirofs + len(entries) <= INDEX_MAX), dirofs

    size = len(order)
    while size and not fits(order[:size])[0]:  # direct indices must stay 9-bit: shrink the palette until they do
        size -= 1
    entries = order[:size]
    if size == 1:  # a palette of one is not codable (PALSIZE 0 means none): pad it with -0, which no value is
        entries = entries + [NEGATIVE_ZERO] if fits(entries + [NEGATIVE_ZERO])[0] else []
    dirofs = fits(entries)[1]
    return Palette(tuple(entries), dirofs, _bits_for(max(entries)) if entries else _bits_for(max_code))


@functools.lru_cache(maxsize=8)
def index_lut(pal: Palette) -> np.ndarray:
    """Sign-magnitude code -> weight index under `pal` (-1 where a code has none: below DIROFS, not in the
    palette)."""
    lut = np.full(INDEX_MAX + 1, -1, dtype=np.int32)
    lut[pal.dirofs:] = np.arange(pal.dirofs, INDEX_MAX + 1) - pal.dirofs + pal.size
    lut[list(pal.entries)[::-1]] = np.arange(pal.size)[::-1]  # first (most frequent) wins on a duplicate
    lut.flags.writeable = False  # shared by the cache
    return lut


def to_indices(codes: np.ndarray, pal: Palette) -> np.ndarray:
    """Sign-magnitude codes -> weight indices under `pal` (int32)."""
    idx = index_lut(pal)[codes]
    if (idx < 0).any() or (idx > INDEX_MAX).any():
        raise ValueError("value not codable under the palette")
    return idx


def uncompressed_bits(pal: Palette, idx_max: int) -> int | None:
    """Index width of the uncompressed mode, or None when it cannot code indices up to idx_max (§2.4)."""
    if pal.size == 0:
        return pal.bits
    ub = max(0, (pal.size - 1).bit_length())
    return ub if idx_max < pal.size else None


# ---------------------------------------------------------------------------------------------------------------
# Costs and the slice plan


UNCODABLE = 1e12  # cost of a setting that cannot code a value (finite: it multiplies zero counts)


@functools.lru_cache(maxsize=16)
def cost_table(ub: int | None) -> np.ndarray:
    """(settings, 512) bits of each weight index under each of W_CONFIGS: a plain GRC index i costs
    (i >> d) + 1 + d bits, a truncated one 1 + d bits plus one when i >> d is not 0, an uncompressed one ub
    bits (§2.4)."""
    i = np.arange(INDEX_MAX + 1)
    table = np.full((len(W_CONFIGS), i.size), UNCODABLE)
    for d in range(6):
        q = i >> d
        table[d] = np.where(q > GRC_Q_MAX, UNCODABLE, q + 1 + d)
        table[6 + d] = np.where(q > 2, UNCODABLE, 1 + d + (q > 0))
    if ub is not None:
        table[12] = np.where(i < (1 << ub), ub, UNCODABLE)
    table.flags.writeable = False  # shared by the cache
    return table


def segment_costs(idx: np.ndarray, ub: int | None) -> np.ndarray:
    """(segments, settings) estimated bits of each SEGMENT-value segment under each of W_CONFIGS: the
    segment's index histogram times cost_table (UNCODABLE or more where a setting cannot code a segment). The
    reference of the histograms the library counts in `plan` (teflon.native.ethosu_mlw_indices)."""
    nseg = -(-idx.size // SEGMENT)
    # SEGMENT and the index range are powers of two: segment s, index i -> bin s * 512 + i by shifts
    key = ((np.arange(idx.size, dtype=np.int32) >> SEGMENT_SHIFT) << 9) | idx
    return histogram_costs(np.bincount(key, minlength=nseg * (INDEX_MAX + 1)).reshape(nseg, INDEX_MAX + 1), ub)


def histogram_costs(hist: np.ndarray, ub: int | None) -> np.ndarray:
    """(segments, settings) estimated bits from (segments, 512) index histograms (`segment_costs`)."""
    return np.asarray(hist, dtype=np.float32) @ _cost_columns(ub)


@functools.lru_cache(maxsize=16)
def _cost_columns(ub: int | None) -> np.ndarray:
    """cost_table(ub) as float32 columns (512, settings), the right operand of `histogram_costs`."""
    table = cost_table(ub).T.astype(np.float32)
    table.flags.writeable = False  # shared by the cache
    return table


def _viterbi(cost: np.ndarray) -> tuple[np.ndarray, float]:
    """Per segment, the setting minimising the total with SLICE_COST per change of setting (a new slice), over the
    VITERBI_SETTINGS settings best for the whole stream; the dynamic programme runs in the library
    (teflon.native.ethosu_mlw_viterbi; `_viterbi_reference` is its scalar form)."""
    from teflon.native import ethosu_mlw_viterbi

    keep = np.argsort(cost.sum(axis=0))[:VITERBI_SETTINGS]
    choice, total = ethosu_mlw_viterbi(cost[:, keep], SLICE_COST)
    return keep[choice], total


def _viterbi_reference(cost: np.ndarray) -> tuple[list[int], float]:
    """`_viterbi` scalar over segments in Python (the reference of the library's)."""
    keep = [int(c) for c in np.argsort(cost.sum(axis=0))[:VITERBI_SETTINGS]]
    rows = cost[:, keep].tolist()
    ncfg = len(keep)
    best = [c + SLICE_COST for c in rows[0]]
    back: list[list[int]] = []
    for row in rows[1:]:
        j = min(range(ncfg), key=best.__getitem__)
        switch = best[j] + SLICE_COST
        back.append([c if b <= switch else j for c, b in enumerate(best)])
        best = [min(b, switch) + r for b, r in zip(best, row, strict=True)]
    c = min(range(ncfg), key=best.__getitem__)
    total = best[c]
    choice = [c]
    for step in reversed(back):
        c = step[c]
        choice.append(c)
    return [keep[c] for c in choice[::-1]], total


def plan_slices(idx: np.ndarray, ub: int | None, cost: np.ndarray | None = None
                ) -> tuple[list[tuple[int, int, int]], float]:
    """Cut the indices into slices (start, end, config number in W_CONFIGS) minimising the estimated bits:
    a Viterbi pass over SEGMENT-value segments (`segment_costs`); runs longer than MAX_SLICE are cut."""
    n = idx.size
    choice, total = _viterbi(segment_costs(idx, ub) if cost is None else cost)
    change = (np.flatnonzero(np.diff(choice)) + 1).tolist()
    bounds = [0, *(s * SEGMENT for s in change), n]
    slices = []
    for a, b in itertools.pairwise(bounds):
        for s in range(a, b, MAX_SLICE):
            slices.append((s, min(s + MAX_SLICE, b), int(choice[a // SEGMENT])))
    return slices, total + SLICE_COST * (len(slices) - len(change) - 1)


# ---------------------------------------------------------------------------------------------------------------
# Slice writers


def _header(n: int, zdiv: int, wdiv: int, trunc: bool, pal: Palette | None) -> tuple[list[int], list[int]]:
    vals = [zdiv, n - 1, wdiv, int(trunc), int(pal is not None)]
    widths = [3, SLICELEN_BITS, 3, 1, 1]
    if pal is not None:
        vals += [pal.dirofs, max(0, pal.size - 1), pal.bits - 2, *pal.entries]
        widths += [5, 5, 3, *([pal.bits] * pal.size)]
    return vals, widths


@functools.cache  # the numpy references' tables, built on first use (the library's writer needs none)
def _popcount() -> np.ndarray:
    """Set bits of each CHUNK-bit value."""
    return np.array([(i).bit_count() for i in range(1 << CHUNK)], dtype=np.int32)


@functools.cache
def _extract_table() -> np.ndarray:
    """(mask << 6 | bits) -> the bits of `bits` under the set bits of the 6-bit `mask`, packed (PEXT)."""
    table = np.zeros(1 << 12, dtype=np.int32)
    for mask in range(64):
        ones = [k for k in range(6) if mask >> k & 1]
        for bits in range(64):
            table[mask << 6 | bits] = sum(((bits >> k) & 1) << r for r, k in enumerate(ones))
    return table




@dataclass
class _Chunks:
    """One slice's weight symbols as unary chunks: per chunk the WUNARY0 field, the WUNARY1 field and its width,
    and per symbol its remainder and the chunk it completes in."""

    unary0: np.ndarray
    unary1: np.ndarray
    unary1_len: np.ndarray
    remainders: np.ndarray
    done_in: np.ndarray
    rem_bits: int
    has_unary: bool
    per_chunk: int


def _weight_chunks(idx: np.ndarray, cfg: tuple[int, bool] | None, ub: int | None) -> _Chunks:
    n = idx.size
    if cfg is None:  # uncompressed: one position per symbol, no unary fields (§2.4)
        assert ub is not None
        per_chunk = 8 if ub > 5 else CHUNK
        nchunks = -(-n // per_chunk)
        z = np.zeros(nchunks, dtype=np.int64)
        return _Chunks(z, z, z, idx, np.arange(n) // per_chunk, ub, False, per_chunk)
    div, trunc = cfg
    q = idx >> div
    # Each position carries a code 0, 1 or 2 (unary0 = code > 0, unary1 = code > 1 where unary0 is set). A plain
    # quotient q is q // 2 twos then q % 2; a truncated one is the single code q (§2.4). When every quotient
    # takes one position (truncated, or plain with q <= 1) positions are symbols.
    one_each = trunc or int(q.max()) <= 1
    if one_each:
        total = n
        done_in = np.arange(n, dtype=np.int32) // CHUNK
    else:
        ends = np.cumsum((q >> 1) + 1, dtype=np.int64)
        total = int(ends[-1])
        done_in = (ends - 1) // CHUNK
    nchunks = -(-total // CHUNK)
    codes = np.zeros(nchunks * CHUNK, dtype=np.int8)
    if one_each:
        codes[:n] = q
    else:
        codes[:total] = 2
        codes[ends - 1] = q & 1
    codes = codes.reshape(nchunks, CHUNK)
    unary0 = np.packbits(codes > 0, axis=1, bitorder="little").view("<u2")[:, 0].astype(np.int32)
    twos = np.packbits(codes > 1, axis=1, bitorder="little").view("<u2")[:, 0].astype(np.int32)
    # WUNARY1 holds the "> 1" bits of the positions whose unary0 bit is set, packed together: a bit extract
    # of `twos` under the mask `unary0`, done as two 6-bit table lookups.
    extract, popcount = _extract_table(), _popcount()
    lo = extract[(unary0 & 63) << 6 | (twos & 63)]
    hi = extract[(unary0 >> 6) << 6 | (twos >> 6)]
    unary1 = lo | (hi << popcount[unary0 & 63])
    return _Chunks(unary0, unary1, popcount[unary0], idx & ((1 << div) - 1), done_in, div, True, CHUNK)


def _zero_chunks(runs: np.ndarray, zdiv: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Zero runs as unary chunks: (ZUNARY per chunk, chunk each run completes in, chunk width). A run r is
    r >> zdiv ones then a zero (§2.5)."""
    width = CHUNK if zdiv < 3 else 8
    q = runs >> zdiv
    ends = np.cumsum(q + 1)
    total = int(ends[-1])
    nchunks = -(-total // width)
    bits = np.zeros(nchunks * width, dtype=np.int64)
    bits[:total] = 1
    bits[ends - 1] = 0
    unary = (bits.reshape(nchunks, width) << np.arange(width, dtype=np.int64)).sum(axis=1)
    return unary, (ends - 1) // width, width


def _chunk_fields(values: np.ndarray, width: int, chunk: np.ndarray, nchunks: int
                  ) -> tuple[np.ndarray, np.ndarray] | None:
    """The `width`-bit fields `values`, which follow each other in the stream chunk by chunk (`chunk`, ascending),
    merged into two fields per chunk: (values (nchunks, 2), widths (nchunks, 2)), low 32 bits first. None when
    a chunk's bits may exceed 64 (wide uncompressed indices): the caller then keeps one field per value. Fewer,
    wider fields make the packing cheaper."""
    if width * CHUNK > 64:
        return None
    counts = np.bincount(chunk, minlength=nchunks)
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.arange(values.size) - first[chunk]
    merged = np.zeros(nchunks, dtype=np.uint64)
    if values.size and width:
        shifted = values.astype(np.uint64) << (rank * width).astype(np.uint64)
        nonempty = np.flatnonzero(counts)
        merged[nonempty] = np.add.reduceat(shifted, first[nonempty])
    bits = counts * width
    vals = np.stack([merged & np.uint64(0xFFFFFFFF), merged >> np.uint64(32)], axis=1)
    widths = np.stack([np.minimum(bits, 32), np.maximum(bits - 32, 0)], axis=1)
    return vals, widths


def _interleave(w: _Chunks, z: tuple[np.ndarray, np.ndarray, int], zdiv: int, runs: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """A slice body with zero runs in stream order (values, widths): per step, WUNARY0, ZUNARY, WUNARY1, then the
    remainders of the weight and zero chunks of the step before (§2.6). A scalar loop replays the decoder's flow
    control once per step; a sort interleaves the fields."""
    nw = w.unary0.size
    zu, zdone, zwidth = z
    nz = zu.size
    steps_w, steps_z = _zero_run_schedule(w, zu, zwidth, runs.size)
    zero_w = np.zeros(nw, np.int64)
    vals: list[np.ndarray] = [zu]
    widths: list[np.ndarray] = [np.full(nz, zwidth)]
    keys: list[np.ndarray] = [_key(steps_z, 1, np.zeros(nz, np.int64))]
    if w.has_unary:
        vals += [w.unary0, w.unary1]
        widths += [np.full(nw, CHUNK), w.unary1_len]
        keys += [_key(steps_w, 0, zero_w), _key(steps_w, 2, zero_w)]
    # each chunk's remainders go out together in the next step: slot 3 (weights), 4 (zero runs)
    for rem, bits, done, nchunks, steps, slot in ((w.remainders, w.rem_bits, w.done_in, nw, steps_w, 3),
                                                  (runs & ((1 << zdiv) - 1), zdiv, zdone, nz, steps_z, 4)):
        merged = _chunk_fields(rem, bits, done, nchunks)
        if merged is None:
            vals.append(rem)
            widths.append(np.full(rem.size, bits))
            keys.append(_key(steps[done] + 1, slot, np.arange(rem.size)))
        else:
            vals.append(merged[0].reshape(-1))
            widths.append(merged[1].reshape(-1))
            keys.append(_key(np.repeat(steps + 1, 2), slot, np.tile([0, 1], nchunks)))
    order = np.argsort(np.concatenate(keys), kind="stable")
    return (np.concatenate([v.astype(np.uint64) for v in vals])[order],
            np.concatenate(widths)[order])


def _key(step: np.ndarray, slot: int, sub: np.ndarray) -> np.ndarray:
    """Sort key of a field: its step, its slot in the step (0 WUNARY0, 1 ZUNARY, 2 WUNARY1, 3 weight
    remainders, 4 zero-run remainders), then its order within the slot."""
    return (step.astype(np.int64) * 5 + slot) * (1 << 32) + sub


def _zero_run_schedule(w: _Chunks, zu: np.ndarray, zwidth: int, z_cnt: int) -> tuple[np.ndarray, np.ndarray]:
    """The step at which each weight chunk and each zero-run chunk goes out, replaying the decoder: a step sends
    a weight chunk while the weights lead the zero runs by fewer than 8 symbols, and a zero-run chunk while they
    do not trail them (§2.6)."""
    w_cnt = w.remainders.size
    w_after = _symbols_after(w).tolist()
    z_after = _zero_symbols_after(zu, zwidth).tolist()
    steps_w: list[int] = []
    steps_z: list[int] = []
    a = b = t = wp = zp = 0
    while wp < w_cnt or zp < z_cnt:  # one iteration per step, not per value
        balance = wp - zp
        w_on = balance < 8 and wp < w_cnt
        z_on = balance >= 0 and zp < z_cnt
        if w_on:
            steps_w.append(t)
            a += 1
            wp = w_after[a]
        if z_on:
            steps_z.append(t)
            b += 1
            zp = z_after[b]
        t += 1
    return np.array(steps_w, dtype=np.int64), np.array(steps_z, dtype=np.int64)


def put_plain_body_reference(out: BitWriter, w: _Chunks) -> None:
    """Slice body without zero runs, appended to out: step t holds WUNARY0_t, WUNARY1_t, then the remainders of
    the symbols that end in chunk t - 1; the last step only remainders (§2.6)."""
    nsym = w.remainders.size
    nw = w.unary0.size
    merged = _chunk_fields(w.remainders, w.rem_bits, w.done_in, nw) if w.has_unary else None
    if merged is None:
        if not w.has_unary:  # uncompressed: the remainders are the whole body, in order
            out.put_fields(w.remainders, np.full(nsym, w.rem_bits))
            return
        raise AssertionError("GRC remainders always merge")
    rem_vals, rem_widths = merged
    vals = np.zeros((nw + 1, 4), dtype=np.uint64)
    widths = np.zeros((nw + 1, 4), dtype=np.int64)
    vals[:nw, 0], widths[:nw, 0] = w.unary0, CHUNK
    vals[:nw, 1], widths[:nw, 1] = w.unary1, w.unary1_len
    vals[1:, 2:], widths[1:, 2:] = rem_vals, rem_widths
    out.put_fields(vals.reshape(-1), widths.reshape(-1))


def put_zero_run_body_reference(out: BitWriter, idx: np.ndarray, runs: np.ndarray, cfg: tuple[int, bool] | None,
                                ub: int | None, zdiv: int) -> None:
    """Slice body with zero runs, appended to out (`_interleave` of the weight and zero-run chunks)."""
    runs = np.asarray(runs, dtype=np.int64)
    out.put_fields(*_interleave(_weight_chunks(idx, cfg, ub), _zero_chunks(runs, zdiv), zdiv, runs))


def _symbols_after(w: _Chunks) -> np.ndarray:
    """Weight symbols the decoder has counted after each number of chunks."""
    counts = np.bincount(w.done_in, minlength=w.unary0.size)
    return np.concatenate([[0], np.cumsum(counts)])


def _zero_symbols_after(zu: np.ndarray, width: int) -> np.ndarray:
    """Zero-run symbols counted after each number of ZUNARY chunks: every 0 bit ends one, padding included."""
    ones = np.unpackbits(zu.astype("<u2").view(np.uint8).reshape(-1, 2), axis=1).sum(axis=1)
    return np.concatenate([[0], np.cumsum(width - ones)])


# ---------------------------------------------------------------------------------------------------------------
# The stream


def _split_zero_runs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(non-zero values, zero runs): runs[0] before the first non-zero value, runs[k + 1] after value k."""
    nz = np.flatnonzero(values)
    if nz.size == 0:
        raise ValueError("all-zero slice")
    gaps = np.diff(np.concatenate([[-1], nz, [values.size]])) - 1
    return values[nz], gaps


def _zero_run_bits(run_sums: np.ndarray, nruns: int) -> tuple[int, float]:
    """The cheapest zero-run divisor and its estimated bits, from the sums of run >> d over the `nruns` runs
    (teflon.native.ethosu_mlw_stats): a run r costs (r >> d) + 1 + d bits."""
    best = (0, np.inf)
    for d in Z_DIVS:
        bits = float(int(run_sums[d]) + nruns * (1 + d))
        if bits < best[1]:
            best = (d, bits)
    return best


@dataclass(frozen=True)
class Plan:
    """The choices `encode` made for one stream (for tests and reports)."""

    zero_runs: bool
    palette: Palette
    slices: tuple[tuple[int, int, int], ...]
    zdiv: int


def plan(values: np.ndarray) -> tuple[Plan, np.ndarray, np.ndarray | None]:
    """Choose zero runs or not and palette or not by each variant's best single-setting estimate (from code
    histograms alone), then plan the slices of the chosen variant. `values`: int16 within -255..255. Two library
    passes touch every value (teflon.native): the code histogram and zero-run sums, then the chosen variant's
    indices, zero runs and per-segment index histograms."""
    from teflon.native import ethosu_mlw_indices, ethosu_mlw_stats

    v = np.asarray(values, dtype=np.int16).reshape(-1)
    freq_all, run_sums = ethosu_mlw_stats(v)
    n = v.size
    zeros = int(freq_all[0])
    candidates = []
    variants = [False]
    if zeros / n > ZERO_RUN_MIN_FRACTION and zeros < n:
        variants.append(True)
    for zero_runs in variants:
        if zero_runs:  # the non-zero values' codes; a run before the first and after each of them
            freq = freq_all.copy()
            freq[0] = 0
            zdiv, zbits = _zero_run_bits(run_sums, n - zeros + 1)
        else:
            freq, zdiv, zbits = freq_all, ZDIV_DISABLE, 0.0
        for use_palette in (True, False):
            pal = choose_palette(freq, use_palette)
            lut = index_lut(pal)
            idx_freq = np.bincount(np.clip(lut, 0, INDEX_MAX), weights=freq, minlength=INDEX_MAX + 1)
            ub = uncompressed_bits(pal, int(lut[freq > 0].max()))
            totals = cost_table(ub) @ idx_freq
            best = int(np.argmin(totals))
            estimate = float(totals[best]) + zbits + pal.size * pal.bits
            candidates.append((estimate, zero_runs, pal, zdiv, ub, best))
    _, zero_runs, pal, zdiv, ub, best = min(candidates, key=lambda c: c[0])
    count = n - zeros if zero_runs else n
    # choose_palette made every code present codable (the library checks it)
    idx, runs, hist = ethosu_mlw_indices(v, index_lut(pal), zeros if zero_runs else None,
                                         SEGMENT_SHIFT if count > SEGMENT else None)
    # one segment or less: one slice with the setting best for the whole stream, no plan needed
    slices = [(0, idx.size, best)] if hist is None else plan_slices(idx, ub, histogram_costs(hist, ub))[0]
    return Plan(zero_runs, pal, tuple(slices), zdiv), idx, runs


def encode(values: np.ndarray, *, uncompressed: bool = False) -> bytes:
    """Signed values (-255..255, brick order) -> a compressed weight stream, 16-byte aligned."""
    v = np.asarray(values).reshape(-1)
    if v.size == 0:
        raise ValueError("empty weight stream")
    if v.dtype != np.int16 or uncompressed:  # int16 values are checked by the library's pass in plan
        if v.min() < -255 or v.max() > 255:
            raise ValueError("weight values must be within -255..255 (weight minus zero point)")
        v = v.astype(np.int16)
    if uncompressed:
        codes = sign_magnitude(v)
        pal = choose_palette(np.bincount(codes, minlength=INDEX_MAX + 1), False)
        idx = to_indices(codes, pal)
        chosen = Plan(False, pal, tuple((a, min(a + MAX_SLICE, v.size), len(W_CONFIGS) - 1)
                                        for a in range(0, v.size, MAX_SLICE)), ZDIV_DISABLE)
        runs = None
    else:
        chosen, idx, runs = plan(v)
    return _write(chosen, idx, runs)


def _write(chosen: Plan, idx: np.ndarray, runs: np.ndarray | None) -> bytes:
    """The stream of a plan, written by the library in one pass (teflon.native.ethosu_mlw_stream); `_write_reference`
    is its numpy form."""
    from teflon.native import ethosu_mlw_stream

    pal = chosen.palette
    ub = uncompressed_bits(pal, int(idx.max()))
    rows = []
    for a, b, c in chosen.slices:
        cfg = W_CONFIGS[c]
        rows.append((a, b, WDIV_UNCOMPRESSED, 0) if cfg is None else (a, b, cfg[0], int(cfg[1])))
    return ethosu_mlw_stream(idx, runs, np.array(rows, dtype=np.int64), pal.entries, pal.dirofs, pal.bits, ub or 0,
                             chosen.zdiv if chosen.zero_runs else 0)


def _write_reference(chosen: Plan, idx: np.ndarray, runs: np.ndarray | None) -> bytes:
    """`_write` with numpy arrays and a BitWriter: the headers, each slice's body (`put_plain_body_reference`,
    `put_zero_run_body_reference`), the end marker and the padding."""
    idx = np.asarray(idx, dtype=np.int64)  # the library's uint16 indices and uint32 runs as plain integers
    runs = None if runs is None else np.asarray(runs, dtype=np.int64)
    pal = chosen.palette
    ub = uncompressed_bits(pal, int(idx.max()))
    out = BitWriter()
    for k, (a, b, c) in enumerate(chosen.slices):
        cfg = W_CONFIGS[c]
        wdiv = WDIV_UNCOMPRESSED if cfg is None else cfg[0]
        trunc = False if cfg is None else cfg[1]
        hv, hw = _header(b - a, chosen.zdiv if chosen.zero_runs else ZDIV_DISABLE, wdiv, trunc, pal if k == 0 else None)
        out.put_fields(np.array(hv, dtype=np.int64), np.array(hw, dtype=np.int64))
        if runs is None:
            put_plain_body_reference(out, _weight_chunks(idx[a:b], cfg, ub))
            continue
        # The first slice carries the zero run before its first weight too; every slice the runs after its
        # weights (§2.5).
        put_zero_run_body_reference(out, idx[a:b], runs[a + (k > 0):b + 1], cfg, ub, chosen.zdiv)
    out.put_fields(np.array([ZDIV_EOS]), np.array([3]))
    nbits = out.nbits
    data = bytearray(out.tobytes())
    pad_bits = (-nbits) % 8
    if pad_bits:  # the end marker is followed by ones up to the byte boundary
        data[-1] |= (0xFF << (8 - pad_bits)) & 0xFF
    data += b"\xff" * ((-len(data)) % STREAM_ALIGN)
    return bytes(data)


# ---------------------------------------------------------------------------------------------------------------
# Reference decoder (scalar; tests and tools only)


class _Bits:
    """LSB-first field reader that refuses to read past the end."""

    def __init__(self, data: bytes) -> None:
        self.data = bytes(data)
        self.nbits = len(self.data) * 8
        self.pos = 0

    def left(self) -> int:
        return self.nbits - self.pos

    def read(self, width: int) -> int:
        if width == 0:
            return 0
        if self.pos + width > self.nbits:
            raise MlwError(f"stream truncated: {width}-bit field at bit {self.pos} of {self.nbits}")
        byte = self.pos >> 3
        chunk = int.from_bytes(self.data[byte:byte + 6], "little")
        value = (chunk >> (self.pos & 7)) & ((1 << width) - 1)
        self.pos += width
        return value


def decode(data: bytes) -> np.ndarray:
    """A weight stream -> its int16 values. Raises MlwError on a malformed or truncated stream."""
    bits = _Bits(data)
    out: list[np.ndarray] = []
    pal: Palette | None = None
    while True:
        if bits.left() < 3:  # the end marker may be cut short by the end of the buffer
            break
        zdiv = bits.read(3)
        if zdiv == ZDIV_EOS:
            bits.pos = (bits.pos + 7) & ~7  # byte align; 0xFF padding reads as further end markers
            if bits.left() <= 0:
                break
            continue
        values, pal = _decode_slice(bits, zdiv, pal)
        out.append(values)
    if not out:
        raise MlwError("stream holds no slice")
    return np.concatenate(out)


def _decode_slice(bits: _Bits, zdiv: int, pal: Palette | None) -> tuple[np.ndarray, Palette]:
    if zdiv not in (0, 1, 2, 3, ZDIV_DISABLE):
        raise MlwError(f"bad ZDIV {zdiv}")
    w_cnt = bits.read(SLICELEN_BITS) + 1
    wdiv, trunc, newpal = bits.read(3), bits.read(1), bits.read(1)
    if newpal:
        dirofs, palsize, palbits = bits.read(5), bits.read(5), bits.read(3) + 2
        palsize = palsize + 1 if palsize else 0
        pal = Palette(tuple(bits.read(palbits) for _ in range(palsize)), dirofs, palbits)
    if pal is None:
        raise MlwError("first slice defines no palette")
    if wdiv == WDIV_UNCOMPRESSED:
        div = pal.bits if pal.size == 0 else max(0, (pal.size - 1).bit_length())
        unary = False
    elif wdiv > 5:
        raise MlwError(f"bad WDIV {wdiv}")
    else:
        div, unary = wdiv, True
    zero_runs = zdiv != ZDIV_DISABLE
    z_cnt = (w_cnt + newpal) if zero_runs else 0
    w_idx, z_runs = _decode_body(bits, w_cnt, z_cnt, div, bool(trunc), unary, zdiv)
    codes = np.array([pal.entries[i] if i < pal.size else i - pal.size + pal.dirofs for i in w_idx], np.int64)
    if (codes > INDEX_MAX).any():
        raise MlwError("weight index decodes past 9 bits")
    weights = from_sign_magnitude(codes)
    if not zero_runs:
        return weights, pal
    runs = np.array(z_runs, dtype=np.int64)
    lead = runs[0] if newpal else 0
    after = runs[1:] if newpal else runs
    pieces = [np.zeros(lead, np.int16)]
    for k in range(w_cnt):
        pieces += [weights[k:k + 1], np.zeros(after[k], np.int16)]
    return np.concatenate(pieces), pal


def _decode_body(bits: _Bits, w_cnt: int, z_cnt: int, div: int, trunc: bool, unary: bool, zdiv: int
                 ) -> tuple[list[int], list[int]]:
    """The chunk loop of one slice (§2.6): returns the weight indices and the zero runs."""
    w_vals: list[int] = []
    z_vals: list[int] = []
    w_q: list[int] = []
    z_q: list[int] = []
    wq = zq = 0
    prev_w: list[int] = []
    prev_z: list[int] = []
    width = 8 if (not unary and div > 5) else CHUNK
    zwidth = CHUNK if zdiv < 3 else 8
    while True:
        balance = len(w_q) - len(z_q) if z_cnt else 0
        w_on = (balance < 8 or not z_cnt) and len(w_q) < w_cnt
        z_on = bool(z_cnt) and balance >= 0 and len(z_q) < z_cnt
        u0 = bits.read(CHUNK) if (w_on and unary) else 0
        new_z: list[int] = []
        if z_on:
            zu = bits.read(zwidth)
            for i in range(zwidth):
                if zu >> i & 1:
                    zq += 1
                else:
                    new_z.append(zq)
                    zq = 0
        new_w: list[int] = []
        if w_on:
            n1 = (u0 & ((1 << width) - 1)).bit_count()
            u1 = bits.read(n1)
            for i in range(width):
                if len(new_w) >= w_cnt - len(w_q):
                    break
                code = 0
                if u0 >> i & 1:
                    code = 1 + (u1 & 1)
                    u1 >>= 1
                wq += code
                if code < 2 or trunc:
                    new_w.append(wq)
                    wq = 0
        for q in prev_w:
            w_vals.append((q << div) + bits.read(div))
        for q in prev_z:
            z_vals.append((q << zdiv) + bits.read(zdiv) if zdiv else q)
        w_q += new_w
        z_q += new_z
        prev_w = new_w
        prev_z = new_z[: max(0, z_cnt - (len(z_q) - len(new_z)))]
        if not (w_on or z_on):
            break
    return w_vals[:w_cnt], z_vals[:z_cnt]
