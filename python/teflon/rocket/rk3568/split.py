"""How an RK3568 layer becomes tasks (docs/hardware/rk3568.md §3 "Splitting"): the vendor's choices, taken so that
programs compare equal [GOLD; the README calls splitting a toolkit choice].

- A depthwise layer whose input rows do not fit the seven data banks is first split into channel groups: the
  largest multiple of 32 channels (down to 32) whose whole map fits, the last group the rest (56x56x128 -> 64 + 64;
  56x56x144 -> 64 + 64 + 16; 40x30x200 -> 160 + 40; 112x112x64 -> 32 + 32) [GOLD; TOOLKIT, built here:
  rknn-toolkit2 2.5.0 target rk3566, dwconv-in56x56x144 and dwconv-in40x30x200].
- A task whose rows still do not fit is split into row bands: each band reads as many input rows as seven banks hold
  (rows x DATA_ENTRIES <= 7 x 1024) and computes the whole output rows they give; the next band starts at its first
  output row's first input row. The data/weight bank split is the channel group's: the least data banks that hold
  its largest band (the 16-channel rest of 56x56x144: 2 data banks where the 64-channel groups take 7) [GOLD;
  TOOLKIT, as above].
- Tasks run group by group, band by band; a band of the same group as the task before it reuses the CBUF weights
  (WEIGHT_REUSE) when they fit the weight banks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..geometry import align
from ..operations import RocketConv
from ..stream import EncodeError
from .layout import BANK_BYTES, BANK_ENTRIES, CBUF_BANKS, data_entries, packed_entries

DW_MIN_GROUP = 32
MAX_DATA_BANKS = CBUF_BANKS - 1


@dataclass(frozen=True)
class Window:
    conv: RocketConv  # the task's convolution: its rows (in_h / out_h / pad_top) and channels
    in_row0: int  # first input row of the layer it reads
    out_row0: int
    ch0: int  # first channel (depthwise groups; 0 otherwise)
    reuse: bool  # the weights are still in the CBUF from the task before
    banks: int = 0  # data banks of the task (its channel group's split)


@dataclass(frozen=True)
class Split:
    windows: list[Window]


def _rows_read(c: RocketConv) -> int:
    return min(c.in_h, (c.out_h - 1) * c.stride + c.kh - c.pad_top)


def _group(c: RocketConv, ch0: int, n: int) -> RocketConv:
    sl = slice(ch0, ch0 + n)
    return replace(c, in_c=n, out_c=n, weights=c.weights[..., sl], weights_q=c.weights_q[..., sl],
                   bias=np.asarray(c.bias)[sl])


def _bands(c: RocketConv, max_rows: int) -> list[tuple[int, int, RocketConv]]:
    """(first input row, first output row, band conv) of each row band."""
    if _rows_read(c) <= max_rows:
        return [(0, 0, c)]
    out: list[tuple[int, int, RocketConv]] = []
    y = 0
    while y < c.out_h:
        top = c.pad_top if y == 0 else 0
        row0 = y * c.stride - c.pad_top + top  # first input row read (>= 0)
        n = min((max_rows + top - c.kh) // c.stride + 1, c.out_h - y)
        if n < 1:
            raise EncodeError(f"a {c.kh}-row kernel does not fit {max_rows} CBUF rows")
        rows = min(c.in_h - row0, (n - 1) * c.stride + c.kh - top)
        out.append((row0, y, replace(c, in_h=rows, out_h=n, pad_top=top)))
        y += n
    return out


def split(c: RocketConv, weight_bytes: int, packed: bool = False) -> Split:
    """`packed`: the input read as packed pixels (its rows take packed_entries)."""
    per_row = packed_entries(c.in_w) if packed else data_entries(c.in_w, c.in_c)
    group = c.in_c if c.depthwise else 0
    if c.depthwise:
        cap = MAX_DATA_BANKS * BANK_ENTRIES
        while group > DW_MIN_GROUP and data_entries(c.in_w, group, True) * _rows_read(c) > cap:
            group = align(group, DW_MIN_GROUP) - DW_MIN_GROUP
        per_row = data_entries(c.in_w, group, True)
    max_rows = MAX_DATA_BANKS * BANK_ENTRIES // per_row
    if max_rows < 1:
        raise EncodeError(f"one input row needs {per_row} CBUF entries (a bank holds {BANK_ENTRIES})")
    parts = [(0, c)] if not c.depthwise or group >= c.in_c else [
        (g0, _group(c, g0, min(group, c.in_c - g0))) for g0 in range(0, c.in_c, group)]
    windows: list[Window] = []
    for g0, gc in parts:
        bands = [Window(bc, row0, y0, g0, i > 0) for i, (row0, y0, bc) in enumerate(_bands(gc, max_rows))]
        entries = per_row if not c.depthwise else data_entries(c.in_w, gc.in_c, True)
        # the banks hold the task's input rows as declared, a VALID layer's unread last rows included (the rows the
        # CNA reads, DATA_SIZE0, leave them out) [TOOLKIT, built here: rknn-toolkit2 2.5.0 target rk3566, model
        # dwconv-in28x28x256-k5-s2-valid: 7 banks for 28 rows of 224 entries, where the 27 rows read fit 6]
        banks = min(MAX_DATA_BANKS, -(-entries * max(w.conv.in_h for w in bands) // BANK_ENTRIES))
        fits = weight_bytes // len(parts) <= (CBUF_BANKS - banks) * BANK_BYTES
        windows += [replace(w, reuse=w.reuse and fits, banks=banks) for w in bands]
    return Split(windows)
