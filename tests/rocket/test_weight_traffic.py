"""Weight fetches of compiled rocket programs, read from their regcmd words (tests/rocket/traffic.py).

Issue 10's bar: no layer re-reads its weights from DRAM when they fit the on-chip buffer — MobileNetV1 0.75/192
and MobileNetV2 1.0/224 (uint8) on rk3588 and rk3576. A row-split layer keeps its weights in CBUF across its row
windows (rk3588: WEIGHT_REUSE, rocket.md §4.2; rk3576: NOT_FIRST_TASK, rocket-rk3576.md); an rk3576 layer cut
into kernel chunks loads each chunk's cube once and runs every window on it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import program_digest as pd
from rocket.traffic import OpTraffic, model_traffic
from teflon.modelgen import ConvCase

DEVICES = ("rk3588", "rk3576")
MODELS = ("mobilenet_v1_0.75_192_quant", "mobilenet_v2_1.0_224_quant")


def _traffic(model: bytes, device: str) -> list[OpTraffic]:
    return model_traffic([p for _, p in pd.delegate_programs(model, device)], device)


def _report(ops: list[OpTraffic]) -> None:
    for o in ops:
        if o.tasks > 1 or o.refetches_weights:
            print(o)
    print(f"{len(ops)} operations, {sum(o.tasks for o in ops)} tasks, "
          f"{sum(o.refetches_weights for o in ops)} re-fetch weights, "
          f"{sum(o.rows_refetched for o in ops)} input rows fetched twice")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("model", MODELS)
def test_model_weights_fetched_once(model: str, device: str, shared_dir: Path, delegate_library: None) -> None:
    path = shared_dir / "models" / f"{model}.tflite"
    if not path.exists():
        pytest.skip(f"{path} not found")
    ops = _traffic(path.read_bytes(), device)
    _report(ops)
    assert ops, "nothing ran on the NPU"
    refetch = [str(o) for o in ops if o.refetches_weights and o.fits]
    assert not refetch, "weights that fit the CBUF fetched again:\n" + "\n".join(refetch)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", [
    ConvCase("conv2d", 112, 112, 32, 64, 3, 2, "same", dtype="uint8"),  # row windows, weights resident
    ConvCase("dwconv", 112, 112, 32, None, 3, 1, "same", dtype="uint8"),  # rk3576: the vendor's 91-row window
    ConvCase("conv2d", 56, 56, 256, 48, 5, 1, "same", dtype="uint8"),  # rk3576: 3 kernel chunks x 3 windows
], ids=lambda c: c.name)
def test_layer_loads_each_cube_once(case: ConvCase, device: str, delegate_library: None) -> None:
    ops = _traffic(case.build(), device)
    _report(ops)
    assert len(ops) == 1
    op = ops[0]
    if op.fits or op.cubes > 1:
        assert op.weight_loads == op.cubes, str(op)
