"""RK3576 CBUF sizing and row windows (docs/hardware/rocket-rk3576.md, "CBUF ring").

The vendor programs (../shared/golden/rocket-rk3576, compile A) show:
- an input row takes EPR = ceil(IW * IC' / 64) CBUF granules of 64 bytes (IC' = channels rounded to 16,
  plus one 16-channel group when the group count is 3 mod 4);
- a layer whose whole input fits 4096 granules runs as one task (CBUF_CON0 data limit 4096);
- otherwise the data area is a ring of 5120 granules and the layer is cut into row windows: each window
  takes as many output rows as the ring holds input rows for, keeps in CBUF the rows it shares with the
  previous window and fetches only the new ones (112x112x32 3x3: 91 rows, then 2 kept + 21 fetched).
Width and input channels are never split. Weights share the rest of a ~448 KiB pool (7168 granules)
[R76-GREG] and are taken 32 kernels at a time [INFERRED]; when 32 kernels of a direct convolution do not fit
there (256 input channels at 5x5), the output channels are cut into chunks of 16, each its own weight cube,
and every chunk runs the layer's row windows again (tasks = chunks x windows). A layer whose 16 kernels do not
fit is refused.

Column windows (not seen in vendor programs): a map wider than the 13-bit width fields, or whose kernel-tall
stripe of rows overflows the data ring, is cut into column windows. Each task then computes one output row of one
window: it fetches its columns with the kernel's overlap through the whole tensor's line stride and plane pitch,
and the DPU writes its atoms contiguously at (row * OW + first column) * 16 inside each plane of the whole tensor
(no output line stride: a window narrower than OW can only write one row). docs/hardware/rocket-rk3576.md
"Column windows".
"""

from __future__ import annotations

from dataclasses import dataclass

from ..geometry import FEATURE_ATOM, Geometry, SplitError, align

GRANULE = 64  # bytes per CBUF entry
SINGLE_LIMIT = 4096  # data granules of a one-task layer (CBUF_CON0 0x10000000)
RING_LIMIT = 5120  # data ring of a split layer (CBUF_CON0 0x14000000)
POOL = 7168  # data + weight granules of one core [INFERRED: compile B's origin, R76-GREG's ~448 KiB]
WEIGHT_SLICE_OCS = 32  # kernels resident at a time
CHUNK_OCS = 16  # output channels of a kernel chunk: one output surface (the DPU writes whole 16-channel atoms)
MAX_WIDTH = 1 << 13  # DATAIN_WIDTH_M1, DMA_WIDTH_M1, DATAOUT_WIDTH_M1, DPU cube widths: 13-bit fields (regs.py)
MAX_COLUMN_TASKS = 4095  # one task per output row, window and kernel chunk [INFERRED bound, as RK3588's 12 bits]


def entry_channels(in_c: int) -> int:
    """IC' of the CBUF row size: round16(C), plus one group when the group count is 3 mod 4 [VENDOR]."""
    c = align(in_c, FEATURE_ATOM)
    return c + FEATURE_ATOM if (c // FEATURE_ATOM) % 4 == 3 else c


def entries_per_row(in_w: int, in_c: int) -> int:
    return -(-(in_w * entry_channels(in_c)) // GRANULE)


@dataclass(frozen=True)
class Window:
    index: int
    out_row0: int
    out_rows: int
    top: int  # first input row of the window (kept rows included)
    rows: int  # input rows in the window (kept + fetched; padding rows not counted)
    fetch_row0: int  # first row fetched from DRAM by this task
    fetched: int
    pad_top: int
    pad_bottom: int
    read_origin: int  # CBUF granule of the window's first row
    write_origin: int  # CBUF granule where the fetched rows go
    col0: int  # first input column read
    cols: int  # input columns read (the whole width unless the split has column windows)
    out_col0: int
    out_cols: int
    pad_left: int
    pad_right: int  # right padding columns the outputs consume

    @property
    def kept(self) -> int:
        return self.rows - self.fetched


@dataclass(frozen=True)
class Task:
    """One task: a row window of one chunk of output channels."""

    window: Window
    oc0: int  # first output channel of the chunk
    ocs: int  # output channels of the chunk

    @property
    def loads_weights(self) -> bool:
        """The chunk's first window loads its weights; the later ones find them in CBUF (NOT_FIRST_TASK)."""
        return self.window.index == 0


@dataclass(frozen=True)
class Split:
    windows: tuple[Window, ...]
    entries_per_row: int  # of the widest window
    data_limit: int
    out_c: int
    oc_chunk: int  # output channels per kernel chunk (all of them unless 32 kernels do not fit the CBUF)
    in_c: int = 0

    def row_entries(self, w: Window) -> int:
        """CBUF granules one input row of window w takes."""
        return entries_per_row(w.cols, self.in_c)

    @property
    def tasks(self) -> list[Task]:
        """Chunk-major: each chunk loads its weights once and runs every window."""
        return [Task(w, oc0, min(self.oc_chunk, self.out_c - oc0))
                for oc0 in range(0, self.out_c, self.oc_chunk) for w in self.windows]


def _input_rows(g: Geometry, o0: int, n: int) -> tuple[int, int]:
    """Real input rows [lo, hi] read by output rows o0 .. o0+n-1."""
    lo = o0 * g.stride - g.pad_top
    hi = (o0 + n - 1) * g.stride - g.pad_top + g.kh - 1
    return max(lo, 0), min(hi, g.in_h - 1)


def _pads(g: Geometry, o0: int, n: int) -> tuple[int, int]:
    top = max(g.pad_top - o0 * g.stride, 0)
    bottom = max((o0 + n - 1) * g.stride - g.pad_top + g.kh - g.in_h, 0)
    return top, bottom


def weight_slice_bytes(g: Geometry, in_c16: int, kernels: int = WEIGHT_SLICE_OCS) -> int:
    if g.depthwise:
        return 64 * g.kh * g.kw * 2
    return min(kernels, align(g.out_c, 2)) * in_c16 * g.kh * g.kw


# The largest 32-kernel weight slice with which a task of `groups` 32-kernel output groups computes every group
# (measured by a third party on an RK3576 at the one-task CBUF split, F = 0: past it the trailing groups come back
# wrong, one group at a time; docs/hardware/rocket-rk3576.md "Weight slice and output groups"). One group is bounded
# by the pool alone.
GROUP_SLICE_LIMITS = ((4, 144 << 10), (3, 148 << 10), (2, 156 << 10))


def _slice_fits_groups(slice_bytes: int, ocs: int) -> bool:
    groups = -(-ocs // WEIGHT_SLICE_OCS)
    return all(groups < n or slice_bytes <= cap for n, cap in GROUP_SLICE_LIMITS)


def kernel_chunk(g: Geometry, limit: int) -> int:
    """Output channels per kernel chunk, or SplitError when not even one chunk's weights fit: all of them when the
    slice fits the pool and the group limit, else the most 32-kernel groups the limit allows, else 16."""
    area = (POOL - limit) * GRANULE
    in_c16 = align(max(g.in_c, 1), FEATURE_ATOM)
    slice_bytes = weight_slice_bytes(g, in_c16)
    if slice_bytes <= area:
        if g.depthwise or _slice_fits_groups(slice_bytes, g.out_c):
            return g.out_c
        for groups in (3, 2, 1):
            if _slice_fits_groups(slice_bytes, groups * WEIGHT_SLICE_OCS):
                return groups * WEIGHT_SLICE_OCS
    need = weight_slice_bytes(g, in_c16, CHUNK_OCS)
    if need > area:
        raise SplitError(f"the weights of {CHUNK_OCS} output channels ({need} bytes) do not fit the CBUF weight "
                         f"area ({area} bytes)")
    return CHUNK_OCS


def _right_pad(g: Geometry) -> int:
    """Right padding columns the outputs actually read (the vendor's 0x1080 holds consumed pads)."""
    return max((g.out_w - 1) * g.sx - g.pad_left + g.kw - g.in_w, 0)


def _rows_of_one_output(g: Geometry) -> int:
    """Input rows one output row reads at most."""
    return min(g.kh, g.in_h)


def needs_columns(g: Geometry) -> bool:
    """Wider than the width fields, or one output row's input rows do not fit the data ring."""
    return (g.in_w > MAX_WIDTH or g.out_w > MAX_WIDTH
            or entries_per_row(g.in_w, g.in_c) * _rows_of_one_output(g) > RING_LIMIT)


def _col_span(g: Geometry, o0: int, n: int) -> tuple[int, int, int, int]:
    """(first input column, columns, left pad, right pad) read by output columns o0 .. o0+n-1."""
    lo = o0 * g.sx - g.pad_left
    hi = (o0 + n - 1) * g.sx - g.pad_left + g.kw - 1
    first, last = max(lo, 0), min(hi, g.in_w - 1)
    return first, last - first + 1, first - lo, hi - last


def column_split(g: Geometry) -> Split:
    """One task per output row and column window (module docstring), each a fresh CBUF window from granule 0."""
    limit = RING_LIMIT
    chunk = kernel_chunk(g, limit)
    rows = _rows_of_one_output(g)
    widest, lo, hi = 0, 1, min(g.out_w, MAX_WIDTH)
    while lo <= hi:
        n = (lo + hi) // 2
        w = (n - 1) * g.sx + g.kw
        if w <= MAX_WIDTH and entries_per_row(w, g.in_c) * rows <= limit:
            widest, lo = n, n + 1
        else:
            hi = n - 1
    if widest == 0:
        raise SplitError(f"a {g.kh}x{g.kw} window of {g.in_c} channels does not fit the CBUF data ring ({limit})")
    n_windows = -(-g.out_w // widest)
    per = -(-g.out_w // n_windows)
    chunks = -(-g.out_c // chunk)
    if g.out_h * n_windows * chunks > MAX_COLUMN_TASKS:
        raise SplitError(f"column windows need {g.out_h * n_windows * chunks} tasks (one per output row, window and "
                         f"kernel chunk), more than {MAX_COLUMN_TASKS}")
    windows: list[Window] = []
    for oy in range(g.out_h):
        r0, r1 = _input_rows(g, oy, 1)
        top, bottom = _pads(g, oy, 1)
        for ox0 in range(0, g.out_w, per):
            tw = min(per, g.out_w - ox0)
            col0, cols, pl, pr = _col_span(g, ox0, tw)
            windows.append(Window(len(windows), oy, 1, r0, r1 - r0 + 1, r0, r1 - r0 + 1, top, bottom, 0, 0,
                                  col0, cols, ox0, tw, pl, pr))
    epr = max(entries_per_row(w.cols, g.in_c) for w in windows)
    return Split(tuple(windows), epr, limit, g.out_c, chunk, g.in_c)


def split(g: Geometry) -> Split:
    """Row windows and kernel chunks of a convolution, or SplitError(reason)."""
    if needs_columns(g):
        return column_split(g)
    epr = entries_per_row(g.in_w, g.in_c)
    full = (0, g.in_w, 0, g.out_w, g.pad_left, _right_pad(g))
    single = epr * g.in_h <= SINGLE_LIMIT
    limit = SINGLE_LIMIT if single else RING_LIMIT
    chunk = kernel_chunk(g, limit)
    if single:
        top, bottom = _pads(g, 0, g.out_h)
        lo, hi = _input_rows(g, 0, g.out_h)
        w = Window(0, 0, g.out_h, lo, hi - lo + 1, lo, hi - lo + 1, top, bottom, 0, 0, *full)
        return Split((w,), epr, limit, g.out_c, chunk, g.in_c)

    cap = limit // epr
    windows: list[Window] = []
    o0 = 0
    fetched_end = 0  # first input row not fetched yet
    ring_end = 0  # ring granule after the last fetched row
    while o0 < g.out_h:
        n = 0
        while o0 + n < g.out_h:
            lo, hi = _input_rows(g, o0, n + 1)
            if hi - lo + 1 > cap:
                break
            n += 1
        if n == 0:
            raise SplitError(f"one output row needs more input rows than the CBUF ring holds ({cap})")
        lo, hi = _input_rows(g, o0, n)
        fetch0 = max(lo, fetched_end)
        kept = fetch0 - lo
        if kept:
            write = ring_end % limit
            read = (ring_end - kept * epr) % limit
        else:
            write = read = 0  # nothing shared with the previous window: the vendor restarts at 0
        fetched = hi - fetch0 + 1
        top, bottom = _pads(g, o0, n)
        windows.append(Window(len(windows), o0, n, lo, hi - lo + 1, fetch0, fetched, top, bottom, read, write, *full))
        ring_end = write + fetched * epr
        fetched_end = hi + 1
        o0 += n
    return Split(tuple(windows), epr, limit, g.out_c, chunk, g.in_c)
