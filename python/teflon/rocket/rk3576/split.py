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
    entries_per_row: int
    data_limit: int
    out_c: int
    oc_chunk: int  # output channels per kernel chunk (all of them unless 32 kernels do not fit the CBUF)

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


def kernel_chunk(g: Geometry, limit: int) -> int:
    """Output channels per kernel chunk, or SplitError when not even one chunk's weights fit."""
    area = (POOL - limit) * GRANULE
    in_c16 = align(max(g.in_c, 1), FEATURE_ATOM)
    if weight_slice_bytes(g, in_c16) <= area:
        return g.out_c
    need = weight_slice_bytes(g, in_c16, CHUNK_OCS)
    if need > area:
        raise SplitError(f"the weights of {CHUNK_OCS} output channels ({need} bytes) do not fit the CBUF weight "
                         f"area ({area} bytes)")
    return CHUNK_OCS


def split(g: Geometry) -> Split:
    """Row windows and kernel chunks of a convolution, or SplitError(reason)."""
    epr = entries_per_row(g.in_w, g.in_c)
    single = epr * g.in_h <= SINGLE_LIMIT
    limit = SINGLE_LIMIT if single else RING_LIMIT
    chunk = kernel_chunk(g, limit)
    if single:
        top, bottom = _pads(g, 0, g.out_h)
        lo, hi = _input_rows(g, 0, g.out_h)
        w = Window(0, 0, g.out_h, lo, hi - lo + 1, lo, hi - lo + 1, top, bottom, 0, 0)
        return Split((w,), epr, limit, g.out_c, chunk)

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
        windows.append(Window(len(windows), o0, n, lo, hi - lo + 1, fetch0, fetched, top, bottom, read, write))
        ring_end = write + fetched * epr
        fetched_end = hi + 1
        o0 += n
    return Split(tuple(windows), epr, limit, g.out_c, chunk)
