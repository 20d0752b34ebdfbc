"""What an installed teflon must do on a board, kept small enough to run under emulation.

scripts/test-aarch64.sh runs this file (with the C host test of test_dlopen.py) under qemu-aarch64 against the
aarch64 wheel; natively it runs in the default suite. The delegate is loaded from tflite_runtime directly, the
way hosts such as Frigate load it; MobileNetV1 keeps the CPU's top-1 on the simulated rk3588 and a311d; a few
convolutions per family match the CPU (the full sweeps: test_ops.py, tests/rocket, tests/etnaviv); the rocket
simulator's kernel sets (portable, and NEON dot products on aarch64) agree with its reference datapath; a host
that passes no options gets device=auto, the user's program cache and the TEFLON_* environment.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

import numpy as np
import pytest

from conftest import sim_options
from opcheck import Recorder, check_delegated_conv
from teflon.modelgen import ConvCase

# One device per family: rocket and etnaviv.
DEVICES = ("rk3588", "a311d")
CONVS = (
    ConvCase("conv2d", 8, 8, 3, 32, kernel=3, stride=2, dtype="int8"),
    ConvCase("conv2d", 8, 8, 16, 64, kernel=5, stride=1, weight_zp=151),
    ConvCase("dwconv", 8, 8, 40, kernel=3, stride=1, activation="relu"),
    ConvCase("dwconv", 9, 9, 16, kernel=3, stride=2, padding="valid", dtype="int8"),
)
MODEL = "mobilenet_v1_0.25_128_quant"


def _interpreter(model: bytes, delegate: object | None) -> object:
    from tflite_runtime.interpreter import Interpreter

    return Interpreter(model_content=model, experimental_delegates=[delegate] if delegate else None)


def _classify(model: bytes, image: np.ndarray, delegate: object | None) -> np.ndarray:
    interp = _interpreter(model, delegate)
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], image)
    interp.invoke()
    return interp.get_tensor(interp.get_output_details()[0]["index"])[0]


@pytest.fixture(scope="module")
def mobilenet(shared_dir: Path) -> tuple[bytes, np.ndarray]:
    from teflon.images import load_image

    path = shared_dir / "models" / f"{MODEL}.tflite"
    image = shared_dir / "models" / "grace_hopper.bmp"
    if not path.is_file() or not image.is_file():
        pytest.skip(f"{path.name} or {image.name} not in {shared_dir / 'models'}")
    return path.read_bytes(), load_image(image, 128, 128).reshape(1, 128, 128, 3)


def test_delegate_loads_in_tflite_runtime(delegate_library: None) -> None:
    from tflite_runtime.interpreter import load_delegate

    import teflon

    delegate = load_delegate(teflon.delegate_path(), {"device": "rk3588", "sim": "1"})
    assert delegate is not None
    with pytest.raises(ValueError, match="colour"):
        load_delegate(teflon.delegate_path(), {"colour": "blue"})


def test_library_is_built_for_this_machine(delegate_library: None) -> None:
    import teflon

    machines = {"x86_64": 62, "aarch64": 183}  # ELF e_machine: EM_X86_64, EM_AARCH64
    header = Path(teflon.delegate_path()).read_bytes()[:20]
    assert header[:4] == b"\x7fELF"
    assert int.from_bytes(header[18:20], "little") == machines.get(platform.machine(), -1)


@pytest.mark.parametrize("device", DEVICES)
def test_mobilenet_keeps_the_cpu_top1(device: str, mobilenet: tuple[bytes, np.ndarray],
                                      delegate_library: None) -> None:
    from tflite_runtime.interpreter import load_delegate

    import teflon

    model, image = mobilenet
    cpu = _classify(model, image, None)
    npu = _classify(model, image, load_delegate(teflon.delegate_path(), sim_options(device)))
    top = int(np.argmax(npu))
    print(f"{MODEL} on {device} ({platform.machine()}): top-1 cpu {int(np.argmax(cpu))} npu {top}, "
          f"max |diff| {int(np.max(np.abs(cpu.astype(int) - npu.astype(int))))}")
    assert cpu[top] == cpu.max(), f"top-1 changed: CPU {int(np.argmax(cpu))}, delegate {top}"


def _dot_product_cpu() -> str:
    """The simulator's fastest kernel set on this CPU, as far as the test can tell (sim_dot_c.c, rkt_dot_select)."""
    if platform.machine() == "aarch64":
        import ctypes

        libc = ctypes.CDLL(None)
        libc.getauxval.restype = ctypes.c_ulong
        # HWCAP_ASIMDDP: bit 20 of AT_HWCAP (16), arch/arm64/include/uapi/asm/hwcap.h
        return "neondot" if libc.getauxval(ctypes.c_ulong(16)) & (1 << 20) else "c"
    return "best"


@pytest.mark.parametrize("case", CONVS[:3] + (ConvCase("conv2d", 6, 6, 8, 32, kernel=3, dtype="int8",
                                                       per_channel=True),), ids=lambda c: c.name)
def test_simulator_kernels_agree(case: ConvCase, monkeypatch: pytest.MonkeyPatch, delegate_library: None) -> None:
    """The rocket simulator's fast datapath with the portable kernels and with this CPU's fastest ones (NEON dot
    products on aarch64 CPUs that have them) gives the reference datapath's bytes."""
    from teflon.modelgen import random_inputs
    from teflon.reference import run_delegate

    model = case.build()
    inputs = random_inputs(model, seed=0)
    outputs = {}
    fastest = _dot_product_cpu()
    for name, env in (("reference", {"TEFLON_SIM_REFERENCE": "1"}), ("c", {"TEFLON_SIM_KERNELS": "c"}),
                      (fastest, {} if fastest == "best" else {"TEFLON_SIM_KERNELS": fastest})):
        monkeypatch.delenv("TEFLON_SIM_REFERENCE", raising=False)
        monkeypatch.delenv("TEFLON_SIM_KERNELS", raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        outputs[name] = [o.tobytes() for o in run_delegate(model, inputs, device="rk3588", sim="1").outputs]
    print(f"{case.name}: kernel sets {sorted(outputs)}")
    assert all(o == outputs["reference"] for o in outputs.values()), f"{case.name}: kernel sets differ"


@pytest.mark.parametrize(("device", "case"), [pytest.param(d, c, id=f"{d}-{c.name}") for d in DEVICES for c in CONVS])
def test_conv(device: str, case: ConvCase, record_property: Recorder, delegate_library: None) -> None:
    check_delegated_conv(case, sim_options(device), record_property)


# ---- a host that passes no options (Frigate's teflon_tfl: load_delegate(path)) -----------------------------------


def _created(capfd: pytest.CaptureFixture[str]) -> str:
    from tflite_runtime.interpreter import load_delegate

    import teflon

    load_delegate(teflon.delegate_path())
    return capfd.readouterr().err


def test_no_options_means_auto_device_and_the_user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capfd: pytest.CaptureFixture[str],
                                                         delegate_library: None) -> None:
    monkeypatch.delenv("TEFLON_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("TEFLON_DEBUG", "1")
    err = _created(capfd)
    assert "device=auto" in err or "delegate created for" in err, err
    if not os.access("/var/cache/teflon", os.W_OK):
        assert f"program cache in {tmp_path}/teflon/programs" in err, err


def test_environment_sets_what_the_host_did_not(monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str],
                                                delegate_library: None) -> None:
    from tflite_runtime.interpreter import load_delegate

    import teflon

    monkeypatch.setenv("TEFLON_DEBUG", "1")
    monkeypatch.setenv("TEFLON_DEVICE", "a311d")
    monkeypatch.setenv("TEFLON_SIM", "1")
    assert "delegate created for a311d (simulated NPU)" in _created(capfd)
    # an option the host gives wins over its variable
    load_delegate(teflon.delegate_path(), {"device": "rk3588", "sim": "1"})
    assert "delegate created for rk3588" in capfd.readouterr().err
    # TEFLON_CACHE_DIR set and empty: no cache even without options
    assert "program cache in" not in _created(capfd)


@pytest.mark.parametrize(("var", "value"), [("TEFLON_DEVICE", "rk9999"), ("TEFLON_SIM", "2"), ("TEFLON_CORES", "x")])
def test_bad_environment_is_refused_naming_the_variable(var: str, value: str, monkeypatch: pytest.MonkeyPatch,
                                                        delegate_library: None) -> None:
    from tflite_runtime.interpreter import load_delegate

    import teflon

    monkeypatch.setenv(var, value)
    with pytest.raises(ValueError, match=var):
        load_delegate(teflon.delegate_path())
