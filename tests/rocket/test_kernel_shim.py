"""The real accel/rocket kernel client (drivers/rocket/rocket_kernel.c) without hardware: the delegate runs with
sim=0 in a subprocess that preloads the rocket ioctl shim (drivers/rocket/rkt_shim.c over drivers/shim_core.c, an
LD_PRELOAD library like Mesa's drm-shim, docs/shim.md). The shim serves a fake /dev/accel/accel0 and the NPU cores'
devicetree compatible from the simulated kernel sim=1 opens, and logs every call it serves, so the tests check the
numbers (byte-identical to sim=1, within 1 LSB of the CPU), the ioctl sequence (VERSION, CREATE_BO/mmap, FINI_BO,
SUBMIT, PREP_BO, GEM_CLOSE), device=auto naming the SoC, the shim's error semantics, and the default op sweeps of
both rocket SoCs with every fixture asking for sim=0 (TEFLON_TEST_SIM=0).

Skipped, with the reason, when the shim is not built next to libteflon.so or the loader does not honour LD_PRELOAD
for this interpreter (tests/shim.py, shared with the etnaviv shim's tests).
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from shim import Shim, calls, rocket_shim, run_python, run_sweep, squash
from teflon import targets

DEVICES = [t.name for t in targets.drivable_generations() if t.family == "rocket"]  # rk3566: test_rk3568_status.py
NODE = "/dev/accel/accel0"

# Runs in the preloaded subprocess: a few convolutions (one task; a depthwise; one split into several tasks) with
# sim=0 (the kernel client through the shim), sim=1 and on the CPU; the outputs go to an .npz for the test.
_RUN = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from teflon import modelgen, reference

    device, out = sys.argv[1], sys.argv[2]
    cases = [modelgen.ConvCase("conv2d", 8, 8, 16, 24, kernel=3),
             modelgen.ConvCase("dwconv", 16, 16, 32, kernel=3, stride=2, dtype="int8"),
             modelgen.ConvCase("conv2d", 12, 112, 256, 32, kernel=5, dtype="int8", activation="relu")]
    res, delegated = {}, []
    for i, case in enumerate(cases):
        model = case.build()
        inputs = modelgen.random_inputs(model, seed=3)
        real = reference.run_delegate(model, inputs, device=device, sim="0")
        sim = reference.run_delegate(model, inputs, device=device, sim="1")
        res.update({f"real{i}": real.outputs[0], f"sim{i}": sim.outputs[0],
                    f"cpu{i}": reference.run_cpu(model, inputs, cache=False)[0]})
        delegated.append(sorted(real.delegated))
    np.savez(out, **res)
    print(json.dumps({"delegated": delegated}))
    """
)

_AUTO = textwrap.dedent(
    """
    import sys, teflon
    from teflon.native import Device, NativeError
    teflon.load_delegate(device="auto", sim="0", debug="1")
    try:
        Device(sys.argv[1], sim=False)
        print("OPENED", sys.argv[1])
    except NativeError as e:
        print("REFUSED", e)
    print("AUTO sim", Device(sys.argv[1], sim=None).is_sim)
    """
)

# The shim's own semantics, straight through ioctl(2) on the fake node (request codes: rocket.md §5.1).
_RAW = textwrap.dedent(
    """
    import ctypes, fcntl, os, struct
    CREATE, SUBMIT, PREP = 0xC0186440, 0x40186441, 0x40106442

    def create(fd, size):
        buf = bytearray(struct.pack("<IIQQ", size, 0, 0, 0))
        fcntl.ioctl(fd, CREATE, buf, True)
        return struct.unpack("<IIQQ", buf)[1:3]

    def submit(fd, regcmd, words, ins, outs, reserved=0):
        task = (ctypes.c_uint32 * 2)(regcmd, words)
        hin, hout = (ctypes.c_uint32 * len(ins))(*ins), (ctypes.c_uint32 * len(outs))(*outs)
        job = struct.pack("<QQQIIII", ctypes.addressof(task), ctypes.addressof(hin), ctypes.addressof(hout), 1, 8,
                          len(ins), len(outs))
        jobs = ctypes.create_string_buffer(job, len(job))
        try:
            fcntl.ioctl(fd, SUBMIT, struct.pack("<QIIQ", ctypes.addressof(jobs), 1, 40, reserved))
            return "ok"
        except OSError as e:
            return os.strerror(e.errno)

    def prep(fd, handle):
        try:
            fcntl.ioctl(fd, PREP, struct.pack("<IIq", handle, 0, 2**63 - 1))
            return "ok"
        except OSError as e:
            return os.strerror(e.errno)

    fd = os.open("/dev/accel/accel0", os.O_RDWR)
    (rc_handle, rc_iova), (out_handle, _) = create(fd, 4096), create(fd, 4096)
    print("unknown handle:", submit(fd, rc_iova, 2, [rc_handle], [99]))
    print("reserved:", submit(fd, rc_iova, 2, [rc_handle], [out_handle], reserved=1))
    print("prep before:", prep(fd, out_handle))
    # an all-zero regcmd has no op-enable word: the simulated NPU refuses it, the ioctl still succeeds
    print("zero regcmd:", submit(fd, rc_iova, 2, [rc_handle], [out_handle]))
    print("prep after:", prep(fd, out_handle))
    os.close(fd)
    """
)


@pytest.fixture(scope="module")
def preload_works(delegate_library: None, tmp_path_factory: pytest.TempPathFactory) -> Shim:
    """The rocket shim, honoured by this interpreter (skips otherwise)."""
    return rocket_shim(tmp_path_factory)


@pytest.mark.parametrize("device", DEVICES)
def test_convs_through_shim_equal_simulator(preload_works: Shim, tmp_path: Path, device: str) -> None:
    log, out = tmp_path / "calls.log", tmp_path / "out.npz"
    r = run_python(_RUN, preload_works.env(log, device), device, str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1])["delegated"] == [[0]] * 3, r.stdout + r.stderr
    res = np.load(out)
    for i in range(3):
        assert res[f"real{i}"].tobytes() == res[f"sim{i}"].tobytes(), f"case {i}"
        diff = np.abs(res[f"real{i}"].astype(int) - res[f"cpu{i}"].astype(int))
        exact = (diff == 0).mean()
        assert diff.max() <= 1 and exact >= 0.995, f"case {i}: max {diff.max()}, exact {exact:.4f}"

    text = log.read_text()
    seen = calls(log)
    # the order of a device's life: find the node, create and fill BOs, run, read back, free
    seq = squash(seen)
    first = {c: seq.index(c) for c in ("OPEN", "VERSION", "CREATE_BO", "MMAP", "FINI_BO", "SUBMIT", "PREP_BO",
                                       "GEM_CLOSE", "CLOSE")}
    assert first["OPEN"] < first["VERSION"] < first["CREATE_BO"] < first["MMAP"] < first["FINI_BO"] \
        < first["SUBMIT"] < first["PREP_BO"] < first["GEM_CLOSE"] < first["CLOSE"], seq
    submits = re.findall(r"^SUBMIT jobs=(\d+) tasks=(\d+) = ok$", text, re.MULTILINE)
    assert len(submits) == seen.count("SUBMIT") == 3, text
    assert max(int(t) for _, t in submits) > 1, "the 12x112x256 convolution runs as several tasks"
    assert all(" = error" not in line for line in text.splitlines()), text
    # every BO created is closed, every file opened is closed
    assert seen.count("CREATE_BO") == seen.count("GEM_CLOSE") and seen.count("OPEN") == seen.count("CLOSE"), seen


# One partition of many operations: the real client submits it as one kernel job (docs/hardware/rocket.md "Kernel
# jobs"); its output equals sim=1's.
_ONE_JOB = textwrap.dedent(
    """
    import sys
    import numpy as np
    from teflon import modelgen, reference

    device, path, out = sys.argv[1], sys.argv[2], sys.argv[3]
    model = open(path, "rb").read()
    inputs = modelgen.random_inputs(model, seed=5)
    real = reference.run_delegate(model, inputs, device=device, sim="0")
    sim = reference.run_delegate(model, inputs, device=device, sim="1")
    np.savez(out, real=real.outputs[0], sim=sim.outputs[0])
    """
)


@pytest.mark.parametrize("device", DEVICES)
def test_partition_is_one_kernel_job(preload_works: Shim, shared_dir: Path, tmp_path: Path, device: str) -> None:
    """MobileNetV1 0.25/128: every operation of the partition in one drm_rocket_job, byte-identical to sim=1."""
    log, out = tmp_path / "calls.log", tmp_path / "out.npz"
    r = run_python(_ONE_JOB, preload_works.env(log, device), device,
                   str(shared_dir / "models" / "mobilenet_v1_0.25_128_quant.tflite"), str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    res = np.load(out)
    assert res["real"].tobytes() == res["sim"].tobytes()
    submits = re.findall(r"^SUBMIT jobs=(\d+) tasks=(\d+) = ok$", log.read_text(), re.MULTILINE)
    assert submits and all(j == "1" and int(t) > 20 for j, t in submits), submits


@pytest.mark.parametrize("soc", DEVICES)
def test_device_auto_names_the_soc(preload_works: Shim, tmp_path: Path, soc: str) -> None:
    """device=auto finds the SoC the shim's fake devicetree names and the real client opens it; the other SoC is
    refused with sim=0 (naming the one found) and served by its simulator with sim=auto."""
    other = next(d for d in DEVICES if d != soc)
    log = tmp_path / "calls.log"
    r = run_python(_AUTO, preload_works.env(log, soc), other)
    assert r.returncode == 0, r.stderr
    assert f"delegate created for {soc} (NPU device node)" in r.stderr, r.stderr
    assert "REFUSED" in r.stdout and f"is an {soc}" in r.stdout, r.stdout
    assert "AUTO sim True" in r.stdout, r.stdout
    assert f"OPEN {NODE} ({soc})" in log.read_text()


def test_submit_errors(preload_works: Shim, tmp_path: Path) -> None:
    """Argument errors are ioctl errors; a stream the simulated NPU refuses is not (as on silicon), but the shim
    fails PREP_BO of what the submit writes with EIO and prints the simulator's reason."""
    log = tmp_path / "calls.log"
    r = run_python(_RAW, preload_works.env(log, "rk3588"))
    assert r.returncode == 0, r.stderr
    out = dict(line.split(": ", 1) for line in r.stdout.splitlines())
    assert out == {"unknown handle": "No such file or directory", "reserved": "Invalid argument",
                   "prep before": "ok", "zero regcmd": "ok", "prep after": "Input/output error"}, r.stdout
    assert "[rocket-shim] submit 1 failed" in r.stderr, r.stderr
    assert re.search(r"^SUBMIT jobs=1 tasks=\d+ = FAILED: ", log.read_text(), re.MULTILINE), log.read_text()


@pytest.mark.parametrize("device", DEVICES)
def test_default_op_sweep_through_shim(preload_works: Shim, tmp_path: Path, device: str) -> None:
    """The default selection of the op sweeps (tests/test_ops.py, tests/rocket/test_ops.py) of `device` with sim=0:
    every delegated case through the real client and the shim."""
    log = tmp_path / "calls.log"
    r = run_sweep(preload_works.env(log, device), device, "tests/test_ops.py", "tests/rocket/test_ops.py")
    summary = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert re.search(r"\d+ passed", summary) and "skipped" not in summary, summary
    text = log.read_text()
    assert text.count("\nSUBMIT ") > 100 and "FAILED" not in text and " = error" not in text, text[-2000:]
