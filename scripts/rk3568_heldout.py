"""Build reference rk3568 programs with Rockchip's rknn-toolkit2 (an offline oracle, never shipped) and write each as
a JSON of the golden schema `rocket-rk3568-golden/1`, for tests/rocket/test_rk3568_heldout.py.

    PYTHONPATH=python:tests/rocket TOOLKIT_VENV/bin/python scripts/rk3568_heldout.py OUT_DIR
        [--set first|shapes|probes|all] [-k SUBSTRING] [--keep-rknn] [--force]
    TEFLON_RK3568_HELDOUT=OUT_DIR .venv/bin/python -m pytest tests/rocket/test_rk3568_heldout.py

TOOLKIT_VENV: a venv with rknn-toolkit2 2.5.0 (setuptools < 80 for its pkg_resources import), tensorflow-cpu 2.14.0
(its load_tflite needs it), flatbuffers and tflite 2.18.0 (teflon.modelgen). The cases are
tests/rocket/rk3568_cases.py's (FIRST_LAYER, SHAPES; DW_TAILS and VALID_BANKS are the probes); only uint8 cases whose
zero points avoid 0 and 128 are built (the toolkit re-quantizes a tensor whose int8 zero point is 0: golden README
§2). Each model is compiled with the toolkit's public API alone (config(target_platform='rk3566'), load_tflite,
build(do_quantization=False), export_rknn), one at a time, and the program read out of the `.rknn` container (layout:
../shared/golden/rocket-rk3568/README.md §2 "Extraction"). The `.rknn` files are deleted unless --keep-rknn.

The JSON carries what the golden comparison reads: params.modelgen (class + kwargs rebuild the model), tasks[] with
role, regcmd (all words with the trailer, `0x%016x`), address_words, toolkit_words, and the byte vectors after the
regcmd area (sha256, and base64 up to 128 KiB) for the weights/BS-table check.
"""

from __future__ import annotations

import argparse
import ast
import base64
import dataclasses
import hashlib
import json
import re
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SCHEMA = "rocket-rk3568-golden/1"
TARGET = "rk3566"
TASK = struct.Struct("<8IQ")  # flags, op_idx, enable_mask, int_mask, int_clear, int_status, amount, offset, addr
INT_CLEAR = 0x1FFFF
UNITS = {0x0101, 0x0201, 0x0401, 0x0801, 0x1001, 0x2001, 0x4001, 0x8001, 0x0041, 0x0081}
PC, CNA, DPU, DPU_RDMA, PPU, PPU_RDMA = 0x0101, 0x0201, 0x1001, 0x2001, 0x4001, 0x8001
ADDRESS_REGS = {(PC, 0x0010), (CNA, 0x1070), *((CNA, r) for r in range(0x1110, 0x1130, 4)), (DPU, 0x4020),
                (DPU_RDMA, 0x5018), (DPU_RDMA, 0x5020), (DPU_RDMA, 0x502C), (DPU_RDMA, 0x5038), (PPU, 0x6070),
                (PPU_RDMA, 0x701C)}
# golden README §5 (b): the converter words carrying the toolkit's input rescale on the packed-pixel path, CVT_CON0..3;
# with 4-byte pixels (ARGB_IN 11) the fourth lane's CVT_CON4 carries the same rescale
CONVERTER_REGS = {(CNA, r) for r in range(0x104C, 0x105C, 4)}
CVT_CON4, ARGB_IN_4 = (CNA, 0x105C), 11
INLINE_MAX = 128 * 1024


# -- the .rknn container -----------------------------------------------------------------------------------------
def _u32(d: bytes, at: int) -> int:
    return struct.unpack_from("<I", d, at)[0]


def task_table(d: bytes) -> tuple[int, int]:
    """(offset, count) of the one byte vector of 40-byte task records (every record's int_clear 0x1FFFF)."""
    hits = []
    for at in range(0x40, len(d) - 44, 4):
        n = _u32(d, at)
        if n and n % 40 == 0 and at + 4 + n <= len(d) and all(
                TASK.unpack_from(d, at + 4 + 40 * k)[4] == INT_CLEAR for k in range(n // 40)):
            hits.append((at + 4, n // 40))
    if len(hits) != 1:
        raise ValueError(f"{len(hits)} task tables")
    return hits[0]


def byte_vector_after(d: bytes, at: int, end: int, align: int) -> tuple[int, int] | None:
    """The next length-prefixed byte vector whose data starts `align`-aligned, from `at` up to `end`."""
    for p in range(at + (-at % 4), end - 4, 4):
        n = _u32(d, p)
        if (p + 4) % align == 0 and 0 < n and p + 4 + n <= end:
            return p + 4, n
    return None


def regcmd_area(d: bytes, after: int) -> tuple[int, int]:
    for p in range(after + (-after % 4), min(after + 256, len(d) - 12), 4):
        n = _u32(d, p)
        if n and n % 8 == 0 and (p + 4) % 8 == 0 and p + 4 + n <= len(d) and (
                struct.unpack_from("<Q", d, p + 4)[0] >> 48) in UNITS:
            return p + 4, n
    raise ValueError("no regcmd area after the task table")


def vendor_nodes(d: bytes) -> list[dict[str, Any]]:
    """The toolkit's layer table: (op type, full name) pairs stored as flatbuffer strings, last node first."""
    found = []
    for m in re.finditer(rb"([\x02-\x30])\x00\x00\x00([A-Z][A-Za-z0-9]+)\x00", d):
        op_type = m.group(2).decode()
        if len(op_type) != m.group(1)[0] or op_type == "TFLite":  # the source framework's name, not a node
            continue
        end = m.start()  # the full name: a string stored just before (padded to 4), "<op_type>:..." or empty
        for pad in range(4):
            p = end - pad
            name_end = p - 1  # its NUL
            if name_end < 4 or d[name_end] != 0:
                continue
            full = re.search(rb"([\x00-\xff]{4})(" + re.escape(op_type.encode()) + rb":[^\x00]*)$", d[max(0, p - 300):name_end])
            if full and _u32(full.group(1), 0) == len(full.group(2)):
                found.append({"op_type": op_type, "full_name": full.group(2).decode()})
                break
            if d[p - 8:p] == b"\x00" * 8 or (_u32(d, p - 8) == 0 and d[p - 4:p] == b"\x00" * 4):
                found.append({"op_type": op_type, "full_name": ""})
                break
    found.reverse()
    return [{"id": i, **n} for i, n in enumerate(found)]


def read_rknn(d: bytes) -> dict[str, Any]:
    if d[:4] != b"RKNN":
        raise ValueError("not an RKNN container")
    fb_end = 0x40 + struct.unpack_from("<Q", d, 16)[0]
    t0, nt = task_table(d)
    r0, rn = regcmd_area(d, t0 + 40 * nt)
    area = d[r0:r0 + rn]
    tasks = []
    for k in range(nt):
        flags, op_idx, en, imask, iclr, _ist, amount, rofs, addr = TASK.unpack_from(d, t0 + 40 * k)
        words = list(struct.unpack_from(f"<{amount + 4}Q", area, addr))
        tasks.append({"flags": flags, "op_idx": op_idx, "enable_mask": en, "int_mask": imask, "int_clear": iclr,
                      "regcfg_amount": amount, "regcfg_offset": rofs, "regcmd_addr": addr, "words": words})
    vectors = []
    at = r0 + rn
    while (v := byte_vector_after(d, at, fb_end, 64)) is not None:
        vectors.append(v)
        at = v[0] + v[1]
    meta: dict[str, Any] = {"container_version": struct.unpack_from("<Q", d, 8)[0]}
    m = re.search(rb"(\d+\.\d+\.\d+\(compiler version: [^)]*\)\))", d)
    meta["version"] = m.group(1).decode() if m else None
    m = re.search(rb"\{'attrs':", d)
    if m:
        try:
            meta["quant_tab"] = ast.literal_eval(d[m.start():m.start() + _u32(d, m.start() - 4)].decode())
        except (ValueError, SyntaxError):
            pass
    return {"tasks": tasks, "vectors": vectors, "nodes": vendor_nodes(d[:fb_end]), "meta": meta}


# -- the golden-schema JSON ---------------------------------------------------------------------------------------
def _reg(w: int) -> tuple[int, int]:
    return w >> 48, w & 0xFFFF


def _is_helper(node: dict[str, Any] | None) -> bool:
    return node is not None and (node["op_type"] == "Reshape" or node["full_name"] == "")


def task_json(i: int, t: dict[str, Any], node: dict[str, Any] | None, chains_to_helper: bool) -> dict[str, Any]:
    words, amount = t["words"], t["regcfg_amount"]
    addr = [j for j, w in enumerate(words) if w and _reg(w) in ADDRESS_REGS]
    argb = max([(w >> 28) & 0xF for w in words[:amount] if _reg(w) == (CNA, 0x100C)], default=0)
    converter = CONVERTER_REGS | ({CVT_CON4} if argb == ARGB_IN_4 else set())
    toolkit = [j for j, w in enumerate(words[:amount]) if argb and _reg(w) in converter]
    if chains_to_helper:
        toolkit += [j for j in range(amount, amount + 2)]
    return {
        "index": i, "role": "toolkit-helper" if _is_helper(node) else "layer", "vendor_node": node,
        "flags": t["flags"], "enable_mask": hex(t["enable_mask"]), "int_mask": hex(t["int_mask"]),
        "int_clear": hex(t["int_clear"]), "regcfg_amount": amount, "regcfg_offset": t["regcfg_offset"],
        "regcmd_addr": hex(t["regcmd_addr"]), "regcmd": [f"0x{w:016x}" for w in words], "n_words": len(words),
        "trailer_words": list(range(amount, len(words))), "address_words": addr,
        "address_values_nonzero": {str(j): hex((words[j] >> 16) & 0xFFFFFFFF) for j in addr
                                   if (words[j] >> 16) & 0xFFFFFFFF},
        "toolkit_words": toolkit,
    }


def golden_json(case: Any, model: bytes, rknn: bytes, elapsed: float) -> dict[str, Any]:
    p = read_rknn(rknn)
    nodes = {n["id"]: n for n in p["nodes"]}
    tasks = []
    for i, t in enumerate(p["tasks"]):
        nxt = p["tasks"][i + 1] if i + 1 < len(p["tasks"]) else None
        tasks.append(task_json(i, t, nodes.get(t["op_idx"]), nxt is not None and _is_helper(nodes.get(nxt["op_idx"]))))
    vectors = []
    for off, n in p["vectors"]:
        data = rknn[off:off + n]
        v = {"file_offset": hex(off), "size": n, "sha256": hashlib.sha256(data).hexdigest()}
        if n <= INLINE_MAX:
            v["data_b64"] = base64.b64encode(data).decode()
        vectors.append(v)
    kwargs = {f.name: getattr(case, f.name) for f in dataclasses.fields(case)
              if getattr(case, f.name) != f.default}
    return {
        "schema": SCHEMA, "name": case.name, "kind": type(case).__name__,
        "source": {"toolkit": "rknn-toolkit2 (PyPI)", "toolkit_version_in_file": p["meta"]["version"],
                   "target_platform": TARGET, "container_version": p["meta"]["container_version"],
                   "api": f"RKNN().config(target_platform='{TARGET}'); load_tflite(model); "
                          "build(do_quantization=False); export_rknn(path)",
                   "rknn_sha256": hashlib.sha256(rknn).hexdigest(), "rknn_size": len(rknn),
                   "build_seconds": round(elapsed, 1), "origin": "regcmd words stored in the .rknn"},
        "params": {"modelgen": {"class": type(case).__name__, "kwargs": kwargs, "case_name": case.name,
                                "module": "teflon.modelgen"},
                   "tflite_sha256": hashlib.sha256(model).hexdigest(), "tflite_size": len(model)},
        "vendor_layers": p["nodes"], "vendor_io_quant": p["meta"].get("quant_tab"),
        "n_tasks": len(tasks), "n_layer_tasks": sum(t["role"] == "layer" for t in tasks), "tasks": tasks,
        "constants": {"vectors_after_regcmd": vectors},
    }


# -- the cases ----------------------------------------------------------------------------------------------------
def graph_zero_points(model: bytes) -> list[tuple[int, list[int]]]:
    """(tflite tensor type, zero points) of every tensor of the model that has any."""
    import tflite

    m = tflite.Model.GetRootAsModel(model, 0)
    g = m.Subgraphs(0)
    out = []
    for i in range(g.TensorsLength()):
        t = g.Tensors(i)
        q = t.Quantization()
        if q is not None and q.ZeroPointLength():
            out.append((t.Type(), [int(q.ZeroPoint(j)) for j in range(q.ZeroPointLength())]))
    return out


def faithful(model: bytes) -> bool:
    """uint8 activations/weights whose zero points avoid 0 and 128 (int32 biases aside): golden README §2."""
    uint8, int32 = 3, 2
    return all(t == int32 or (t == uint8 and all(z not in (0, 128) for z in zps))
               for t, zps in graph_zero_points(model))


def build(model: bytes, work: Path) -> bytes:
    from rknn.api import RKNN

    src, dst = work / "model.tflite", work / "model.rknn"
    src.write_bytes(model)
    rknn = RKNN(verbose=False)
    try:
        steps = [rknn.config(target_platform=TARGET), rknn.load_tflite(model=str(src)),
                 rknn.build(do_quantization=False), rknn.export_rknn(str(dst))]
    finally:
        rknn.release()
    if any(steps):
        raise RuntimeError(f"toolkit steps returned {steps}")
    return dst.read_bytes()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--set", choices=("first", "shapes", "probes", "all"), default="all")
    ap.add_argument("-k", dest="substring", default="")
    ap.add_argument("--keep-rknn", action="store_true")
    ap.add_argument("--force", action="store_true", help="rebuild cases whose JSON exists")
    a = ap.parse_args(argv)
    import rk3568_cases

    sets = {"first": rk3568_cases.FIRST_LAYER, "shapes": rk3568_cases.SHAPES, "probes": rk3568_cases.DW_TAILS + rk3568_cases.VALID_BANKS}
    cases = [c for cs in sets.values() for c in cs] if a.set == "all" else sets[a.set]
    a.out.mkdir(parents=True, exist_ok=True)
    for case in cases:
        if a.substring not in case.name:
            continue
        path = a.out / f"{case.name}.json"
        if path.exists() and not a.force:
            print(f"{case.name}: exists")
            continue
        model = case.build()
        if not faithful(model):
            print(f"{case.name}: skipped (not uint8 with zero points outside 0/128)")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.time()
            rknn = build(model, Path(tmp))
            if a.keep_rknn:
                (a.out / f"{case.name}.rknn").write_bytes(rknn)
            doc = golden_json(case, model, rknn, time.time() - t0)
        path.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"{case.name}: {doc['n_layer_tasks']} layer task(s) of {doc['n_tasks']}, "
              f"{doc['source']['build_seconds']} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
