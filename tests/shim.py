"""The ioctl-shim tests' helpers (tests/<family>/test_kernel_shim.py, docs/shim.md): find a family's LD_PRELOAD shim
next to libteflon.so, build the environment of a subprocess that preloads it, run Python or pytest there, and read
the call log the shim writes.

A test skips, with the reason, when the shim is not built or the loader does not honour LD_PRELOAD for this
interpreter (a setuid or statically linked python, or a platform without ELF preloading): then nothing can
interpose open/ioctl/mmap and the client would only see the machine's real nodes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Shim:
    """A family's shim library and the names of its environment (`<prefix>_TARGET`, `_NODE`, `_LOG`)."""

    path: Path
    prefix: str

    def env(self, log: Path, target: str, **extra: str) -> dict[str, str]:
        """This environment plus the shim preloaded, impersonating `target`, logging to `log`."""
        # a sanitizer runtime already in LD_PRELOAD must stay first (scripts/test-asan.sh)
        preload = " ".join(p for p in (os.environ.get("LD_PRELOAD", ""), str(self.path)) if p)
        return {**os.environ, "LD_PRELOAD": preload, f"{self.prefix}_TARGET": target, f"{self.prefix}_LOG": str(log),
                **extra}


def find_shim(family: str, name: str, prefix: str, node: str, log: Path, target: str) -> Shim:
    """The shim `name` built in drivers/<family>/ next to libteflon.so, once a probe subprocess showed that opening
    its fake node is served (logged) by it; skips otherwise."""
    import teflon

    lib = Path(teflon.delegate_path()).resolve()
    path = lib.parent.parent / "drivers" / family / name
    if not path.is_file():
        pytest.skip(f"{name} is not built next to {lib}")
    shim = Shim(path, prefix)
    r = run_python(f"import os; os.close(os.open({node!r}, os.O_RDWR))", shim.env(log, target))
    if r.returncode != 0 or not log.is_file() or "OPEN" not in log.read_text():
        pytest.skip(f"LD_PRELOAD of {name} is not honoured here (rc {r.returncode}): {r.stderr[-300:]}")
    return shim


def run_python(code: str, env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], check=False, capture_output=True, text=True,
                          timeout=timeout, env=env)


def run_sweep(env: dict[str, str], selection: str, *paths: str,
              timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    """The default (not slow) selection `-k selection` of the op sweeps `paths` in a pytest subprocess whose fixtures
    ask for the real device (TEFLON_TEST_SIM=0, tests/conftest.py), failing instead of skipping without a delegate.
    Inside an xdist worker the sweep runs in one process (the parent's workers already use the cores), else on
    two workers."""
    workers = "0" if os.environ.get("PYTEST_XDIST_WORKER") else "2"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", workers, "-m", "not slow",
           "-k", selection, *paths]
    return subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout, cwd=REPO,
                          env={**env, "TEFLON_TEST_SIM": "0", "TEFLON_REQUIRE_DELEGATE": "1"})


def calls(log: Path) -> list[str]:
    """The first word (the call) of every line of a shim log."""
    return [line.split()[0] for line in log.read_text().splitlines()]


def squash(seq: list[str]) -> list[str]:
    """Runs of the same call collapsed to one entry."""
    return [c for i, c in enumerate(seq) if i == 0 or seq[i - 1] != c]


def rocket_shim(tmp_path_factory: pytest.TempPathFactory, target: str = "rk3588") -> Shim:
    """The rocket shim (drivers/rocket/rkt_shim.c) on its default node, probed once (skips when not honoured)."""
    log = tmp_path_factory.mktemp("rocket-shim") / "probe.log"
    return find_shim("rocket", "libteflon_rocket_shim.so", "TEFLON_ROCKET_SHIM", "/dev/accel/accel0", log, target)
