"""The rk3568 encoder beyond the vendor's 29 golden programs: layers of the same kinds (the golden README's whole-set
description: convolutions k1/3/5/7, strides 1/2, SAME/VALID, non-square planes, 1-256 input channels, RELU/RELU6;
depthwise k3/k5 with channel groups; FULLY_CONNECTED; pools; ADDs), generated with teflon.modelgen with zero points
drawn like the golden set's (uint8, never 0 or 128), plus int8 layers with per-tensor and per-channel weights.

For each case `python -m teflon regcmd --device rk3568 --json` must write every node, and its tasks must follow the
rules of docs/hardware/rk3568.md §3, checked on the words themselves (each task's register state replayed on its
ping-pong bank): the first task of each bank the full 133-word body, later ones delta tasks of 22-31 words; trailers
chaining with the next task's words - 1; data rows x DATA_ENTRIES inside the data banks, data + weight banks = 8;
depthwise channel groups of whole 32-channel groups; row bands tiling the output rows of each group; the fitted
FEATURE_GRAINS rule. Then the delegate runs the model on the simulated NPU against TFLite: within 1 LSB and >= 99.5 %
exact (a max pool is written as the vendor's PPU task with TEFLON_ROCKET_PPU=1, which the rk3568 simulator does not
run: words only; averages are depthwise convolutions and run).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import sim_options
from opcheck import Recorder, run_case
from teflon import rocket
from teflon.modelgen import ConvCase, PoolCase

from .rk3568_cases import DW_TAILS, FIRST_LAYER, SHAPES, VALID_BANKS

RM = rocket.target("rk3568").regmap
BODY, TRAILER = 133, 4
DELTA = (22, 31)
BANK_ENTRIES = 1024


CASES: list[Any] = SHAPES + DW_TAILS + VALID_BANKS


def _regcmd(case: Any, tmp_path: Path) -> dict:
    from teflon.cli import main

    model = tmp_path / "model.tflite"
    model.write_bytes(case.build())
    out = tmp_path / "regcmd.json"
    assert main(["regcmd", "--model", str(model), "--device", "rk3568", "--json", str(out)]) == 0
    return json.loads(out.read_text())


def _grains(wout: int, stride: int, kh: int, rows: int) -> int:
    """docs/hardware/rk3568.md §3: min(s + kh + s x ((Wout < 17) + (Wout < 9)), rows read)."""
    return min(stride + kh + stride * ((wout < 17) + (wout < 9)), rows)


def _check_conv_tasks(tasks: list[list[int]]) -> str:
    """The rk3568.md §3 rules on one conv operation's tasks; returns a summary."""
    banks: list[dict[str, dict[str, int]]] = [{}, {}]
    rows_per_group: dict[int, int] = {}
    groups: list[int] = []
    for i, words in enumerate(tasks):
        body = len(words) - TRAILER
        if i < 2:
            assert body == BODY, f"task {i}: the first task of a bank is the full body ({body} words)"
        else:
            assert DELTA[0] <= body <= DELTA[1], f"task {i}: a delta task of {body} words"
        nxt = RM.decode(words[body + 1])[2].get("PC_DATA_AMOUNT", 0)
        assert nxt == (len(tasks[i + 1]) - 1 if i + 1 < len(tasks) else 0), f"task {i}: trailer amount {nxt}"
        state = banks[i % 2]
        for w in words[:body]:
            _, name, fields = RM.decode(w)
            state[name] = fields
        cb0, cb1 = state["CNA_CBUF_CON0"], state["CNA_CBUF_CON1"]
        rows = state["CNA_DATA_SIZE0"]["DATAIN_HEIGHT"]
        assert cb0["DATA_BANK"] + cb0.get("WEIGHT_BANK", 0) == 8, f"task {i}: banks {cb0}"
        assert rows * cb1["DATA_ENTRIES"] <= cb0["DATA_BANK"] * BANK_ENTRIES, f"task {i}: rows beyond the data banks"
        dw = state["CNA_CONV_CON1"].get("CONV_MODE", 0) == 3
        ch = state["DPU_DATA_CUBE_CHANNEL"].get("ORIG_CHANNEL_M1", 0) + 1
        ch0 = state["DPU_RDMA_BS_BASE_ADDR"].get("BS_BASE_ADDR", 0)  # the group's offset into the BS stream
        if dw and ch0 not in rows_per_group:
            groups.append(ch)
        rows_per_group[ch0] = rows_per_group.get(ch0, 0) + state["DPU_DATA_CUBE_HEIGHT"].get("HEIGHT_M1", 0) + 1
        k = state["CNA_WEIGHT_SIZE2"]
        s = state["CNA_CONV_CON3"]["CONV_Y_STRIDE"]
        wout = state["DPU_DATA_CUBE_WIDTH"].get("WIDTH_M1", 0) + 1
        if len(tasks) == 1 and state["CNA_CONV_CON2"]["FEATURE_GRAINS"] != 1:  # FC: 1
            assert state["CNA_CONV_CON2"]["FEATURE_GRAINS"] == _grains(wout, s, k["WEIGHT_HEIGHT"], rows), f"task {i}"
    assert all(g % 32 == 0 for g in groups[:-1]), f"depthwise channel groups {groups}"
    assert len(set(rows_per_group.values())) == 1, f"row bands do not tile the output rows: {rows_per_group}"
    deltas = [len(t) - TRAILER for t in tasks[2:]]
    return f"{len(tasks)} task(s), {len(rows_per_group)} channel group(s), delta tasks of {deltas} words"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_generated_layer(case: Any, delegate_library: None, tmp_path: Path, record_property: Recorder,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    if isinstance(case, PoolCase) and case.op == "max":  # only the vendor's PPU form writes a max pool
        monkeypatch.setenv("TEFLON_ROCKET_PPU", "1")
    doc = _regcmd(case, tmp_path)
    ops = doc["operations"]
    assert len(ops) == 1, "every node written"
    tasks = [[int(w, 16) for w in t["regcmd"]] for t in ops[0]["tasks"]]
    first = RM.decode(tasks[0][-1])[2]
    if first.get("CNA_EN"):
        print(f"{case.name}: {_check_conv_tasks(tasks)}")
    ppu = first.get("PPU_EN")
    if ppu:
        pytest.skip("a PPU task: words written (program check passed), not run by the rk3568 simulator")
    run, _, cmp = run_case(case, sim_options("rk3568"), record_property)
    assert len(run.delegated) == len(run.ops), run.describe([i for i in range(len(run.ops)) if i not in run.delegated])
    assert cmp.within(1, 0.995), str(cmp)


def test_cases_cover_the_kinds() -> None:
    names = {type(c).__name__ for c in CASES}
    assert names == {"ConvCase", "FcCase", "PoolCase", "AddCase"}
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", FIRST_LAYER, ids=lambda c: c.name)
def test_first_layer(case: ConvCase, delegate_library: None, tmp_path: Path, record_property: Recorder) -> None:
    """A first convolution on a 1-4 channel uint8 graph input: 1, 3 and 4 channels take the packed-pixel path
    (ARGB_IN 8 + channels - 1), 2 channels the direct one, as the toolkit writes them (rk3568.md §3); the simulated NPU
    runs it within 1 LSB of TFLite."""
    tasks = [[int(w, 16) for w in t["regcmd"]] for t in _regcmd(case, tmp_path)["operations"][0]["tasks"]]
    con1 = RM.decode(tasks[0][6])
    assert con1[1] == "CNA_CONV_CON1"
    assert con1[2].get("ARGB_IN", 0) == (0 if case.in_c == 2 else 7 + case.in_c)
    print(f"{case.name}: {_check_conv_tasks(tasks)}")
    run, _, cmp = run_case(case, sim_options("rk3568"), record_property)
    assert len(run.delegated) == len(run.ops)
    assert cmp.within(1, 0.995), str(cmp)
