"""libteflon.so from a C host: dlopen(RTLD_LOCAL), options, Prepare starting Python through cffi; exported symbols."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import build_c_test

REPO = Path(__file__).resolve().parent.parent
ALLOWED_EXPORTS = {"tflite_plugin_create_delegate", "tflite_plugin_destroy_delegate", "teflon_check_options"}


def _host(binary: Path) -> list[str]:
    # TEFLON_TEST_EXEC_WRAPPER runs the host through an emulator (scripts/test-aarch64.sh sets it to qemu-aarch64):
    # the emulated Python cannot start a foreign executable itself unless binfmt_misc knows the emulator.
    return [*shlex.split(os.environ.get("TEFLON_TEST_EXEC_WRAPPER", "")), str(binary)]


def _library() -> str:
    import teflon

    return teflon.delegate_path()


@pytest.fixture(scope="module")
def test_binary(delegate_library: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_c_test("test_dlopen", tmp_path_factory.mktemp("dlopen"), f"-I{REPO / 'delegate'}")


def test_dlopen_create_destroy_and_prepare(test_binary: Path) -> None:
    # The venv's bin first on PATH: that is how an embedded Python finds its prefix (and our package).
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    env.pop("TEFLON_DEBUG", None)
    r = subprocess.run([*_host(test_binary), _library()], check=False, capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "all checks passed" in r.stdout
    # Prepare reached the Python compiler inside the C process and printed its table (debug=1).
    assert "ABS" in r.stderr and "0 of 1 nodes claimed" in r.stderr, r.stderr
    assert "Failed to initialize the Python-CFFI embedding" not in r.stderr, r.stderr


def test_broken_python_install_falls_back_instead_of_aborting(test_binary: Path) -> None:
    # Py_InitializeEx would abort() the host here; the delegate must leave the graph to the CPU instead.
    env = dict(os.environ, PYTHONHOME="/nonexistent")
    r = subprocess.run([*_host(test_binary), _library()], check=False, capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "embedded Python could not start" in r.stderr and "on the CPU" in r.stderr, r.stderr


def test_cached_decisions_need_no_python_in_a_c_host(test_binary: Path, tmp_path: Path) -> None:
    # The first run stores the support decisions; the second finds them and never starts Python, so even a
    # broken Python installation does not matter (it would otherwise leave the graph on the CPU with a message).
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
               TEFLON_CACHE_DIR=str(tmp_path))
    env.pop("TEFLON_DEBUG", None)
    first = subprocess.run([*_host(test_binary), _library()], check=False, capture_output=True, text=True, env=env,
                           timeout=120)
    assert first.returncode == 0 and "all checks passed" in first.stdout, first.stdout + first.stderr
    env["PYTHONHOME"] = "/nonexistent"
    second = subprocess.run([*_host(test_binary), _library()], check=False, capture_output=True, text=True, env=env,
                            timeout=120)
    assert second.returncode == 0 and "all checks passed" in second.stdout, second.stdout + second.stderr
    assert "support decisions from cache" in second.stderr and "0 of 1 nodes claimed" in second.stderr, second.stderr
    assert "embedded Python could not start" not in second.stderr, second.stderr


def test_only_delegate_and_runner_symbols_exported(delegate_library: None) -> None:
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm")
    out = subprocess.run([nm, "-D", "--defined-only", _library()], check=True, capture_output=True, text=True).stdout
    names = {line.split()[-1] for line in out.splitlines() if line.strip()}
    assert ALLOWED_EXPORTS <= names
    extra = {n for n in names - ALLOWED_EXPORTS if not n.startswith("teflon_native_")}
    assert not extra, f"unexpected exported symbols: {sorted(extra)}"


def test_links_libpython_with_runpath(delegate_library: None) -> None:
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("no readelf")
    dyn = subprocess.run([readelf, "-d", _library()], check=True, capture_output=True, text=True).stdout
    assert "libpython3" in dyn
    assert "RUNPATH" in dyn or "RPATH" in dyn
