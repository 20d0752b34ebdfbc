"""Simulated NPU performance counters (teflon.native Runner.task_counters, `profile`, TEFLON_DEBUG=perf).

- small convolutions: each task's counters equal the bytes the hardware layout implies, computed here from the
  shapes alone (features in 16-channel planes, packed weights, the bias / coefficient tables, output surfaces);
- the shared MobileNets on both rocket SoCs: `profile`'s per-layer totals equal the runner's own totals, the
  bytes written equal every layer's output in 16-channel planes (from the graph), and no layer whose weights fit
  the CBUF reads them from DRAM more than once;
- the CLI and the TEFLON_DEBUG=perf lines.
Ids: `rk3588-conv2d-in8x8x16-oc32-k3-s1-same-u8`, `rk3576-mobilenet_v1_0.75_192_quant`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from conftest import shared_path
from teflon.cli import main
from teflon.cli.profile import Profile, profile_session
from teflon.cli.session import open_interpreter
from teflon.modelgen import ConvCase

pytestmark = pytest.mark.usefixtures("delegate_library")

DEVICES = ["rk3588", "rk3576"]
CASES = [
    ConvCase("conv2d", 8, 8, 16, 32, 3, 1, "same"),
    ConvCase("dwconv", 8, 8, 32, None, 3, 1, "same"),
    ConvCase("conv2d", 9, 7, 20, 40, 1, 1, "same", dtype="int8"),
    ConvCase("conv2d", 16, 16, 48, 24, 3, 2, "valid"),
]
MODELS = ["mobilenet_v1_0.75_192_quant", "mobilenet_v2_1.0_224_quant"]


def _align16(n: int) -> int:
    return -(-n // 16) * 16


def _profile(model: bytes | str, device: str) -> Profile:
    return profile_session(open_interpreter(model, {"device": device, "sim": "1"}))


def _expected(case: ConvCase, device: str) -> dict[str, int]:
    """The bytes one task of `case` moves, from the shapes and the hardware layouts (rocket.md §4, §6;
    docs/hardware/rocket-rk3576.md coefficient table)."""
    dw = case.op == "dwconv"
    oc = case.in_c if dw else case.out_c
    k = case.kernel
    if case.padding == "same":
        oh, ow = -(-case.in_h // case.stride), -(-case.in_w // case.stride)
    else:
        oh, ow = (case.in_h - k) // case.stride + 1, (case.in_w - k) // case.stride + 1
    ic = _align16(case.in_c)
    if dw:
        weights = k * k * ic * (2 if device == "rk3576" else 1)  # RK3576 stores byte pairs
        macs = oh * ow * k * k * ic
    else:
        weights = oc * k * k * ic
        macs = oh * ow * k * k * ic * oc
    # RK3588: an int32 bias per channel; RK3576: groups of 8 channels (int32 A, int16 B unless depthwise,
    # int16 C) plus the 4-byte shift word
    bias = 4 * oc if device == "rk3588" else -(-oc // 8) * 8 * (4 + 2 * (1 if dw else 2)) + 4
    # RK3588 fetches every row of the input; RK3576 only the rows a window reads (VALID may leave trailing rows)
    rows = case.in_h if device == "rk3588" or case.padding == "same" else (oh - 1) * case.stride + k
    return {"feature_rd": rows * case.in_w * ic, "weight_rd": weights, "bias_rd": bias,
            "data_wr": oh * ow * _align16(oc), "macs": macs}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("device", DEVICES)
def test_small_conv_counters_exact(device: str, case: ConvCase) -> None:
    p = _profile(case.build(), device)
    assert len(p.layers) == 1 and len(p.layers[0].tasks) == 1, [layer.tasks for layer in p.layers]
    task = {k: v for k, v in p.layers[0].tasks[0].items() if k not in ("ns", "core", "start_ns", "macs_nz")}
    assert task == _expected(case, device)


def _model(name: str) -> str:
    root = shared_path()
    path = root / "models" / f"{name}.tflite" if root else None
    if path is None or not path.is_file():
        pytest.skip(f"../shared/models/{name}.tflite not available")
    return str(path)


@pytest.fixture(scope="module")
def profiles() -> dict[tuple[str, str], tuple[Profile, object]]:
    return {}


def _model_profile(cache: dict, name: str, device: str) -> tuple[Profile, object]:
    if (name, device) not in cache:
        session = open_interpreter(_model(name), {"device": device, "sim": "1"})
        cache[(name, device)] = (profile_session(session), session)
    return cache[(name, device)]


def runner_totals(session: Any) -> dict[str, int]:
    """The runner's own totals (C sums of every task) of the session's programs, run independently of `profile`
    (also used by tests/etnaviv/test_counters.py)."""
    from teflon.native import Device, Runner

    stats = {"feature_rd": 0, "weight_rd": 0, "bias_rd": 0, "data_wr": 0, "macs": 0}
    for _nodes, prog in session.capture.programs:
        with Device(prog.device, sim=True) as dev:
            runner = Runner(dev, prog)
            rng = np.random.default_rng(1)
            runner.run({b.tensor: rng.integers(0, 256, size=b.shape, dtype=np.uint8).view(b.dtype)
                        for b in runner.bindings if b.direction == "in"})
            for k, v in runner.stats().items():
                if k in stats:
                    stats[k] += v
            runner.close()
    return stats


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("device", DEVICES)
def test_profile_totals_equal_bytes_moved(device: str, name: str, profiles: dict) -> None:
    p, session = _model_profile(profiles, name, device)
    graph = session.capture.support[0][0]
    stats = runner_totals(session)
    totals = p.totals()
    assert {k: totals[k] for k in stats} == stats
    assert not p.other, "tasks that belong to no operation"
    # every output element written exactly once, in 16-channel planes
    written = sum(int(np.prod(graph.tensors[op_out].shape[1:3])) * _align16(graph.tensors[op_out].shape[3])
                  for layer in p.layers for op_out in [next(o for op in graph.operations if op.index == layer.nodes[-1]
                                                            for o in op.outputs)])
    assert totals["data_wr"] == written
    print(f"{name} on {device}: moved {totals['moved']} B, compulsory {totals['compulsory']} B, "
          f"traffic ratio {p.ratio():.3f}")


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("device", DEVICES)
def test_no_weight_reread_when_weights_fit(device: str, name: str, profiles: dict) -> None:
    p, _session = _model_profile(profiles, name, device)
    reread = [(layer.nodes, layer.kind, layer.weight_bytes, layer.moved["weight_rd"])
              for layer in p.layers if layer.weights_fit and layer.weight_reread]
    assert not reread, f"layers re-reading weights that fit the CBUF (nodes, op, weight bytes, bytes read): {reread}"


def test_profile_cli(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "conv.tflite"
    model.write_bytes(CASES[0].build())
    assert main(["profile", "--model", str(model), "--device", "rk3588", "--sim", "1", "--tasks"]) == 0
    out = capsys.readouterr().out
    exp = _expected(CASES[0], "rk3588")
    assert f"features read {exp['feature_rd']} B, weights read {exp['weight_rd']} B" in out
    assert "traffic ratio" in out and "task 1" in out
    assert main(["profile", "--model", str(model), "--device", "rk3576", "--sim", "1", "--json"]) == 0
    import json

    data = json.loads(capsys.readouterr().out)
    assert data["totals"]["data_wr"] == _expected(CASES[0], "rk3576")["data_wr"]


def test_debug_perf_prints_job_counters(tmp_path) -> None:
    model = tmp_path / "conv.tflite"
    model.write_bytes(CASES[0].build())
    code = ("import sys; from teflon.modelgen import random_inputs; from teflon.reference import run_delegate; "
            "m = open(sys.argv[1], 'rb').read(); run_delegate(m, random_inputs(m, seed=0), device='rk3588', sim='1')")
    env = {**os.environ, "TEFLON_DEBUG": "perf"}
    r = subprocess.run([sys.executable, "-c", code, str(model)], env=env, capture_output=True, text=True, check=False,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    exp = _expected(CASES[0], "rk3588")
    job = [line for line in r.stderr.splitlines() if "perf job 1/1 tasks=1" in line]
    assert job, r.stderr
    assert (f"feature_rd={exp['feature_rd']} weight_rd={exp['weight_rd']} bias_rd={exp['bias_rd']} "
            f"data_wr={exp['data_wr']} macs={exp['macs']}") in job[0]
    assert "not understood" not in r.stderr
