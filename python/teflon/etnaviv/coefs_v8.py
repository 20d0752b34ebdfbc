"""v8 (NXP i.MX8M Plus class) NN coefficient buffer: Huffman-style weight streams + a plain bias table.

Format and sources: docs/hardware/etnaviv-coefficients.md §3 (etnaviv.md §3.1, §3.3).

    encode(weights, bias, job, *, nn_core_count=6, raw_weights=False, symbol_map=None) -> bytes
        weights: uint8, Mesa's lowered layout ([oc][ic][kx][ky]; depthwise [C][kx*ky]; FC [oc][N]), read flat;
        bias: int32 per oc; job: coefs_common.CoefJob. Returns exactly `used_len` bytes:
        64-byte header, 64-aligned core streams, OC u32 bias table.
        raw_weights: code the raw bytes instead of (w - zp) (Mesa does this for customer_id 0x99).
        symbol_map: force a map (8 bit lengths, symbol order); None chooses it like Mesa (`choose_symbol_map`).
    decode(buf, job, *, nn_core_count=6, raw_weights=False) -> (weights uint8 [oc*K], bias int32 [oc])
    decode_kernels(buf, job, *, nn_core_count=6) -> V8Kernels: coded bytes per kernel, bias table words, symbol
        map, stream sizes (what the hardware reads).
    used_len(weights, bias, job, ...) -> int: = len(encode(...)) = Mesa's cache size (header included), which the
        descriptor's SRAM fields use.

Weights of int8 models are passed shifted to uint8 (w + 128, zero point + 128), as Mesa does before coding.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .coefs_common import BitReader, CoefJob, align, ceil_div, pack_fields, v8_core_channels

HEADER_SIZE = 64
HEADER_BYTE0 = 0x10  # version 1 in bits 4..7; precode / bit16 / fp16 flags 0
SYMBOL_MAP_OFFSET = 20
STREAM_SIZE_OFFSET = 28

# The 19-comparator sorting network Mesa uses to order the bit-length classes by frequency (etnaviv.md §3.3)
SORT_NETWORK = ((0, 2), (1, 3), (4, 6), (5, 7), (0, 4), (1, 5), (2, 6), (3, 7), (0, 1), (2, 3), (4, 5), (6, 7),
                (2, 4), (3, 5), (1, 4), (3, 6), (1, 2), (3, 4), (5, 6))

# Fixed prefix codes. part0 (3 bits) per symbol; symbols 0, 1, 5 carry the sign in a free prefix bit and send one
# payload bit less. Symbols 5..7 share part0 = 2 and are told apart by a 2-bit part1.
_PART0 = np.array([0, 1, 7, 3, 6, 2, 2, 2], dtype=np.uint64)
_PART1 = np.array([0, 0, 0, 0, 0, 1, 2, 0], dtype=np.uint64)
_PART1_W = np.array([0, 0, 0, 0, 0, 2, 2, 2], dtype=np.int64)
_SIGN_IN_PREFIX = np.array([1, 1, 0, 0, 0, 1, 0, 0], dtype=bool)

# magnitude (one's-complement fold of the sign) and its bit length, per coded byte
_BYTES = np.arange(256)
_SIGN = _BYTES >> 7
_MAG = np.where(_SIGN == 1, _BYTES ^ 0xFF, _BYTES)
_NBITS = np.array([int(m).bit_length() for m in _MAG], dtype=np.int64)
# The symbol-map histogram classes bytes almost like the coder, except 0xFF (magnitude 0, coded with length 0)
# which Mesa's histogram counts as length 1 (its log2 helper treats 0 as 1); only byte 0x00 is class 0.
_HIST_CLASS = np.where(_BYTES == 0, 0, np.maximum(_NBITS, 1))


# --------------------------------------------------------------------------------------------------------------
# Kernel order


@dataclass(frozen=True)
class Blocking:
    k: int  # weights per kernel
    bs: int  # block size: kernel elements per visit
    pad: int  # extra zero codes after each block (depthwise with bs not a multiple of 9)
    nblocks: int

    @property
    def slot(self) -> int:
        return self.bs + self.pad


def blocking(job: CoefJob) -> Blocking:
    k = job.taps * (1 if job.depthwise else job.ic)
    bs = max(job.taps, 9) if job.depthwise else 9
    pad = (9 - bs % 9) % 9 if job.depthwise else 0
    return Blocking(k, bs, pad, ceil_div(k, bs))


def core_orders(job: CoefJob, nn_core_count: int) -> tuple[list[np.ndarray], list[int]]:
    """Per used core: flat indices into the padded code array [oc][nblocks][slot] in stream order, and kpc_c."""
    bl = blocking(job)
    orders, kpcs = [], []
    for core_sb in v8_core_channels(job.oc, nn_core_count, job.superblocks, job.depthwise):
        parts = []
        for ch in core_sb:
            # superblock: block j of every kernel of this core, then block j+1, ...
            idx = (ch[None, :, None] * bl.nblocks + np.arange(bl.nblocks)[:, None, None]) * bl.slot
            parts.append((idx + np.arange(bl.slot)[None, None, :]).reshape(-1))
        orders.append(np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64))
        kpcs.append(int(sum(ch.size for ch in core_sb)))
    return orders, kpcs


def _coded_array(weights: np.ndarray, job: CoefJob, raw_weights: bool) -> np.ndarray:
    """Coded bytes [oc][nblocks][slot]: (w - zp) mod 256 (raw w with `raw_weights`). Positions past the kernel
    and the depthwise block padding hold the weight zero point, i.e. code 0 (raw mode: the zero point itself)."""
    bl = blocking(job)
    w = np.asarray(weights, dtype=np.uint8).reshape(-1)[: job.oc * bl.k].reshape(job.oc, bl.k)
    flat = np.full((job.oc, bl.nblocks * bl.bs), job.weight_zp, dtype=np.uint8)
    flat[:, : bl.k] = w
    out = np.full((job.oc, bl.nblocks, bl.slot), job.weight_zp, dtype=np.uint8)
    out[:, :, : bl.bs] = flat.reshape(job.oc, bl.nblocks, bl.bs)
    return out if raw_weights else (out.astype(np.int64) - job.weight_zp).astype(np.uint8)


# --------------------------------------------------------------------------------------------------------------
# Symbol map


def _sorted_classes(count: np.ndarray) -> tuple[int, ...]:
    """Mesa's fixed sorting network over the 8 bit-length class counts: symbol -> bit length."""
    m = list(range(8))
    for a, b in SORT_NETWORK:
        if count[m[a]] < count[m[b]]:
            m[a], m[b] = m[b], m[a]
    return tuple(m)


def _class_counts(hist: np.ndarray) -> np.ndarray:
    """Bit-length class counts from a 256-entry byte histogram."""
    count = np.zeros(8, dtype=np.int64)
    np.add.at(count, _HIST_CLASS, np.asarray(hist, dtype=np.int64))
    return count


def choose_symbol_map(weights: np.ndarray) -> tuple[int, ...]:
    """symbol -> bit length. Mesa histograms the bit-length classes of the *raw* weight bytes (not the coded
    zero-point deltas) and sorts them with a fixed network; copied for byte equality (any permutation decodes).
    The bytes are counted by the library (teflon.native.byte_histogram); `choose_symbol_map_reference` counts them
    in numpy."""
    from teflon.native import byte_histogram

    return _sorted_classes(_class_counts(byte_histogram(weights)))


def choose_symbol_map_reference(weights: np.ndarray) -> tuple[int, ...]:
    return _sorted_classes(np.bincount(_HIST_CLASS[np.asarray(weights, dtype=np.uint8).reshape(-1)], minlength=8))


def coded_symbol_map(weights: np.ndarray, job: CoefJob) -> tuple[int, ...]:
    """The same sort over the bit-length classes of the bytes the stream actually codes (the zero-point deltas),
    so the most frequent coded classes get the shortest codes; Mesa's histogram of the raw bytes only matches it
    when the weight zero point is 0 (docs/hardware/etnaviv-coefficients.md). The codes past each kernel and in the
    block padding are 0 (class 0)."""
    from teflon.native import byte_histogram

    bl = blocking(job)
    w = np.asarray(weights, dtype=np.uint8).reshape(-1)
    if w.size < job.oc * bl.k:
        raise ValueError(f"{w.size} weights for {job.oc} kernels of {bl.k}")
    count = _class_counts(byte_histogram(w[: job.oc * bl.k], job.weight_zp))
    count[0] += job.oc * (bl.nblocks * bl.slot - bl.k)
    return _sorted_classes(count)


def coded_symbol_map_reference(weights: np.ndarray, job: CoefJob) -> tuple[int, ...]:
    return choose_symbol_map_reference(_coded_array(weights, job, False))


def pack_symbol_map(symbol_map: tuple[int, ...]) -> int:
    return sum(n << (4 * i) for i, n in enumerate(symbol_map))


def unpack_symbol_map(word: int) -> tuple[int, ...]:
    return tuple((word >> (4 * i)) & 0xF for i in range(8))


# --------------------------------------------------------------------------------------------------------------
# Stream encoder


@dataclass(frozen=True)
class CodeTable:
    """Per coded byte value (0..255), its code under one symbol map: part0 (3 bits), part1 and its width (0 or 2),
    payload and its width. Built once per buffer, then gathered, so coding a weight is a table lookup."""

    part0: np.ndarray
    part1: np.ndarray
    part1_w: np.ndarray
    payload: np.ndarray
    payload_w: np.ndarray


def code_table(symbol_map: tuple[int, ...]) -> CodeTable:
    inv = np.zeros(8, dtype=np.int64)
    inv[list(symbol_map)] = np.arange(8)  # bit length -> symbol
    s = _SIGN.astype(np.uint64)
    n = _NBITS
    sym = inv[n]
    mant = (_MAG & ((1 << np.maximum(n - 1, 0)) - 1)).astype(np.uint64)  # magnitude without its leading 1
    v = (mant << np.uint64(1)) | s  # sign in the payload's LSB
    length = np.maximum(n, 1)
    in_prefix = _SIGN_IN_PREFIX[sym]
    part0 = np.where(sym <= 1, _PART0[sym] | (s << np.uint64(2)), _PART0[sym])
    part1 = np.where(sym == 5, _PART1[sym] | (s << np.uint64(1)), _PART1[sym])
    payload = np.where(in_prefix, v >> np.uint64(1), v)
    return CodeTable(part0, part1, _PART1_W[sym], payload, length - in_prefix)


@dataclass(frozen=True)
class PairTable:
    """The same per code pair (index: first byte | second byte << 8): the pair's two part0 fields (6 bits), its
    part1 fields and its payloads (value, width). A stream step is then three lookups and a few shifts."""

    part0: np.ndarray
    part1: np.ndarray
    part1_w: np.ndarray
    payload: np.ndarray
    payload_w: np.ndarray


@lru_cache(maxsize=64)
def pair_table(symbol_map: tuple[int, ...]) -> PairTable:
    t = code_table(symbol_map)

    def join(lo: np.ndarray, hi: np.ndarray, lo_w: np.ndarray | int) -> np.ndarray:
        """[second byte][first byte] -> lo | hi << lo_w, flattened to index first | second << 8."""
        shift = np.broadcast_to(np.asarray(lo_w, dtype=np.uint64), (256,))
        return (lo[None, :] | (hi[:, None] << shift[None, :])).reshape(-1)

    def total(lo_w: np.ndarray, hi_w: np.ndarray) -> np.ndarray:
        return (lo_w[None, :] + hi_w[:, None]).reshape(-1)

    return PairTable(
        join(t.part0, t.part0, 3),
        join(t.part1, t.part1, t.part1_w),
        total(t.part1_w, t.part1_w),
        join(t.payload, t.payload, t.payload_w),
        total(t.payload_w, t.payload_w),
    )


def encode_stream(codes: np.ndarray, symbol_map: tuple[int, ...] | PairTable) -> tuple[bytes, int]:
    """One core's stream (codes in coding order, kpc bytes included) -> (bytes, stream_size in bits)."""
    table = symbol_map if isinstance(symbol_map, PairTable) else pair_table(symbol_map)
    n_orig = codes.size
    # an odd count gets a zero code; then two dummy pairs (part0 only) push the last part1s and payloads out
    c = np.concatenate([np.asarray(codes, dtype=np.uint8), np.zeros(n_orig % 2, dtype=np.uint8)])
    pair = c[0::2].astype(np.int64) | (c[1::2].astype(np.int64) << 8)
    dummy = np.uint64(0o44 if n_orig % 2 else 0)  # part0 = 4 in both codes of a dummy pair after an odd count
    zeros = np.zeros(2, dtype=np.uint64)
    part0 = np.concatenate([table.part0[pair], [dummy, dummy]])
    part1 = np.concatenate([zeros[:1], table.part1[pair], zeros[:1]])  # lagged by one pair
    part1_w = np.concatenate([zeros[:1], table.part1_w[pair], zeros[:1]]).astype(np.uint64)
    payload = np.concatenate([zeros, table.payload[pair]])  # lagged by two pairs
    payload_w = np.concatenate([zeros, table.payload_w[pair]]).astype(np.uint64)
    # step t: part0 of pair t, part1 of pair t-1, payloads of pair t-2 (at most 6 + 4 + 14 bits)
    values = part0 | (part1 << np.uint64(6)) | (payload << (np.uint64(6) + part1_w))
    widths = (np.uint64(6) + part1_w + payload_w).astype(np.int64)
    return pack_fields(values, widths)


def _stream(codes: np.ndarray, table: CodeTable) -> tuple[bytes, int]:
    """`encode_stream` (the numpy reference), written by the library in one pass (teflon.native.etna_v8_stream)."""
    from teflon.native import etna_v8_stream

    return etna_v8_stream(codes, table.part0, table.part1, table.part1_w, table.payload, table.payload_w)


def _bias_table(weights: np.ndarray, bias: np.ndarray, job: CoefJob) -> np.ndarray:
    bl = blocking(job)
    w = np.asarray(weights, dtype=np.int64).reshape(-1)[: job.oc * bl.k].reshape(job.oc, bl.k)
    b = np.asarray(bias, dtype=np.int64).reshape(-1)[: job.oc]
    # the v8 MAC sees activations as x - 128: fold (128 - zp_in) * sum(w - zp_w) into the bias
    return (b + (w - job.weight_zp).sum(axis=1) * (128 - job.input_zp)) & 0xFFFFFFFF


def encode(weights: np.ndarray, bias: np.ndarray, job: CoefJob, *, nn_core_count: int = 6, raw_weights: bool = False,
           symbol_map: tuple[int, ...] | None = None) -> bytes:
    """Written by the library in one pass (teflon.native.etna_v8_buffer); `encode_reference` is the same in
    numpy."""
    from teflon.native import etna_v8_buffer

    smap = choose_symbol_map(weights) if symbol_map is None else tuple(symbol_map)
    bl = blocking(job)
    chans = v8_core_channels(job.oc, nn_core_count, job.superblocks, job.depthwise)
    sb_len = np.array([[c.size for c in core] for core in chans], dtype=np.int64)
    channels = np.concatenate([c for core in chans for c in core])
    t = code_table(smap)
    b = np.asarray(bias, dtype=np.int64).reshape(-1)[: job.oc]
    return etna_v8_buffer(weights, job.oc, bl.k, bl.bs, bl.pad, bl.nblocks, job.weight_zp, raw_weights, channels,
                          sb_len, pack_symbol_map(smap), t.part0, t.part1, t.part1_w, t.payload, t.payload_w, b,
                          job.input_zp)


def encode_reference(weights: np.ndarray, bias: np.ndarray, job: CoefJob, *, nn_core_count: int = 6,
                     raw_weights: bool = False, symbol_map: tuple[int, ...] | None = None) -> bytes:
    smap = choose_symbol_map_reference(weights) if symbol_map is None else tuple(symbol_map)
    coded = _coded_array(weights, job, raw_weights).reshape(-1)
    orders, kpcs = core_orders(job, nn_core_count)
    header = bytearray(HEADER_SIZE)
    header[0] = HEADER_BYTE0
    header[SYMBOL_MAP_OFFSET:SYMBOL_MAP_OFFSET + 4] = pack_symbol_map(smap).to_bytes(4, "little")
    body = []
    for core, (order, kpc) in enumerate(zip(orders, kpcs, strict=True)):
        # the kernel count leads the stream as two coded bytes, never zero-point shifted
        codes = np.concatenate([np.array([kpc & 0xFF, kpc >> 8], dtype=np.uint8), coded[order]])
        data, nbits = encode_stream(codes, smap)
        at = STREAM_SIZE_OFFSET + 4 * core
        header[at:at + 4] = nbits.to_bytes(4, "little")
        body.append(data + b"\0" * (align(len(data), 64) - len(data)))
    table = _bias_table(weights, bias, job).astype("<u4").tobytes()
    return bytes(header) + b"".join(body) + table


def used_len(weights: np.ndarray, bias: np.ndarray, job: CoefJob, *, nn_core_count: int = 6,
             raw_weights: bool = False) -> int:
    """Bytes the buffer needs: 64 + the 64-aligned core streams + 4*OC (Mesa's cache size). The stream lengths
    depend on the coded values, so this encodes."""
    return len(encode(weights, bias, job, nn_core_count=nn_core_count, raw_weights=raw_weights))


# --------------------------------------------------------------------------------------------------------------
# Decoder (scalar: the model of the hardware reader that the simulator ports to C)


def _read_symbol(r: BitReader, part0: int) -> tuple[int, int]:
    """(symbol, free sign bit) from a code's part0, reading part1 when part0 == 2."""
    if part0 == 2:
        p1 = r.read(2)
        if p1 & 1:
            return 5, p1 >> 1
        return (6 if p1 == 2 else 7), 0
    if part0 & 3 == 0:
        return 0, part0 >> 2
    if part0 & 3 == 1:
        return 1, part0 >> 2
    return {7: 2, 3: 3, 6: 4}[part0], 0


def _read_payload(r: BitReader, sym: int, free: int, symbol_map: tuple[int, ...]) -> int:
    n = symbol_map[sym]
    length = max(n, 1)
    v = (r.read(length - 1) << 1) | free if sym in (0, 1, 5) else r.read(length)
    s = v & 1
    m = ((1 << (n - 1)) | (v >> 1)) if n else 0
    return (m ^ 0xFF) if s else m


def decode_stream(buf: bytes, bit_offset: int, n_codes: int, symbol_map: tuple[int, ...]) -> tuple[list[int], int]:
    """Read `n_codes` coded bytes from one core stream; returns them and the bits consumed (= stream_size)."""
    r = BitReader(buf, bit_offset)
    total = n_codes + n_codes % 2 + 4  # + the odd-count zero code + two dummy pairs
    part0 = [0] * total
    syms: list[tuple[int, int]] = [(0, 0)] * total
    out: list[int] = []
    for t in range(total // 2):
        part0[2 * t], part0[2 * t + 1] = r.read(3), r.read(3)
        if t >= 1:
            for i in (2 * t - 2, 2 * t - 1):
                syms[i] = _read_symbol(r, part0[i])
        if t >= 2:
            for i in (2 * t - 4, 2 * t - 3):
                if i < n_codes + n_codes % 2:  # dummies carry no payload
                    out.append(_read_payload(r, *syms[i], symbol_map))
    return out[:n_codes], r.pos - bit_offset


@dataclass(frozen=True)
class V8Kernels:
    coded: np.ndarray  # uint8 [oc][K]: the coded bytes (w - zp, or raw w) per kernel
    bias_table: np.ndarray  # int64 [oc], signed
    symbol_map: tuple[int, ...]
    stream_bits: tuple[int, ...]  # per used core, from the header
    kpc: tuple[int, ...]  # per used core, from the streams
    consumed_bits: tuple[int, ...]  # per used core, what the decoder read (equals stream_bits when well formed)


def decode_kernels(buf: bytes, job: CoefJob, *, nn_core_count: int = 6) -> V8Kernels:
    bl = blocking(job)
    smap = unpack_symbol_map(int.from_bytes(buf[SYMBOL_MAP_OFFSET:SYMBOL_MAP_OFFSET + 4], "little"))
    orders, _ = core_orders(job, nn_core_count)
    coded = np.zeros(job.oc * bl.nblocks * bl.slot, dtype=np.uint8)
    offset = HEADER_SIZE
    bits, kpcs, consumed = [], [], []
    for core, order in enumerate(orders):
        at = STREAM_SIZE_OFFSET + 4 * core
        size = int.from_bytes(buf[at:at + 4], "little")
        codes, used = decode_stream(buf, offset * 8, order.size + 2, smap)
        kpcs.append(codes[0] | codes[1] << 8)
        coded[order] = codes[2:]
        bits.append(size)
        consumed.append(used)
        offset += align(ceil_div(size, 8), 64)
    table = np.frombuffer(buf[offset:offset + 4 * job.oc], dtype="<i4").astype(np.int64)
    kernels = coded.reshape(job.oc, bl.nblocks, bl.slot)[:, :, : bl.bs].reshape(job.oc, -1)[:, : bl.k]
    return V8Kernels(kernels, table, smap, tuple(bits), tuple(kpcs), tuple(consumed))


def decode(buf: bytes, job: CoefJob, *, nn_core_count: int = 6, raw_weights: bool = False
           ) -> tuple[np.ndarray, np.ndarray]:
    """(weights uint8 flat [oc*K], bias int32 [oc]) as handed to `encode` (bias correction undone)."""
    k = decode_kernels(buf, job, nn_core_count=nn_core_count)
    w = k.coded if raw_weights else (k.coded.astype(np.int64) + job.weight_zp).astype(np.uint8)
    bias = k.bias_table - (w.astype(np.int64) - job.weight_zp).sum(axis=1) * (128 - job.input_zp)
    return w.reshape(-1), (bias & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
