"""The fast simulated datapath computes the same bytes as the reference datapath (docs/hardware/rocket-sim.md
"Fast datapath").

The simulator picks its datapath when the device opens: the fast one by default, the reference one with
TEFLON_SIM_REFERENCE=1, and TEFLON_SIM_KERNELS=c|avx2|avx512|neondot forces the fast path's kernels. Every case runs
on the simulated rk3588 and rk3576 with each datapath and must give identical output bytes: the default
convolution and per-channel sweeps (tests/opcases.py) and the conv-fed ADDs (fused) with the best kernels the CPU runs, a named subset with every kernel set
the CPU runs, two cases with OUT_CVT ties and odd offsets (TIES), and the shared models (skipped when ../shared is
absent); the slow sweep is marked `slow`.
Ids: `rk3588-conv2d-in112x112x32-oc64-k3-s2-same-u8-best`. Below the models, the requantization kernels alone
(tests/c/test_rocket_requant.c): every kernel set the CPU runs against rkt_requantize on random rows.
"""

from __future__ import annotations

import ctypes
import platform
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import PLAIN_STAGE, device_cases, shared_path
from opcases import DEFAULT_ADD, DEFAULT_CONV, DEFAULT_PER_CHANNEL, SLOW_CONV
from teflon.modelgen import AddCase, ConvCase, random_inputs
from teflon.reference import run_delegate

pytestmark = pytest.mark.usefixtures("delegate_library")

DEVICES = ["rk3588", "rk3576"]


def _cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _arm_dot_product() -> bool:
    """The aarch64 CPU has the dot product instructions (HWCAP_ASIMDDP, bit 20 of AT_HWCAP: the Linux arm64 UAPI,
    arch/arm64/include/uapi/asm/hwcap.h); read from the auxiliary vector, which emulators fill in too."""
    if platform.machine() != "aarch64":
        return False
    libc = ctypes.CDLL(None)
    libc.getauxval.restype = ctypes.c_ulong
    return bool(libc.getauxval(ctypes.c_ulong(16)) & (1 << 20))  # AT_HWCAP = 16


_FLAGS = _cpu_flags() | ({"asimddp"} if _arm_dot_product() else set())
# kernel sets of sim_dot.h this CPU runs (the simulator would quietly pick another one for the rest)
KERNELS = ["c"] + [name for name, need in (("avx2", {"avx2"}),
                                           ("avx512", {"avx512f", "avx512bw", "avx512vl", "avx512dq",
                                                       "avx512_vnni"}),
                                           ("neondot", {"asimddp"}))
                   if need <= _FLAGS]
# every 19th case of the sweep: direct and depthwise, kernels 1/3/5, strides, padding, channel tails
SUBSET = DEFAULT_CONV[::19] + DEFAULT_PER_CHANNEL[::3]  # per-channel: the BS multiplier in every kernel set


def _outputs(model: bytes, device: str, monkeypatch: pytest.MonkeyPatch, reference: bool, kernels: str) -> list:
    monkeypatch.delenv("TEFLON_SIM_REFERENCE", raising=False)
    monkeypatch.delenv("TEFLON_SIM_KERNELS", raising=False)
    if reference:
        monkeypatch.setenv("TEFLON_SIM_REFERENCE", "1")
    elif kernels != "best":
        monkeypatch.setenv("TEFLON_SIM_KERNELS", kernels)
    inputs = random_inputs(model, seed=0)
    return run_delegate(model, inputs, device=device, sim="1").outputs


def _check_same(model: bytes, device: str, monkeypatch: pytest.MonkeyPatch, kernels: str, name: str) -> None:
    ref = _outputs(model, device, monkeypatch, True, kernels)
    fast = _outputs(model, device, monkeypatch, False, kernels)
    assert len(ref) == len(fast)
    for i, (r, f) in enumerate(zip(ref, fast, strict=True)):
        diff = np.argwhere(r != f)
        assert r.tobytes() == f.tobytes(), (f"{name} on {device} ({kernels} kernels), output {i}: {len(diff)} of {r.size} "
                                            f"elements differ from the reference datapath, first at {diff[:4].tolist()}")


# The sweep's cases the ASan stage runs (the rest run in the plain stage): the file says how they were chosen.
_ASAN_SWEEP = {line for line in (Path(__file__).parents[1] / "data/asan_sweep_best.txt").read_text().splitlines()
               if line and not line.startswith("#")}


@pytest.mark.parametrize(("device", "case"), [
    pytest.param(d, c, id=f"{d}-{c}", marks=() if f"{d}-{c}" in _ASAN_SWEEP else PLAIN_STAGE)
    for d in DEVICES for c in DEFAULT_CONV + DEFAULT_PER_CHANNEL])
def test_sweep_best(device: str, case: ConvCase, monkeypatch: pytest.MonkeyPatch) -> None:
    _check_same(case.build(), device, monkeypatch, "best", case.name)


# the smallest slow-sweep cases where OUT_CVT's ties-to-even rounding meets an odd OUT_CVT_OFFSET (a half-way
# quotient: the offset must be added after the rounding); conv2d-in56x56x32-oc120-k3-s2-same-u8 and
# dwconv-in112x112x120-k3-s2-same-u8
TIES = [ConvCase("conv2d", 56, 56, 32, 120, 3, 2, "same", dtype="uint8"),
        ConvCase("dwconv", 112, 112, 120, None, 3, 2, "same", dtype="uint8")]


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, TIES))
def test_ties_best(device: str, case: ConvCase, monkeypatch: pytest.MonkeyPatch) -> None:
    _check_same(case.build(), device, monkeypatch, "best", case.name)


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, [c for c in DEFAULT_ADD if c.producers != "inputs"]))
def test_fused_add_best(device: str, case: AddCase, monkeypatch: pytest.MonkeyPatch) -> None:
    """ADDs fused into their convolution: the fast path's DPU stages with the EW operand."""
    _check_same(case.build(), device, monkeypatch, "best", case.name)


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, SUBSET))
def test_subset_kernels(device: str, case: ConvCase, kernels: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _check_same(case.build(), device, monkeypatch, kernels, case.name)


@pytest.mark.parametrize("model", ["mobilenet_v1_0.25_128_quant.tflite", "mobilenet_v1_0.75_192_quant.tflite",
                                   "mobilenet_v2_1.0_224_quant.tflite", "tf2_mobilenet_v2_1.0_224_ptq.tflite"])
@pytest.mark.parametrize("device", DEVICES)
def test_model(device: str, model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = shared_path()
    path = shared / "models" / model if shared else Path(model)
    if not path.is_file():
        pytest.skip(f"{path} not present")
    _check_same(path.read_bytes(), device, monkeypatch, "best", model)


@pytest.mark.slow
@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, SLOW_CONV))
def test_sweep_slow(device: str, case: ConvCase, monkeypatch: pytest.MonkeyPatch) -> None:
    _check_same(case.build(), device, monkeypatch, "best", case.name)


def test_requant_kernels(tmp_path: Path) -> None:
    """Each kernel set's requantization (sim_dot.h `requant`) writes the bytes of rkt_requantize on 20000 random rows
    (int32 bound held or not, window sums, multiplier shifts, clamp, EW operand, large offsets, frequent ties), built
    from drivers/rocket under ASan/UBSan when the runtime is there."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    repo = Path(__file__).resolve().parents[2]
    rocket = repo / "drivers" / "rocket"
    exe = tmp_path / "test_rocket_requant"
    cmd = [cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-g", f"-I{repo / 'drivers'}", f"-I{rocket}",
           str(repo / "tests/c/test_rocket_requant.c"),
           *(str(rocket / f) for f in ("sim_dot_c.c", "sim_dot_avx2.c", "sim_dot_avx512.c", "sim_dot_neon.c")),
           "-o", str(exe), "-lm"]
    sanitized = subprocess.run([*cmd, "-fsanitize=address,undefined", "-fno-sanitize-recover=all"], check=False,
                               capture_output=True, text=True)
    if sanitized.returncode != 0:  # no sanitizer runtime: the plain build
        subprocess.run(cmd, check=True)
    r = subprocess.run([str(exe), "20000"], check=False, capture_output=True, text=True, timeout=120)
    print(r.stdout)
    assert r.returncode == 0 and "all checks passed" in r.stdout, r.stdout + r.stderr
