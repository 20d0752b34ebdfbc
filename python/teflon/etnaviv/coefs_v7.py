"""v7 (Amlogic A311D class) NN coefficient buffer: zero-run-length bit streams, one per NN core.

Format and sources: docs/hardware/etnaviv-coefficients.md §2 (etnaviv.md §3.1, §3.2).

    encode(weights, bias, job, *, nn_core_count=8, nn_zrl_bits=5, zrl_bits=None) -> bytes
        weights: uint8, Mesa's lowered layout [oc][ic][kx][ky] (any shape, read flat); bias: int32 per oc.
        job: coefs_common.CoefJob. Returns exactly `used_len` bytes (header + 64-aligned core streams).
        zrl_bits=None searches z like Mesa (`choose_zrl_bits`); an int forces it.
    decode(buf, job, *, nn_core_count=8) -> (weights uint8 [oc*ic*kx*ky], bias int32 [oc])
    decode_kernels(buf, job, *, nn_core_count=8) -> V7Kernels: what the hardware sees per kernel (weights, stored
        bias words, trailer words, z, kpc), including the phantom channels of OC not a multiple of the cores.
    used_len(weights, bias, job, ...) -> int: = len(encode(...)), without packing bits
    cache_size(buf, *, nn_core_count=8) -> int: Mesa's coefficient cache size for the descriptor's SRAM fields:
        largest 64-aligned core stream * cores used (header not counted)
    header_size(nn_core_count) -> int

Mesa-undefined inputs are emulated the way the golden build saw them: reads past the end of Mesa's weight and
bias arrays return 0 (v7 ADD bias correction over 4*C weights; OC not a multiple of the core count).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .coefs_common import BitReader, CoefJob, align, ceil_div, pack_bits, to_int32, v7_channel_table, v7_core_channels

if TYPE_CHECKING:
    from teflon.native import EtnaV7Job, EtnaV7Plan

RAW_BIAS = 1  # raw-word kinds, in the order they follow the same weight
RAW_TRAILER = 2


def header_size(nn_core_count: int) -> int:
    return align(nn_core_count * 4, 64)


# --------------------------------------------------------------------------------------------------------------
# Stream plan: the order in which a core's writer visits weights, and where it flushes / inserts raw words.


@dataclass(frozen=True)
class CorePlan:
    order: np.ndarray  # flat indices into the (zero-padded) traversal weight array, in stream order
    raw_pos: np.ndarray  # a raw 32-bit word follows the weight at this stream position
    raw_kind: np.ndarray  # RAW_BIAS / RAW_TRAILER
    raw_ch: np.ndarray  # output channel the raw word belongs to
    flush_pos: np.ndarray  # every flush (raw words and the extra ones), sorted, unique; stream end included
    sizes_minus_one: bool  # Mesa's writer returns the byte length minus one (only matters in the z search)


def _tap_order(ka: int, kb: int, split: bool) -> np.ndarray:
    """Tap visiting order inside one kernel slice: row pairs; with `split` and kb > 3, columns 0..2 of both rows,
    then columns 3.. (bounded by ka, as Mesa does: only square kernels are well defined)."""
    if split and kb > 3 and ka != kb:
        raise ValueError(f"v7 writer: non-square kernel {ka}x{kb} with more than 3 columns")
    out: list[int] = []
    first_cols = 3 if split and kb > 3 else kb
    for p in range(ceil_div(ka, 2)):
        rows = [a for a in (2 * p, 2 * p + 1) if a < ka]
        out += [a * kb + b for a in rows for b in range(first_cols)]
        if split and kb > 3:
            out += [a * kb + b for a in rows for b in range(3, ka)]
    return np.asarray(out, dtype=np.int64)


class _PlanBuilder:
    def __init__(self) -> None:
        self.order: list[np.ndarray] = []
        self.raw: list[tuple[np.ndarray, int, np.ndarray]] = []
        self.flush: list[np.ndarray] = []
        self.n = 0

    def add(self, idx: np.ndarray) -> int:
        """Append weights; returns the stream position of the first."""
        start = self.n
        self.order.append(idx.reshape(-1))
        self.n += idx.size
        return start

    def raw_after(self, pos: np.ndarray, kind: int, ch: np.ndarray) -> None:
        self.raw.append((np.asarray(pos, dtype=np.int64), kind, np.asarray(ch, dtype=np.int64)))

    def flush_after(self, pos: np.ndarray) -> None:
        self.flush.append(np.asarray(pos, dtype=np.int64).reshape(-1))

    def build(self, sizes_minus_one: bool) -> CorePlan:
        empty = np.zeros(0, dtype=np.int64)
        order = np.concatenate(self.order) if self.order else empty
        pos = np.concatenate([p for p, _, _ in self.raw]) if self.raw else empty
        kind = np.concatenate([np.full(p.size, k) for p, k, _ in self.raw]) if self.raw else empty
        ch = np.concatenate([c for _, _, c in self.raw]) if self.raw else empty
        # raw words sorted by position, the bias before the trailer when both follow the same weight
        srt = np.lexsort((kind, pos))
        flush = np.concatenate([pos, *self.flush, [order.size - 1]]) if order.size else empty
        return CorePlan(order, pos[srt], kind[srt], ch[srt], np.unique(flush), sizes_minus_one)


def _writer(job: CoefJob) -> str:
    if job.addition:
        return "sequential"
    if job.kx == 1 and job.ky == 1 and job.oc > 8:
        return "six"
    return "interleaved" if job.ic > 1 else "sequential"


def core_plans(job: CoefJob, nn_core_count: int) -> list[CorePlan]:
    """One plan per used core. Weight indices address the traversal array [ch][ic][kx][ky] (ADD: 1 channel,
    1 input channel, the first 4 weights)."""
    writer = _writer(job)
    oc = 1 if job.addition else job.oc
    ic = 1 if job.addition else job.ic
    taps = job.taps
    chans = v7_core_channels(oc, nn_core_count, job.superblocks)
    # 32-bit weight indices while they fit: half the memory traffic of the big order arrays
    itype = np.int32 if len(chans) * len(chans[0]) * max(c.size for c in chans[0]) * ic * taps < 2**31 else np.int64
    plans = []
    for core_sb in chans:
        b = _PlanBuilder()
        for s, ch64 in enumerate(core_sb):
            last_sb = s == len(core_sb) - 1
            if ch64.size == 0:
                continue
            ch = ch64.astype(itype)
            if writer == "interleaved":
                _plan_interleaved(b, job, ch, ic, last_sb)
            elif writer == "six":
                _plan_six(b, ch, ic)
            else:
                split = job.depthwise or job.input_width > 64
                tap = _tap_order(job.kx, job.ky, split)
                start = b.add(ch[:, None] * taps + tap[None, :].astype(itype))
                first = start + np.arange(ch.size) * taps
                b.raw_after(first, RAW_BIAS, ch)
                b.raw_after(first + taps - 1, RAW_TRAILER, ch)
        plans.append(b.build(sizes_minus_one=writer != "interleaved"))
    return plans


def _plan_interleaved(b: _PlanBuilder, job: CoefJob, ch: np.ndarray, ic: int, last_sb: bool) -> None:
    taps = job.taps
    tap = _tap_order(job.kx, job.ky, split=True)
    nk = ch.size
    idx = ch[None, :, None] * (ic * taps) + (np.arange(ic, dtype=ch.dtype)[:, None, None] * taps
                                             + tap.astype(ch.dtype)[None, None, :])
    start = b.add(idx)  # [z][kernel][tap]
    kernel_start = start + np.arange(nk) * taps
    b.raw_after(kernel_start, RAW_BIAS, ch)  # after tap (z 0, a 0, b 0)
    b.raw_after(kernel_start + (ic - 1) * nk * taps + taps - 1, RAW_TRAILER, ch)
    if last_sb:
        # Mesa flushes after every input-channel round of the last superblock (harmless, but it splits runs)
        b.flush_after(start + (np.arange(ic) + 1) * nk * taps - 1)


def _plan_six(b: _PlanBuilder, ch: np.ndarray, ic: int) -> None:
    """1x1 kernels, OC > 8: kernels interleaved in blocks of (up to) 6 input channels; the last block may be
    shorter."""
    st = min(ic, 6)
    blocks = ceil_div(ic, st)
    last = ic - (blocks - 1) * st  # input channels in the last block
    col = np.arange(blocks)[:, None, None] * st + np.arange(st)[None, None, :]  # [block][.][i]
    idx = ch[None, :, None] * ic + col.astype(ch.dtype)
    start = b.add(np.broadcast_to(idx, (blocks, ch.size, st))[np.broadcast_to(col < ic, idx.shape)])
    k = np.arange(ch.size)
    b.raw_after(start + k * st, RAW_BIAS, ch)  # after the first weight (block 0 is always full)
    b.raw_after(start + (blocks - 1) * ch.size * st + k * last + last - 1, RAW_TRAILER, ch)


# --------------------------------------------------------------------------------------------------------------
# Zero-run-length tokens


@dataclass(frozen=True)
class _Groups:
    """The stream cut into groups: a run of zero-point weights ended by one literal (non-zp) weight, or a run cut
    by a flush. Independent of z, so the z search reuses it."""

    end: np.ndarray  # stream position of the group's last weight
    run: np.ndarray  # zero-point weights before the literal (or, for a cut run, all of them)
    literal: np.ndarray  # bool: the group ends with a non-zp weight


def _groups(seq: np.ndarray, zp: int, flush_pos: np.ndarray) -> _Groups:
    is_lit = seq != zp
    ends_mask = is_lit.copy()
    ends_mask[flush_pos] = True
    end = np.flatnonzero(ends_mask)
    length = np.diff(end, prepend=-1)
    lit = is_lit[end]
    return _Groups(end, length - lit, lit)


def _token_count(g: _Groups, z: int) -> int:
    # a full token carries 2^z - 1 zero points plus one more weight: 2^z weights
    full = g.run >> z
    rem = g.run & ((1 << z) - 1)
    return int(full.sum() + np.count_nonzero(g.literal | (rem > 0)))


def _tokens(g: _Groups, seq: np.ndarray, zp: int, z: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(run field, literal, group end position) per token, in stream order.

    A group with a literal and run r gives r >> z full tokens (2^z - 1 zero points + a zero point as literal),
    then (r mod 2^z, literal). A run cut by a flush gives the full tokens, then (rest - 1, zero point) if any
    rest: the pending count minus one, with the last zero point as the literal.
    """
    if z == 0:  # every weight is its own 8-bit token
        return np.zeros(seq.size, dtype=np.int64), seq, np.arange(seq.size)
    period = 1 << z
    full = g.run >> z
    rem = g.run & (period - 1)
    last_run = np.where(g.literal, rem, rem - 1)
    last_lit = np.where(g.literal, seq[g.end], zp)
    if not full.any() and g.literal.all():  # common dense case: one token per group
        return last_run, last_lit, g.end
    has_last = g.literal | (rem > 0)
    count = full + has_last
    group_of = np.repeat(np.arange(g.end.size), count)
    k = np.arange(group_of.size) - np.repeat(np.cumsum(count) - count, count)  # token index inside its group
    is_last = has_last[group_of] & (k == count[group_of] - 1)
    run = np.where(is_last, last_run[group_of], period - 1)
    literal = np.where(is_last, last_lit[group_of], zp)
    return run, literal, g.end[group_of]


# --------------------------------------------------------------------------------------------------------------
# Encoder


def _padded(arr: np.ndarray, n: int, dtype: type) -> np.ndarray:
    """Mesa's array read with indices up to n: zeros past the end (the golden build's zero-padded heap). No copy
    when the array is long enough."""
    flat = np.asarray(arr, dtype=dtype).reshape(-1)
    if flat.size >= n:
        return flat
    out = np.zeros(n, dtype=dtype)
    out[: flat.size] = flat
    return out


def _kernel_sums(weights: np.ndarray, n_ch: int, k: int) -> np.ndarray:
    """Per channel sum of its k weights (as Mesa indexes them: channel * k + i, zeros past the end)."""
    w = _padded(weights, n_ch * k, np.uint8)[: n_ch * k].reshape(n_ch, k)
    return w.sum(axis=1, dtype=np.int64)  # no int64 copy of the whole tensor


def _trailers(job: CoefJob, n_ch: int) -> np.ndarray:
    """Per channel (incl. phantom ones): the trailer word (uint32)."""
    trailer = np.full(n_ch, job.addition_offset, np.int64) if job.addition else np.arange(n_ch) * job.output_plane
    return (trailer & 0xFFFFFFFF).astype(np.uint32)


def _raw_values(job: CoefJob, weights: np.ndarray, bias: np.ndarray, n_ch: int) -> tuple[np.ndarray, np.ndarray]:
    """Per channel (incl. phantom ones): stored bias word and trailer word (as uint32)."""
    k_corr = job.taps * job.ic  # ADD: Mesa sums 4*C weights of its 8-byte array
    b = _padded(bias, n_ch, np.int64)[:n_ch]
    bias_word = b - (_kernel_sums(weights, n_ch, k_corr) - k_corr * job.weight_zp) * job.input_zp
    return (bias_word & 0xFFFFFFFF).astype(np.uint32), _trailers(job, n_ch)


def _n_channels(job: CoefJob, nn_core_count: int) -> int:
    oc = 1 if job.addition else job.oc
    return min(oc, nn_core_count) * ceil_div(oc, min(oc, nn_core_count))


# The library's writer codes (delegate/native.h TEFLON_V7_*)
_WRITER_CODE = {"sequential": 0, "interleaved": 1, "six": 2}


@dataclass(frozen=True)
class _Prepared:
    """A buffer's stream plan (teflon.native.EtnaV7Plan: flushes, raw words, token counts per run-length width
    0..zmax, every used core back to back), whatever z the buffer gets, and the weight order it was made from
    (None for the numpy reference, whose plan holds the weights in stream order)."""

    plan: EtnaV7Plan
    sizes_minus_one: bool  # Mesa's writer returns the byte length minus one (only matters in the z search)
    kpc: int
    job: EtnaV7Job | None = None

    @property
    def cores(self) -> int:
        return int(self.plan.core_len.size)

    def core(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Core i's (weights, flush positions, raw word positions, raw word values) of a plan that kept them."""
        p = self.plan
        assert p.seq is not None
        n0, f0, r0 = (int(a[:i].sum()) for a in (p.core_len, p.core_flush, p.core_raw))
        n1, f1, r1 = n0 + int(p.core_len[i]), f0 + int(p.core_flush[i]), r0 + int(p.core_raw[i])
        return p.seq[n0:n1], p.flush_pos[f0:f1], p.raw_pos[r0:r1], p.raw_val[r0:r1]


def _kpc(job: CoefJob, nn_core_count: int) -> int:
    return 1 if job.addition else ceil_div(job.oc, min(job.oc, nn_core_count))


def _prepare(weights: np.ndarray, bias: np.ndarray, job: CoefJob, nn_core_count: int, zmax: int,
             keep_seq: bool = False, block: int = 0, first: int = 0) -> _Prepared:
    """The plan written by the library in one pass (teflon.native.etna_v7_plan); `_prepare_reference` is the same
    from `core_plans` in numpy (tests compare them). block > 0: `weights` are a block-diagonal form's blocks
    (teflon.etnaviv.ops.dense_weights)."""
    from teflon.native import EtnaV7Job, etna_v7_plan

    writer = _writer(job)
    oc = 1 if job.addition else job.oc
    ic = 1 if job.addition else job.ic
    channels, sb_len = v7_channel_table(oc, nn_core_count, job.superblocks)
    n_ch = _n_channels(job, nn_core_count)
    split = writer == "interleaved" or job.depthwise or job.input_width > 64
    order = EtnaV7Job(weights, _WRITER_CODE[writer], ic, _tap_order(job.kx, job.ky, split), channels, sb_len, n_ch,
                      block, first, job.weight_zp)
    # the bias word's correction sums taps * ic weights per channel (ADD: 4*C of its 8-byte array), like _raw_values
    plan = etna_v7_plan(order, _padded(bias, n_ch, np.int64)[:n_ch], _trailers(job, n_ch), job.taps * job.ic,
                        job.weight_zp, job.input_zp, zmax, keep_seq)
    return _Prepared(plan, writer != "interleaved", _kpc(job, nn_core_count), order)


def _prepare_reference(weights: np.ndarray, bias: np.ndarray, job: CoefJob, nn_core_count: int,
                       zmax: int) -> _Prepared:
    from teflon.native import EtnaV7Plan

    n_ch = _n_channels(job, nn_core_count)
    plans = core_plans(job, nn_core_count)
    ic_t = 1 if job.addition else job.ic
    wt = _padded(weights, n_ch * ic_t * job.taps, np.uint8)
    bias_word, trailer = _raw_values(job, weights, bias, n_ch)
    seqs, raw_val, tokens = [], [], []
    for p in plans:
        seq = wt[p.order]
        g = _groups(seq, job.weight_zp, p.flush_pos)
        seqs.append(seq)
        raw_val.append(np.where(p.raw_kind == RAW_BIAS, bias_word[p.raw_ch], trailer[p.raw_ch]).astype(np.uint32))
        tokens.append([_token_count(g, z) for z in range(zmax + 1)])
    plan = EtnaV7Plan(np.concatenate(seqs), np.array([s.size for s in seqs]),
                      np.concatenate([p.flush_pos for p in plans]), np.array([p.flush_pos.size for p in plans]),
                      np.concatenate([p.raw_pos for p in plans]), np.concatenate(raw_val),
                      np.array([p.raw_pos.size for p in plans]), np.array(tokens, dtype=np.int64))
    return _Prepared(plan, plans[0].sizes_minus_one, _kpc(job, nn_core_count))


def _core_bytes(prep: _Prepared, z: int) -> np.ndarray:
    """Every core's stream bytes at run-length width z: the header, the tokens, the raw words, whole u32s."""
    bits = 8 + 16 + prep.plan.tokens[:, z] * (z + 8) + 32 * prep.plan.core_raw
    return -(-bits // 32) * 4


def choose_zrl_bits(prep: _Prepared, job: CoefJob, nn_zrl_bits: int) -> int:
    """Mesa's search: z = max..0, keep the smallest total (ties: smaller z), stop once a total grows.

    ADD and 1x1 kernels are not searched (z = 0). Totals use Mesa's per-core lengths, which are one byte short
    for the writer-6 and sequential writers; that can only break ties differently, and we copy it.
    """
    if job.addition or (job.kx == 1 and job.ky == 1):
        return 0
    best_z, best = 0, None
    for z in range(nn_zrl_bits, -1, -1):
        total = int((_core_bytes(prep, z) - prep.sizes_minus_one).sum())
        if best is not None and total > best:
            break
        best_z, best = z, total
    return best_z


def _buffer_len(prep: _Prepared, z: int, nn_core_count: int) -> int:
    return header_size(nn_core_count) + int((-(-_core_bytes(prep, z) // 64) * 64).sum())


def core_stream_reference(prep: _Prepared, i: int, z: int, zp: int) -> bytes:
    """One core's stream in numpy: the z and kernels-per-core header, then the tokens (`_tokens`) with each raw word
    after the token that ends on its weight, flushed as whole u32 words (tests compare the library's writer
    against it)."""
    seq, flush_pos, raw_pos, raw_val = prep.core(i)
    g = _groups(seq, zp, flush_pos)
    run, literal, tok_end = _tokens(g, seq, zp, z)
    ntok, nraw, tw = run.size, raw_val.size, z + 8
    # A raw word follows the token that ends on its weight: bit offsets without merging the two lists.
    tok_start = 24 + np.arange(ntok) * tw + 32 * np.searchsorted(raw_pos, tok_end, side="left")
    raw_start = 24 + np.searchsorted(tok_end, raw_pos, side="right") * tw + 32 * np.arange(nraw)
    nbits = 24 + ntok * tw + 32 * nraw
    values = np.concatenate([[z, prep.kpc], run.astype(np.uint64) | (literal.astype(np.uint64) << np.uint64(z)),
                             raw_val.astype(np.uint64)])
    starts = np.concatenate([[0, 8], tok_start, raw_start])
    widths = np.concatenate([[8, 16], np.full(ntok, tw), np.full(nraw, 32)])
    data = pack_bits(values, starts, widths, nbits)
    return data + b"\0" * (ceil_div(nbits, 32) * 4 - len(data))  # the FIFO is flushed as whole u32 words


def encode_reference(prep: _Prepared, z: int, zp: int, nn_core_count: int) -> bytes:
    """`encode`'s buffer from a plan in numpy (core_stream_reference per core)."""
    streams = [core_stream_reference(prep, i, z, zp) for i in range(prep.cores)]
    header = np.zeros(header_size(nn_core_count) // 4, dtype="<u4")
    header[: len(streams)] = [align(len(s), 64) for s in streams]
    return header.tobytes() + b"".join(s + b"\0" * (align(len(s), 64) - len(s)) for s in streams)


def encode(weights: np.ndarray, bias: np.ndarray, job: CoefJob, *, nn_core_count: int = 8, nn_zrl_bits: int = 5,
           zrl_bits: int | None = None, block: int = 0, first: int = 0) -> bytes:
    """Written by the library from the plan (teflon.native.etna_v7_buffer; `encode_reference` in numpy). block > 0:
    `weights` are the blocks of a block-diagonal form (teflon.etnaviv.ops.dense_weights; the same bytes as its
    dense array)."""
    from teflon.native import etna_v7_buffer

    prep = _prepare(weights, bias, job, nn_core_count, max(nn_zrl_bits, zrl_bits or 0), block=block, first=first)
    z = choose_zrl_bits(prep, job, nn_zrl_bits) if zrl_bits is None else zrl_bits
    assert prep.job is not None
    return etna_v7_buffer(prep.job, prep.plan, header_size(nn_core_count), z, job.weight_zp, prep.kpc,
                          _buffer_len(prep, z, nn_core_count))


def used_len(weights: np.ndarray, bias: np.ndarray, job: CoefJob, *, nn_core_count: int = 8,
             nn_zrl_bits: int = 5) -> int:
    """Bytes the buffer needs (= len(encode(...)), without packing the bits)."""
    prep = _prepare(weights, bias, job, nn_core_count, nn_zrl_bits)
    return _buffer_len(prep, choose_zrl_bits(prep, job, nn_zrl_bits), nn_core_count)


def cache_size(buf: bytes, *, nn_core_count: int = 8) -> int:
    """What Mesa reports to the tiler: the largest (64-aligned) core stream times the cores used."""
    sizes = np.frombuffer(buf[: nn_core_count * 4], dtype="<u4")
    return int(sizes.max()) * int(np.count_nonzero(sizes))


# --------------------------------------------------------------------------------------------------------------
# Decoder (scalar on purpose: it is the model of the hardware reader that the simulator ports to C)


@dataclass(frozen=True)
class V7Kernels:
    weights: np.ndarray  # uint8 [n_ch][ic*kx*ky] in lowered order (ADD: [1][4])
    bias_words: np.ndarray  # int64 [n_ch]: the stored (zero-point corrected) bias words, signed
    trailers: np.ndarray  # int64 [n_ch]: output plane offsets (ADD: addition_offset)
    zrl_bits: int
    kpc: int


def decode_kernels(buf: bytes, job: CoefJob, *, nn_core_count: int = 8) -> V7Kernels:
    n_ch = _n_channels(job, nn_core_count)
    ic_t = 1 if job.addition else job.ic
    k_t = ic_t * job.taps
    weights = np.zeros(n_ch * k_t, dtype=np.uint8)
    bias_words = np.zeros(n_ch, dtype=np.int64)
    trailers = np.zeros(n_ch, dtype=np.int64)
    header = np.frombuffer(buf[: header_size(nn_core_count)], dtype="<u4")
    offset = header_size(nn_core_count)
    z = kpc = 0
    for core, plan in enumerate(core_plans(job, nn_core_count)):
        r = BitReader(buf, offset * 8)
        z, kpc = r.read(8), r.read(16)
        seq = np.empty(plan.order.size, dtype=np.uint8)
        raw_i, n = 0, 0
        while n < seq.size:
            run, lit = r.read(z), r.read(8)  # `run` copies of the zero point, then the literal
            seq[n:n + run] = job.weight_zp
            seq[n + run] = lit
            n += run + 1
            while raw_i < plan.raw_pos.size and plan.raw_pos[raw_i] == n - 1:
                word = to_int32(r.read(32))
                target = bias_words if plan.raw_kind[raw_i] == RAW_BIAS else trailers
                target[plan.raw_ch[raw_i]] = word
                raw_i += 1
        weights[plan.order] = seq
        offset += int(header[core])
    return V7Kernels(weights.reshape(n_ch, k_t), bias_words, trailers, z, kpc)


def decode(buf: bytes, job: CoefJob, *, nn_core_count: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """(weights, bias) as handed to `encode`: weights uint8 flat [oc*ic*kx*ky] (ADD: the 4 coded weights), bias
    int32 [oc] with the zero-point correction undone (past-the-end weights read as 0, like the encoder)."""
    k = decode_kernels(buf, job, nn_core_count=nn_core_count)
    oc = 1 if job.addition else job.oc
    w = k.weights[:oc].reshape(-1)
    k_corr = job.taps * job.ic
    bias = k.bias_words[:oc] + (_kernel_sums(w, oc, k_corr) - k_corr * job.weight_zp) * job.input_zp
    return w, to_int32_array(bias)


def to_int32_array(x: np.ndarray) -> np.ndarray:
    return (np.asarray(x, dtype=np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
