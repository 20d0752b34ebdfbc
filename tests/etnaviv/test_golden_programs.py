"""Whole compiled programs against Mesa's etnaviv output (../shared/golden/etnaviv-v7|v8, see their READMEs).

Each golden graph is compiled for a311d (v7) / imx8mp (v8) with mesa_compat=True and turned into the `regcmd
--json` form (teflon.compiler.to_json, what `python -m teflon regcmd --mesa-compat --json` writes). Compared:
the job kinds and TP types in order; per job the number of descriptors (TP cores) and every descriptor word,
address words after normalisation (the golden word minus its buffer's fake base; ours holds the offset with the
buffer at address 0), with one consistent buffer-to-buffer mapping; the coefficient bytes (Mesa's `used_len`);
the PWL LUT words. README §6 marks the coefficient bytes of some files Mesa-undefined (heap-dependent reads past
arrays): the coefficient writer emulates the golden build's zero padding, so they are compared too; the v7 SUB
files (Mesa lowers SUB as ADD) are compared in mesa_compat mode as Mesa produced them.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import shared_path
from teflon import compiler

from .golden import golden_files, load

DEVICES = {7: "a311d", 8: "imx8mp"}
CASES = [pytest.param(v, p, id=f"v{v}-{p.stem}") for v in DEVICES for p in golden_files(shared_path(), v)]


def _golden_words(desc: dict[str, Any]) -> tuple[list[int], dict[int, tuple[str, int]]]:
    """Descriptor words with the address words normalised, and {word: (buffer, offset)}."""
    words = [int(w, 16) for w in desc["words_hex"]]
    addresses = {}
    for a in desc["address_words"]:
        w, base, off = a["word"], int(a["base"], 16), int(a["offset"])
        if a["encoding"].startswith("VA >> 6") or (a["word"] == 5 and len(words) == 34):
            words[w] = (words[w] & ~0x3FFFFFF) | (((words[w] & 0x3FFFFFF) << 6) - base) >> 6
        else:
            words[w] = (words[w] - base) & 0xFFFFFFFF
        addresses[w] = (a["buffer"], off)
    return words, addresses


def _compile(path: Path, version: int) -> tuple[dict[str, Any], dict[str, Any]]:
    d, g = load(path)
    graph = d["graph"]
    prog = compiler.compile(g, [op.index for op in g.operations], graph["graph_inputs"], graph["graph_outputs"],
                            DEVICES[version], mesa_compat=True)
    return d, compiler.to_json(prog)


@pytest.mark.parametrize(("version", "path"), CASES)
def test_golden_program(version: int, path: Path) -> None:
    d, ours = _compile(path, version)
    gold_jobs = d["outputs"]["jobs"]
    kinds = [(j["kind"], j.get("tp_type")) for j in ours["jobs"]]
    assert kinds == [(j["kind"], j.get("tp_type") if j["kind"] == "TP" else None) for j in gold_jobs]
    buffers = {name: base64.b64decode(data) for name, data in ours["buffers"].items()}
    mapping: dict[str, str] = {}
    errors = []
    for j, (mine, gold) in enumerate(zip(ours["jobs"], gold_jobs)):
        assert len(mine["descriptors"]) == len(gold["descriptors"]), f"job {j}: TP cores"
        for c, (md, gd) in enumerate(zip(mine["descriptors"], gold["descriptors"])):
            gw, gaddr = _golden_words(gd)
            mw = [int(w, 16) for w in md["words"]]
            for i in np.flatnonzero(np.array(mw) != np.array(gw)):
                errors.append(f"job {j} desc {c} word {i}: ours 0x{mw[i]:08x}, Mesa 0x{gw[i]:08x} "
                              f"({gd['fields_decoded']})"[:300])
            mine_addr = {r["word"]: (r["buffer"], r["offset"]) for r in md["relocs"]}
            assert set(mine_addr) == set(gaddr), f"job {j} desc {c}: address words {sorted(mine_addr)}"
            for w, (buf, _) in mine_addr.items():
                if mapping.setdefault(buf, gaddr[w][0]) != gaddr[w][0]:
                    errors.append(f"job {j} desc {c} word {w}: {buf} is Mesa's {mapping[buf]} and {gaddr[w][0]}")
        if "coefficients" in gold:
            used = gold["coefficients"]["used_len"]
            coef = mine["coefficients"]
            got = buffers[coef["buffer"]][coef["offset"]:coef["offset"] + coef["size"]]
            if got[:used] != base64.b64decode(gold["coefficients"]["bytes_b64"]) or coef["size"] != used:
                errors.append(f"job {j}: coefficient bytes differ ({coef['size']} vs {used} bytes)")
        if gold.get("pwl_lut") is not None:
            lut = mine["lut"]
            got = np.frombuffer(buffers[lut["buffer"]], "<u4", 1024, lut["offset"])
            if not np.array_equal(got, [int(w, 16) for w in gold["pwl_lut"]["words_hex"]]):
                errors.append(f"job {j}: PWL LUT differs")
    assert not errors, "\n".join(errors[:20])
