"""Whole models on the simulated Ethos-U65 (slow): Vela compiles each shared int8/uint8 model for ethos-u65-256,
the simulator runs the single command stream, and the outputs are compared with TFLite's reference kernels.

Skipped, with the reason: models Vela does not compile into one NPU-only command stream (its raw output format
refuses CPU operators). Every model that runs must match exactly (docs/hardware/ethosu-sim.md, "Exactness").
"""

from __future__ import annotations

from pathlib import Path

import pytest
from npu_harness import Simulator, VelaOutput, npu_only, vela_compile_many

from conftest import shared_path
from ethos_u.vela_oracle import ref_kernels
from teflon import modelgen as mg
from teflon.reference import compare

_SHARED = shared_path()
MODELS = sorted([*(_SHARED / "models").glob("*.tflite"), *(_SHARED / "models" / "zoo").glob("*.tflite")]) \
    if _SHARED is not None else []


@pytest.fixture(scope="module")
def compiled() -> dict[str, VelaOutput | str]:
    return vela_compile_many({p.stem: p.read_bytes() for p in MODELS})


@pytest.mark.slow
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_model_matches_tflite(path: Path, npu_sim: Simulator, compiled: dict[str, VelaOutput | str],
                              record_property) -> None:
    vo = compiled[path.stem]
    if isinstance(vo, str):
        pytest.skip(f"Vela gives no single NPU command stream: {vo.strip().splitlines()[-1][:200]}")
    if not npu_only(vo):
        pytest.skip("Vela leaves operators on the CPU")
    model = path.read_bytes()
    inputs = mg.random_inputs(model, seed=0)
    ref = ref_kernels(model, inputs)
    run = npu_sim.run(vo, inputs, like=ref)
    if run.rc != 0 and "not simulated" in run.error:
        pytest.skip(f"uses hardware the simulator does not model: {run.error}")
    assert run.rc == 0, run.error
    cmp = compare(ref, run.outputs)
    record_property("vs_reference_kernels", str(cmp))
    print(f"{path.stem}: {run.stats.ops} NPU ops, {run.stats.macs} MACs; {cmp}")
    assert cmp.max_abs_diff == 0, str(cmp)
