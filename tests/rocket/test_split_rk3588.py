"""CBUF bank choice and row splitting of RK3588 convolutions (python/teflon/rocket/split.py, rocket.md §4.2-§4.3).

Mesa's own splits are pinned byte for byte by test_golden_rk3588.py. These tests cover what the golden files do
not reach: every split must compute each output row exactly once, from exactly its receptive field, inside the
data banks; a walk that ends inside the previous window's overlap, and resident weights that leave room for
fewer rows than the kernel is tall, are handled instead of refused; what cannot fit is refused with the reason.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from teflon.modelgen import ConvCase, random_inputs
from teflon.reference import compare, run_cpu, run_delegate
from teflon.rocket.rk3588.split import (
    CBUF_BANKS,
    CBUF_ENTRIES_PER_BANK,
    MAX_WIDTH,
    PARTIAL_WEIGHTS_DATA_BANKS,
    Geometry,
    Split,
    SplitError,
    entries_per_slice,
    split,
    weight_banks_required,
)

from .graphs import geometry


def check_columns(g: Geometry, sp: Split) -> None:
    """Column windows: every output element computed exactly once, each task one output row of a window read from
    exactly its receptive field (the hardware derives the counts from columns/rows + pads), inside the width fields
    and its data banks."""
    count = np.zeros((g.out_h, g.out_w), np.int32)
    for t in sp.tasks:
        assert t.out_rows == 1 and t.in_cols > 0 and t.out_w <= MAX_WIDTH and t.in_cols <= MAX_WIDTH, t
        assert 0 <= t.in_col0 and t.in_col0 + t.in_cols <= g.in_w and 0 <= t.top <= t.bottom < g.in_h, t
        assert t.in_col0 - t.pad_left == t.out_col0 * g.stride - g.pad_left, t
        assert t.top - t.pad_top == t.out_row0 * g.stride - g.pad_top, t
        assert (t.in_cols + t.pad_left + t.pad_right - g.kw) // g.stride + 1 == t.out_w, t
        assert (t.in_rows + t.pad_top + t.pad_bottom - g.kh) // g.stride + 1 == 1, t
        assert max(t.pad_left, t.pad_right) < g.kw and max(t.pad_top, t.pad_bottom) < g.kh, t
        assert t.in_rows * entries_per_slice(t.in_cols, g.in_c) <= t.data_banks * CBUF_ENTRIES_PER_BANK, t
        assert t.data_banks + t.weight_banks <= CBUF_BANKS, t
        assert t.input_offset == (t.top * g.in_w + t.in_col0) * 16, t
        assert t.output_offset == (t.out_row0 * g.out_w + t.out_col0) * 16, t
        count[t.out_row0, t.out_col0:t.out_col0 + t.out_w] += 1
    assert (count == 1).all()


def check_split(g: Geometry, sp: Split) -> None:
    """Each task computes a contiguous run of output rows from their receptive fields, within its data banks."""
    if sp.tasks[0].in_cols:
        check_columns(g, sp)
        return
    assert sum(t.out_rows for t in sp.tasks) == g.out_h
    last = len(sp.tasks) - 1
    row = 0
    for i, t in enumerate(sp.tasks):
        assert t.out_row0 == row and t.out_rows > 0, t
        assert 0 <= t.top <= t.bottom < g.in_h, t
        assert t.pad_top == (g.pad_top if i == 0 else 0), t
        assert t.pad_bottom in ((0, g.pad_bottom) if i == last else (0,)), t
        assert t.data_banks + t.weight_banks <= CBUF_BANKS, t
        assert t.in_rows * sp.entries_per_slice <= t.data_banks * CBUF_ENTRIES_PER_BANK, t
        # the task's first window is its first output row's receptive field ...
        assert t.top - t.pad_top == t.out_row0 * g.stride - g.pad_top, t
        # ... its last output row's field ends inside its rows (or in the real bottom padding) ...
        end = (t.out_row0 + t.out_rows - 1) * g.stride - g.pad_top + g.kh - 1
        assert end <= t.bottom or (t.bottom == g.in_h - 1 and end <= t.bottom + t.pad_bottom), t
        # ... and the hardware, which derives the row count from rows + pads, computes exactly those rows
        assert (t.in_rows + t.pad_top + t.pad_bottom - g.kh) // g.stride + 1 == t.out_rows, t
        assert t.input_offset == t.top * g.in_w * 16 and t.output_offset == t.out_row0 * g.out_w * 16, t
        row += t.out_rows
    if len(sp.tasks) > 1:
        assert sp.reuse_weights or (sp.tasks[0].data_banks, sp.tasks[0].weight_banks) == (
            PARTIAL_WEIGHTS_DATA_BANKS, CBUF_BANKS - PARTIAL_WEIGHTS_DATA_BANKS)


@pytest.mark.parametrize(("k", "s"), list(itertools.product((1, 3, 5), (1, 2))))
def test_every_split_covers_each_output_row_once(k: int, s: int) -> None:
    for h, w, c, oc, padding, dw in itertools.product(
            (*range(1, 40), 55, 56, 57, 111, 112, 113, 224), (8, 28, 112, 224), (16, 64, 120, 256, 512),
            (1, 120, 1024), ("same", "valid"), (False, True)):
        if (dw and oc != 1) or (padding == "valid" and min(h, w) < k):
            continue
        g = geometry(h, w, c, oc, k, s, padding, dw)
        try:
            sp = split(g)
        except SplitError as e:  # only a window of one output column too wide for the data banks
            assert "does not fit the" in str(e), (g, e)
            continue
        if sp.tasks[0].in_cols:  # column windows only where whole kernel-tall stripes of rows fit no bank split
            resident = CBUF_BANKS - weight_banks_required(g)
            assert entries_per_slice(w, c) * k > CBUF_ENTRIES_PER_BANK * max(resident, PARTIAL_WEIGHTS_DATA_BANKS), g
        check_split(g, sp)


@pytest.mark.parametrize(
    ("shape", "windows"),
    [
        ((1, 8400, 64, 64, 1, 1, "same", False), 5),   # DATAIN_WIDTH is 11 bits
        ((2, 3000, 16, 16, 3, 1, "same", False), 2),
        ((4, 4100, 32, 32, 3, 2, "same", True), 3),
        ((6, 700, 256, 32, 5, 1, "same", False), 8),   # five rows of 700x256 overflow the data banks
        ((3, 2049, 16, 16, 3, 1, "valid", False), 2),  # output 2047 wide, input 2049
    ],
)
def test_wide_maps_run_as_column_windows(shape: tuple, windows: int) -> None:
    g = geometry(*shape)
    sp = split(g)
    check_split(g, sp)
    assert len(sp.tasks) == g.out_h * windows


@pytest.mark.parametrize(
    ("shape", "tasks"),
    [
        # 11 rows per task: the walk's 12th window (rows 110..111) lies in the 11th window's overlap
        ((112, 112, 256, 1, 3, 2, "valid", False), 11),
        ((112, 112, 256, 256, 3, 2, "valid", True), 11),
        ((28, 28, 256, 64, 3, 2, "valid", False), 1),  # rows 0..26 in 6 banks; window 26..27 dropped
        ((26, 56, 256, 64, 3, 2, "valid", False), 2),
    ],
)
def test_walk_ending_in_the_overlap_drops_that_window(shape: tuple, tasks: int) -> None:
    g = geometry(*shape)
    sp = split(g)
    check_split(g, sp)
    assert len(sp.tasks) == tasks
    assert sp.tasks[-1].bottom < g.in_h - 1  # the last input row feeds no output row (VALID, stride 2)


@pytest.mark.parametrize(
    ("shape", "rows"),
    [
        ((112, 112, 256, 120, 3, 1, "same"), 2),  # 10 weight banks leave 2 data banks: 2 rows < 3
        ((112, 112, 256, 32, 5, 2, "valid"), 4),  # 8 weight banks leave 4 data banks: 4 rows < 5
    ],
)
def test_resident_weights_leaving_too_few_rows_take_the_partial_split(shape: tuple, rows: int) -> None:
    g = geometry(*shape)
    sp = split(g)
    check_split(g, sp)
    assert not sp.reuse_weights
    assert (CBUF_BANKS - sp.weight_banks) * CBUF_ENTRIES_PER_BANK // sp.entries_per_slice == rows  # Mesa's
    assert {(t.data_banks, t.weight_banks) for t in sp.tasks} == {(7, 5)}
    assert max(t.in_rows for t in sp.tasks) == CBUF_ENTRIES_PER_BANK * 7 // 224


def test_partial_split_that_fits_in_one_task() -> None:
    g = geometry(7, 112, 256, 32, 5, 1, "same")  # 7 rows x 224 entries = 7 banks, weights 8 banks
    sp = split(g)
    check_split(g, sp)
    assert len(sp.tasks) == 1 and not sp.reuse_weights
    assert (sp.tasks[0].data_banks, sp.tasks[0].weight_banks) == (7, 5)


@pytest.mark.parametrize(
    "shape", [(16, 224, 512, 32, 3, 1, "same"), (16, 224, 256, 120, 5, 1, "same")],
)
def test_rows_wider_than_the_data_banks_take_column_windows(shape: tuple) -> None:
    """Mesa refuses these (a kernel-tall stripe of rows fits no bank split); column windows make the stripe fit."""
    g = geometry(*shape)
    sp = split(g)
    check_split(g, sp)
    assert sp.tasks[0].in_cols < g.in_w


# End to end on the simulator: both new split shapes compute the CPU's numbers (within the requant tolerance).
@pytest.mark.parametrize(
    "case",
    [
        ConvCase("conv2d", 26, 56, 256, 64, 3, 2, "valid"),  # trailing window dropped
        ConvCase("conv2d", 12, 112, 256, 32, 5, 1, "same", dtype="int8"),  # partial split instead of 4 < 5 rows
        ConvCase("conv2d", 4, 224, 512, 32, 3, 1, "same"),  # column windows: 3 rows of 224x512 fit no bank split
    ],
    ids=str,
)

def test_split_runs_on_the_simulator(case: ConvCase, rk3588_sim: dict[str, str]) -> None:
    from teflon import bridge

    model = case.build()
    inputs = random_inputs(model, seed=0)
    ref = run_cpu(model, inputs)
    with bridge.capture() as cap:
        run = run_delegate(model, inputs, **rk3588_sim)
    assert run.delegated == frozenset({0}), run.describe([0])
    (_, prog), = cap.programs
    assert len(prog.operations[0].tasks) > 1
    cmp = compare(ref, run.outputs)
    assert cmp.max_abs_diff <= 1 and cmp.exact_fraction >= 0.99, cmp
    assert np.array_equal(ref[0].shape, run.outputs[0].shape)
