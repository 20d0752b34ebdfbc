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
    PARTIAL_WEIGHTS_DATA_BANKS,
    Geometry,
    Split,
    SplitError,
    entries_per_slice,
    split,
    weight_banks_required,
)


def geometry(h: int, w: int, c: int, oc: int, k: int, s: int, padding: str, depthwise: bool = False) -> Geometry:
    """TFLite SAME/VALID geometry (SAME: top/left get the smaller half of the padding)."""
    if padding == "valid":
        oh, ow, pads = (h - k) // s + 1, (w - k) // s + 1, (0, 0, 0, 0)
    else:
        oh, ow = -(-h // s), -(-w // s)
        th, tw = max((oh - 1) * s + k - h, 0), max((ow - 1) * s + k - w, 0)
        pads = (th // 2, th - th // 2, tw // 2, tw - tw // 2)
    return Geometry(h, w, c, oh, ow, c if depthwise else oc, k, k, s, *pads, depthwise)


def check_split(g: Geometry, sp: Split) -> None:
    """Each task computes a contiguous run of output rows from their receptive fields, within its data banks."""
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
        except SplitError as e:  # only a row too wide for the kernel's rows in any of Mesa's bank splits
            assert "the data banks hold at most" in str(e), (g, e)
            resident = CBUF_BANKS - weight_banks_required(g)
            assert entries_per_slice(w, c) * k > CBUF_ENTRIES_PER_BANK * max(resident, PARTIAL_WEIGHTS_DATA_BANKS), g
            continue
        check_split(g, sp)


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
    ("shape", "message"),
    [
        ((16, 224, 512, 32, 3, 1, "same"),
         "(224 wide, 512 channels) needs 896 CBUF entries: the data banks hold at most 2 rows, a 3x3 kernel needs 3"),
        ((16, 224, 256, 120, 5, 1, "same"),
         "(224 wide, 256 channels) needs 448 CBUF entries: the data banks hold at most 4 rows, a 5x5 kernel needs 5"),
    ],
)
def test_rows_wider_than_the_data_banks_are_refused(shape: tuple, message: str) -> None:
    with pytest.raises(SplitError, match=r"one input row .*") as e:
        split(geometry(*shape))
    assert message in str(e.value)


# End to end on the simulator: both new split shapes compute the CPU's numbers (within the requant tolerance).
@pytest.mark.parametrize(
    "case",
    [
        ConvCase("conv2d", 26, 56, 256, 64, 3, 2, "valid"),  # trailing window dropped
        ConvCase("conv2d", 12, 112, 256, 32, 5, 1, "same", dtype="int8"),  # partial split instead of 4 < 5 rows
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
