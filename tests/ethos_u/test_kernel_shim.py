"""The real accel/ethosu client (drivers/ethosu/ethosu_kernel.c) without hardware: the delegate runs with sim=0 in a
subprocess that preloads the ethosu shim (drivers/ethosu/ethosu_shim.c, an LD_PRELOAD library like Mesa's
drm-shim). The shim answers the accel/ethosu UAPI on a fake /dev/accel/accel0 from the simulated kernel and logs
every call it serves, so the tests check the ioctl sequence (VERSION, DEV_QUERY, BO_CREATE / BO_MMAP_OFFSET /
mmap, CMDSTREAM_BO_CREATE once per task, SUBMIT, BO_WAIT, GEM_CLOSE), the kernel's refusals as the client reports
them, and device=auto on the shim's fake sysfs (an accel device bound to "ethosu" with the i.MX93's compatibles).

Skipped, with the reason, when the shim is not built next to libteflon.so or the loader does not honour
LD_PRELOAD for this interpreter (tests/shim.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from fakesysfs import fake_ethosu_sysfs
from shim import Shim, calls, find_shim, run_python, squash

from . import programs
from .vela_models import CASES, CHAINS, models

# Runs in the preloaded subprocess: the Vela model with sim=0 (the client through the shim) and sim=1, invoked
# twice each; the outputs go to an .npz.
_RUN = textwrap.dedent(
    """
    import sys
    import numpy as np
    import teflon
    from teflon import modelgen, runtime

    vela, original, out = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read(), sys.argv[3]
    inputs = modelgen.random_inputs(original, seed=3)
    Interpreter = runtime.interpreter_module().Interpreter
    got = {}
    for sim in ("0", "1"):
        it = Interpreter(model_content=vela, experimental_delegates=[teflon.load_delegate(device="imx93", sim=sim)])
        it.allocate_tensors()
        for _ in range(2):
            for d, x in zip(it.get_input_details(), inputs):
                it.set_tensor(d["index"], x)
            it.invoke()
        got[sim] = it.get_tensor(it.get_output_details()[0]["index"])
        del it
    np.savez(out, real=got["0"], sim=got["1"])
    """
)

# Runs a program blob on the real client (sim=0) through the shim; prints the error.
_BLOB = textwrap.dedent(
    """
    import sys
    import numpy as np
    from teflon.native import Device, NativeError, Runner

    dev = Device("imx93", sim=False)
    r = Runner(dev, open(sys.argv[1], "rb").read())
    try:
        r.run({b.tensor: np.zeros(b.shape, b.dtype) for b in r.bindings if b.direction == "in"})
        print("RAN")
    except NativeError as e:
        print("REFUSED", e)
    r.close()
    dev.close()
    """
)

_AUTO = "import teflon\nteflon.load_delegate(device='auto', debug='1')\n"


@pytest.fixture(scope="module")
def ethosu_shim(delegate_library: None, tmp_path_factory: pytest.TempPathFactory) -> Shim:
    log = tmp_path_factory.mktemp("ethosu-shim") / "probe.log"
    return find_shim("ethosu", "libteflon_ethosu_shim.so", "TEFLON_ETHOSU_SHIM", "/dev/accel/accel0", log, "imx93")


@pytest.mark.parametrize(("case", "sram"), [(CASES[0], 0), (CHAINS[0], 14464)], ids=[CASES[0].name, CHAINS[0].name])
def test_vela_model_through_the_shim(ethosu_shim: Shim, tmp_path: Path, case: object, sram: int) -> None:
    original, vela = models(case)  # type: ignore[arg-type]
    (tmp_path / "vela.tflite").write_bytes(vela)
    (tmp_path / "orig.tflite").write_bytes(original)
    log, out = tmp_path / "calls.log", tmp_path / "out.npz"
    r = run_python(_RUN, ethosu_shim.env(log, "imx93"), str(tmp_path / "vela.tflite"), str(tmp_path / "orig.tflite"),
                   str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    res = np.load(out)
    np.testing.assert_array_equal(res["real"], res["sim"])

    text = log.read_text()
    seen = calls(log)
    seq = squash(seen)
    order = ("OPEN", "VERSION", "DEV_QUERY", "BO_CREATE", "BO_MMAP_OFFSET", "MMAP", "CMDSTREAM_BO_CREATE", "SUBMIT",
             "BO_WAIT", "GEM_CLOSE", "CLOSE")
    first = [seq.index(c) for c in order]
    assert first == sorted(first), seq
    # the task's command stream is validated once and reused by the second invoke
    assert seen.count("CMDSTREAM_BO_CREATE") == 1 and seen.count("SUBMIT") == 2, seen
    # Vela's regions: read-only (0) and arena (1) BOs; the fast scratch in the NPU's SRAM (no BO for region 2)
    assert all(re.search(rf"SUBMIT jobs=1 cmd=\d+ sram={sram} r0=\d+ r1=\d+ = ok$", s)
               for s in text.splitlines() if s.startswith("SUBMIT")), text
    assert all(" = ok" in s for s in text.splitlines() if s.split()[0] in ("BO_CREATE", "BO_WAIT", "DEV_QUERY")), text
    # every BO (plain and command stream) is closed, every file opened is closed
    assert seen.count("BO_CREATE") + seen.count("CMDSTREAM_BO_CREATE") == seen.count("GEM_CLOSE"), seen
    assert seen.count("OPEN") == seen.count("CLOSE"), seen


@pytest.mark.parametrize(("edit", "words"), [
    (programs.ofm_past_the_arena, r"SUBMIT refused the job: a region's BO is smaller .*Value too large"),
    (programs.ofm_region_unset, r"refused the command stream \(DRM_IOCTL_ETHOSU_CMDSTREAM_BO_CREATE.*Invalid argument"),
], ids=["ofm-past-bo-eoverflow", "ofm-region-unset-einval"])
def test_invalid_stream_refused_by_the_kernel(ethosu_shim: Shim, tmp_path: Path, edit: object, words: str) -> None:
    blob = tmp_path / "prog.bin"
    blob.write_bytes(programs.program(edit(programs.vela_op(CASES[0].build()))).to_blob())  # type: ignore[operator]
    log = tmp_path / "calls.log"
    r = run_python(_BLOB, ethosu_shim.env(log, "imx93"), str(blob))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("REFUSED") and re.search(words, r.stdout), r.stdout
    assert re.search(r"^(SUBMIT|CMDSTREAM_BO_CREATE) .* = (Value too large|Invalid argument)", log.read_text(),
                     re.MULTILINE), log.read_text()


def test_device_auto_finds_the_shims_npu(ethosu_shim: Shim, tmp_path: Path) -> None:
    r = run_python(_AUTO, ethosu_shim.env(tmp_path / "calls.log", "imx93"))
    assert r.returncode == 0, r.stderr
    assert "delegate created for imx93 (NPU device node)" in r.stderr, r.stderr


def _auto(root: Path) -> subprocess.CompletedProcess[str]:
    code = ("import teflon\ntry:\n    teflon.load_delegate(device='auto', debug='1')\nexcept ValueError as e:\n"
            "    print('refused:', e)\n")
    return subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TEFLON_SYSFS_ROOT": str(root)})


def test_device_auto_on_a_fake_sysfs(delegate_library: None, tmp_path: Path) -> None:
    """The i.MX93's NPU bound to accel/ethosu (no node in /dev here: its simulator serves)."""
    r = _auto(fake_ethosu_sysfs(tmp_path, "fsl,imx93-npu;arm,ethos-u65"))
    assert r.returncode == 0, r.stderr
    assert "delegate created for imx93 (simulated NPU)" in r.stderr, r.stdout + r.stderr


def test_device_auto_refuses_an_unknown_ethos_u(delegate_library: None, tmp_path: Path) -> None:
    r = _auto(fake_ethosu_sysfs(tmp_path, "vendor,soc-npu;arm,ethos-u85"))
    assert r.returncode == 0, r.stderr
    assert "refused:" in r.stdout and "vendor,soc-npu" in r.stdout, r.stdout + r.stderr
