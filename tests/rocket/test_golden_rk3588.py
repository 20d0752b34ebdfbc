"""The RK3588 encoder against Mesa's own rocket output (../shared/golden/rocket-rk3588, see its README).

Compared in the README's order: operations and tasks, every task's u64 words (address words as
(role, offset) through the program's relocations), packed weight bytes, bias bytes, task rows/offsets.
"""

from __future__ import annotations

import base64
import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from conftest import shared_path
from teflon import compiler, rocket
from teflon.hw.regmap import RegMap, RegMapError
from teflon.ir import Graph, Operation, Quant, Tensor
from teflon.program import Program

SHARED = shared_path() or Path("/nonexistent/shared")
GOLDEN = SHARED / "golden" / "rocket-rk3588"
FILES = sorted(GOLDEN.glob("*.json")) if GOLDEN.is_dir() else []

if not FILES:
    pytest.skip(f"no golden rocket-rk3588 files under {GOLDEN}", allow_module_level=True)


def f32(hexbits: str) -> np.float32:
    return np.frombuffer(struct.pack("<I", int(hexbits, 16)), "<f4")[0]


def graph_from_golden(d: dict) -> Graph:
    p = d["params"]
    tensors: dict[int, Tensor] = {}
    for key, t in d["graph"]["tensors"].items():
        idx = int(key)
        quant = Quant(np.array([f32(t["scale_f32_hex"])], np.float32), np.array([t["zero_point"]], np.int32))
        dtype = "int32" if idx == 2 else "uint8"
        data = None
        if idx == 1:
            data = np.frombuffer(base64.b64decode(p["weights"]["data_b64"]), np.uint8).reshape(t["shape"])
        elif idx == 2:
            data = np.array(p["bias"]["values"], np.int32)
        tensors[idx] = Tensor(idx, dtype, tuple(t["shape"]), quant, data)
    ops = []
    for i, o in enumerate(d["graph"]["operations"]):
        opts: dict[str, object] = {
            "padding": p["padding"],
            "stride_h": p["stride_hw"][0],
            "stride_w": p["stride_hw"][1],
            "dilation_h": p["dilation_hw"][0],
            "dilation_w": p["dilation_hw"][1],
            "activation": "NONE",
        }
        if o["type"] == "DEPTHWISE_CONV_2D":
            opts["depth_multiplier"] = 1
        ops.append(Operation(i, o["type"], list(o["inputs"]), list(o["outputs"]), opts))
    return Graph(tensors, ops)


def role_buffer(role: str, d: dict) -> str:
    op = d["outputs"]["operations"][0]
    if role == "input":
        return f"t{op['input_tensor']}"
    if role == "output":
        return f"t{op['output_tensor']}"
    name, _, k = role.partition("[op")
    return f"op{k.rstrip(']')}." + {"weights": "weights", "biases": "bias", "regcmd": "regcmd"}[name]


def describe(rm: RegMap, word: int) -> str:
    try:
        unit, name, _ = rm.decode(word)
    except RegMapError:
        unit, name = f"{word >> 48:#06x}", f"reg {word & 0xFFFF:#06x}"
    return f"{unit or '-'} {name}"


def compare_words(rm: RegMap, prog: Program, d: dict) -> list[str]:
    errors: list[str] = []
    for k, gop in enumerate(d["outputs"]["operations"]):
        mine = prog.operations[k]
        regbuf = prog.buffer(f"op{k}.regcmd").data
        assert regbuf is not None
        for ti, (gt, task) in enumerate(zip(gop["tasks"], mine.tasks)):
            gw = [int(w, 16) for w in gt["regcmd"]]
            if (task.nbytes // 8) != len(gw):
                errors.append(f"op{k} task{ti}: {(task.nbytes // 8)} words, golden {len(gw)}")
                continue
            words = struct.unpack_from(f"<{(task.nbytes // 8)}Q", regbuf, task.offset)
            relocs = {
                (r.offset - task.offset) // 8: r.target
                for r in prog.relocs
                if r.buffer == task.buffer and 0 <= r.offset - task.offset < 8 * (task.nbytes // 8)
            }
            addr = {a["word_index"]: a for a in gt["address_words"]}
            for i, (g, m) in enumerate(zip(gw, words)):
                if i in addr:
                    a = addr[i]
                    want_buf, want_off = role_buffer(a["role"], d), a["offset"]
                    got_off = (m >> 16) & 0xFFFFFFFF
                    base = int(a["base"], 16)
                    if relocs.get(i) != want_buf or got_off != want_off or (g - (base << 16)) & ~(0xFFFFFFFF << 16) != (
                        m & ~(0xFFFFFFFF << 16)
                    ):
                        errors.append(
                            f"op{k} task{ti} word {i} {describe(rm, m)}: reloc {relocs.get(i)}+{got_off:#x}, "
                            f"golden {want_buf}+{want_off:#x}"
                        )
                    continue
                if i in relocs:
                    errors.append(f"op{k} task{ti} word {i} {describe(rm, m)}: unexpected relocation to {relocs[i]}")
                if g != m:
                    errors.append(f"op{k} task{ti} word {i} {describe(rm, g)}: got {m:#018x}, golden {g:#018x}")
    return errors


@pytest.fixture(scope="module")
def rm() -> RegMap:
    return rocket.target("rk3588").regmap


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_golden(path: Path, rm: RegMap) -> None:
    d = json.loads(path.read_text())
    graph = graph_from_golden(d)
    sup = compiler.supported(graph, "rk3588")
    assert sup[0][0], sup[0][1]
    prog = compiler.compile(graph, [0], [0], [3], "rk3588", mesa_compat=True)
    out = d["outputs"]

    # 1. operations and tasks
    assert len(prog.operations) == out["num_operations"]
    assert [len(o.tasks) for o in prog.operations] == [len(o["tasks"]) for o in out["operations"]]

    # 2. words
    errors = compare_words(rm, prog, d)
    assert not errors, "\n".join(errors[:40])

    for k, gop in enumerate(out["operations"]):
        # 3. packed weights (the written prefix) and 4. bias bytes
        wbuf = prog.buffer(f"op{k}.weights")
        golden_w = base64.b64decode(gop["weights_bo"]["packed_b64"])
        assert wbuf.data is not None
        mine_w = bytes(wbuf.data)
        if mine_w != golden_w:
            first = next((i for i, (a, b) in enumerate(zip(mine_w, golden_w)) if a != b), min(len(mine_w), len(golden_w)))
            pytest.fail(f"weights differ: {len(mine_w)} vs {len(golden_w)} bytes, first difference at byte {first}")
        assert wbuf.size == gop["weights_bo"]["alloc_size"]
        assert prog.buffer(f"op{k}.bias").data == base64.b64decode(gop["bias_bo"]["bytes_b64"])

        # 5. task rows and offsets
        info = prog.operations[k].info
        assert info["reuse_weights"] == gop["reuse_weights_cbuf"]
        assert info["truncate_bits"] == gop["truncate_bits"]
        for gt, st in zip(gop["tasks"], info["split"]):  # type: ignore[arg-type]
            assert st["input_rows"] == gt["input_rows"]
            assert st["input_offset"] == gt["input_offset"]
            assert st["output_offset"] == gt["output_offset"]
            assert st["output_rows"] == gt["output_rows"]
            assert st["pads"] == gt["pads"]

        # the regcmd buffer matches byte for byte once addresses are applied
        regbuf = bytearray(prog.buffer(f"op{k}.regcmd").data or b"")
        assert len(regbuf) == gop["regcmd_bo"]["alloc_size"]

    # tensor buffers carry Mesa's 2x slack
    for key, t in d["fake_addresses"]["tensor_bos"].items():
        assert prog.buffer(f"t{key}").size == t["size"]


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_default_differs_only_in_requant_scale(path: Path, rm: RegMap) -> None:
    """The default encoder rounds OUT_CVT_SCALE to nearest (docs/hardware/rocket.md, "Requantization");
    every other word, and every weight and bias byte, stays Mesa's."""
    d = json.loads(path.read_text())
    graph = graph_from_golden(d)
    mesa = compiler.compile(graph, [0], [0], [3], "rk3588", mesa_compat=True)
    mine = compiler.compile(graph, [0], [0], [3], "rk3588")
    p = d["params"]
    exact = float(f32(p["input"]["scale_f32_hex"])) * float(f32(p["weights"]["scale_f32_hex"]))
    exact /= float(f32(p["output"]["scale_f32_hex"]))
    for a, b in zip(mesa.buffers, mine.buffers):
        assert a.name == b.name and a.size == b.size
        if not a.name.endswith(".regcmd"):
            assert a.data == b.data, a.name
            continue
        wa = struct.unpack(f"<{len(a.data or b'') // 8}Q", a.data or b"")
        wb = struct.unpack(f"<{len(b.data or b'') // 8}Q", b.data or b"")
        for x, y in zip(wa, wb):
            if x == y:
                continue
            _, name, _ = rm.decode(y)
            assert name in ("DPU_OUT_CVT_SCALE", "DPU_OUT_CVT_SHIFT"), describe(rm, y)
    trunc = mesa.operations[0].info["truncate_bits"]
    scale, shift = mine.operations[0].info["out_cvt"]  # type: ignore[misc]
    assert abs(scale / 2.0**shift - exact * 2**trunc) <= 2.0 ** -(shift + 1)  # nearest 1/2^shift


def test_regmap_roundtrip(rm: RegMap) -> None:
    for reg in rm.registers:
        # each field at its limit: the top of its bits, or of its range where the table narrows it
        fields = {f.name: rm.limits(reg.full_name, f.name)[1 if not f.signed else 0] for f in reg.fields}
        unit, name, decoded = rm.decode(rm.word(reg.full_name, **fields))
        assert (unit, name) == (reg.unit, reg.full_name)
        assert decoded == fields
        for f in reg.fields:
            one = {f.name: 1}
            assert rm.decode(rm.word(reg.full_name, **one))[2][f.name] == 1


def test_regmap_rejects(rm: RegMap) -> None:
    with pytest.raises(RegMapError):
        rm.value("CNA_CBUF_CON0", DATA_BANK=16)  # 4-bit field
    with pytest.raises(RegMapError):
        rm.value("CNA_CBUF_CON0", NO_SUCH_FIELD=1)
    with pytest.raises(RegMapError):
        rm.word_raw("CORE_UNDOC_3030", 1)  # undescribed: only 0
    with pytest.raises(RegMapError):
        rm.decode((0x0201 << 48) | (1 << 31 << 16) | 0x1040)  # reserved CBUF_CON0 bit
    with pytest.raises(RegMapError):
        rm.decode((0x0201 << 48) | 0x1004 + 0x7000)  # no register there


def test_regmap_word_memo(rm: RegMap) -> None:
    """word_of's memo (an encoder's repeated words) returns the packed word for equal values of any int type, keeps
    rejecting a value out of range on every call, and is emptied at its limit."""
    from teflon.hw import regmap
    from teflon.rocket.stream import Emitter

    packed = rm.word("CNA_CONV_CON3", CONV_X_STRIDE=2, CONV_Y_STRIDE=3)
    for fields in ({"CONV_X_STRIDE": 2, "CONV_Y_STRIDE": 3}, {"CONV_X_STRIDE": np.int64(2), "CONV_Y_STRIDE": True + 2}):
        assert rm.word_of("CNA_CONV_CON3", fields) == packed
    e = Emitter(rm)
    e("CNA_CONV_CON3", CONV_X_STRIDE=2, CONV_Y_STRIDE=3)
    e.put("CNA_CONV_CON3", {"CONV_X_STRIDE": 2, "CONV_Y_STRIDE": 3})
    assert e.s.words == [packed, packed]
    for _ in range(2):
        with pytest.raises(RegMapError):
            e("CNA_CBUF_CON0", DATA_BANK=16)  # 4-bit field
    fresh = RegMap(rm.table)
    for i in range(regmap.WORD_MEMO_LIMIT + 1):
        fresh.word_of("CNA_DMA_CON2", {"SURF_STRIDE": i})
    assert len(fresh.known_words()) <= regmap.WORD_MEMO_LIMIT


def test_format_stream_names(rm: RegMap) -> None:
    words = [
        rm.word("CNA_CBUF_CON0", DATA_BANK=7, WEIGHT_BANK=5),
        rm.word("DPU_BS_OW_OP", OW_OP=-23),
        0,
        rm.special_word("SYNC"),
        rm.special_word("OP_ENABLE", CNA_EN=1, CORE_EN=1, DPU_EN=1, DPU_RDMA_EN=1),
    ]
    text = rm.format_stream(words)
    lines = text.splitlines()
    assert len(lines) == len(words)
    assert "CNA_CBUF_CON0" in lines[0] and "DATA_BANK=7" in lines[0] and "WEIGHT_BANK=5" in lines[0]
    assert "DPU_BS_OW_OP" in lines[1] and "OW_OP=-0x17" in lines[1]
    assert "NOP" in lines[2] and "SYNC" in lines[3] and "OP_ENABLE" in lines[4]
    assert words[4] == 0x0081_0000_001D_0008


# ---- encoder properties beyond the golden set -------------------------------------------------


def _golden(name: str) -> dict:
    return json.loads((GOLDEN / f"{name}.json").read_text())


def _to_int8(g: Graph) -> Graph:
    """The same model in int8: every uint8 value and zero point minus 128 (same stored bytes)."""
    tensors = {}
    for i, t in g.tensors.items():
        if t.dtype != "uint8":
            tensors[i] = t
            continue
        q = Quant(t.quant.scales, t.quant.zero_points - 128) if t.quant else None
        data = None if t.data is None else (t.data.astype(np.int16) - 128).astype(np.int8)
        tensors[i] = Tensor(i, "int8", t.shape, q, data)
    return Graph(tensors, g.operations)


@pytest.mark.parametrize(
    "name", ["conv-in112x112x32-oc32-k3-s1-same-zp74-izp60", "dwconv-in28x28x64-k3-s1-same-zp95-trunc",
             "conv-in28x28x1-oc16-k3-s1-same-zp95", "conv-in28x28x32-oc32-k3-s1-same-zp74-izp0"]
)
def test_int8_same_stored_bytes(name: str) -> None:
    g = graph_from_golden(_golden(name))
    a = compiler.compile(g, [0], [0], [3], "rk3588")
    b = compiler.compile(_to_int8(g), [0], [0], [3], "rk3588")
    for buf in a.buffers:
        assert b.buffer(buf.name).data == buf.data, buf.name
    ia, ib = a.io[0], b.io[0]
    assert ia.pad_value == ib.pad_value
    assert ia.xor ^ ib.xor == 0x80  # uint8 host bytes = int8 host bytes ^ 0x80


def _conv_graph(h: int, w: int, c: int, oc: int, k: int, s: int, padding: str = "SAME", dw: bool = False,
                dtype: str = "uint8", act: str = "NONE", out_zp: int = 3, w_scales: int = 1,
                dilation: int = 1, stride_w: int | None = None) -> Graph:
    rng = np.random.default_rng(h * 1000 + w * 10 + c + oc + k)
    lo, hi = (0, 256) if dtype == "uint8" else (-128, 128)
    oh = -(-h // s) if padding == "SAME" else (h - k) // s + 1
    sw = stride_w or s
    ow = -(-w // sw) if padding == "SAME" else (w - k) // sw + 1
    wshape = (1, k, k, c) if dw else (oc, k, k, c)
    zp = 0 if dtype == "int8" else 120
    wq = Quant(np.linspace(0.01, 0.02, w_scales).astype(np.float32), np.full(w_scales, zp, np.int32), 3 if dw else 0)
    tensors = {
        0: Tensor(0, dtype, (1, h, w, c), Quant(np.array([0.05], np.float32), np.array([lo + 7], np.int32))),
        1: Tensor(1, dtype, wshape, wq, rng.integers(lo, hi, wshape).astype(dtype)),
        2: Tensor(2, "int32", (oc,), Quant(np.array([0.0005], np.float32), np.array([0], np.int32)),
                  rng.integers(-5000, 5000, oc).astype(np.int32)),
        3: Tensor(3, dtype, (1, oh, ow, oc), Quant(np.array([0.1], np.float32), np.array([lo + out_zp], np.int32))),
    }
    opts: dict[str, object] = {"padding": padding, "stride_h": s, "stride_w": stride_w or s, "activation": act,
                               "dilation_h": dilation, "dilation_w": dilation}
    if dw:
        opts["depth_multiplier"] = 1
    return Graph(tensors, [Operation(0, "DEPTHWISE_CONV_2D" if dw else "CONV_2D", [0, 1, 2], [3], opts)])


def _fields(rm: RegMap, prog: Program, k: int = 0, task: int = 0) -> dict[str, dict[str, int]]:
    t = prog.operations[k].tasks[task]
    data = prog.buffer(t.buffer).data
    assert data is not None
    out: dict[str, dict[str, int]] = {}
    for w in struct.unpack_from(f"<{(t.nbytes // 8)}Q", data, t.offset):
        _, name, f = rm.decode(w)
        out[name] = f
    return out


def test_non_square_uses_contiguous_width(rm: RegMap) -> None:
    g = _conv_graph(10, 24, 32, 16, 3, 2)  # H=10 rows, W=24 contiguous; TF SAME: pads (0,1) both axes
    prog = compiler.compile(g, [0], [0], [3], "rk3588")
    f = _fields(rm, prog)
    assert f["CNA_DATA_SIZE0"] == {"DATAIN_HEIGHT": 10, "DATAIN_WIDTH": 24}
    assert f["CNA_DATA_SIZE2"]["DATAOUT_WIDTH"] == 12
    assert f["CNA_DMA_CON1"]["LINE_STRIDE"] == 4 * 24
    assert f["CNA_DMA_CON2"]["SURF_STRIDE"] == 24 * (10 - 4)
    assert f["CORE_DATAOUT_SIZE_0"] == {"DATAOUT_WIDTH": 11, "DATAOUT_HEIGHT": 4}
    assert f["DPU_DST_SURF_STRIDE"]["DST_SURF_STRIDE"] == 12 * 5
    assert f["CNA_PAD_CON0"] == {"PAD_TOP": 0, "PAD_LEFT": 0}
    g = _conv_graph(9, 16, 32, 16, 5, 1)  # pads 2/2 rows, 2/2 columns
    f = _fields(rm, compiler.compile(g, [0], [0], [3], "rk3588"))
    assert f["CNA_PAD_CON0"] == {"PAD_TOP": 2, "PAD_LEFT": 2}
    io = compiler.compile(g, [0], [0], [3], "rk3588").io
    assert (io[0].h, io[0].w, io[0].row_pitch, io[0].plane_pitch) == (9, 16, 16 * 16, 16 * 9 * 16)


def _mesa_pack_loops(w: np.ndarray, zp: int, dw: bool) -> bytes:
    """Reference packing spelled as loops (rocket.md §3.2/§3.3), with IC = align(max(ICr,16),16)."""
    oc_r, kh, kw, ic_r = w.shape if not dw else (1, *w.shape[1:])
    ic = -(-max(ic_r, 16) // 16) * 16
    group = 64 if dw else 32
    oce = 1 if dw else -(-oc_r // 2) * 2
    out = bytearray()
    for og in range(-(-oce // 32)):
        for ig in range(-(-ic // group)):
            for y in range(kh):
                for x in range(kw):
                    for oc in range(og * 32, min(og * 32 + 32, oce)):
                        for c in range(ig * group, min(ig * group + group, ic)):
                            if not dw and oc >= oc_r:
                                v = 0
                            elif c >= ic_r:
                                v = zp
                            else:
                                v = int(w[0 if dw else oc, y, x, c])
                            out.append(v & 0xFF)
    return bytes(out)


@pytest.mark.parametrize("ic", [1, 3, 16, 20, 40, 48, 120])
@pytest.mark.parametrize("oc", [1, 2, 3, 17, 64])
def test_pack_conv_matches_loops(ic: int, oc: int) -> None:
    from teflon.rocket import cube
    from teflon.rocket.rk3588 import weights

    w = np.random.default_rng(ic * 100 + oc).integers(-128, 128, (oc, 3, 3, ic)).astype(np.int8)
    packed = weights.pack(w, -7, False)
    assert packed == _mesa_pack_loops(w, -7, False)
    assert len(packed) == 9 * cube.packed_input_channels(ic) * cube.kernels(oc, False)


@pytest.mark.parametrize("c", [2, 8, 16, 40, 80, 96, 112, 256])
def test_pack_depthwise_matches_loops(c: int) -> None:
    from teflon.rocket import cube
    from teflon.rocket.rk3588 import weights

    w = np.random.default_rng(c).integers(-128, 128, (1, 3, 3, c)).astype(np.int8)
    packed = weights.pack(w, 5, True)
    assert packed == _mesa_pack_loops(w, 5, True)
    assert len(packed) == 9 * cube.packed_input_channels(c)


def test_out_cvt_carry() -> None:
    from teflon.rocket import requant as coefs

    for exp in (120, 121):  # even and odd exponents: Mesa gets 0x4000 (half) or 0xC000 here
        m = np.frombuffer(struct.pack("<I", (exp << 23) | (0x3FFF << 9) | 0x1FF), "<f4")[0]
        scale, shift = coefs.out_cvt(m, np.float32(1.0), np.float32(1.0), 0, mesa_rounding=True)
        assert scale == 1 << 14 and shift == 141 - exp - 1
        assert abs(scale / 2.0**shift - float(m)) / float(m) < 1e-4
    scale, shift = coefs.out_cvt(np.float32(0.75), np.float32(1.0), np.float32(1.0), 0, mesa_rounding=True)
    assert (scale, shift) == (24577, 15)
    assert coefs.out_cvt(np.float32(0.75), np.float32(1.0), np.float32(1.0), 0) == (24576, 15)  # nearest


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"w_scales": 16}, None),  # per-channel weights: the BS multiplier (docs/hardware/rocket.md)
        ({"act": "RELU"}, None),  # the BS ReLU clamps at the zero point
        ({"act": "RELU", "out_zp": 0}, None),
        ({"act": "RELU6", "out_zp": 0}, None),  # the BS ReLUX clamps at 60
        ({"act": "TANH"}, "fused activation TANH not supported"),
        ({"dilation": 2}, "dilation 2x2 not supported"),
        ({"stride_w": 1, "s": 2}, None),  # CONV_X_STRIDE / CONV_Y_STRIDE are separate fields
        ({"s": 4}, "stride 4x4 not supported"),
        ({"k": 7}, None),
        ({"k": 9}, "kernel 9x9 not supported"),
        ({"h": 2}, None),  # SURF_STRIDE wraps below four rows (docs/hardware/rocket.md)
        ({"dtype": "int8"}, None),
    ],
)
def test_support_reasons(kwargs: dict, reason: str | None) -> None:
    args = {"h": 16, "w": 16, "c": 16, "oc": 16, "k": 3, "s": 1, **kwargs}
    ok, why = compiler.supported(_conv_graph(**args), "rk3588")[0]
    if reason is None:
        assert ok, why
    else:
        assert not ok and reason in why, why


def test_support_add_and_device() -> None:
    q = Quant(np.array([0.2], np.float32), np.array([128], np.int32))

    def graph(second: int, constant: bool = False) -> Graph:
        """A fresh graph per variant: the compiler keeps what it derives on a graph it saw (ir.memo)."""
        g = _conv_graph(8, 8, 16, 16, 1, 1)
        g.tensors[4] = Tensor(4, "uint8", (1, 8, 8, 16), q)
        g.tensors[5] = Tensor(5, "uint8", (1, 8, 8, 16), q, np.zeros((1, 8, 8, 16), np.uint8) if constant else None)
        g.operations.append(Operation(1, "ADD", [3, second], [4], {"activation": "NONE"}))
        return g

    for soc in ("rk3588", "rk3576"):
        sup = compiler.supported(graph(3), soc)
        assert sup[0][0]  # both encoders claim the convolution
        assert sup[1] == (False, "ADD of a tensor with itself runs on the CPU")
        assert compiler.supported(graph(5), soc)[1] == (True, "fused into node 0 (DPU element-wise add of tensor 5)")
    g = graph(5, constant=True)
    assert "not one value or one per channel" in compiler.supported(g, "rk3588")[1][1]  # a full-map constant
    with pytest.raises(ValueError, match="unknown device"):
        compiler.supported(g, "rk3562")  # not in the target registry


def test_io_bindings_and_jobs() -> None:
    from teflon.program import LAYOUT_NC1HWC2, LAYOUT_ROWS

    prog = compiler.compile(graph_from_golden(_golden("conv-in28x28x1-oc16-k3-s1-same-zp95")), [0], [0], [3], "rk3588")
    i, o = prog.io
    assert (i.layout, i.row_pitch, i.xor, i.pad_value) == (LAYOUT_ROWS, 28, 0, 128)
    assert (o.layout, o.c2, o.row_pitch, o.plane_pitch, o.xor) == (LAYOUT_NC1HWC2, 16, 28 * 16, 28 * 28 * 16, 0x80)
    d = _golden("conv-in112x112x32-oc32-k3-s1-same-zp74-izp60")
    prog = compiler.compile(graph_from_golden(d), [0], [0], [3], "rk3588")
    assert prog.io[0].pad_value == (60 - 128) & 0xFF and prog.io[0].xor == 0x80
    assert len(prog.jobs) == 1 and len(prog.jobs[0].tasks) == 2  # weights resident: one job
    assert prog.jobs[0].in_buffers == ["t0"] and prog.jobs[0].out_buffers == ["t3"]
    d = _golden("conv-in112x112x120-oc128-k5-s2-same-zp151")
    prog = compiler.compile(graph_from_golden(d), [0], [0], [3], "rk3588")
    assert [len(j.tasks) for j in prog.jobs] == [1] * 9  # weights don't fit: one job per task
    assert prog.to_blob()[:4] == b"TFLP"


def test_two_op_partition_shares_tensor_buffer() -> None:
    g1 = _conv_graph(16, 16, 16, 32, 3, 1)
    g2 = _conv_graph(16, 16, 32, 16, 1, 1)
    t = dict(g1.tensors)
    for i, x in g2.tensors.items():
        if i in (1, 2, 3):
            t[i + 3] = Tensor(i + 3, x.dtype, x.shape, x.quant, x.data)
    g = Graph(t, [g1.operations[0], Operation(1, "CONV_2D", [3, 4, 5], [6], dict(g2.operations[0].options))])
    prog = compiler.compile(g, [0, 1], [0], [6], "rk3588")
    assert [j.in_buffers for j in prog.jobs] == [["t0"], ["t3"]]
    assert [j.out_buffers for j in prog.jobs] == [["t3"], ["t6"]]
    assert [io.tensor for io in prog.io] == [0, 6]


def test_gen_c_header_script(tmp_path: Path) -> None:
    import shutil
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "python" / "teflon" / "hw" / "gen_c_header.py"
    out = tmp_path / "rocket_regs_rk3588.h"
    # no PYTHONPATH and no site packages: the generator must load the table from the source tree alone
    subprocess.run([sys.executable, "-S", str(script), "--table", "teflon.rocket.rk3588.regs:TABLE", "--prefix",
                    "RK3588", "-o", str(out)], check=True, cwd=tmp_path, env={"PATH": os.environ.get("PATH", "")})
    text = out.read_text()
    assert "#define RK3588_CNA_CBUF_CON0 0x1040" in text
    assert "#define RK3588_CNA_CBUF_CON0__WEIGHT_BANK__SHIFT 4" in text
    assert "#define RK3588_CNA_CBUF_CON0__WEIGHT_BANK__MASK 0xfu" in text
    assert '{0x0801, 0x3030, "CORE_UNDOC_3030", 0x00000000u}' in text
    assert "#define RK3588_TARGET_OP_ENABLE 0x0081" in text
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc:
        src = tmp_path / "t.c"
        src.write_text('#include "rocket_regs_rk3588.h"\n#include "rocket_regs_rk3588.h"\n'
                       "int main(void) { return rk3588_regs[0].offset + RK3588_NUM_REGS > 0 ? 0 : 1; }\n")
        subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-c", str(src), "-o", str(tmp_path / "t.o")],
                       check=True, cwd=tmp_path)
