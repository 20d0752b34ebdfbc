"""Injected NPU faults (docs/faults.md): TEFLON_SIM_FAULT=kind[@N] makes the Nth submit of a simulated device fail
the way a board's kernel reports it. Each case runs a three-convolution model in a subprocess (the variable is
read when the device is opened) and invokes it three times: the faulting invoke must raise RuntimeError naming
the partition, the job/task and the fault; every other invoke must equal TFLite's CPU kernels; the process must
end normally. The etnaviv cases also go through the real kernel client (sim=0) over the LD_PRELOAD ioctl shim,
which fails the GEM_SUBMIT's fence with the errno the kernel would give, so the client's error mapping is tested.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import teflon
from conftest import build_c_test
from etnaviv.test_kernel_shim import preload_works  # noqa: F401  (fixture)
from rocket.graphs import conv_graph
from shim import Shim, rocket_shim
from teflon import compiler
from teflon.modelgen import ConvCase, GraphBuilder, add_conv, conv_params, random_inputs
from teflon.reference import compare, run_cpu

KINDS = ("timeout", "dma_read", "dma_write", "iommu", "lost_irq")
# one rocket generation with an interrupt completion, one with a polled completion, one etnaviv SoC
DEVICES = ("rk3588", "rk3576", "a311d")
INVOKES = 3

# What the simulated kernels say for each kind (after "job J of N, task T of M: ").
SIM_WORDS = {
    "timeout": r"NPU job timed out: no (DPU )?completion",
    "lost_irq": r"NPU job timed out: the (task|stream) completed but its .* never came",
    "dma_read": r"DMA read error",
    "dma_write": r"DMA write error",
    "iommu": r"IOMMU page fault at 0x[0-9a-f]{8}",
}
# What the real etnaviv client makes of the errno the shim returns from WAIT_FENCE.
CLIENT_WORDS = {
    "timeout": r"NPU job timed out: fence \d+ did not signal within 5 s",
    "lost_irq": r"NPU job timed out: fence \d+ did not signal within 5 s",
    "dma_read": r"NPU job failed with an I/O error",
    "dma_write": r"NPU job failed with an I/O error",
    "iommu": r"NPU job failed: bad device address \(IOMMU page fault\)",
}
PARTITION = r"teflon: partition 0 \(3 nodes, 0-2\): the NPU job failed: job \d+ of \d+, task \d+ of \d+: "
# The real rocket client learns of a failed job from PREP_BO on the BO it writes, so it names that job's output.
ROCKET_CLIENT_PARTITION = r"teflon: partition 0 \(3 nodes, 0-2\): the NPU job failed: job \d+ of \d+ \(writes t\d+\): "

# Runs in the subprocess: INVOKES invokes of the model on one delegate; per invoke the error text or the output.
_RUN = textwrap.dedent(
    """
    import json, sys, time
    import numpy as np
    import teflon
    from teflon import reference
    from teflon.runtime import make_interpreter

    model, inputs, device, sim, out = sys.argv[1:6]
    x = [np.load(inputs)["x"]]
    try:
        delegate = teflon.load_delegate(device=device, sim=sim)
    except ValueError as e:
        print(json.dumps({"open_error": str(e)}))
        sys.exit(0)
    interp = make_interpreter(open(model, "rb").read(), [delegate], reference=True)
    results, outputs = [], {}
    for i in range(int(sys.argv[6])):
        t0 = time.perf_counter()
        try:
            outputs[f"out{i}"] = reference.invoke(interp, x)[0]
            results.append({"ok": True, "seconds": time.perf_counter() - t0})
        except RuntimeError as e:
            results.append({"ok": False, "error": str(e), "seconds": time.perf_counter() - t0})
    np.savez(out, **outputs)
    print(json.dumps({"invokes": results}))
    """
)


def chain_model(n: int = 3) -> bytes:
    """n 3x3 convolutions in a row: one partition of several jobs (rocket: one per convolution)."""
    cases = [ConvCase("conv2d", 8, 8, 8, 8, kernel=3, seed=i) for i in range(n)]
    g = GraphBuilder(f"teflon tests: {n} chained convolutions")
    params = conv_params(cases[0], cases[0].rng())
    x = t = g.tensor("input", cases[0].input_shape, cases[0].dtype, params.input_quant)
    for i, case in enumerate(cases):
        if i:
            params = conv_params(case, case.rng(), g.quant(t))
        t = add_conv(g, case, t, params, f"conv{i}")
    return g.build([x], [t])


def _run(tmp_path: Path, device: str, sim: str, env: dict[str, str]) -> tuple[dict, np.lib.npyio.NpzFile, list]:
    model = chain_model()
    inputs = random_inputs(model, seed=1)
    (tmp_path / "model.tflite").write_bytes(model)
    np.savez(tmp_path / "inputs.npz", x=inputs[0])
    r = subprocess.run([sys.executable, "-c", _RUN, str(tmp_path / "model.tflite"), str(tmp_path / "inputs.npz"),
                        device, sim, str(tmp_path / "out.npz"), str(INVOKES)],
                       check=False, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout.strip().splitlines()[-1])
    report["stderr"] = r.stderr
    outputs = np.load(tmp_path / "out.npz") if "invokes" in report else None
    return report, outputs, run_cpu(model, inputs)


def _check(report: dict, outputs: np.lib.npyio.NpzFile, ref: list, failing: int, words: str,
           prefix: str = PARTITION) -> None:
    invokes = report["invokes"]
    print(" ".join(f"invoke {i + 1}: {'ok' if r['ok'] else 'error'} {r['seconds'] * 1e3:.2f} ms"
                   for i, r in enumerate(invokes)))
    for i, r in enumerate(invokes):
        if i + 1 == failing:
            assert not r["ok"], f"invoke {i + 1} should have failed: {report['stderr']}"
            assert re.search(prefix + words, r["error"]), r["error"]
        else:
            assert r["ok"], r.get("error")
            cmp = compare(ref, [outputs[f"out{i}"]])
            assert cmp.max_abs_diff <= 1 and cmp.within(1, 0.995), f"invoke {i + 1}: {cmp}"


def _fault_env(spec: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k != "TEFLON_DEBUG"}, "TEFLON_SIM_FAULT": spec}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", KINDS)
def test_sim_fault_raises_then_next_invoke_is_right(delegate_library: None, tmp_path: Path, device: str,
                                                      kind: str) -> None:
    report, outputs, ref = _run(tmp_path, device, "1", _fault_env(kind))
    _check(report, outputs, ref, 1, SIM_WORDS[kind] + rf".* \(simulated fault '{kind}'\)")


@pytest.mark.parametrize("device", DEVICES)
def test_sim_fault_at_a_later_submit(delegate_library: None, tmp_path: Path, device: str) -> None:
    report, outputs, ref = _run(tmp_path, device, "1", _fault_env("dma_write@2"))
    _check(report, outputs, ref, 2, SIM_WORDS["dma_write"] + r".* \(simulated fault 'dma_write'\)")


def test_sim_fault_after_the_last_submit_never_fires(delegate_library: None, tmp_path: Path) -> None:
    report, outputs, ref = _run(tmp_path, "rk3588", "1", _fault_env(f"timeout@{INVOKES + 1}"))
    _check(report, outputs, ref, 0, "")


@pytest.mark.parametrize("spec", ["bogus", "timeout@0", "iommu@", "dma_read@2x", "@3", "lost_irq@99999999999"])
@pytest.mark.parametrize("device", ["rk3588", "a311d"])
def test_malformed_fault_refused_at_open(delegate_library: None, monkeypatch: pytest.MonkeyPatch, device: str,
                                         spec: str) -> None:
    from teflon.native import Device, NativeError

    monkeypatch.setenv("TEFLON_SIM_FAULT", spec)
    with pytest.raises(NativeError, match=rf'TEFLON_SIM_FAULT="{re.escape(spec)}": .*(kind\[@N\]|submit number)'):
        Device(device, sim=True)


@pytest.mark.parametrize("kind", KINDS)
def test_real_etnaviv_client_maps_kernel_errors(preload_works: Shim, tmp_path: Path, kind: str) -> None:  # noqa: F811
    """sim=0: the real client over the shim; the shim's Nth GEM_SUBMIT faults (one per task)."""
    env = preload_works.env(tmp_path / "calls.log", "a311d", TEFLON_SIM_FAULT=kind)
    env.pop("TEFLON_DEBUG", None)
    report, outputs, ref = _run(tmp_path, "a311d", "0", env)
    _check(report, outputs, ref, 1, CLIENT_WORDS[kind])
    log = (tmp_path / "calls.log").read_text()
    assert f"FAULT {kind} on fence 1" in log, log
    assert re.search(r"^WAIT_FENCE pipe=0 fence=1 timeout=[\d.]+s = error$", log, re.MULTILINE), log
    calls = [line.split()[0] for line in log.splitlines()]
    assert calls.count("GEM_NEW") == calls.count("GEM_CLOSE"), calls


@pytest.fixture(scope="module")
def fault_leaks_binary(delegate_library: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_c_test("test_fault_leaks", tmp_path_factory.mktemp("faults"))


@pytest.mark.parametrize("device", ["rk3588", "a311d"])
@pytest.mark.parametrize("kind", KINDS)
def test_fault_frees_everything_from_c(fault_leaks_binary: Path, tmp_path: Path, device: str, kind: str) -> None:
    """No Python in the process: under the ASan stage (libasan preloaded) leak detection is turned on here."""
    case = ConvCase("conv2d", 8, 8, 8, 8, kernel=3)
    blob = tmp_path / "program.blob"
    blob.write_bytes(compiler.compile(conv_graph(case), [0], [0], [3], device).to_blob())
    env = {**os.environ, "TEFLON_SIM_FAULT": kind}
    if "libasan" in env.get("LD_PRELOAD", ""):
        env["ASAN_OPTIONS"] = "detect_leaks=1"
    size = int(np.prod(case.input_shape)), int(np.prod(case.output_shape))
    r = subprocess.run([str(fault_leaks_binary), teflon.delegate_path(), device, str(blob), "0", str(size[0]), "3",
                        str(size[1]), kind], check=False, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0 and "all checks passed" in r.stdout, r.stdout + r.stderr


ROCKET_CLIENT_WORDS = {
    "timeout": r"NPU job timed out: no completion within 5 s \(DRM_IOCTL_ROCKET_PREP_BO",
    "lost_irq": r"NPU job timed out: no completion within 5 s \(DRM_IOCTL_ROCKET_PREP_BO",
    "dma_read": r"NPU job failed with an I/O error .*\(DRM_IOCTL_ROCKET_PREP_BO",
    "dma_write": r"NPU job failed with an I/O error .*\(DRM_IOCTL_ROCKET_PREP_BO",
    "iommu": r"NPU job failed: bad device address \(IOMMU page fault\) \(DRM_IOCTL_ROCKET_PREP_BO",
}


@pytest.fixture(scope="module")
def rocket_preload(delegate_library: None, tmp_path_factory: pytest.TempPathFactory) -> Shim:
    return rocket_shim(tmp_path_factory)


@pytest.mark.parametrize("kind", KINDS)
def test_real_rocket_client_maps_kernel_errors(rocket_preload: Shim, tmp_path: Path, kind: str) -> None:
    """sim=0: the real rocket client over the rocket shim; the simulated kernel's fault reaches the client as the
    errno of PREP_BO on the BO the failed job writes (ETIMEDOUT, EIO or EFAULT)."""
    env = rocket_preload.env(tmp_path / "calls.log", "rk3588", TEFLON_SIM_FAULT=kind)
    env.pop("TEFLON_DEBUG", None)
    report, outputs, ref = _run(tmp_path, "rk3588", "0", env)
    _check(report, outputs, ref, 1, ROCKET_CLIENT_WORDS[kind], ROCKET_CLIENT_PARTITION)
