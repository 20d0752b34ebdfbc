"""`python -m teflon doctor` on this machine: without an NPU (device=auto falls back to the simulator) and through
each family's ioctl shim (docs/shim.md), where every check must say it is simulated."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shim import find_shim


def _doctor(tmp_path: Path, env: dict[str, str] | None = None) -> tuple[str, list[dict[str, object]]]:
    report = tmp_path / "doctor.json"
    r = subprocess.run([sys.executable, "-m", "teflon", "doctor", "--json", str(report)], check=False,
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout, json.loads(report.read_text())["checks"]


def test_doctor_without_npu_says_the_delegate_would_simulate(tmp_path: Path, delegate_library: None) -> None:
    out, checks = _doctor(tmp_path)
    by_name = {c["name"]: c for c in checks}
    assert {"kernel", "soc", "npu node", "device=auto", "program cache", "model run"} <= set(by_name), out
    assert by_name["device=auto"]["simulated"] and "simulated NPU" in str(by_name["device=auto"]["detail"]), out
    assert by_name["model run"]["simulated"], out
    assert by_name["model run"]["status"] in ("ok", "info"), out


@pytest.mark.parametrize(("family", "name", "prefix", "node", "target"), [
    ("rocket", "libteflon_rocket_shim.so", "TEFLON_ROCKET_SHIM", "/dev/accel/accel0", "rk3576"),
    ("etnaviv", "libteflon_etna_shim.so", "TEFLON_ETNA_SHIM", "/dev/dri/renderD128", "a311d"),
], ids=["rocket-rk3576", "etnaviv-a311d"])
def test_doctor_through_the_shim_reports_every_check_simulated(family: str, name: str, prefix: str, node: str,
                                                               target: str, tmp_path: Path,
                                                               delegate_library: None) -> None:
    shim = find_shim(family, name, prefix, node, tmp_path / "probe.log", target)
    out, checks = _doctor(tmp_path, shim.env(tmp_path / "shim.log", target))
    assert "ioctl shim is preloaded" in out
    assert all(c["simulated"] for c in checks), out
    by_name = {c["name"]: c for c in checks}
    assert f"teflon target {target}" in str(by_name["soc"]["detail"]), out
    assert by_name["npu node"]["status"] == "ok" and node in str(by_name["npu node"]["detail"]), out
    assert str(by_name["device=auto"]["detail"]).startswith(f"{target} (NPU device node)"), out
    assert by_name["model run"]["status"] in ("ok", "info"), out
