"""The rk3568 encoder against a held-out set of Rockchip's own programs: every JSON (schema `rocket-rk3568-golden/1`)
under $TEFLON_RK3568_HELDOUT, as scripts/rk3568_heldout.py writes them from rknn-toolkit2 builds of
tests/rocket/rk3568_cases.py (uint8 models whose zero points avoid 0 and 128). Compared like the golden set
(test_golden_rk3568.py, golden README §5): the layer tasks word for word except the address words and the
toolkit's converter words, then the packed weights and the BS table. Skips when the variable is unset or names no
directory; the files are not part of the repository (the toolkit is an oracle, never shipped)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from . import golden_rk3568

ROOT = Path(os.environ.get("TEFLON_RK3568_HELDOUT", "/nonexistent/rk3568-heldout"))
FILES = sorted(ROOT.rglob("*.json")) if ROOT.is_dir() else []


@pytest.fixture(autouse=True)
def _vendor_pools(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pools in the vendor's PPU form, as the golden comparison writes them (rk3568.md §5)."""
    monkeypatch.setenv("TEFLON_ROCKET_PPU", "1")


@pytest.mark.skipif(not FILES, reason="TEFLON_RK3568_HELDOUT unset or without JSON files")
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_heldout_program_equals_the_toolkits(path: Path, delegate_library: None, tmp_path: Path) -> None:
    d = golden_rk3568.load(path)
    assert d["schema"] == golden_rk3568.SCHEMA
    doc = golden_rk3568.regcmd_json(d, tmp_path)
    diffs = golden_rk3568.layer_diffs(d, doc)
    assert not diffs, "\n".join(diffs)
    compared, cdiffs = golden_rk3568.constant_diffs(d, doc)
    assert not cdiffs, cdiffs
    print(f"{path.stem}: {sum(t['role'] == 'layer' for t in d['tasks'])} layer task(s) equal, {compared} constants")
