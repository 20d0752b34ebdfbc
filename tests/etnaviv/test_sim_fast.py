"""The etnaviv simulator's fast NN path computes the same bytes as its reference path
(docs/hardware/etnaviv-sim.md "Fast NN path").

The simulator picks its NN path when the device opens: the fast one (non-zero taps only, decoded kernels kept
while their descriptor and coefficient bytes are unchanged) by default, the reference one (every tap, decoded
on every run) with TEFLON_SIM_REFERENCE=1. Every case runs on both paths and must give identical output bytes,
on two invokes with different inputs (the second one reads the kept kernels). A rewritten coefficient buffer or
descriptor must be decoded again: a simulator that ran a job, then had one coefficient byte flipped, answers
exactly as a fresh simulator given the flipped bytes. TEFLON_SIM_KERNELS=c|avx2|avx512|avx512vnni|neon forces the fast
path's MAC and requantization kernels (etna_sim_dot.c; a set the CPU does not run falls back to the best): every
set must give the reference bytes too. TEFLON_SIM_REFERENCE=check runs both paths on every job and fails one whose
bytes differ: on the models it must answer as the reference path. Ids: `a311d-conv2d-in28x28x16-oc32-k3-s1-same-u8`.
"""

from __future__ import annotations

import base64
import ctypes
import json

import numpy as np
import pytest

from conftest import device_cases, shared_path
from datapaths import ETNA_DOT_KERNELS, check_same_bytes, sim_outputs
from etnaviv import test_sim_golden as golden
from opcases import (
    DEFAULT_CONV,
    ETNAVIV_DEFAULT_ADD,
    ETNAVIV_DEFAULT_FC,
    ETNAVIV_DEFAULT_PER_CHANNEL,
    ETNAVIV_NON_SQUARE,
)

DEVICES = ["a311d", "imx8mp"]
# every 9th case of the default sweep (kernels 1/3/5, strides, padding, channel tails, v7 dense depthwise), the
# per-channel channel jobs, FC, the two-input ADD and the non-square planes
CASES = DEFAULT_CONV[::9] + ETNAVIV_DEFAULT_PER_CHANNEL + ETNAVIV_DEFAULT_FC + ETNAVIV_DEFAULT_ADD + ETNAVIV_NON_SQUARE
SHARED = shared_path()
_simlib_fixture = golden.simlib  # the simulator built as a test library
MODELS = ["mobilenet_v1_0.25_128_quant", "mobilenet_v2_1.0_224_quant"]
# every 4th case of the subset above, for each kernel set
KERNEL_CASES = CASES[::4]


@pytest.mark.usefixtures("delegate_library")
@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, CASES))
def test_ops_same_bytes(device: str, case: object, monkeypatch: pytest.MonkeyPatch) -> None:
    check_same_bytes(case.build(), device, monkeypatch, str(case))  # type: ignore[attr-defined]


@pytest.mark.usefixtures("delegate_library")
@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, KERNEL_CASES))
def test_kernel_sets_same_bytes(device: str, case: object, monkeypatch: pytest.MonkeyPatch) -> None:
    check_same_bytes(case.build(), device, monkeypatch, str(case), list(ETNA_DOT_KERNELS))  # type: ignore[attr-defined]


@pytest.mark.usefixtures("delegate_library")
@pytest.mark.skipif(SHARED is None, reason="../shared (models) not found")
@pytest.mark.parametrize(("device", "name"), device_cases(DEVICES, MODELS))
def test_models_same_bytes(device: str, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert SHARED is not None
    check_same_bytes((SHARED / "models" / f"{name}.tflite").read_bytes(), device, monkeypatch, name)


@pytest.mark.usefixtures("delegate_library")
@pytest.mark.parametrize("device", DEVICES)
def test_check_mode(device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """TEFLON_SIM_REFERENCE=check (both paths on every job, compared) answers with the reference path's bytes."""
    model = DEFAULT_CONV[0].build()
    ref = sim_outputs(model, device, monkeypatch, True)
    checked = sim_outputs(model, device, monkeypatch, "check")
    assert [r.tobytes() for r in ref] == [c.tobytes() for c in checked]


@pytest.mark.skipif(SHARED is None, reason="../shared (golden data) not found")
@pytest.mark.parametrize("case", golden.MUTATION_CASES, ids=[f"{v}-{n}" for v, n in golden.MUTATION_CASES])
def test_rewritten_coefficients_decoded_again(_simlib_fixture: ctypes.CDLL, case: tuple[str, str]) -> None:
    """Flip bits of coefficient bytes between two runs of one simulator: the second run must answer as a fresh
    simulator loaded with the flipped bytes (same output bytes, or both refuse)."""
    version, name = case
    path = golden._golden_path(version, name)
    if not path.is_file():
        pytest.skip(f"{path.name} not in this golden subset")
    g = json.loads(path.read_text())
    job = [j for j in g["outputs"]["jobs"] if j["kind"] == "NN"][-1]
    coefs = job["coefficients"]
    data = bytearray(base64.b64decode(coefs["bytes_b64"]))
    rng = np.random.default_rng(11)
    for pos in rng.choice(len(data), size=min(len(data), 12), replace=False):
        ld = golden.load(_simlib_fixture, g)
        try:
            err, _ = golden.run(ld)
            assert err is None, err
            arr, off = ld.sim.view(int(coefs["addr"], 16))
            arr[off + int(pos)] ^= 0x81
            warm = golden.run(ld)
        finally:
            ld.sim.close()
        mutated = bytearray(data)
        mutated[int(pos)] ^= 0x81
        coefs["bytes_b64"] = base64.b64encode(bytes(mutated)).decode()
        fresh_ld = golden.load(_simlib_fixture, g)
        try:
            fresh = golden.run(fresh_ld)
        finally:
            fresh_ld.sim.close()
        coefs["bytes_b64"] = base64.b64encode(bytes(data)).decode()
        assert (warm[0] is None) == (fresh[0] is None), f"byte {pos}: warm {warm[0]!r}, fresh {fresh[0]!r}"
        if warm[1] is not None and fresh[1] is not None:
            assert warm[1].tobytes() == fresh[1].tobytes(), f"byte {pos}: the kept kernels were used after a rewrite"
