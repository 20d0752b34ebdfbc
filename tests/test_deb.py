"""The Debian package (scripts/build-deb.sh) loaded the way Frigate's teflon_tfl detector loads it.

The amd64 package is built, extracted into a clean prefix (dpkg-deb -x) and loaded from a Python that sees the
prefix's dist-packages and the test environment's tflite_runtime, numpy and cffi, but not the source tree:
tflite_runtime's `load_delegate(<prefix>/usr/lib/teflon/libteflon.so)` with no options (device=auto: the simulator
on a machine without an NPU), MobileNetV1 classified with the CPU's top-1. Slow: the package build compiles the
library from scratch (about 1.5 minutes).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MODEL = "mobilenet_v1_0.25_128_quant"

# Frigate's load path (frigate/detectors/plugins/teflon_tfl.py, ../shared/docs/users.md): no options.
_SCRIPT = textwrap.dedent(
    """
    import sys

    import numpy as np
    from tflite_runtime.interpreter import Interpreter, load_delegate

    import teflon
    from teflon.images import load_image

    lib, model, image = sys.argv[1:4]
    x = load_image(image, 128, 128).reshape(1, 128, 128, 3)

    def classify(delegates):
        interp = Interpreter(model_path=model, experimental_delegates=delegates)
        interp.allocate_tensors()
        interp.set_tensor(interp.get_input_details()[0]["index"], x)
        interp.invoke()
        return interp.get_tensor(interp.get_output_details()[0]["index"])[0]

    cpu = classify(None)
    npu = classify([load_delegate(lib)])
    print("PACKAGE", teflon.__file__)
    print("TOP1", int(np.argmax(cpu)), int(np.argmax(npu)), int(cpu[int(np.argmax(npu))] == cpu.max()))
    """
)


@pytest.fixture(scope="module")
def prefix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not shutil.which("dpkg-deb") or not shutil.which("dpkg"):
        pytest.skip("no dpkg-deb")
    if subprocess.run(["dpkg", "--print-architecture"], check=False, capture_output=True,
                      text=True).stdout.strip() != "amd64":
        pytest.skip("the test extracts the amd64 package")
    out = subprocess.run(["bash", str(REPO / "scripts" / "build-deb.sh"), "--arch", "amd64"], cwd=REPO, check=True,
                         capture_output=True, text=True, timeout=1200).stdout.strip().splitlines()[-1]
    root = tmp_path_factory.mktemp("deb-root")
    subprocess.run(["dpkg-deb", "-x", str(REPO / out), str(root)], check=True)
    return root


@pytest.mark.slow
def test_frigate_loads_the_package_with_no_options(prefix: Path, shared_dir: Path, tmp_path: Path) -> None:
    model = shared_dir / "models" / f"{MODEL}.tflite"
    image = shared_dir / "models" / "grace_hopper.bmp"
    if not model.is_file() or not image.is_file():
        pytest.skip(f"{model.name} or {image.name} not in {shared_dir / 'models'}")
    lib = prefix / "usr" / "lib" / "teflon" / "libteflon.so"
    assert lib.is_symlink() and lib.resolve().is_file()
    dist = prefix / "usr" / "lib" / "python3" / "dist-packages"
    # -S: no site processing, so the editable install's path hook (the source tree) stays out; the test
    # environment's site-packages provides only tflite_runtime, numpy and cffi.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEFLON_")}
    env.update(PYTHONPATH=f"{dist}{os.pathsep}{sysconfig.get_paths()['purelib']}", XDG_CACHE_HOME=str(tmp_path),
               TEFLON_DEBUG="1")
    r = subprocess.run([sys.executable, "-S", "-c", _SCRIPT, str(lib), str(model), str(image)], check=False,
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"PACKAGE {dist}" in r.stdout, r.stdout
    top = next(line.split() for line in r.stdout.splitlines() if line.startswith("TOP1"))
    assert top[3] == "1", f"top-1 changed: CPU {top[1]}, delegate {top[2]}"
    assert "device=auto uses" in r.stderr and "simulated NPU" in r.stderr, r.stderr
    # with no options the program cache is on (the user's cache when /var/cache/teflon is not writable)
    if not os.access("/var/cache/teflon", os.W_OK):
        assert any((tmp_path / "teflon" / "programs").rglob("*")), r.stderr
    claimed = [line for line in r.stderr.splitlines() if "nodes claimed" in line]
    print("\n".join(claimed))
    assert claimed, r.stderr
