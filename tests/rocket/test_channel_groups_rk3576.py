"""RK3576 channel groups (python/teflon/rocket/rk3576/groups.py, docs/hardware/rocket-rk3576.md "Channel groups"): a
per-channel layer whose weight scales are too far apart for one 16-bit multiplier runs as several operations over
16-channel-plane ranges, each with its own multipliers, shift word and OUT_CVT, writing its planes of the one output
buffer. Each case prints the max and mean |diff|; the error bound per group is the whole layer's (1 LSB)."""

from __future__ import annotations

from pathlib import Path

import pytest

from opcheck import Recorder, check_delegated_conv
from teflon import bridge
from teflon.cli import main
from teflon.modelgen import ConvCase

# Scales clustered by plane (spread_planes): whole, each layer is refused; in groups it fits.
GROUP_CASES = [
    ConvCase("dwconv", 14, 14, 64, None, 3, 1, "same", dtype="int8", per_channel=True, scale_spread=1000.0,
             spread_planes=True, output_scale=os_, seed=seed)
    for os_, seed in ((0.008, 4), (0.008, 6), (0.015, 7), (0.008, 9))
] + [
    ConvCase("conv2d", 14, 14, 64, 64, 3, 1, "same", dtype="int8", per_channel=True, scale_spread=10000.0,
             spread_planes=True, output_scale=os_)
    for os_ in (0.01, 0.005)
]


@pytest.mark.parametrize("case", GROUP_CASES, ids=str)
def test_channel_groups(case: ConvCase, rk3576_sim: dict[str, str], record_property: Recorder) -> None:
    with bridge.capture() as cap:
        check_delegated_conv(case, rk3576_sim, record_property)
    (_, prog), = cap.programs
    assert len(prog.operations) > 1, "expected the layer to run as channel groups"
    assert {tuple(op.nodes) for op in prog.operations} == {(0,)}


@pytest.mark.parametrize(("case", "reason"), [
    (GROUP_CASES[0], "per-channel in 3 channel groups"),
    (ConvCase("dwconv", 14, 14, 64, None, 3, 1, "same", dtype="int8", per_channel=True, scale_spread=10000.0,
              spread_planes=True, output_scale=0.01), "even as a channel group of its own"),
], ids=str)
def test_inspect_says_why(case: ConvCase, reason: str, delegate_library: None, tmp_path: Path,
                          capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "m.tflite"
    model.write_bytes(case.build())
    assert main(["inspect", "--model", str(model), "--device", "rk3576", "--sim", "1"]) == 0
    assert reason in capsys.readouterr().out
