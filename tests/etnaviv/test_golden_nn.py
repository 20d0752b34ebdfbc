"""Every NN descriptor of the golden etnaviv files (v7 and v8), all 34 words.

Three routes:
- Mesa's own lowered operation (`mesa_lowered_operation`) -> our descriptor, mesa_compat=True;
- the golden graph -> our lowering -> our descriptor, mesa_compat=True (end to end);
- the same in the default mode, where only the documented deliberate differences may show
  (docs/hardware/etnaviv-nn.md §"Deliberate differences").
The coefficient cache size and the address words come from the golden file (coefficients.layout / used_len and
address_words), so the coefficient writer is not needed here. No Mesa-undefined exclusions are needed: the
Mesa-undefined parts (README §6) are coefficient bytes, and kernel_cache_end_address is computed from the
golden's own coefficient size.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import shared_path
from teflon.etnaviv.chips import chip_for_version
from teflon.etnaviv.desc import NN_V7, NN_V8
from teflon.etnaviv.lower import lower_graph
from teflon.etnaviv.nn import nn_descriptor
from teflon.etnaviv.ops import KIND_NN, EtnaOp

from .golden import VERSIONS, coef_cache_size, golden_files, load, nn_addresses, nn_jobs, words

SHARED = shared_path()
TABLES = {7: NN_V7, 8: NN_V8}

# Default mode vs Mesa: fields allowed to differ, by golden file kind (see the module docstring).
# Every kind: the requant multiplier is the exact (double) scale rounded to nearest instead of Mesa's truncated
# float32 mantissa (teflon.etnaviv.requant.post_scale), which moves it by one unit or carries into the shift.
# ADD/SUB views are not square (e.g. 3584x1 on v8), so tiling on the hardware x axis differs from Mesa's.
_REQUANT = {"post_multiplier", "post_shift"}
_TILES = {"out_image_tile_x_size", "out_image_tile_y_size"}
# ADD/SUB: the default mode picks p/q weights (lower.add_ratio), so the v8 SUB weight zero point moves too
DEFAULT_MODE_DIFFS = {"add": _REQUANT | _TILES, "sub": _REQUANT | _TILES | {"coef_zero_point"}}


def _cases() -> list:
    out = []
    for v in VERSIONS:
        for path in golden_files(SHARED, v):
            d, _ = load(path)
            for j in nn_jobs(d):
                out.append(pytest.param(v, path, j["index"], id=f"v{v}-{path.stem}-job{j['index']}"))
    return out


CASES = _cases()
needs_shared = pytest.mark.skipif(SHARED is None, reason="../shared golden data not found")


def _job(d: dict, index: int) -> dict:
    return d["outputs"]["jobs"][index]


def _diff(v: int, got: list[int], want: list[int]) -> dict[str, tuple[int, int]]:
    t = TABLES[v]
    g, w = t.decode(got), t.decode(want)
    return {k: (g[k], w[k]) for k in w if g[k] != w[k]}


def _describe(v: int, op: EtnaOp, job: dict, mesa_compat: bool) -> list[int]:
    coef, src, dst = nn_addresses(job)
    return nn_descriptor(op, chip_for_version(v), coef_cache_size(job, v), coef, src, dst, mesa_compat=mesa_compat)


@needs_shared
@pytest.mark.parametrize(("version", "path", "index"), CASES)
def test_descriptor_from_mesa_lowered_op(version: int, path: Path, index: int) -> None:
    d, _ = load(path)
    job = _job(d, index)
    got = _describe(version, EtnaOp.from_golden(job["mesa_lowered_operation"]), job, True)
    assert got == words(job), _diff(version, got, words(job))


def _lowered_nn(version: int, path: Path, mesa_compat: bool) -> tuple[dict, dict[int, EtnaOp]]:
    d, g = load(path)
    ops = lower_graph(g, [o.index for o in g.operations], chip_for_version(version), mesa_compat=mesa_compat)
    return d, {i: op for i, op in enumerate(ops) if op.type == KIND_NN}


@needs_shared
@pytest.mark.parametrize(("version", "path", "index"), CASES)
def test_descriptor_end_to_end_mesa_compat(version: int, path: Path, index: int) -> None:
    d, ops = _lowered_nn(version, path, True)
    job = _job(d, index)
    got = _describe(version, ops[index], job, True)
    assert got == words(job), _diff(version, got, words(job))


@needs_shared
@pytest.mark.parametrize(("version", "path", "index"), CASES)
def test_descriptor_end_to_end_default(version: int, path: Path, index: int) -> None:
    d = load(path)[0]
    if version == 7 and d["kind"] == "sub":
        pytest.skip("SUB on v7 is refused in the default mode (Mesa lowers it as an ADD)")
    d, ops = _lowered_nn(version, path, False)
    job = _job(d, index)
    diff = _diff(version, _describe(version, ops[index], job, False), words(job))
    assert set(diff) <= DEFAULT_MODE_DIFFS.get(d["kind"], _REQUANT), diff


@needs_shared
def test_golden_counts() -> None:
    """Every NN job of both directories is covered (the parametrised tests above check them)."""
    for v in VERSIONS:
        n = sum(len(nn_jobs(load(p)[0])) for p in golden_files(SHARED, v))
        assert n == sum(1 for c in CASES if c.values[0] == v) > 0
