"""The real-model conformance suite: every model of every spec.json under ../shared/models (docs/zoo.md), on each of
its test inputs, on every drivable target's simulated NPU, judged as the model's user would judge it
(teflon.zoo.judge) against TFLite's builtin CPU kernels.

Each case prints nodes delegated, partitions, the task figures and the LSB figures. A case that fails must be listed
in tests/zoo_expectations.toml with its measured cause (reported as xfail); an entry whose case now passes fails
the suite, so the file always says exactly what does not work yet. A model above 12 partitions needs an entry
naming the ops that force the splits (partitions, split_by). The small models run by default, the rest under
`-m slow`. Without ../shared (TEFLON_SHARED) every case skips.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import TESTS, run_model_case, shared_path
from teflon import targets
from teflon.modelgen import graph_outputs, operators, tensor_infos
from teflon.zoo.expectations import load_expectations
from teflon.zoo.spec import ModelSpec, load_specs

EXPECTATIONS_FILE = TESTS / "zoo_expectations.toml"
TARGETS = [t.name for t in targets.drivable_generations()]
# Models whose every case takes a fraction of a second on the simulated NPUs: the default run (the rest: -m slow;
# the published MobileNets also run by default in tests/test_models.py).
QUICK = {"vww_96_int8", "pretrainedResnet_quant", "kws_ref_model", "keras_lstm_mnist_ptq", "yamnet_spectra_in"}


def _specs() -> list[ModelSpec]:
    shared = shared_path()
    return load_specs(shared / "models") if shared is not None else []


def _cases() -> list[object]:
    cases = [pytest.param(spec, path, target, id=f"zoo-{spec.name}-{path.stem}-{target}",
                          marks=() if spec.name in QUICK else pytest.mark.slow)
             for spec in _specs() for path in spec.inputs for target in TARGETS]
    return cases or [pytest.param(None, None, None, id="zoo-no-shared",
                                  marks=pytest.mark.skip(reason="shared data not found (set TEFLON_SHARED)"))]


@pytest.mark.parametrize(("spec", "input_path", "target"), _cases())
def test_zoo(spec: ModelSpec, input_path: Path, target: str, delegate_library: None,
             record_property: Callable[[str, object], None]) -> None:
    result = run_model_case(spec, input_path, target, record_property)
    expectations = load_expectations(EXPECTATIONS_FILE)
    split = expectations.partition_outcome(spec.name, target, result.partitions)
    if split.kind == "fail":
        pytest.fail(split.message, pytrace=False)
    outcome = expectations.outcome(spec.name, input_path.stem, target, result.passed, result.summary())
    if outcome.kind == "fail":
        pytest.fail(outcome.message, pytrace=False)
    if outcome.kind == "xfail":
        pytest.xfail(outcome.message)


def test_expectations_file_is_valid() -> None:
    """Every entry parses, has a measured cause and names a drivable target."""
    entries = load_expectations(EXPECTATIONS_FILE).entries
    wrong = [key for key in entries if key[1] not in TARGETS]
    assert not wrong, f"entries for targets that are not drivable: {wrong}"


def test_expectations_name_real_cases() -> None:
    """Every entry names a model of the specs and inputs that model has (a renamed model would hide a failure)."""
    specs = {s.name: s for s in _specs()}
    if not specs:
        pytest.skip("shared data not found (set TEFLON_SHARED)")
    for (model, target), entry in load_expectations(EXPECTATIONS_FILE).entries.items():
        assert model in specs, f"[{model!r}.{target}]: no such model in the specs"
        stems = {p.stem for p in specs[model].inputs}
        assert entry.inputs is None or entry.inputs <= stems, f"[{model!r}.{target}]: inputs not in {sorted(stems)}"


def test_model_readers_take_every_shared_model() -> None:
    """teflon.modelgen reads every shared model's operators, tensors and outputs (yolov5n has scalar tensors
    without a shape vector)."""
    shared = shared_path()
    if shared is None:
        pytest.skip("shared data not found (set TEFLON_SHARED)")
    for path in sorted((shared / "models").rglob("*.tflite")):
        model = path.read_bytes()
        infos = tensor_infos(model)
        assert operators(model) and graph_outputs(model), path.name
        assert all(len(infos[t].shape) == len(shape) for op in operators(model)
                   for t, shape in zip(op.outputs, op.output_shapes, strict=True)), path.name
