"""Simulated etnaviv traffic counters (drivers/etnaviv: etna_mem_access) through teflon.native, `profile` and
TEFLON_DEBUG=perf, on A311D (v7) and i.MX8MP (v8).

- small convolutions: the one task (the partition's command stream: TP transpose, NN, TP detranspose) reads
  exactly the program's coefficient buffer as weights, and moves the features and outputs the three jobs imply
  from the shapes alone; its MACs with a non-zero weight (`macs_nz`, the board estimate's input) are the output
  pixels times the model's weights that differ from their zero point (v7's dense depthwise form adds none);
- MobileNetV1 0.25: `profile`'s totals equal the runner's own C totals, and every coefficient buffer is read
  exactly once per inference;
- the CLI (`n/a` for the re-read check: no on-chip weight limit is modelled) and the TEFLON_DEBUG=perf lines.
Ids: `a311d-conv2d-in8x8x16-oc32-k3-s1-same-u8`.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import tflite

from conftest import shared_path
from teflon.cli import main
from teflon.cli.profile import Profile, profile_session
from teflon.cli.session import Session, open_interpreter
from teflon.modelgen import ConvCase

pytestmark = pytest.mark.usefixtures("delegate_library")

DEVICES = ["a311d", "imx8mp"]
CASES = [
    ConvCase("conv2d", 8, 8, 16, 32, 3, 1, "same"),
    ConvCase("dwconv", 8, 8, 32, None, 3, 1, "same"),
    ConvCase("conv2d", 9, 7, 20, 40, 1, 1, "same"),
]


def _session(model: bytes | str, device: str) -> Session:
    return open_interpreter(model, {"device": device, "sim": "1"})


def _coefficient_bytes(session: Session) -> int:
    """The bytes of every coefficient buffer the compiled programs hold (what their NN jobs read)."""
    return sum(len(b.data or b"") for _nodes, prog in session.capture.programs for b in prog.buffers
               if b.name.endswith(".coefficients"))


def _expected(case: ConvCase, device: str) -> dict[str, int]:
    """Features, outputs and MACs of the transpose (reads the NHWC input, writes it planar), the stride-1 NN
    job (reads the unpadded planes, the border is a constant; writes the output planes) and the detranspose
    (reads the planes, writes the NHWC output)."""
    dw = case.op == "dwconv"
    oc = case.in_c if dw else case.out_c
    in_bytes = case.in_h * case.in_w * case.in_c
    out_bytes = case.in_h * case.in_w * oc  # SAME, stride 1
    # v7 has no depthwise mode: the NN job is a full convolution over every input plane (zero weights elsewhere)
    taps = case.kernel * case.kernel * (1 if dw and device == "imx8mp" else case.in_c)
    return {"feature_rd": 2 * in_bytes + out_bytes, "bias_rd": 0, "data_wr": in_bytes + 2 * out_bytes,
            "macs": case.in_h * case.in_w * oc * taps}


def _nonzero_weights(model: bytes) -> int:
    """Weights of the model's one convolution that differ from the weight zero point (from the flatbuffer)."""
    m = tflite.Model.GetRootAsModel(model, 0)
    sg = m.Subgraphs(0)
    op = next(sg.Operators(i) for i in range(sg.OperatorsLength()) if sg.Operators(i).InputsLength() == 3)
    w = sg.Tensors(int(op.Inputs(1)))
    data = m.Buffers(w.Buffer()).DataAsNumpy()
    return int(np.count_nonzero(data.view(np.uint8).astype(np.int32) != int(w.Quantization().ZeroPoint(0))))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("device", DEVICES)
def test_small_conv_counters_exact(device: str, case: ConvCase) -> None:
    model = case.build()
    session = _session(model, device)
    p = profile_session(session)
    assert len(p.layers) == 1 and len(p.layers[0].tasks) == 1, [layer.tasks for layer in p.layers]
    task = {k: v for k, v in p.layers[0].tasks[0].items() if k not in ("ns", "core", "start_ns")}
    # SAME, stride 1: every weight is applied once per output pixel
    nz = case.in_h * case.in_w * _nonzero_weights(model)
    assert task == {**_expected(case, device), "weight_rd": _coefficient_bytes(session), "macs_nz": nz}
    assert p.layers[0].weights_fit is None and p.layers[0].weight_bytes == task["weight_rd"]


@pytest.fixture(scope="module")
def profiles() -> dict[str, tuple[Profile, Session]]:
    return {}


def _model_profile(cache: dict, device: str) -> tuple[Profile, Session]:
    root = shared_path()
    path = root / "models" / "mobilenet_v1_0.25_128_quant.tflite" if root else None
    if path is None or not path.is_file():
        pytest.skip("../shared/models/mobilenet_v1_0.25_128_quant.tflite not available")
    if device not in cache:
        session = _session(str(path), device)
        cache[device] = (profile_session(session), session)
    return cache[device]


@pytest.mark.parametrize("device", DEVICES)
def test_mobilenet_profile_totals_equal_runner(device: str, profiles: dict) -> None:
    from test_profile import runner_totals

    p, session = _model_profile(profiles, device)
    stats = runner_totals(session)
    totals = p.totals()
    assert {k: totals[k] for k in stats} == stats
    assert totals["weight_rd"] == _coefficient_bytes(session), "a coefficient buffer read other than once"
    assert totals["feature_rd"] and totals["data_wr"] and totals["macs"]
    print(f"mobilenet_v1_0.25_128 on {device}: moved {totals['moved']} B, compulsory {totals['compulsory']} B, "
          f"traffic ratio {p.ratio():.3f}")


def test_profile_cli_says_na_for_reread(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "conv.tflite"
    model.write_bytes(CASES[0].build())
    assert main(["profile", "--model", str(model), "--device", "a311d", "--sim", "1", "--tasks"]) == 0
    out = capsys.readouterr().out
    exp = _expected(CASES[0], "a311d")
    assert f"features read {exp['feature_rd']} B" in out and f"written {exp['data_wr']} B" in out
    assert "weights that fit the on-chip buffer: n/a" in out and "task 1" in out


@pytest.mark.parametrize("device", DEVICES)
def test_debug_perf_prints_job_counters(device: str, tmp_path) -> None:
    case = CASES[0]
    model = tmp_path / "conv.tflite"
    model.write_bytes(case.build())
    code = ("import sys; from teflon.modelgen import random_inputs; from teflon.reference import run_delegate; "
            "m = open(sys.argv[1], 'rb').read(); run_delegate(m, random_inputs(m, seed=0), device=sys.argv[2], "
            "sim='1')")
    env = {**os.environ, "TEFLON_DEBUG": "perf"}
    r = subprocess.run([sys.executable, "-c", code, str(model), device], env=env, capture_output=True, text=True,
                       check=False, timeout=300)
    assert r.returncode == 0, r.stderr
    exp = {**_expected(case, device), "weight_rd": _coefficient_bytes(_session(case.build(), device))}
    job = [line for line in r.stderr.splitlines() if "perf job 1/1 tasks=1" in line]
    assert job, r.stderr
    assert (f"feature_rd={exp['feature_rd']} weight_rd={exp['weight_rd']} bias_rd=0 data_wr={exp['data_wr']} "
            f"macs={exp['macs']}") in job[0]
