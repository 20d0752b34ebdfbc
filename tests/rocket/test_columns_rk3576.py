"""RK3576 column windows (python/teflon/rocket/rk3576/split.py, docs/hardware/rocket-rk3576.md "Column windows"):
maps wider than the 13-bit width fields or whose kernel-tall stripe of rows overflows the data ring are cut into
one-output-row column windows; every output element is computed exactly once from exactly its receptive field.
The numbers are checked end to end by tests/rocket/test_ops.py::test_wide."""

from __future__ import annotations

import numpy as np
import pytest

from teflon.rocket.rk3576.split import MAX_WIDTH, RING_LIMIT, entries_per_row, needs_columns, split

from .graphs import geometry


@pytest.mark.parametrize(
    "shape",
    [
        (1, 8400, 64, 64, 1, 1, "same"),
        (2, 9000, 16, 16, 5, 1, "same", True),
        (4, 4100, 32, 32, 3, 2, "same", True),
        (3, 2500, 64, 32, 3, 2, "valid"),
        (6, 700, 256, 32, 5, 1, "same"),
        (5, 8195, 16, 16, 3, 2, "same"),
    ],
)

def test_column_windows_cover_every_output_once(shape: tuple) -> None:
    g = geometry(*shape)
    assert needs_columns(g)
    sp = split(g)
    count = np.zeros((g.out_h, g.out_w), np.int32)
    for w in sp.windows:
        assert w.out_rows == 1 and w.kept == 0 and w.read_origin == w.write_origin == 0, w
        assert w.cols <= MAX_WIDTH and w.out_cols <= MAX_WIDTH and 0 <= w.col0 and w.col0 + w.cols <= g.in_w, w
        assert w.col0 - w.pad_left == w.out_col0 * g.stride - g.pad_left, w
        assert w.top - w.pad_top == w.out_row0 * g.stride - g.pad_top, w
        assert (w.cols + w.pad_left + w.pad_right - g.kw) // g.stride + 1 == w.out_cols, w
        assert (w.rows + w.pad_top + w.pad_bottom - g.kh) // g.stride + 1 == 1, w
        assert max(w.pad_left, w.pad_right) < g.kw and max(w.pad_top, w.pad_bottom) < g.kh, w
        assert w.rows * entries_per_row(w.cols, g.in_c) <= RING_LIMIT, w
        count[w.out_row0, w.out_col0:w.out_col0 + w.out_cols] += 1
    assert (count == 1).all()


def test_maps_that_fit_keep_whole_rows() -> None:
    g = geometry(112, 112, 32, 64, 3, 2, "same")
    assert not needs_columns(g)
    assert all(w.cols == g.in_w and w.out_cols == g.out_w for w in split(g).windows)
