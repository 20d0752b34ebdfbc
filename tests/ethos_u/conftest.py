"""Fixtures of the Ethos-U tests: the simulated NPU built as a ctypes test library (tests/ethos_u/npu_harness.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import npu_harness


@pytest.fixture(scope="session")
def npu_sim(tmp_path_factory: pytest.TempPathFactory) -> npu_harness.Simulator:
    npu_harness.vela_module()  # skips cleanly without Vela
    lib = npu_harness.load_library(npu_harness.build_library(tmp_path_factory.mktemp("ethosu_npu")))
    return npu_harness.Simulator(lib)
