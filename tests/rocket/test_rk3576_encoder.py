"""The RK3576 encoder against Rockchip's own programs (../shared/golden/rocket-rk3576, compile "A").

1. Every word of every compile-A program decodes with the RK3576 table (UNDOC registers listed).
2. For the vendor's direct / depthwise int8 layers, the same layer shape is encoded and every register
   of every task is compared with the vendor's, except the ones in NOT_COMPARED (with the reason). Our last
   task ends with [PC_BASE_ADDRESS 0][PC_REGISTER_AMOUNTS 0][SYNC][OP_ENABLE] (accel/rocket fetches only the
   counted words); the vendor stores its last task without it (its driver fetches 4 words more), so the
   comparison drops those 4 words from our last task and checks them separately.
3. Issue 3: 224x224x3 -> 32 (3x3 s2) and a 128x224 input show the line stride, plane and task strides,
   weight sizes and CBUF fields of rocket.md §6.
"""

from __future__ import annotations

import dataclasses
import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import shared_path
from teflon import compiler, rocket
from teflon.ir import Graph, Operation, Quant, Tensor
from teflon.modelgen import ConvCase
from teflon.program import Program
from teflon.rocket.lower import lower_conv
from teflon.rocket.rk3576.encoder import encode_layer
from teflon.rocket.rk3576.stream import BODY_WORDS, TRAILER_WORDS, fetch_amount, trailer

from .graphs import conv_graph, register_values

SHARED = shared_path() or Path("/nonexistent/shared")
GOLDEN = SHARED / "golden" / "rocket-rk3576"
FILES = sorted(GOLDEN.glob("*.json")) if GOLDEN.is_dir() else []

RM = rocket.target("rk3576").regmap

# Registers of unknown meaning in the vendor programs (declared UNDOC_xxxx; only vendor values accepted).
UNDOC = {
    "CNA_UNDOC_1010", "CNA_UNDOC_1018", "CNA_UNDOC_1038", "CNA_UNDOC_1060", "CNA_UNDOC_1064", "CNA_UNDOC_1068",
    "CNA_UNDOC_106C", "CNA_UNDOC_1070", "CNA_UNDOC_1074", "CNA_UNDOC_109C", "CNA_UNDOC_1100", "CNA_UNDOC_1104",
    "CNA_UNDOC_1140", "CNA_UNDOC_1144", "CNA_UNDOC_118C", "DPU_UNDOC_4014", "DPU_UNDOC_4028", "DPU_UNDOC_4030",
    "DPU_UNDOC_4038", "DPU_UNDOC_403C", "DPU_UNDOC_4060",
    "DPU_UNDOC_4090", "DPU_UNDOC_4094", "DPU_UNDOC_409C", "DPU_UNDOC_40BC", "DPU_UNDOC_40C0", "DPU_UNDOC_40C8",
    "DPU_UNDOC_40CC", "DPU_UNDOC_40D0", "DPU_RDMA_UNDOC_5028",
    "DPU_RDMA_UNDOC_5030", "DPU_RDMA_UNDOC_5048", "DPU_RDMA_UNDOC_5064", "DPU_RDMA_UNDOC_5078",
    "DPU_RDMA_UNDOC_507C",
} | {f"DPU_UNDOC_{o:04X}" for o in (0x4108, 0x4120, 0x4130, 0x4150, 0x4154, 0x4160, 0x4170, 0x4174, 0x4184)}

# Registers not compared with the vendor's, and why.
NOT_COMPARED = {
    "DPU_OUT_CVT_SCALE": "depends on the weight scales, which the golden files do not carry",
    "DPU_OUT_CVT_SHIFT": "depends on the weight scales, which the golden files do not carry",
    "DPU_RDMA_BS_SHIFT_ADDR": "the vendor stores 0 and patches it at load time; ours points after the table",
}
# Compared only when the vendor uses the BS form with a known coefficient-table layout (see docs).
BS_FORM = ("DPU_BS_CFG", "DPU_BS_OW_CFG", "DPU_RDMA_BRDMA_CFG")
# Vendor chain program (fused Clip(0,6), intermediate tensors in one internal buffer).
CHAIN_SKIP = {"DPU_UNDOC_4060", "DPU_CLAMP2_MIN", "DPU_CLAMP2_MAX", "DPU_CLAMP3_MIN", "DPU_CLAMP3_MAX",
              "CNA_FEATURE_DATA_ADDR", "DPU_DST_BASE_ADDR", "DPU_RDMA_BS_BASE_ADDR", "CNA_DCOMP_ADDR0"}


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _compile_a(d: dict) -> dict:
    return next(p for p in d["programs"] if p["compile_label"] == "A")


def _words(task: dict) -> list[int]:
    return [int(w, 16) for w in task["words"]]


# ---- 1. decoding ------------------------------------------------------------------------------------------

@pytest.mark.skipif(not FILES, reason=f"no golden rocket-rk3576 files under {GOLDEN}")
def test_decode_every_compile_a_program() -> None:
    seen: set[str] = set()
    ntasks = nwords = 0
    for path in FILES:
        for task in _compile_a(_load(path))["tasks"]:
            ntasks += 1
            for w in _words(task):
                _, name, _ = RM.decode(w)  # raises on an unknown register or a value outside the table
                seen.add(name)
                nwords += 1
            text = RM.format_stream(_words(task))
            assert "??" not in text
    undoc = {n for n in seen if "UNDOC" in n}
    print(f"decoded {nwords} words of {ntasks} tasks in {len(FILES)} files; {len(undoc)} UNDOC registers")
    assert undoc == UNDOC
    assert {"CNA_FEATURE_DATA_ADDR", "DPU_DST_BASE_ADDR", "DPU_RDMA_BS_BASE_ADDR", "DPU_RDMA_BS_SHIFT_ADDR",
            "DPU_OUT_CVT_OFFSET", "CNA_DMA_CON1", "CNA_CBUF_CON0"} <= seen


def test_undoc_accepts_only_vendor_values() -> None:
    w = RM.word_raw("DPU_UNDOC_40C0", 0x04440100)
    assert RM.decode(w)[1] == "DPU_UNDOC_40C0"
    with pytest.raises(ValueError):
        RM.word_raw("DPU_UNDOC_40C0", 0x04440101)
    with pytest.raises(ValueError):
        RM.word_raw("CNA_UNDOC_1064", 0x777)


# ---- 2. golden comparison ---------------------------------------------------------------------------------

def _zp(d: dict, keys: tuple[str, ...]) -> int | None:
    tensors = d["quantization"]["io_tensors_from_rknn"]
    for k in keys:
        if k in tensors and tensors[k]["dtype"] == "int8":
            return int(tensors[k]["zero_point"][0])
    return None


def _conv_for(layer: dict, in_zp: int, out_zp: int) -> rocket.operations.RocketConv:
    """A RocketConv with the vendor layer's geometry and pads (int8, arbitrary weights)."""
    _, c, h, w = layer["input_nchw"]
    _, oc, oh, ow = layer["output_nchw"]
    kh, kw = layer["kernel_hw"]
    s = layer["strides_hw"][0]
    dw = layer["group"] > 1
    rng = np.random.default_rng(c * 7 + oc)
    wshape = (1, kh, kw, c) if dw else (oc, kh, kw, c)
    tensors = {
        0: Tensor(0, "int8", (1, h, w, c), Quant(np.array([0.05], np.float32), np.array([in_zp], np.int32))),
        1: Tensor(1, "int8", wshape, Quant(np.array([0.01], np.float32), np.array([0], np.int32)),
                  rng.integers(-127, 128, wshape).astype(np.int8)),
        2: Tensor(2, "int32", (oc,), Quant(np.array([0.0005], np.float32), np.array([0], np.int32)),
                  rng.integers(-5000, 5000, oc).astype(np.int32)),
        3: Tensor(3, "int8", (1, oh, ow, oc), Quant(np.array([0.1], np.float32), np.array([out_zp], np.int32))),
    }
    opts: dict[str, object] = {"padding": "VALID", "stride_h": s, "stride_w": s, "activation": "NONE",
                               "dilation_h": 1, "dilation_w": 1}
    if dw:
        opts["depth_multiplier"] = 1
    op = Operation(0, "DEPTHWISE_CONV_2D" if dw else "CONV_2D", [0, 1, 2], [3], opts)
    # lower with VALID pads and the VALID output size, then put the vendor's pads and output size back
    valid = Graph(dict(tensors), [op])
    valid.tensors[3] = Tensor(3, "int8", (1, (h - kh) // s + 1, (w - kw) // s + 1, oc), tensors[3].quant)
    conv = lower_conv(valid, op, per_channel=True)
    pt, pl, pb, pr = layer["pads_tlbr"]
    return dataclasses.replace(conv, out_h=oh, out_w=ow, pad_top=pt, pad_left=pl, pad_bottom=pb, pad_right=pr)


def _ours(conv) -> list[list[int]]:
    """Our task streams as the vendor stores them: the last task without its end-of-chain trailer."""
    enc = encode_layer(RM, conv, conv.in_h * conv.in_w)
    for s in enc.streams:
        assert len(s.words) == BODY_WORDS + TRAILER_WORDS
    assert enc.streams[-1].words[BODY_WORDS:] == trailer(RM)
    return [list(s.words) for s in enc.streams[:-1]] + [list(enc.streams[-1].words[:BODY_WORDS])]


def _layout(words: list[int]) -> list[int]:
    """The (target, offset) sequence of a stream, values dropped."""
    return [w & 0xFFFF_0000_0000_FFFF for w in words]


def _cases() -> list[tuple[str, int, list[int]]]:
    """(file, layer index, vendor task indices of that layer) for every comparable compile-A layer."""
    cases = []
    for path in FILES:
        d = _load(path)
        if d["datapath"] not in ("direct", "depthwise") or not path.name.endswith(".json"):
            continue
        cases.append((path.name, 0, list(range(_compile_a(d)["n_tasks"]))))
    chain = GOLDEN / "chain-mobilenet-stem-in224x224x3-i8__gah-chain.json"
    if chain.is_file():  # layer 0 is the ARGB conv (not encoded); dw1, pw1, dw2 are
        cases += [(chain.name, 1, [1, 2]), (chain.name, 2, [3, 4]), (chain.name, 3, [5, 6, 7])]
    return cases


CASES = _cases()


@pytest.mark.parametrize("name,layer,tasks", CASES, ids=[f"{c[0][:-5]}-L{c[1]}" for c in CASES])
def test_vendor_registers(name: str, layer: int, tasks: list[int]) -> None:
    d = _load(GOLDEN / name)
    chain = name.startswith("chain")
    in_zp = -128 if chain else _zp(d, ("input", "x"))
    out_zp = -128 if chain else _zp(d, ("output", "y"))
    conv = _conv_for(d["params"]["layers"][layer], in_zp if in_zp is not None else 0, out_zp or 0)
    our_words = _ours(conv)
    ours = [register_values(RM, w) for w in our_words]
    vendor_tasks = _compile_a(d)["tasks"]
    assert len(ours) == len(tasks), "number of row windows"
    compared = 0
    for i, ti in enumerate(tasks):
        vw = _words(vendor_tasks[ti])
        if not chain:  # same registers in the same order, same trailer (the chain has a 32-word delta task)
            assert _layout(our_words[i]) == _layout(vw)
            if len(vw) > BODY_WORDS:
                assert our_words[i][-3:] == vw[-3:]  # amount, SYNC, op-enable
                assert our_words[i][-4] == vw[-4]  # next-task offset in the regcmd buffer
        theirs = register_values(RM, vw)
        skip = set(NOT_COMPARED) | (CHAIN_SKIP if chain else set())
        if theirs.get("DPU_RDMA_BRDMA_CFG") == 0x114:
            skip |= set(BS_FORM)  # the vendor's other BS form (what selects it is unknown)
        if in_zp is None:
            skip.add("CNA_PAD_CON1")
        if out_zp is None:
            skip.add("DPU_OUT_CVT_OFFSET")
        diffs = {r: (hex(v), hex(ours[i].get(r, -1))) for r, v in theirs.items()
                 if r not in skip and ours[i].get(r) != v}
        assert not diffs, f"task {ti}: register (vendor, ours): {diffs}"
        compared += len(set(theirs) - skip)
    print(f"{name} layer {layer}: {compared} register values equal to the vendor's")


@pytest.mark.parametrize("case", [ConvCase("dwconv", 112, 112, 32, dtype="int8"),
                                  ConvCase("conv2d", 16, 16, 32, 40, dtype="int8")], ids=str)
def test_trailer_and_amounts(case: ConvCase) -> None:
    """Every task, the last (or only) one included, ends with [next][amount][SYNC][OP_ENABLE 0x1D] inside its
    word count: accel/rocket programs REGISTER_AMOUNTS = ceil(count/2) - 1 and fetches nothing more. The last
    task's chain words are 0 / 0."""
    prog = compiler.compile(conv_graph(case), [0], [0], [3], "rk3576")
    tasks = prog.operations[0].tasks
    assert [(t.nbytes // 8) for t in tasks] == [BODY_WORDS + TRAILER_WORDS] * len(tasks)
    for i, t in enumerate(tasks):
        words = _task_words(prog, i)
        assert words[-2] == 0x0041_0000_0000_0000 and words[-1] == 0x0081_0000_001D_0008
        # what the kernel fetches from the task's own count is exactly what the previous task's chain announces
        assert -(-(t.nbytes // 8) // 2) - 1 == fetch_amount(BODY_WORDS) == 0x47
        if i + 1 < len(tasks):
            assert RM.decode(words[-3])[2] == {"PC_DATA_AMOUNT": 0x47}
            assert RM.decode(words[-4])[2]["PC_SOURCE_ADDR"] << 4 == tasks[i + 1].offset
        else:
            assert words[-4:] == trailer(RM)
            assert RM.decode(words[-4])[2]["PC_SOURCE_ADDR"] == 0 and RM.decode(words[-3])[2]["PC_DATA_AMOUNT"] == 0
    assert fetch_amount(32) == 0x11  # the vendor's amount before a 32-word task


@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
def test_shift_word_is_real_memory(per_channel: bool) -> None:
    """The shift word lives right after the table (never address 0). Per-tensor: the vendor's 14 / 14 with
    C = 2^14 (an exact identity). Per-channel: C up to 32767 (the largest scale) and the smallest shift that
    keeps v * C >> shift inside int32 for every input (coefs_rk3576.bs_shift), below the vendor's 14."""
    g = conv_graph(ConvCase("conv2d", 16, 16, 32, 40, dtype="int8", per_channel=per_channel))
    prog = compiler.compile(g, [0], [0], [3], "rk3576")
    words = _task_words(prog, 0)
    idx = next(i for i, w in enumerate(words) if RM.decode(w)[1] == "DPU_RDMA_BS_SHIFT_ADDR")
    reloc = next(r for r in prog.relocs if r.offset == idx * 8)
    coefs = prog.buffer(reloc.target).data
    off = (words[idx] >> 16) & 0xFFFFFFFF
    assert off > 0 and off % 64 == 0  # right after the table, never address 0
    word = struct.unpack_from("<I", coefs, off)[0]
    assert word == prog.operations[0].info["shift_word"]
    table = np.frombuffer(coefs[:off], np.uint8).reshape(-1, 64)
    c = table[:, 48:].copy().view("<i2").reshape(-1)[:40]
    a = table[:, :32].copy().view("<i4").reshape(-1)[:40].astype(np.int64)
    if not per_channel:
        assert word == 0x0E0E and np.all(c == 1 << 14)
        return
    shift = word & 0x3F
    assert word == shift | shift << 8 and shift < 14
    assert c.min() > 0 and c.max() == 32767  # never a zero multiplier; the largest scale at the int16 top
    w = g.tensors[1].data.astype(np.int64).reshape(40, -1)  # int8: stored = quantized, zero point 0
    v_max = 128 * np.abs(w).sum(axis=1) + np.abs(a)
    bound = int(v_max.max()) * int(c.max())  # bs_shift's bound: the largest |v| times the largest C
    assert bound + (1 << shift) < 1 << (31 + shift)  # u never leaves int32
    assert shift == 0 or bound + (1 << (shift - 1)) >= 1 << (30 + shift)  # and no smaller shift guarantees it


# ---- 3. issue 3: first convolution and a non-square input -------------------------------------------------

def _task_words(prog: Program, i: int) -> list[int]:
    t = prog.operations[0].tasks[i]
    return list(struct.unpack_from(f"<{(t.nbytes // 8)}Q", prog.buffer(t.buffer).data or b"", t.offset))


FIRST_LAYERS = [ConvCase("conv2d", 224, 224, 3, 32, kernel=3, stride=2, dtype="uint8"),
                ConvCase("conv2d", 128, 224, 3, 32, kernel=3, stride=2, dtype="int8"),
                ConvCase("conv2d", 224, 128, 16, 32, kernel=3, stride=1, dtype="int8")]


def check_section6_formulas(case: ConvCase, streams: list[dict[str, int]]) -> None:
    """rocket.md §6.2/§6.4 formulas (direct path, input channels padded to 16)."""
    ih, iw, ic, oc, k = case.in_h, case.in_w, case.in_c, case.channels_out, case.kernel
    ic16 = -(-ic // 16) * 16
    epr = -(-iw * ic16 // 64)
    single = epr * ih <= 4096
    rows_out = 0
    for regs in streams:
        f = {n: RM.decode((v << 16) | RM.register(n).offset | (RM.unit(RM.register(n).unit).write_target << 48))[2]
             for n, v in regs.items()}
        assert f["CNA_DMA_CON1"]["LINE_STRIDE"] == iw * 4
        assert f["CNA_DMA_CON2"]["SURF_STRIDE"] == iw * ih
        fetched = f["CNA_DMA_SIZE0"]["DMA_HEIGHT_M1"] + 1
        assert f["CNA_DMA_CON3"]["TASK_SURF"] == -(-iw * fetched // 4) * 4
        assert f["CNA_DATA_SIZE0"] == {"DATAIN_HEIGHT_M1": f["CNA_DATA_SIZE0"]["DATAIN_HEIGHT_M1"],
                                       "DATAIN_WIDTH_M1": iw - 1}
        assert f["CNA_UNDOC_118C"] == {"LO": iw - 1, "HI": iw - 1}
        assert f["CNA_WEIGHT_SIZE0"]["WEIGHT_BYTES"] == ic16 * (oc + oc % 2) * k * k
        assert f["CNA_WEIGHT_SIZE1"]["WEIGHT_BYTES_PER_KERNEL"] == ic16 * k * k
        assert f["CNA_DATA_SIZE2"]["KERNEL_FETCH"] == ic16 * k * k * 2  # the blog's 32*k*k at 16 channels
        assert f["CNA_WEIGHT_SIZE2"] == {"WEIGHT_KERNELS_M1": oc + oc % 2 - 1, "WEIGHT_WIDTH_M1": k - 1,
                                         "WEIGHT_HEIGHT_M1": k - 1}
        assert f["CNA_CBUF_CON1"] == {"DATA_ENTRIES": epr, "DATAIN_WIDTH": iw}  # the blog's iw<<16 | iw/4
        assert f["CNA_CBUF_CON2"]["DATA_ENTRIES"] == epr
        assert f["CNA_CBUF_CON0"]["DATA_LIMIT"] == (4096 if single else 5120)
        assert f["CNA_DATA_SIZE1"]["WINDOW_ENTRIES"] == epr * fetched
        window = f["CNA_DATA_SIZE0"]["DATAIN_HEIGHT_M1"] + 1
        assert window * epr <= f["CNA_CBUF_CON0"]["DATA_LIMIT"]
        rows_out += f["CORE_DATAOUT_SIZE_0"]["DATAOUT_HEIGHT_M1"] + 1
    assert rows_out == case.out_h
    assert (len(streams) == 1) == single


@pytest.mark.parametrize("case", FIRST_LAYERS, ids=str)
def test_issue3_first_layer_formulas(case: ConvCase) -> None:
    prog = compiler.compile(conv_graph(case), [0], [0], [3], "rk3576")
    streams = [register_values(RM, _task_words(prog, i)) for i in range(len(prog.operations[0].tasks))]
    check_section6_formulas(case, streams)


@pytest.mark.parametrize("case", FIRST_LAYERS[:2], ids=str)
def test_issue3_image_input_takes_direct_path(case: ConvCase) -> None:
    """A 3-channel image layer is claimed on the direct path (channels padded to 16), not on the vendor's
    ARGB sub-encoding (CONV_MODE 6, CORE 0x3018 = 0x10000081): its weight byte order and CVT arithmetic
    are not pinned down (docs/hardware/rocket-rk3576.md, "ARGB first-layer path"). The claim says so."""
    g = conv_graph(case)
    ok, why = compiler.supported(g, "rk3576")[0]
    assert ok
    assert "direct path, 3 input channels padded to 16" in why
    assert "ARGB first-layer sub-encoding not used" in why
    assert "docs/hardware/rocket-rk3576.md" in why
    prog = compiler.compile(g, [0], [0], [3], "rk3576")
    for i in range(len(prog.operations[0].tasks)):
        f = register_values(RM, _task_words(prog, i))
        assert f["CORE_MISC_CFG"] == 0x10000001  # direct int8, not the vendor's ARGB 0x10000081
        assert f["CNA_CONV_CON1"] & 0xF == 0  # CONV_MODE direct, not 6
        assert (f["CNA_CONV_CON1"] >> 12) & 0xF == 0  # no ARGB_IN
        assert f["CNA_CVT_CON0"] == 0x0B  # CVT bypassed (the vendor's ARGB word is 0x000E38E0-like)
        assert f["CNA_DMA_CON1"] == case.in_w * 4  # line stride of 16-channel rows, not iw*ic/16
    # a 16-channel input carries no such note
    ok16, why16 = compiler.supported(conv_graph(FIRST_LAYERS[2]), "rk3576")[0]
    assert ok16 and "ARGB" not in why16


def _delegate_rk3576_problem() -> str | None:
    try:
        import teflon
        from teflon.native import Device
        with Device("rk3576", sim=True):
            pass
        return None if Path(teflon.delegate_path()).is_file() else "libteflon.so missing"
    except Exception as exc:  # noqa: BLE001 - any failure means: no simulated rk3576 yet
        return f"simulated rk3576 device unavailable ({exc})"


@pytest.mark.parametrize("case", FIRST_LAYERS[:2], ids=str)
def test_issue3_cli_regcmd(case: ConvCase, tmp_path: Path) -> None:
    """The same formulas on `python -m teflon regcmd --device rk3576` (the delegate's bridge capture)."""
    problem = _delegate_rk3576_problem()
    if problem:
        pytest.skip(problem)
    model = tmp_path / f"{case.name}.tflite"
    model.write_bytes(case.build())
    r = subprocess.run([sys.executable, "-m", "teflon", "regcmd", "--device", "rk3576", "--sim", "1",
                        "--model", str(model), "--json", "-"], capture_output=True, text=True, timeout=300,
                       check=False)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    op = doc["operations"][0]
    streams = []
    for t in op["tasks"]:
        streams.append(register_values(RM, [int(w, 16) for w in t["regcmd"]]))
    check_section6_formulas(case, streams)


@pytest.mark.parametrize("case", [ConvCase("dwconv", 112, 112, 32, dtype="int8"),
                                  ConvCase("conv2d", 15, 15, 32, 40, dtype="uint8")], ids=str)
def test_layer_reused_at_another_input_pitch(case: ConvCase) -> None:
    """A partition whose input the DPU wrote (plane pitch round4(W*H)) reuses the layer the support decision
    encoded for a host-written input (pitch W*H): it equals the layer encoded from scratch at that pitch."""
    graph = conv_graph(case)
    conv = lower_conv(graph, graph.operations[0], per_channel=True)
    host = conv.in_h * conv.in_w
    pitch = host + 3 if host % 4 == 0 else -(-host // 4) * 4
    encode_layer(RM, conv, host, graph)
    reused = encode_layer(RM, conv, pitch, graph)
    fresh = encode_layer(RM, conv, pitch)
    assert [s.words for s in reused.streams] == [s.words for s in fresh.streams]
    assert [s.relocs for s in reused.streams] == [s.relocs for s in fresh.streams]
    assert (reused.params, reused.offsets, reused.weights, reused.coefs) == \
        (fresh.params, fresh.offsets, fresh.weights, fresh.coefs)
