"""Held-out models (docs/heldout.md): a directory of quantized models that are not part of ../shared, named by
$TEFLON_HELDOUT_MODELS and described by its spec.json (the zoo's format, teflon.zoo.spec; scripts/
make_heldout_models.py builds one), run and judged exactly as tests/test_zoo.py runs the zoo: each model on each
of its inputs on every drivable target's simulated NPU, the task rule of teflon.zoo.judge against TFLite's
builtin CPU kernels.

There is no expectations file: the set is checked, not tracked, so a case fails when its task rule fails and the
figures (nodes delegated, partitions, exact share, share within 6 LSB, worst difference, top-1) are printed and
recorded as JUnit properties. Every case is slow; without $TEFLON_HELDOUT_MODELS every case skips.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import run_model_case
from teflon import targets
from teflon.zoo.spec import ModelSpec, load_specs

TARGETS = [t.name for t in targets.drivable_generations()]
ENV = "TEFLON_HELDOUT_MODELS"


def _specs() -> list[ModelSpec]:
    where = os.environ.get(ENV)
    return load_specs(Path(where)) if where and Path(where).is_dir() else []


def _cases() -> list[object]:
    cases = [pytest.param(spec, path, target, id=f"heldout-{spec.name}-{path.stem}-{target}")
             for spec in _specs() for path in spec.inputs for target in TARGETS]
    return cases or [pytest.param(None, None, None, id="heldout-none",
                                  marks=pytest.mark.skip(reason=f"no held-out models (set ${ENV})"))]


@pytest.mark.slow
@pytest.mark.parametrize(("spec", "input_path", "target"), _cases())
def test_heldout(spec: ModelSpec, input_path: Path, target: str, delegate_library: None,
                 record_property: Callable[[str, object], None]) -> None:
    result = run_model_case(spec, input_path, target, record_property)
    if not result.passed:
        pytest.fail(result.summary(), pytrace=False)
