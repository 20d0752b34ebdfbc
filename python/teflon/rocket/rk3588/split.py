"""CBUF bank allocation and row ("slice") splitting into tasks (rocket.md §4.2, §4.3).

The CBUF holds 12 banks of 256 entries x 128 bytes. Weights stay resident when they fit (all tasks
of the operation then run as one job and later tasks set WEIGHT_REUSE); the input feature map is cut
into row windows that fit the data banks. Width and channels are never split. This follows Mesa's
(NVDLA-derived) algorithm, including its unexplained extra weight bank, so streams stay byte-equal.
Rows = TFLite H, slice length = TFLite W (the contiguous axis).

Two departures, both where Mesa's own walk breaks (no golden stream has either case):
- Resident weights can leave data banks for fewer rows than the kernel is tall: Mesa's walk then repeats
  its first window forever. Such an operation takes Mesa's other bank split (7 data / 5 weight banks,
  weights streamed by every task, one job per task), which Mesa already uses for weights of any size. Rows
  that fit neither split are refused.
- The walk can end on a window lying inside the previous window's overlap: fewer rows than the kernel, so
  no output row (VALID stride 2, e.g. 112 rows in windows of 11). Mesa still emits a task for it, its row
  count computed from a negative difference. Such a trailing window is dropped when the earlier tasks
  already compute every output row; the split may then be a single task with the split's bank numbers.

Column windows (not in Mesa): a map wider than the 11-bit DATAIN_WIDTH / DATAOUT_WIDTH fields, or one whose
kernel-tall stripe of rows does not fit the data banks, is cut into column windows. Each task then computes one
output row of one window: it reads its input columns (with the kernel's overlap) through the whole tensor's line
and surface strides, and the DPU writes its output atoms contiguously at (row * OW + first column) * 16 inside each
plane of the whole tensor (the RK3588 DPU has no output line stride, so a narrower-than-OW task can only write
one row). docs/hardware/rocket.md "Column windows".
"""

from __future__ import annotations

from dataclasses import dataclass

from ..geometry import FEATURE_ATOM, Geometry, SplitError

CBUF_BANKS = 12
CBUF_ENTRIES_PER_BANK = 256
CBUF_ENTRY_BYTES = 128
ATOMS_PER_ENTRY = CBUF_ENTRY_BYTES // FEATURE_ATOM
PARTIAL_WEIGHTS_DATA_BANKS = 7  # Mesa's fixed split when weights do not fit
MAX_WIDTH = (1 << 11) - 1  # CNA DATAIN_WIDTH and DATAOUT_WIDTH are 11-bit fields (rocket.md §7.2)
MAX_INPUT_CHANNELS = 4096  # DATAIN_CHANNEL: a multiple of 16 up to 4096 (rocket.md §2.2 #11; the simulator refuses more)
MAX_COLUMN_TASKS = 4095  # one task per output row and window; the PC's TASK_NUMBER is 12 bits (rocket.md §7.2)


@dataclass(frozen=True)
class Task:
    index: int
    top: int  # first input row
    bottom: int  # last input row
    pad_top: int
    pad_bottom: int
    pad_left: int
    pad_right: int
    out_w: int
    out_rows: int
    out_row0: int  # first output row written
    input_offset: int  # bytes into the input tensor (same row in every channel plane)
    output_offset: int
    data_banks: int
    weight_banks: int
    in_col0: int = 0  # first input column read (column windows; 0 otherwise)
    in_cols: int = 0  # input columns read by a column window (0: the operation's whole width)
    out_col0: int = 0  # first output column written

    @property
    def in_rows(self) -> int:
        return self.bottom - self.top + 1


@dataclass(frozen=True)
class Split:
    tasks: tuple[Task, ...]
    reuse_weights: bool  # weights resident in CBUF for the whole operation
    entries_per_slice: int
    input_banks: int
    weight_banks: int


def entries_per_slice(in_w: int, in_c: int) -> int:
    """CBUF entries one input row occupies (8 feature atoms per entry; 3 leftover atoms take a full row)."""
    atoms = -(-in_c // FEATURE_ATOM)
    frac = atoms % ATOMS_PER_ENTRY
    frac_entries = in_w if frac == 3 else -(-(frac * in_w) // ATOMS_PER_ENTRY)
    return (atoms // ATOMS_PER_ENTRY) * in_w + frac_entries


def weight_banks_required(g: Geometry) -> int:
    nbytes = g.kh * g.kw * g.in_c * (1 if g.depthwise else g.out_c)
    entries = -(-nbytes // CBUF_ENTRY_BYTES)
    # Mesa adds one bank it cannot explain ("the calc above might be wrong on this HW").
    return -(-entries // CBUF_ENTRIES_PER_BANK) + 1


def _row_windows(g: Geometry, avail_slices: int) -> list[tuple[int, int, bool]]:
    """Mesa's window walk: (top, bottom, is_last_with_bottom_pad) per task, before clamping."""
    s, k = g.stride, g.kh
    windows = [(0, avail_slices - 1, False)]
    slc = k - g.pad_top - 1
    while slc < g.in_h:
        prev_bottom = windows[-1][1]
        while slc <= prev_bottom:
            slc += s
        if slc > prev_bottom:
            slc -= s
        top = min(slc, prev_bottom) - (k - 1) + s
        bottom = top + avail_slices - 1
        if bottom >= g.in_h - 1:
            windows.append((top, g.in_h - 1, True))
            break
        slc = top + k - 1
        windows.append((top, bottom, False))
    top, bottom, _ = windows[-1]
    if top >= g.in_h or bottom >= g.in_h + g.pad_bottom:
        windows.pop()
    return windows


def _tasks(g: Geometry, avail_slices: int, avail_in: int, avail_w: int) -> list[Task]:
    row_bytes_in = g.in_w * FEATURE_ATOM
    row_bytes_out = g.out_w * FEATURE_ATOM
    out_w = (g.in_w + g.pad_left + g.pad_right - g.kw) // g.sx + 1
    windows = _row_windows(g, avail_slices)
    tasks: list[Task] = []
    done = 0
    for i, (top, bottom, last) in enumerate(windows):
        bottom = min(bottom, g.in_h - 1)
        pt = g.pad_top if i == 0 else 0
        pb = g.pad_bottom if last else 0
        out_rows = (bottom - top + 1 + pt + pb - g.kh) // g.stride + 1  # floor: <= 0 when no window fits
        if out_rows <= 0 and last and i > 0 and done == g.out_h:
            break  # trailing window inside the previous one's overlap: nothing left to compute
        tasks.append(Task(i, top, bottom, pt, pb, g.pad_left, g.pad_right, out_w, out_rows, done,
                          row_bytes_in * top, row_bytes_out * done, avail_in, avail_w))
        done += out_rows
    return tasks


def _check(g: Geometry, tasks: list[Task]) -> None:
    """Every task computes at least one row, each from exactly its receptive field, and together all OH rows."""
    for t in tasks:
        if t.out_rows <= 0:
            raise SplitError(f"row split task {t.index} (input rows {t.top}..{t.bottom}) computes no output row")
        if t.index and t.top != t.out_row0 * g.stride - g.pad_top:
            raise SplitError(f"row split task {t.index} starts at row {t.top}, output row {t.out_row0} needs "
                             f"{t.out_row0 * g.stride - g.pad_top}")
    done = sum(t.out_rows for t in tasks)
    if done != g.out_h:
        raise SplitError(f"row split computes {done} output rows, the operation has {g.out_h}")


def _banks(g: Geometry) -> tuple[bool, int, int]:
    """(weights resident, data banks, weight banks) of a split into several tasks."""
    w_banks = weight_banks_required(g)
    reuse = w_banks + 1 < CBUF_BANKS
    avail_in = CBUF_BANKS - w_banks if reuse else PARTIAL_WEIGHTS_DATA_BANKS
    return reuse, avail_in, w_banks if reuse else CBUF_BANKS - avail_in


def needs_columns(g: Geometry) -> bool:
    """Wider than the width fields, or a kernel-tall stripe of whole rows does not fit any data bank split."""
    if g.in_c == 1:
        return False  # the raw single-channel path keeps Mesa's row layout (never cut into columns)
    most = max(CBUF_BANKS - weight_banks_required(g), PARTIAL_WEIGHTS_DATA_BANKS)
    fits = CBUF_ENTRIES_PER_BANK * most // entries_per_slice(g.in_w, g.in_c) >= g.kh
    return g.in_w > MAX_WIDTH or g.out_w > MAX_WIDTH or not fits


def _span(o0: int, n: int, s: int, pad: int, k: int, size: int) -> tuple[int, int, int]:
    """(first real input index, count, leading pad) read by outputs o0 .. o0+n-1 along one axis."""
    lo = o0 * s - pad
    hi = min((o0 + n - 1) * s - pad + k - 1, size - 1)
    first = max(lo, 0)
    return first, hi - first + 1, first - lo


def column_split(g: Geometry) -> Split:
    """One task per output row and column window (module docstring); SplitError when even a window of one output
    column does not fit."""
    reuse, avail_in, avail_w = _banks(g)
    cap = CBUF_ENTRIES_PER_BANK * avail_in
    # widest window: kh rows of it fit the data banks, and its input and output widths fit the fields
    widest = 0
    lo, hi = 1, min(g.out_w, MAX_WIDTH)
    while lo <= hi:
        n = (lo + hi) // 2
        w = (n - 1) * g.sx + g.kw
        if w <= MAX_WIDTH and entries_per_slice(w, g.in_c) * g.kh <= cap:
            widest, lo = n, n + 1
        else:
            hi = n - 1
    if widest == 0:
        raise SplitError(f"a {g.kh}x{g.kw} window of {g.in_c} channels does not fit the {avail_in} CBUF data banks")
    n_windows = -(-g.out_w // widest)
    per = -(-g.out_w // n_windows)  # balanced windows
    if g.out_h * n_windows > MAX_COLUMN_TASKS:
        raise SplitError(f"column windows need {g.out_h * n_windows} tasks (one per output row and window), "
                         f"more than {MAX_COLUMN_TASKS}")
    tasks: list[Task] = []
    for oy in range(g.out_h):
        top, rows, pt = _span(oy, 1, g.stride, g.pad_top, g.kh, g.in_h)
        for ox0 in range(0, g.out_w, per):
            tw = min(per, g.out_w - ox0)
            col0, cols, pl = _span(ox0, tw, g.sx, g.pad_left, g.kw, g.in_w)
            pb = max(g.kh - pt - rows, 0)
            pr = max((tw - 1) * g.sx + g.kw - pl - cols, 0)
            tasks.append(Task(len(tasks), top, top + rows - 1, pt, pb, pl, pr, tw, 1, oy,
                              (top * g.in_w + col0) * FEATURE_ATOM, (oy * g.out_w + ox0) * FEATURE_ATOM,
                              avail_in, avail_w, col0, cols, ox0))
    eps = entries_per_slice(per * g.sx + g.kw, g.in_c)
    return Split(tuple(tasks), reuse, eps, avail_in, weight_banks_required(g))


def split(g: Geometry) -> Split:
    if g.in_c > MAX_INPUT_CHANNELS:
        raise SplitError(f"{g.in_c} input channels: the CNA takes up to {MAX_INPUT_CHANNELS} (DATAIN_CHANNEL)")
    if needs_columns(g):
        return column_split(g)
    eps = entries_per_slice(g.in_w, g.in_c)
    in_banks = -(-(eps * g.in_h) // CBUF_ENTRIES_PER_BANK)
    w_banks = weight_banks_required(g)
    reuse = w_banks + 1 < CBUF_BANKS
    avail_in = CBUF_BANKS - w_banks if reuse else PARTIAL_WEIGHTS_DATA_BANKS
    if reuse and in_banks > avail_in and CBUF_ENTRIES_PER_BANK * avail_in // eps < g.kh:
        reuse, avail_in = False, PARTIAL_WEIGHTS_DATA_BANKS  # see the module docstring

    if in_banks <= avail_in:
        t = Task(0, 0, g.in_h - 1, g.pad_top, g.pad_bottom, g.pad_left, g.pad_right, g.out_w, g.out_h, 0, 0, 0,
                 in_banks, CBUF_BANKS - in_banks)
        return Split((t,), reuse, eps, in_banks, w_banks)

    avail_w = w_banks if reuse else CBUF_BANKS - avail_in
    avail_slices = CBUF_ENTRIES_PER_BANK * avail_in // eps
    if avail_slices < g.kh:
        most = CBUF_ENTRIES_PER_BANK * max(avail_in, CBUF_BANKS - w_banks) // eps
        raise SplitError(f"one input row ({g.in_w} wide, {g.in_c} channels) needs {eps} CBUF entries: the data "
                         f"banks hold at most {most} rows, a {g.kh}x{g.kw} kernel needs {g.kh}")
    tasks = _tasks(g, avail_slices, avail_in, avail_w)
    _check(g, tasks)
    return Split(tuple(tasks), reuse, eps, in_banks, w_banks)
