"""RK3566/RK3568 before its simulator exists: registry rows, the delegate's refusal, and claims.

The generation's encoder writes programs (tests/rocket/test_golden_rk3568.py compares them with Rockchip's), but
nothing executes them yet, so the rows are not drivable: the delegate refuses the device with a clear message,
and the family's support decision claims nothing (every node stays on the CPU with a reason that says what the
encoder would do). The op sweeps and the generic suites run over drivable rows only, which is why they leave
these two out.
"""

from __future__ import annotations

import pytest

from teflon import compiler, targets
from teflon.modelgen import ConvCase

from .graphs import conv_graph

ROWS = ["rk3568", "rk3566"]


def test_rows_share_one_generation() -> None:
    rows = [targets.get(n) for n in ROWS]
    assert {r.generation for r in rows} == {"rk3568"}
    assert all(r.family == "rocket" and r.cores == 1 and not r.drivable for r in rows)
    assert all(r.compatibles == ("rockchip,rk3568-rknn-core",) for r in rows)
    assert len({r.blob_id for r in targets.TARGETS}) == len(targets.TARGETS)


@pytest.mark.parametrize("device", ROWS)
def test_delegate_refuses_the_device(device: str, delegate_library: None) -> None:
    import teflon

    with pytest.raises(ValueError, match=f"device={device} .*not supported by this build yet"):
        teflon.load_delegate(device=device, sim="1")


@pytest.mark.parametrize("device", ROWS)
def test_nothing_is_claimed(device: str) -> None:
    encodable = conv_graph(ConvCase("conv2d", 16, 16, 32, out_c=32))
    too_big = conv_graph(ConvCase("conv2d", 112, 112, 64, out_c=64))  # four row bands, two of them delta tasks
    for g, verdict in ((encodable, "the encoder would write it as 1 task"), (too_big, "as 4 tasks")):
        (claimed, why), = compiler.supported(g, device).values()
        assert not claimed
        assert "no simulator" in why and verdict in why, why
