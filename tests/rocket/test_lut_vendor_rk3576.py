"""teflon's DPU LUT program against the vendor's (RKNN-Toolkit2) bare RK3576 LUT programs, register by register
where the two can be compared (../shared/golden/rocket-rk3576-ops, public files `lut-relu-*`, `lut-sigmoid-*`).

teflon emits the LUT program on RK3588 only (docs/hardware/rocket.md §8); the RK3576 register layout of the DPU
differs beyond the LUT block (docs/hardware/rocket-rk3576.md). What is compared, for the same op built with
teflon.modelgen (16x16x32 int8):
- the units (op-enable 0x18), flying mode (bit 0 of DPU 0x400C and DPU_RDMA 0x5044), the cube geometry (W-1,
  H-1, C-1 in the DPU and DPU_RDMA), and the LUT access protocol (0x4100 write/table, then 16-bit 0x4104 words);
- named differences, each explained in VENDOR_DIFFERENCES.
Every vendor word must also decode with teflon's rk3576 register table.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from teflon.hw.regmap import RegMapError
from teflon.modelgen import UnaryCase
from teflon.rocket import target

from .graphs import unary_graph
from .sim_golden import SHARED

OPS = SHARED / "golden" / "rocket-rk3576-ops"
FILES = {"relu": "lut-relu-in16x16x32-i8__ru-bare_relu_i8.json",
         "logistic": "lut-sigmoid-in16x16x32-i8__ru-bare_sigmoid_i8.json"}

# Registers where teflon deliberately differs from the vendor's bare programs, and why.
VENDOR_DIFFERENCES = {
    "task count": "the vendor loads the tables in a separate 1117-word task over a 1x1x16 dummy cube; teflon loads "
                  "them at the start of the consumer's own stream (single LUT registers, one task per kick)",
    "table length": "the vendor writes 513 entries per table, sampling the float function over a fixed domain "
                    "(about +-8 for sigmoid); teflon writes 128 per table, one per stored int8 input, holding the "
                    "exact TFLite outputs for this op's quantization (teflon.unary)",
    "index domain": "the vendor scales the input into [-16384, 16384] (0x4110..0x411C = -16384, 0x4140..0x414C = "
                    "16384, INDEX_SELECT 5) and interpolates; teflon indexes the raw int8 input (START -128 / 0, "
                    "INDEX_SELECT 0), so no interpolation or slope is involved",
    "OUT_CVT": "the vendor's output converter maps the int16 table value to the output scale (quantization "
               "dependent); teflon's is the identity",
    "relu": "the vendor runs a bare ReLU as a clamp-only EW program without a LUT (0x4108 = 0); teflon uses the "
            "same LUT program for every table op",
}


def _vendor(name: str) -> list[dict[str, object]]:
    path = OPS / FILES[name]
    if not path.is_file():
        pytest.skip(f"no vendor file {path}")
    d = json.loads(path.read_text())
    tasks = []
    for t in d["programs"][0]["tasks"]:
        words = [int(w, 16) for w in t["words"]]
        regs: dict[int, list[int]] = {}
        for w in words:
            regs.setdefault(w & 0xFFFF, []).append((w >> 16) & 0xFFFFFFFF)
        tasks.append({"role": t["role"], "words": words, "regs": regs, "op_enable": int(t["op_en_0x0081"], 16)})
    return tasks


def _ours(op: str) -> dict[int, list[int]]:
    case = UnaryCase(op, 16, 16, 32, "int8")  # type: ignore[arg-type]
    g = unary_graph(case)
    prog = target("rk3588").compile(g, [o.index for o in g.operations], [0], [g.operations[-1].outputs[0]])
    data = prog.buffer("op0.regcmd").data or b""
    regs: dict[int, list[int]] = {}
    for w in np.frombuffer(data, "<u8").tolist():
        if w:
            regs.setdefault(w & 0xFFFF, []).append((w >> 16) & 0xFFFFFFFF)
    return regs


@pytest.mark.parametrize("op", sorted(FILES))
def test_vendor_registers_are_in_the_table(op: str) -> None:
    """Every register the vendor's LUT programs write is in teflon's rk3576 table (values outside what teflon
    emits, e.g. flying mode or the LUT configuration, are rejected by the table until teflon emits them)."""
    rm = target("rk3576").regmap
    unknown = []
    for t in _vendor(op):
        for w in t["words"]:  # type: ignore[attr-defined]
            if not w:
                continue
            try:
                rm.decode(w)
            except RegMapError as e:
                if "unknown" in str(e):
                    unknown.append(f"{w:#018x}: {e}")
    assert not unknown, "\n".join(unknown)


@pytest.mark.parametrize("op", sorted(FILES))
def test_geometry_and_mode_match_vendor(op: str) -> None:
    vendor = _vendor(op)
    consumer = vendor[-1]
    v = consumer["regs"]
    ours = _ours(op)
    assert all(t["op_enable"] == 0x18 for t in vendor)
    assert ours[0x0008] == [0x18]  # op-enable (special word 0x0081, offset 0x0008): DPU + DPU_RDMA
    # flying mode: bit 0 of the DPU feature mode and of the DPU_RDMA feature mode
    assert v[0x400C][-1] & 1 and ours[0x400C][-1] & 1
    assert v[0x5044][-1] & 1 and ours[0x5044][-1] & 1
    # geometry: vendor RK3576 W-1/H-1 at 0x4020/0x4024, C-1 at 0x402C; RK3588 at 0x4030/0x4034/0x403C
    assert (v[0x4020][-1], v[0x4024][-1], v[0x402C][-1]) == (15, 15, 31)
    assert (ours[0x4030][-1], ours[0x4034][-1], ours[0x403C][-1] & 0x1FFF) == (15, 15, 31)
    # DPU_RDMA cube: the same offsets on both layouts
    assert [v[o][-1] for o in (0x500C, 0x5010, 0x5014)] == [ours[o][-1] for o in (0x500C, 0x5010, 0x5014)] == [15, 15, 31]
    if op == "relu":
        assert v[0x4108][-1] == 0, VENDOR_DIFFERENCES["relu"]
        return
    load = vendor[0]
    assert load["role"] == "dpu-lut-load" and len(vendor) == 2, VENDOR_DIFFERENCES["task count"]
    # the LUT access protocol: write/table 0 from address 0, then write/table 1, each followed by its entries
    assert load["regs"][0x4100][-2:] == [0x00020000, 0x00030000]
    assert [c for c in ours[0x4100]] == [0x00020000, 0x00030000]
    assert len(load["regs"][0x4104]) - 1 == 2 * 513 and len(ours[0x4104]) == 2 * 128, VENDOR_DIFFERENCES["table length"]
    assert v[0x410C][-1] == 0x00050500 and ours[0x410C][-1] == 0, VENDOR_DIFFERENCES["index domain"]
