"""What the v7 and v8 coefficient writers share (docs/hardware/etnaviv-coefficients.md).

- `CoefJob`: the per-job parameters a coefficient buffer depends on (frozen; `CoefJob.from_lowered(op)` takes
  them from a lowered operation, an `EtnaOp` or a golden `mesa_lowered_operation` dict).
- `v7_core_channels` / `v8_core_channels`: which output channel each core's kernels are, per superblock (§3.1).
- `pack_bits` / `pack_fields`: vectorised LSB-first bit packing; `BitReader`: the scalar reader the decoders
  (and their C port in the simulator) use.

Bit order everywhere: a stream is a little-endian bit string. Field bits go least-significant first, and stream
bit k is bit (k mod 8) of byte k div 8 (the same as appending LSB-first to a 32-bit FIFO that is stored as
little-endian u32 words whenever it is full).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np


def align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class CoefJob:
    """Parameters of one NN job's coefficient buffer, in Mesa's lowered-operation terms.

    oc, ic             output / input channels of the lowered op (v8 depthwise: ic = C, the writer uses 1)
    kx, ky             Mesa weight_width (kernel rows, TFLite kh) / weight_height (columns, TFLite kw)
    weight_zp          (shifted) weight zero point
    input_zp           (shifted) input zero point, for the bias correction
    superblocks        S of etnaviv.md §6 (teflon.etnaviv.tiling); it decides the kernel order in the streams
    depthwise, fully_connected, addition   job kind flags of the lowered op
    addition_offset    v7 ADD: the trailer word
    input_width        Mesa input_width (v7 sequential writer: column split when > 64)
    output_plane       Mesa output_width * output_height, un-doubled (v7 trailer = output_plane * oc)
    """

    oc: int
    ic: int
    kx: int
    ky: int
    weight_zp: int
    input_zp: int
    superblocks: int = 1
    depthwise: bool = False
    fully_connected: bool = False
    addition: bool = False
    addition_offset: int = 0
    input_width: int = 0
    output_plane: int = 0

    @property
    def taps(self) -> int:
        """Weights per (oc, ic) pair."""
        return self.kx * self.ky

    @classmethod
    def from_lowered(cls, op: Any, superblocks: int) -> CoefJob:
        """From a lowered operation: an object with Mesa's field names (EtnaOp) or a golden dict."""

        def get(name: str) -> Any:
            return op[name] if isinstance(op, Mapping) else getattr(op, name)

        return cls(
            oc=int(get("output_channels")),
            ic=int(get("input_channels")),
            kx=int(get("weight_width")),
            ky=int(get("weight_height")),
            weight_zp=int(get("weight_zero_point")),
            input_zp=int(get("input_zero_point")),
            superblocks=int(superblocks),
            depthwise=bool(get("depthwise")),
            fully_connected=bool(get("fully_connected")),
            addition=bool(get("addition")),
            addition_offset=int(get("addition_offset")),
            input_width=int(get("input_width")),
            output_plane=int(get("output_width")) * int(get("output_height")),
        )


# --------------------------------------------------------------------------------------------------------------
# Output channel -> core distribution (etnaviv.md §3.1)


def v7_kernels_per_core(oc: int, nn_core_count: int) -> int:
    return ceil_div(oc, min(oc, nn_core_count))


def v7_core_channels(oc: int, nn_core_count: int, superblocks: int) -> list[list[np.ndarray]]:
    """[core][superblock] -> output channels, v7 map (`v7_channel_table` split up).

    Every core gets kpc = ceil(OC / cores_used) kernels, so with OC not a multiple of cores_used the last cores
    address channels >= OC (Mesa reads past its arrays there; the caller decides what those channels hold).
    """
    channels, sb_len = v7_channel_table(oc, nn_core_count, superblocks)
    parts = np.split(channels, np.cumsum(sb_len.reshape(-1))[:-1])
    return [parts[c * superblocks:(c + 1) * superblocks] for c in range(sb_len.shape[0])]


def v7_channel_table(oc: int, nn_core_count: int, superblocks: int) -> tuple[np.ndarray, np.ndarray]:
    """The v7 map as (every core's channels, superblock after superblock, core after core; their counts
    [core][superblock]): superblock s gives core c the k_s channels from s * full * cores + c * k_s."""
    cores = min(oc, nn_core_count)
    kpc = ceil_div(oc, cores)
    full = ceil_div(kpc, superblocks)
    k_sb = np.full(superblocks, full, dtype=np.int64)
    k_sb[-1] = kpc - full * (superblocks - 1)
    k_sb = np.maximum(k_sb, 0)
    sb_len = np.broadcast_to(k_sb, (cores, superblocks))
    first = np.arange(superblocks)[None, :] * full * cores + np.arange(cores)[:, None] * k_sb[None, :]
    lens = sb_len.reshape(-1)
    ends = np.cumsum(lens)
    channels = np.repeat(first.reshape(-1) - (ends - lens), lens) + np.arange(int(ends[-1]) if lens.size else 0)
    return channels.astype(np.int64), np.ascontiguousarray(sb_len)


def v8_core_channels(oc: int, nn_core_count: int, superblocks: int, depthwise: bool) -> list[list[np.ndarray]]:
    """[core][superblock] -> output channels, v8 map (contiguous per core; depthwise interleaved, reversed)."""
    cores = min(oc, nn_core_count)
    full = ceil_div(oc, nn_core_count * superblocks)
    rest = oc - cores * (superblocks - 1) * full
    out: list[list[np.ndarray]] = [[] for _ in range(cores)]
    for s in range(superblocks):
        if s < superblocks - 1:
            counts = [full] * cores
        else:
            counts = [rest // cores + (1 if c < rest % cores else 0) for c in range(cores)]
        ptr = s * full * cores
        for c in range(cores):
            if depthwise:
                first = cores - c - 1 + cores * full * s
                ch = first + np.arange(counts[c]) * nn_core_count
                if oc > 1 and oc >= nn_core_count:
                    # channels of the incomplete last row of cores fold back onto the ones that exist. (Mesa also
                    # folds when OC < nn_core_count, giving negative channels; there each core has one kernel,
                    # OC - c - 1, and we leave it unfolded.)
                    tail = oc % nn_core_count
                    ch = np.where(ch >= oc - tail, ch - (nn_core_count - tail), ch)
                out[c].append(ch)
            else:
                out[c].append(ptr + np.arange(counts[c]))
                ptr += counts[c]
    return out


# --------------------------------------------------------------------------------------------------------------
# Bits


def pack_bits(values: np.ndarray, starts: np.ndarray, widths: np.ndarray, nbits: int) -> bytes:
    """Place fields (the low `widths[i]` <= 32 bits of `values[i]`, LSB first) at bit offsets `starts[i]`.

    Returns ceil(nbits / 8) bytes. Fields must not overlap: then adding each field's (at most two) 32-bit word
    contributions with np.bincount is the same as OR-ing them in, and float64 holds every sum exactly.
    """
    nwords = ceil_div(nbits, 32) + 1
    widths = np.asarray(widths, dtype=np.uint64)
    values = np.asarray(values, dtype=np.uint64) & ((np.uint64(1) << widths) - np.uint64(1))
    starts = np.asarray(starts, dtype=np.int64)
    word = starts >> 5
    shifted = values << (starts & 31).astype(np.uint64)  # < 2^64: a field spans at most two words
    low = (shifted & np.uint64(0xFFFFFFFF)).astype(np.float64)
    high = (shifted >> np.uint64(32)).astype(np.float64)
    words = np.bincount(word, weights=low, minlength=nwords) + np.bincount(word + 1, weights=high, minlength=nwords)
    return words[: nwords].astype(np.uint32).astype("<u4").tobytes()[: ceil_div(nbits, 8)]


def pack_fields(values: np.ndarray, widths: np.ndarray) -> tuple[bytes, int]:
    """Pack fields back to back (see `pack_bits`); returns (bytes, bit length), the last byte zero-padded."""
    widths = np.asarray(widths, dtype=np.int64)
    ends = np.cumsum(widths)
    nbits = int(ends[-1]) if ends.size else 0
    return pack_bits(values, ends - widths, widths, nbits), nbits


class BitReader:
    """Reads LSB-first fields from a byte string (the layout `pack_fields` writes)."""

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = bytes(data) + b"\0" * 8  # reads past the end see zeros, as the zero-filled BO does
        self.pos = pos  # in bits

    def read(self, width: int) -> int:
        if width == 0:
            return 0
        byte = self.pos >> 3
        chunk = int.from_bytes(self.data[byte:byte + 6], "little")
        value = (chunk >> (self.pos & 7)) & ((1 << width) - 1)
        self.pos += width
        return value


def to_int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x
