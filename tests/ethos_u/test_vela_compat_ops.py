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
    assert res.ok, f"{case.name}:\n  " + "\n  ".join(res.diffs)


@pytest.mark.parametrize("case", op_sweeps.OPS, ids=lambda c: c.name)
def test_ops_match_vela(case: op_sweeps.Case) -> None:
    _check(case)


@pytest.mark.parametrize("case", op_sweeps.held_out(5, 12), ids=lambda c: c.name)
def test_ops_held_out_match_vela(case: op_sweeps.Case) -> None:
    _check(case)


@pytest.mark.slow
@pytest.mark.parametrize("case", op_sweeps.held_out(13, 80), ids=lambda c: c.name)
def test_ops_held_out_large_match_vela(case: op_sweeps.Case) -> None:
    _check(case)
