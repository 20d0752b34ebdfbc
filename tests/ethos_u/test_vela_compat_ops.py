"""teflon's --vela-compat compile against Vela 5.2.0 (live) for MAXIMUM / MINIMUM, two-map broadcast ADD / SUB /
MUL, HARD_SWISH, the standalone RELU variants and QUANTIZE (tests/ethos_u/op_sweeps.py): the register state at
every kick, placement aside, and the LUT bytes (tests/ethos_u/kick_oracle.py)."""

from __future__ import annotations

import pytest

from . import kick_oracle, op_sweeps

if kick_oracle.VELA is None:
    pytest.skip("ethos-u-vela (5.2.0) is not installed", allow_module_level=True)


def _check(case: op_sweeps.Case) -> None:
    res = kick_oracle.compare(case.build())
    diffs = res.diffs
    if getattr(case, "op", None) == "mean":  # the sums' region only (op_sweeps.MEAN_SUMS)
        diffs = [d for d in diffs if d not in ("kick 0 OFM_REGION: teflon {'region': 1} vela {'region': 2}",
                                               "kick 1 IFM_REGION: teflon {'region': 1} vela {'region': 2}")]
    assert not diffs and res.kicks[0] == res.kicks[1], f"{case.name}:\n  " + "\n  ".join(diffs)


@pytest.mark.parametrize("case", op_sweeps.OPS, ids=lambda c: c.name)
def test_ops_match_vela(case: op_sweeps.Case) -> None:
    _check(case)


@pytest.mark.parametrize("case", op_sweeps.held_out(5, 6), ids=lambda c: c.name)
def test_ops_held_out_match_vela(case: op_sweeps.Case) -> None:
    _check(case)


@pytest.mark.slow
@pytest.mark.parametrize("case", op_sweeps.held_out(13, 80), ids=lambda c: c.name)
def test_ops_held_out_large_match_vela(case: op_sweeps.Case) -> None:
    _check(case)
