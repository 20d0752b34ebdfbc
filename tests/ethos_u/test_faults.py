"""Injected NPU faults on the ethosu family (docs/faults.md): TEFLON_SIM_FAULT=kind@2 makes the second job of the
simulated accel/ethosu kernel fail the way a board reports it. A Vela model is invoked three times in a
subprocess: the second invoke must raise RuntimeError naming the job and the fault, the others must run, and the
process must end normally. sim=1 learns of the fault from the simulated kernel at once; the real client over the
ioctl shim (sim=0) learns of it from BO_WAIT on the BO the job wrote, with the errno the kernel would give."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from shim import Shim, find_shim

from .vela_models import CASES, models

KINDS = ("timeout", "dma_read", "dma_write", "iommu", "lost_irq")
INVOKES = 3
SIM_WORDS = {
    "timeout": r"NPU job timed out: no completion",
    "lost_irq": r"NPU job timed out: the stream completed but its interrupt never came",
    "dma_read": r"DMA read error",
    "dma_write": r"DMA write error",
    "iommu": r"IOMMU page fault at 0x[0-9a-f]{8}",
}
CLIENT_WORDS = {
    "timeout": r"NPU job timed out: no completion within 5 s \(DRM_IOCTL_ETHOSU_BO_WAIT",
    "lost_irq": r"NPU job timed out: no completion within 5 s \(DRM_IOCTL_ETHOSU_BO_WAIT",
    "dma_read": r"NPU job failed with an I/O error",
    "dma_write": r"NPU job failed with an I/O error",
    "iommu": r"NPU job failed: bad device address \(IOMMU page fault\)",
}

_RUN = textwrap.dedent(
    """
    import json, sys
    import teflon
    from teflon import modelgen, reference
    from teflon.runtime import make_interpreter

    vela, original, sim, n = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read(), sys.argv[3], sys.argv[4]
    x = modelgen.random_inputs(original, seed=1)
    interp = make_interpreter(vela, [teflon.load_delegate(device="imx93", sim=sim)], reference=True)
    results = []
    for i in range(int(n)):
        try:
            reference.invoke(interp, x)
            results.append({"ok": True})
        except RuntimeError as e:
            results.append({"ok": False, "error": str(e)})
    print(json.dumps(results))
    """
)


def _run(tmp_path: Path, sim: str, env: dict[str, str]) -> list[dict]:
    original, vela = models(CASES[0])
    (tmp_path / "vela.tflite").write_bytes(vela)
    (tmp_path / "orig.tflite").write_bytes(original)
    r = subprocess.run([sys.executable, "-c", _RUN, str(tmp_path / "vela.tflite"), str(tmp_path / "orig.tflite"), sim,
                        str(INVOKES)], check=False, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _check(results: list[dict], words: str) -> None:
    assert [r["ok"] for r in results] == [True, False, True], results
    assert re.search(r"teflon: partition 0 .*the NPU job failed: .*" + words, results[1]["error"]), results[1]


def _env(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k != "TEFLON_DEBUG"}, **extra}


@pytest.mark.parametrize("kind", KINDS)
def test_sim_fault_fails_one_invoke(delegate_library: None, tmp_path: Path, kind: str) -> None:
    _check(_run(tmp_path, "1", _env(TEFLON_SIM_FAULT=f"{kind}@2")), r"job 1 of 1, task 1 of 1: " + SIM_WORDS[kind])


@pytest.fixture(scope="module")
def ethosu_shim(delegate_library: None, tmp_path_factory: pytest.TempPathFactory) -> Shim:
    log = tmp_path_factory.mktemp("ethosu-shim") / "probe.log"
    return find_shim("ethosu", "libteflon_ethosu_shim.so", "TEFLON_ETHOSU_SHIM", "/dev/accel/accel0", log, "imx93")


@pytest.mark.parametrize("kind", KINDS)
def test_real_client_maps_kernel_errors(ethosu_shim: Shim, tmp_path: Path, kind: str) -> None:
    env = ethosu_shim.env(tmp_path / "calls.log", "imx93", TEFLON_SIM_FAULT=f"{kind}@2")
    _check(_run(tmp_path, "0", _env(**{k: v for k, v in env.items() if k != "TEFLON_DEBUG"})), CLIENT_WORDS[kind])
