"""The comparison of `python -m teflon regcmd --device rk3568 --json` with a reference JSON of the schema
`rocket-rk3568-golden/1` (../shared/golden/rocket-rk3568/README.md §3-§5): the golden test and the held-out test
(files written by scripts/rk3568_heldout.py) both use it."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

from teflon import modelgen, rocket
from teflon.hw.regmap import RegMapError

SCHEMA = "rocket-rk3568-golden/1"
RM = rocket.target("rk3568").regmap
ADDRESS_MASK = 0xFFFF_0000_0000_FFFF  # unit and register of a word, value dropped


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def words(task: dict) -> list[int]:
    return [int(w, 16) for w in task["regcmd"]]


def regcmd_json(d: dict, tmp_path: Path) -> dict:
    """`python -m teflon regcmd --device rk3568 --json` of the file's model, rebuilt from params.modelgen."""
    from teflon.cli import main

    m = d["params"]["modelgen"]
    model = tmp_path / "model.tflite"
    model.write_bytes(getattr(modelgen, m["class"])(**m["kwargs"]).build())
    out = tmp_path / "regcmd.json"
    assert main(["regcmd", "--model", str(model), "--device", "rk3568", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["device"] == "rk3568"
    return doc


def _name(word: int) -> str:
    """The register a reference word writes (with the reason when the register table refuses its value)."""
    if not word:
        return "NOP"
    try:
        return RM.decode(word)[1]
    except RegMapError as e:
        return f"{word >> 48:#06x}:{word & 0xFFFF:#06x} (refused: {e})"


def layer_diffs(d: dict, doc: dict) -> list[str]:
    """Differences between teflon's tasks and the reference's `layer` tasks: the task count, each task's word count,
    then every word (trailer included) except the address words (unit and register only) and `toolkit_words`."""
    ours = [words(t) for op in doc["operations"] for t in op["tasks"]]
    theirs = [t for t in d["tasks"] if t["role"] == "layer"]
    if len(ours) != len(theirs):
        return [f"{len(ours)} layer tasks, the reference's {len(theirs)}"]
    diffs = []
    for ti, (o, t) in enumerate(zip(ours, theirs)):
        v = words(t)
        if len(o) != len(v):
            diffs.append(f"task {ti}: {len(o)} words, the reference's {len(v)}")
            continue
        loose, skip = set(t["address_words"]), set(t["toolkit_words"])
        for i, (a, b) in enumerate(zip(o, v)):
            if i in skip:
                continue
            if i in loose:
                a, b = a & ADDRESS_MASK, b & ADDRESS_MASK
            if a != b:
                diffs.append(f"task {ti} word {i} {_name(b)}: ours {a:#018x}, reference {b:#018x}")
    return diffs


def constant_diffs(d: dict, doc: dict) -> tuple[int, list[str]]:
    """(constants compared, differences): the packed weights and the BS table against the reference's bytes where it
    carries them, else against the sha256 of the byte vectors after its regcmd area."""
    data = {name: base64.b64decode(b) for name, b in doc["buffers"].items()}
    compared, diffs = 0, []
    for key, name in (("weights", "op0.weights"), ("bs_table", "op0.bias")):
        c = d["constants"].get(key, {})
        if "data_b64" in c:
            compared += 1
            if data[name] != base64.b64decode(c["data_b64"]):
                diffs.append(key)
    vectors = {v["sha256"] for v in d["constants"].get("vectors_after_regcmd", [])}
    if not compared and vectors and "op0.weights" in data:
        for name in ("op0.weights", "op0.bias"):
            compared += 1
            if hashlib.sha256(data[name]).hexdigest() not in vectors:
                diffs.append(name)
    return compared, diffs
