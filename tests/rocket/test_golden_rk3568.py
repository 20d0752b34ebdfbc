"""The RK3568 generation against Rockchip's own programs (../shared/golden/rocket-rk3568, rknn-toolkit2 2.5.0 for
rk3566; its README says what to compare).

1. Every word of every vendor task decodes with the rk3568 register table (registers of unknown meaning are
   UNDOC_<offset> and accept only the vendor's values).
2. For every file, the model is rebuilt from `params.modelgen` and `python -m teflon regcmd --device rk3568 --json`
   (every node the encoder writes its own partition, pools included) is compared with the vendor's
   `layer` tasks: same number, every word equal (trailer included), except the address words (unit and register
   only) and the README's `toolkit_words`. Files not matched yet are strict expected failures with the reason: a
   file that starts matching fails until it leaves NOT_YET.
3. The packed weights and the BS table equal the vendor's bytes where the file carries them (files over 128 KiB of
   constants, and the global average's, carry only their sha256: compared then).
4. Hazards of the facts are refusals of the register table (and so of the program check, rocket/check.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import shared_path
from teflon import rocket
from teflon.hw.regmap import RegMapError

from . import golden_rk3568

SHARED = shared_path() or Path("/nonexistent/shared")
GOLDEN = SHARED / "golden" / "rocket-rk3568"
FILES = sorted(GOLDEN.glob("*.json")) if GOLDEN.is_dir() else []
RM = rocket.target("rk3568").regmap

UNDOC = {"CNA_UNDOC_121" + d for d in "048C"} | {"CNA_UNDOC_122" + d for d in "048C"} | {
    "CNA_UNDOC_1230", "CORE_UNDOC_302C", "DPU_UNDOC_40C4", "DPU_RDMA_UNDOC_5030", "DPU_RDMA_UNDOC_503C",
    "PPU_RDMA_UNDOC_7018"}

# file stem prefix -> why its layer tasks do not match yet
NOT_YET: dict[str, str] = {}


def _id(path: Path) -> str:
    return path.stem


def _not_yet(path: Path) -> str | None:
    return next((why for prefix, why in NOT_YET.items() if path.name.startswith(prefix)), None)


_load, _words = golden_rk3568.load, golden_rk3568.words


@pytest.mark.skipif(not FILES, reason=f"no golden rocket-rk3568 files under {GOLDEN}")
def test_decode_every_vendor_word() -> None:
    seen: set[str] = set()
    nwords = 0
    for path in FILES:
        for task in _load(path)["tasks"]:
            words = _words(task)
            for w in words:
                if w:
                    seen.add(RM.decode(w)[1])  # raises on an unknown register or a value outside the table
                nwords += 1
            assert "??" not in RM.format_stream(words)
    print(f"decoded {nwords} words of {len(FILES)} files; {len(seen)} registers")
    assert {n for n in seen if "UNDOC" in n} == UNDOC


@pytest.fixture(autouse=True)
def _vendor_pools(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pools in the vendor's form (PPU tasks): TEFLON_ROCKET_PPU=1 (rk3568's default writes an average as the exact
    depthwise convolution a one-task kick completes, and leaves a max pool on the CPU: rk3568.md §5)."""
    monkeypatch.setenv("TEFLON_ROCKET_PPU", "1")


_regcmd_json = golden_rk3568.regcmd_json


def _params() -> list[object]:
    out = []
    for p in FILES:
        why = _not_yet(p)
        marks = [pytest.mark.xfail(reason=why, strict=True)] if why else []
        out.append(pytest.param(p, marks=marks, id=_id(p)))
    return out


@pytest.mark.parametrize("path", _params())
def test_layer_tasks_equal_the_vendors(path: Path, delegate_library: None, tmp_path: Path) -> None:
    diffs = golden_rk3568.layer_diffs(_load(path), _regcmd_json(_load(path), tmp_path))
    assert not diffs, "\n".join(diffs)


def _matched() -> list[object]:
    return [pytest.param(p, id=_id(p)) for p in FILES if _not_yet(p) is None]


@pytest.mark.parametrize("path", _matched())
def test_weights_and_bs_table_equal_the_vendors(path: Path, delegate_library: None, tmp_path: Path) -> None:
    compared, diffs = golden_rk3568.constant_diffs(_load(path), _regcmd_json(_load(path), tmp_path))
    assert not diffs, diffs
    if not compared:
        pytest.skip("the file carries no constant bytes (over 128 KiB)")


@pytest.mark.parametrize(("reg", "fields", "why"), [
    ("DPU_RDMA_FEATURE_MODE_CFG", {"BURST_LEN": 7}, "DPU_RDMA burst length 7 hung the SoC"),
    ("CNA_DMA_CON0", {"DATA_BURST_LEN": 7, "FETCH_PIXEL_LEN": 28, "WEIGHT_BURST_LEN": 7, "BIT20": 0},
     "without bit 20 the MAC output is constant"),
    ("CNA_CBUF_CON0", {"DATA_BANK": 8, "WEIGHT_BANK": 0}, "eight CBUF banks, one at least for the weights"),
], ids=["rdma-burst7", "dma-con0-bit20", "cbuf-no-weight-bank"])
def test_hazards_are_refused(reg: str, fields: dict[str, int], why: str) -> None:
    with pytest.raises(RegMapError):
        RM.word(reg, **fields)


@pytest.mark.skipif(not FILES, reason=f"no golden rocket-rk3568 files under {GOLDEN}")
def test_uncovered_pool_window_is_refused() -> None:
    """A PPU window not covered by input + padding stalls the chain [IAV T62]: the program check refuses it, while the
    vendor's own pool tasks pass."""
    from teflon.rocket.rk3568.hazards import check_task

    path = next(p for p in FILES if p.name.startswith("maxpool-in13x13x32"))
    (task,) = [t for t in _load(path)["tasks"] if t["role"] == "layer"]
    words = _words(task)
    assert check_task(RM, words) == []
    i = next(i for i, w in enumerate(words) if w and RM.decode(w)[1] == "PPU_DATA_CUBE_OUT_WIDTH")
    width = RM.decode(words[i])[2]["CUBE_OUT_WIDTH"]
    words[i] = RM.word("PPU_DATA_CUBE_OUT_WIDTH", CUBE_OUT_WIDTH=width + 1)
    (problem,) = check_task(RM, words)
    assert "not covered" in problem[1]


@pytest.mark.skipif(not FILES, reason=f"no golden rocket-rk3568 files under {GOLDEN}")
def test_ew_0x503c_relation_is_checked() -> None:
    """DPU_RDMA 0x503C (meaning unknown) holds the EW surface stride - 8 in the vendor's ADDs and the third party's
    silicon runs [IAV T55/T57]: the program check accepts that relation (and 0) only."""
    from teflon.rocket.rk3568.hazards import check_task

    for path in (p for p in FILES if p.name.startswith("add-")):
        (task,) = [t for t in _load(path)["tasks"] if t["role"] == "layer"]
        words = _words(task)
        assert check_task(RM, words) == []
        i = next(i for i, w in enumerate(words) if w and RM.decode(w)[1] == "DPU_RDMA_UNDOC_503C")
        words[i] = RM.word("DPU_RDMA_UNDOC_503C", VALUE=RM.decode(words[i])[2]["VALUE"] + 8)
        (problem,) = check_task(RM, words)
        assert "0x503C" in problem[1]
