"""The real etnaviv kernel client (drivers/etnaviv/etna_kernel.c) without hardware: the delegate runs with sim=0
in a subprocess that preloads the etnaviv DRM shim (drivers/etnaviv/etna_shim.c, an LD_PRELOAD library like
Mesa's drm-shim). The shim answers the etnaviv UAPI on a fake /dev/dri/renderD128 from the simulated NPU and logs
every call it serves, so the tests check both the numbers (equal to the simulator's, within 1 LSB of the CPU)
and the ioctl sequence (VERSION, GET_PARAM, GEM_NEW/GEM_INFO/mmap, GEM_SUBMIT, WAIT_FENCE, GEM_CPU_PREP, ...).

Skipped, with the reason, when the shim is not built next to libteflon.so or the loader does not honour
LD_PRELOAD for this interpreter (tests/shim.py, shared with the rocket shim's tests).
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from shim import Shim, calls, find_shim, run_python, squash

# Runs in the preloaded subprocess: one conv with sim=0 (the kernel client through the shim), sim=1 (the
# simulator behind the simulated kernel) and on the CPU; the outputs go to an .npz for the test to compare.
_RUN = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from teflon import modelgen, reference

    device, out = sys.argv[1], sys.argv[2]
    model = modelgen.ConvCase("conv2d", 8, 8, 16, 24, kernel=3).build()
    inputs = modelgen.random_inputs(model, seed=3)
    real = reference.run_delegate(model, inputs, device=device, sim="0")
    sim = reference.run_delegate(model, inputs, device=device, sim="1")
    cpu = reference.run_cpu(model, inputs, cache=False)
    np.savez(out, real=real.outputs[0], sim=sim.outputs[0], cpu=cpu[0])
    print(json.dumps({"delegated": sorted(real.delegated)}))
    """
)

_OPEN = textwrap.dedent(
    """
    import sys, teflon
    from teflon.native import Device, NativeError
    try:
        d = Device(sys.argv[1], sim=False)
        print("OPENED sim", d.is_sim)
        d.close()
    except NativeError as e:
        print("REFUSED", e)
    print("AUTO sim", Device(sys.argv[1], sim=None).is_sim)
    """
)


@pytest.fixture(scope="module")
def preload_works(delegate_library: None, tmp_path_factory: pytest.TempPathFactory) -> Shim:
    """The etnaviv shim, honoured by this interpreter (skips otherwise)."""
    log = tmp_path_factory.mktemp("shim") / "probe.log"
    return find_shim("etnaviv", "libteflon_etna_shim.so", "TEFLON_ETNA_SHIM", "/dev/dri/renderD128", log, "a311d")


@pytest.mark.parametrize("device", ["a311d", "imx8mp"])
def test_conv_through_shim_equals_simulator(preload_works: Shim, tmp_path: Path, device: str) -> None:
    log, out = tmp_path / "calls.log", tmp_path / "out.npz"
    r = run_python(_RUN, preload_works.env(log, device), device, str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1])["delegated"] == [0], r.stdout + r.stderr
    res = np.load(out)
    np.testing.assert_array_equal(res["real"], res["sim"])
    assert np.abs(res["real"].astype(int) - res["cpu"].astype(int)).max() <= 1

    text = log.read_text()
    seen = calls(log)
    # the order of a device's life: find the node and the NPU core, create BOs, run, read back, free
    seq = squash(seen)
    first = {c: seq.index(c) for c in ("OPEN", "VERSION", "GET_PARAM", "GEM_NEW", "GEM_INFO", "MMAP", "GEM_SUBMIT",
                                       "WAIT_FENCE", "GEM_CPU_PREP", "GEM_CLOSE", "CLOSE")}
    assert first["OPEN"] < first["VERSION"] < first["GET_PARAM"] < first["GEM_NEW"] < first["GEM_INFO"] \
        < first["MMAP"] < first["GEM_SUBMIT"] < first["WAIT_FENCE"] < first["GEM_CPU_PREP"] < first["GEM_CLOSE"] \
        < first["CLOSE"], seq
    # every GEM_SUBMIT is a softpin submit to the NPU pipe, waited for with a bounded (absolute, ~5 s) timeout
    assert re.search(r"GET_PARAM pipe=0 param=0x1b = 0x400000", text), text
    submits = [line for line in text.splitlines() if line.startswith("GEM_SUBMIT")]
    assert submits and all("flags=0x8 = fence" in s and "HANG" not in s for s in submits), submits
    waits = [float(m) for m in re.findall(r"WAIT_FENCE pipe=0 fence=\d+ timeout=([\d.]+)s", text)]
    assert waits and all(3.0 < w <= 5.0 for w in waits), text
    assert all(" = error" not in line for line in text.splitlines()), text
    # every BO created is closed, every file opened is closed
    assert seen.count("GEM_NEW") == seen.count("GEM_CLOSE") and seen.count("OPEN") == seen.count("CLOSE"), seen


def test_npu_found_behind_a_gpu_core(preload_works: Shim, tmp_path: Path) -> None:
    """One etnaviv device holding a GPU (pipe 0) and the NPU (pipe 1): the client submits to pipe 1."""
    log, out = tmp_path / "calls.log", tmp_path / "out.npz"
    r = run_python(_RUN, preload_works.env(log, "imx8mp", TEFLON_ETNA_SHIM_GPU="1"), "imx8mp", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    res = np.load(out)
    np.testing.assert_array_equal(res["real"], res["sim"])
    text = log.read_text()
    assert "GET_PARAM pipe=0 param=0x1 = 0x7000" in text and "GET_PARAM pipe=1 param=0x2 = 0x8002" in text
    assert re.search(r"^GEM_SUBMIT pipe=1 ", text, re.MULTILINE) and not re.search(r"^GEM_SUBMIT pipe=0 ", text, re.MULTILINE)


def test_without_softpin_real_device_is_refused(preload_works: Shim, tmp_path: Path) -> None:
    """An MMUv1 kernel (SOFTPIN_START_ADDR = ~0): sim=0 is refused naming softpin; auto falls back."""
    r = run_python(_OPEN, preload_works.env(tmp_path / "calls.log", "a311d", TEFLON_ETNA_SHIM_NO_SOFTPIN="1"), "a311d")
    assert r.returncode == 0, r.stderr
    assert "REFUSED" in r.stdout and "softpin" in r.stdout, r.stdout
    assert "AUTO sim True" in r.stdout


def test_other_chip_is_not_taken(preload_works: Shim, tmp_path: Path) -> None:
    """The node holds the A311D's NPU: asking for the i.MX8MP's is refused, naming the core it saw."""
    log = tmp_path / "calls.log"
    r = run_python(_OPEN, preload_works.env(log, "a311d"), "imx8mp")
    assert r.returncode == 0, r.stderr
    assert "REFUSED" in r.stdout and "0x8000/0x7120" in r.stdout, r.stdout
    assert "AUTO sim True" in r.stdout
    assert "GEM_NEW" not in log.read_text()


def test_sim0_without_node_is_refused(delegate_library: None) -> None:
    if any(Path("/dev/dri").glob("renderD*")):
        pytest.skip("this machine has DRM render nodes")
    r = run_python(_OPEN, {k: v for k, v in os.environ.items() if not k.startswith("TEFLON_ETNA_SHIM")}, "a311d")
    assert r.returncode == 0, r.stderr
    assert "REFUSED" in r.stdout and "etnaviv" in r.stdout, r.stdout
    assert "AUTO sim True" in r.stdout


def _fake_etnaviv_sysfs(root: Path, soc_compatible: str) -> Path:
    """A render node bound to the etnaviv driver on an SoC with the given devicetree root compatible."""
    dev = root / "sys/devices/platform/soc/ff9a0000.npu"
    drv = root / "sys/bus/platform/drivers/etnaviv"
    node = root / "sys/class/drm/renderD128"
    for d in (dev, drv, node):
        d.mkdir(parents=True)
    (dev / "driver").symlink_to(os.path.relpath(drv, dev))
    (node / "device").symlink_to(os.path.relpath(dev, node))
    (root / "proc/device-tree").mkdir(parents=True)
    (root / "proc/device-tree/compatible").write_bytes(soc_compatible.replace(";", "\0").encode() + b"\0")
    return root


_AUTO = textwrap.dedent(
    """
    import teflon
    try:
        teflon.load_delegate(device="auto", sim="0")
        print("LOADED")
    except ValueError as e:
        print("REFUSED", e)
    """
)


@pytest.mark.parametrize(("soc", "expect"), [("radxa,zero2;amlogic,a311d;amlogic,g12b", "LOADED"),
                                             ("fsl,imx6q", "REFUSED")], ids=["a311d", "gpu-only-soc"])
def test_device_auto_finds_the_npu(preload_works: Shim, tmp_path: Path, soc: str, expect: str) -> None:
    """device=auto: an etnaviv render node counts only on an SoC a row names (the driver also runs GPUs); found,
    the real client (sim=0) opens it through the shim."""
    root = _fake_etnaviv_sysfs(tmp_path / "root", soc)
    log = tmp_path / "calls.log"
    r = run_python(_AUTO, preload_works.env(log, "a311d", TEFLON_SYSFS_ROOT=str(root)))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(expect), r.stdout + r.stderr
    served = log.read_text() if log.is_file() else ""
    assert ("OPEN /dev/dri/renderD128 (a311d)" in served) == (expect == "LOADED"), served


@pytest.mark.parametrize("soc", ["a311d", "imx8mp"])
def test_device_auto_through_the_shims_devicetree(preload_works: Shim, tmp_path: Path, soc: str) -> None:
    """Without a fake tree of the test's own, the shim shows the render node bound to etnaviv and the row's SoC
    compatible (drivers/shim_core.c): device=auto with sim=0 opens that SoC's NPU through it."""
    log = tmp_path / "calls.log"
    env = {k: v for k, v in preload_works.env(log, soc).items() if k != "TEFLON_SYSFS_ROOT"}
    r = run_python("import teflon\nteflon.load_delegate(device='auto', sim='0', debug='1')\n", env)
    assert r.returncode == 0, r.stderr
    assert f"delegate created for {soc} (NPU device node)" in r.stderr, r.stderr
    assert f"OPEN /dev/dri/renderD128 ({soc})" in log.read_text()
