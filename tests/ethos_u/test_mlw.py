"""The Ethos-U55/U65 weight stream (docs/hardware/ethosu-weights.md) against Vela 5.2.0, the oracle.

- the codec: teflon's encoder -> Vela's `mlw_codec.decode`, teflon's Python and C decoders; Vela's
  `mlw_codec.encode` -> teflon's Python and C decoders; the compression against Vela's encoder;
- the brick order: teflon's `bricks.reorder` against `mlw_codec.reorder_encode` (a sweep of geometries), and
  against the weight streams of whole Vela compiles of single-op modelgen models (decoded by Vela and by
  teflon's C decoder, then un-ordered in C and in Python); the scale records against the same compiles;
- the C decoder on corrupt and truncated streams, built with ASan/UBSan in a small host program.

Skips when Vela (`ethosu`) is not importable; the C parts skip without a C compiler.
"""

from __future__ import annotations

import ctypes
import itertools
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from teflon import modelgen as mg
from teflon.ethosu import bricks, mlw, scales

from .vela_oracle import compile_raw
from .vela_oracle import mlw_codec as vela_mlw_codec

mlw_codec = vela_mlw_codec()

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "drivers" / "ethosu"


# ---------------------------------------------------------------------------------------------------------------
# The C library through ctypes


class BrickGeom(ctypes.Structure):
    _fields_ = [("depthwise", ctypes.c_int), ("part_kernel", ctypes.c_int)] + [
        (n, ctypes.c_uint32) for n in ("ofm_depth", "ifm_depth", "kernel_h", "kernel_w", "ofm_block_depth",
                                       "dilation_x", "dilation_y", "ifm_bits")]

    @classmethod
    def of(cls, g: bricks.BrickGeometry) -> BrickGeom:
        return cls(int(g.kind == "depthwise"), int(g.part_kernel), g.ofm_depth, g.ifm_depth, g.kernel_h,
                   g.kernel_w, g.ofm_block_depth, g.dilation[1], g.dilation[0], g.ifm_bits)


def _cc() -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    return cc


@pytest.fixture(scope="session")
def clib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    """drivers/ethosu/ethosu_mlw.c compiled warning-free into a test shared library."""
    lib = tmp_path_factory.mktemp("ethosu_mlw") / "libethosu_mlw_test.so"
    proc = subprocess.run([_cc(), "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared",
                           "-o", str(lib), str(SRC / "ethosu_mlw.c")], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    c = ctypes.CDLL(str(lib))
    c.ethosu_mlw_decode.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int16),
                                    ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t), ctypes.c_char_p, ctypes.c_size_t]
    c.ethosu_brick_count.argtypes = [ctypes.POINTER(BrickGeom)]
    c.ethosu_brick_count.restype = ctypes.c_size_t
    c.ethosu_brick_index.argtypes = [ctypes.POINTER(BrickGeom), ctypes.POINTER(ctypes.c_int32), ctypes.c_size_t,
                                     ctypes.c_char_p, ctypes.c_size_t]
    c.ethosu_brick_unorder.argtypes = [ctypes.POINTER(BrickGeom), ctypes.POINTER(ctypes.c_int16), ctypes.c_size_t,
                                       ctypes.POINTER(ctypes.c_int16), ctypes.c_size_t, ctypes.c_char_p,
                                       ctypes.c_size_t]
    return c


def c_decode(c: ctypes.CDLL, data: bytes, max_out: int = 1 << 20) -> tuple[int, np.ndarray, str]:
    out = np.zeros(max_out, dtype=np.int16)
    n = ctypes.c_size_t()
    err = ctypes.create_string_buffer(256)
    rc = c.ethosu_mlw_decode(data, len(data), out.ctypes.data_as(ctypes.POINTER(ctypes.c_int16)), max_out,
                             ctypes.byref(n), err, 256)
    return rc, out[: n.value].copy(), err.value.decode()


def c_unorder(c: ctypes.CDLL, values: np.ndarray, g: bricks.BrickGeometry) -> np.ndarray:
    v = np.ascontiguousarray(values, dtype=np.int16)
    out = np.zeros(g.weights_shape, dtype=np.int16)
    err = ctypes.create_string_buffer(256)
    rc = c.ethosu_brick_unorder(ctypes.byref(BrickGeom.of(g)), v.ctypes.data_as(ctypes.POINTER(ctypes.c_int16)),
                                v.size, out.ctypes.data_as(ctypes.POINTER(ctypes.c_int16)), out.size, err, 256)
    assert rc == 0, err.value.decode()
    return out


def c_index(c: ctypes.CDLL, g: bricks.BrickGeometry) -> np.ndarray:
    n = c.ethosu_brick_count(ctypes.byref(BrickGeom.of(g)))
    idx = np.zeros(n, dtype=np.int32)
    err = ctypes.create_string_buffer(256)
    rc = c.ethosu_brick_index(ctypes.byref(BrickGeom.of(g)), idx.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)),
                              n, err, 256)
    assert rc == 0, err.value.decode()
    return idx


# ---------------------------------------------------------------------------------------------------------------
# The codec


def _values(kind: str, n: int, seed: int) -> np.ndarray:
    """Test streams: uniform over the full range, weight-like (normal), sparse, few distinct, one value, a lone
    non-zero in zeros."""
    rng = np.random.default_rng([seed, n, len(kind)])
    if kind == "uniform":
        return rng.integers(-255, 256, n)
    if kind == "normal":
        return np.round(rng.normal(0, 10, n)).astype(np.int64).clip(-255, 255)
    if kind == "narrow":
        return np.round(rng.normal(0, 1.5, n)).astype(np.int64).clip(-255, 255)
    if kind == "sparse":
        v = np.round(rng.normal(0, 20, n)).astype(np.int64).clip(-255, 255)
        v[rng.random(n) < 0.7] = 0
        return v
    if kind == "few":
        return rng.choice(rng.integers(-255, 256, 5), n)
    if kind == "constant":
        return np.full(n, -77)
    if kind == "lone":
        v = np.zeros(n, dtype=np.int64)
        v[n // 2] = 201
        return v
    raise AssertionError(kind)


KINDS = ["uniform", "normal", "narrow", "sparse", "few", "constant", "lone"]
SIZES = [1, 13, 300, 5000]
CODEC_CASES = [pytest.param(k, n, id=f"{k}-n{n}") for k in KINDS for n in SIZES]


@pytest.mark.parametrize(("kind", "n"), CODEC_CASES)
def test_encoder_decodes_everywhere(kind: str, n: int, clib: ctypes.CDLL) -> None:
    v = _values(kind, n, 0)
    for data in (mlw.encode(v), mlw.encode(v, uncompressed=True)):
        assert len(data) % 16 == 0
        assert np.array_equal(np.array(mlw_codec.decode(bytearray(data))), v)
        assert np.array_equal(mlw.decode(data), v)
        rc, out, err = c_decode(clib, data)
        assert rc == 0, err
        assert np.array_equal(out, v)


@pytest.mark.parametrize(("kind", "n"), CODEC_CASES)
def test_oracle_streams_decode(kind: str, n: int, clib: ctypes.CDLL) -> None:
    v = _values(kind, n, 1)
    data = bytes(mlw_codec.encode(v.tolist()))
    assert np.array_equal(mlw.decode(data), v)
    rc, out, err = c_decode(clib, data)
    assert rc == 0, err
    assert np.array_equal(out, v)


def test_long_streams_span_slices(clib: ctypes.CDLL) -> None:
    """More than 32768 coded weights (one slice's limit), with and without zero runs, both directions."""
    rng = np.random.default_rng(5)
    dense = np.round(rng.normal(0, 6, 70000)).astype(np.int64).clip(-255, 255)
    sparse = dense.copy()
    sparse[rng.random(dense.size) < 0.4] = 0
    assert mlw.plan(sparse)[0].zero_runs and len(mlw.plan(sparse)[0].slices) > 1
    for v in (dense, sparse):
        for data in (mlw.encode(v), bytes(mlw_codec.encode(v.tolist()))):
            rc, out, err = c_decode(clib, data)
            assert rc == 0, err
            assert np.array_equal(out, v)
        assert np.array_equal(np.array(mlw_codec.decode(bytearray(mlw.encode(v)))), v)


@pytest.mark.parametrize("kind", ["normal", "narrow", "sparse", "few"])
def test_compresses_like_vela(kind: str) -> None:
    """Compressed is smaller than uncompressed and within 2 % of Vela's encoder on the same values."""
    v = _values(kind, 20000, 2)
    ours = len(mlw.encode(v))
    assert ours < len(mlw.encode(v, uncompressed=True))
    assert ours <= 1.02 * len(mlw_codec.encode(v.tolist()))


def test_encoder_refuses_out_of_range() -> None:
    with pytest.raises(ValueError):
        mlw.encode(np.array([256]))
    with pytest.raises(ValueError):
        mlw.encode(np.zeros(0, dtype=np.int64))


# ---------------------------------------------------------------------------------------------------------------
# Corrupt streams


def _corrupt_streams() -> list[bytes]:
    rng = np.random.default_rng(7)
    out: list[bytes] = [b"", b"\xff" * 16, b"\x00" * 16, bytes(range(256))]
    for kind in ("normal", "sparse", "uniform", "few"):
        good = mlw.encode(_values(kind, 700, 3))
        out += [good[:k] for k in range(0, len(good), max(1, len(good) // 24))]
        for _ in range(12):
            b = bytearray(good)
            for pos in rng.integers(0, len(b) * 8, 3):
                b[pos // 8] ^= 1 << (pos % 8)
            out.append(bytes(b))
    out += [rng.integers(0, 256, int(n), dtype=np.uint8).tobytes() for n in rng.integers(1, 400, 30)]
    return out


def test_c_decoder_refuses_truncated(clib: ctypes.CDLL) -> None:
    """A stream cut inside its slices is refused or decodes to fewer values, never to the original."""
    for kind in ("normal", "sparse", "uniform"):
        v = _values(kind, 900, 4)
        good = mlw.encode(v)
        body = len(good.rstrip(b"\xff"))  # the slices end in the last byte before the 0xFF padding
        for k in range(body - 1):
            rc, out, err = c_decode(clib, good[:k])
            assert rc < 0 or out.size < v.size, (kind, k)
            if rc < 0:
                assert err
            with pytest.raises(mlw.MlwError):
                if k % 37 == 0:  # the scalar Python decoder on a sample
                    mlw.decode(good[:k])
                else:
                    raise mlw.MlwError("skipped")


def test_c_decoder_output_bound(clib: ctypes.CDLL) -> None:
    v = _values("normal", 1000, 6)
    rc, _out, err = c_decode(clib, mlw.encode(v), max_out=999)
    assert rc < 0 and "more than 999" in err


def test_c_decoder_under_sanitizers(tmp_path: Path) -> None:
    """Hostile streams through the decoder and the un-order in an ASan/UBSan build: no report, contracts kept."""
    exe = tmp_path / "fuzz"
    proc = subprocess.run([_cc(), "-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror",
                           "-fsanitize=address,undefined", "-fno-sanitize-recover=all", f"-I{SRC}",
                           str(REPO / "tests" / "c" / "test_ethosu_mlw_fuzz.c"), str(SRC / "ethosu_mlw.c"),
                           "-o", str(exe)], capture_output=True, text=True, check=False)
    if proc.returncode != 0 and "sanitize" in proc.stderr:
        pytest.skip(f"no sanitizer runtime: {proc.stderr[:200]}")
    assert proc.returncode == 0, proc.stderr
    files = []
    for i, data in enumerate(_corrupt_streams()):
        f = tmp_path / f"s{i}.bin"
        f.write_bytes(data)
        files.append(str(f))
    run = subprocess.run([str(exe), *files], capture_output=True, text=True, check=False,
                         env={"ASAN_OPTIONS": "detect_leaks=1", "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr[-2000:]
    assert "runtime error" not in run.stderr and "AddressSanitizer" not in run.stderr
    results = [line.split() for line in run.stdout.splitlines()]
    assert len(results) == len(files)
    assert any(int(rc) < 0 for rc, _ in results)


# ---------------------------------------------------------------------------------------------------------------
# Brick order against mlw_codec.reorder_encode


def _geometries(full: bool) -> list[pytest.param]:
    ofm = [8, 16, 24, 64, 20] if full else [8, 20]
    ifm = [3, 8, 16, 40] if full else [3, 40]
    kernels = [(1, 1), (3, 3), (5, 5), (1, 3), (9, 9)] if full else [(1, 1), (3, 3), (5, 5), (9, 9)]
    blocks = [8, 16, 32, 64] if full else [16]
    out = []
    for o, i, k, blk, kind, pk, bits, dil in itertools.product(ofm, ifm, kernels, blocks, ["conv", "depthwise"],
                                                              [False, True], [8, 16], [(1, 1), (2, 2), (1, 2)]):
        if (kind == "depthwise" and pk) or (not full and (bits == 16 or dil == (1, 2))):
            continue
        name = (f"{kind}-o{o}-i{i}-k{k[0]}x{k[1]}-blk{blk}-{'pkf' if pk else 'dpf'}-{bits}b-d{dil[0]}{dil[1]}")
        out.append(pytest.param(bricks.BrickGeometry(kind, o, i, k[0], k[1], blk, pk, dil, bits), id=name))
    return out


def _check_reorder(g: bricks.BrickGeometry, clib: ctypes.CDLL) -> None:
    rng = np.random.default_rng(g.ofm_depth * 1000 + g.ifm_depth)
    w = rng.integers(-127, 128, size=g.weights_shape).astype(np.int16)
    w[w == 0] = 1  # padding zeros are then the only zeros
    dy, dx = bricks.SUBKERNEL_MAX // g.dilation[0], bricks.SUBKERNEL_MAX // g.dilation[1]
    data = mlw_codec.reorder_encode(bricks.IFM_UBLOCK_DEPTH, bricks.OFM_UBLOCK_DEPTH, w, g.ofm_block_depth,
                                    g.kind == "depthwise", g.part_kernel, g.ifm_bits, dy, dx)[0]
    ref = np.array(mlw_codec.decode(data))
    ours = bricks.reorder(w, g)
    assert np.array_equal(ours, ref)
    assert np.array_equal(bricks.unorder(ref, g), w)
    assert np.array_equal(c_index(clib, g), bricks.brick_index(g))
    assert np.array_equal(c_unorder(clib, ref, g), w)


@pytest.mark.parametrize("g", _geometries(False))
def test_bricks_match_reorder_encode(g: bricks.BrickGeometry, clib: ctypes.CDLL) -> None:
    _check_reorder(g, clib)


@pytest.mark.slow
@pytest.mark.parametrize("g", _geometries(True))
def test_bricks_match_reorder_encode_sweep(g: bricks.BrickGeometry, clib: ctypes.CDLL) -> None:
    _check_reorder(g, clib)


@pytest.mark.parametrize("g", _geometries(False))
def test_library_brick_order_matches_numpy(g: bricks.BrickGeometry) -> None:
    """The library's brick order (teflon_native_ethosu_brick_order, behind `reorder`) gives the values of the
    numpy index (`reorder_reference`, through `brick_index`)."""
    w = np.random.default_rng(g.ofm_depth * 1000 + g.ifm_depth).integers(-255, 256, g.weights_shape).astype(np.int16)
    assert np.array_equal(bricks.reorder(w, g), bricks.reorder_reference(w, g))


def test_unorder_refuses_mismatch(clib: ctypes.CDLL) -> None:
    g = bricks.BrickGeometry("conv", 16, 8, 3, 3, 16, True)
    n = clib.ethosu_brick_count(ctypes.byref(BrickGeom.of(g)))
    values = np.zeros(n + 1, dtype=np.int16)
    out = np.zeros(g.weights_shape, dtype=np.int16)
    err = ctypes.create_string_buffer(256)
    p16 = ctypes.POINTER(ctypes.c_int16)
    rc = clib.ethosu_brick_unorder(ctypes.byref(BrickGeom.of(g)), values.ctypes.data_as(p16), n + 1,
                                   out.ctypes.data_as(p16), out.size, err, 256)
    assert rc < 0 and b"needs" in err.value
    values[bricks.brick_index(g).tolist().index(-1)] = 5  # a padding position holding a weight
    rc = clib.ethosu_brick_unorder(ctypes.byref(BrickGeom.of(g)), values.ctypes.data_as(p16), n,
                                   out.ctypes.data_as(p16), out.size, err, 256)
    assert rc < 0 and b"padding" in err.value
    bad = BrickGeom.of(bricks.BrickGeometry("depthwise", 16, 16, 3, 3, 16, True))
    assert clib.ethosu_brick_count(ctypes.byref(bad)) == 0


# ---------------------------------------------------------------------------------------------------------------
# Whole Vela compiles: the read-only blob's weight streams and scale records


# Command words (Vela ethos_u55_regs.py cmd0 / cmd1): cmd0 settings with the value in the param half-word,
# cmd1 settings with a payload word; operations below 0x100.
OP_CONV, OP_DEPTHWISE, OP_DMA_START = 0x2, 0x3, 0x10
IFM_DEPTH_M1, IFM_PRECISION, OFM_DEPTH_M1, OFM_BLK_DEPTH_M1 = 0x104, 0x105, 0x113, 0x117
KERNEL_WIDTH_M1, KERNEL_HEIGHT_M1, KERNEL_STRIDE, WEIGHT_REGION, SCALE_REGION = 0x120, 0x121, 0x122, 0x128, 0x129
DMA0_SRC_REGION, DMA0_DST_REGION = 0x130, 0x131
WEIGHT_BASE, WEIGHT_LENGTH, SCALE_BASE, SCALE_LENGTH, DMA0_SRC, DMA0_DST, DMA0_LEN = (
    0x20, 0x21, 0x22, 0x23, 0x30, 0x31, 0x32)


def _kickoffs(words: tuple[int, ...], read_only: bytes) -> list[dict]:
    """Each CONV/DEPTHWISE kick-off: its geometry registers and the weight/scale bytes it reads (following DMAs
    of the read-only region into other regions)."""
    c0: dict[int, int] = {}
    c1: dict[int, int] = {}
    mem = {0: bytearray(read_only)}
    ops = []
    i = 0
    while i < len(words):
        w = words[i]
        op, param = w & 0x3FF, w >> 16
        if w & 0x4000:
            c1[op] = words[i + 1] | ((param & 0xFF) << 32)
            i += 2
            continue
        i += 1
        if op >= 0x100:
            c0[op] = param
        elif op == OP_DMA_START:
            src, dst, n = c1[DMA0_SRC], c1[DMA0_DST], c1[DMA0_LEN]
            m = mem.setdefault(c0[DMA0_DST_REGION] & 7, bytearray())
            m.extend(bytes(max(0, dst + n - len(m))))
            m[dst:dst + n] = mem[c0[DMA0_SRC_REGION] & 7][src:src + n]
        elif op in (OP_CONV, OP_DEPTHWISE):
            stride = c0[KERNEL_STRIDE]
            dil = ((stride >> 4 & 1) + 1, (stride >> 3 & 1) + 1)
            g = bricks.BrickGeometry("depthwise" if op == OP_DEPTHWISE else "conv", c0[OFM_DEPTH_M1] + 1,
                                     c0[IFM_DEPTH_M1] + 1, c0[KERNEL_HEIGHT_M1] // dil[0] + 1,
                                     c0[KERNEL_WIDTH_M1] // dil[1] + 1, c0[OFM_BLK_DEPTH_M1] + 1, bool(stride & 4),
                                     dil, 16 if c0[IFM_PRECISION] & 0xC == 4 else 8)
            wr, sr = mem[c0[WEIGHT_REGION] & 7], mem[c0[SCALE_REGION] & 7]
            ops.append({"geom": g, "weights": bytes(wr[c1[WEIGHT_BASE]:c1[WEIGHT_BASE] + c1[WEIGHT_LENGTH]]),
                        "scales": bytes(sr[c1[SCALE_BASE]:c1[SCALE_BASE] + c1[SCALE_LENGTH]])})
    return ops


def _op_tensors(data: bytes) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], int]:
    """(OHWI int8 weights, int32 bias, [input, weight, output] scales, builtin code) of a single-op model."""
    tflite = pytest.importorskip("tflite")
    m = tflite.Model.GetRootAsModel(data, 0)
    sg = m.Subgraphs(0)
    op = sg.Operators(0)
    code = m.OperatorCodes(op.OpcodeIndex()).BuiltinCode()

    def array(t: int, dtype: type) -> np.ndarray:
        tensor = sg.Tensors(t)
        raw = m.Buffers(tensor.Buffer()).DataAsNumpy().tobytes()
        return np.frombuffer(raw, dtype).reshape(tensor.ShapeAsNumpy())

    w = array(op.Inputs(1), np.int8)
    if code == tflite.BuiltinOperator.DEPTHWISE_CONV_2D:
        w = np.ascontiguousarray(w.transpose(3, 1, 2, 0))  # (1, H, W, C) -> OHWI with I = 1
    elif w.ndim == 2:
        w = w.reshape(w.shape[0], 1, 1, w.shape[1])
    quant = [sg.Tensors(t).Quantization().ScaleAsNumpy() for t in (op.Inputs(0), op.Inputs(1), op.Outputs(0))]
    return w, array(op.Inputs(2), np.int32), quant, code


def _model_cases(full: bool) -> list[pytest.param]:
    if full:
        conv = list(itertools.product([1, 3, 5], [3, 8, 16, 40], [8, 16, 24, 64], [1, 2]))
        dw = list(itertools.product([3, 5], [8, 16, 24, 40, 64, 128], [1, 2]))
        fc = list(itertools.product([3, 16, 40, 64, 300], [8, 16, 24, 64]))
    else:
        conv = [(1, 3, 8, 1), (3, 8, 16, 1), (3, 16, 24, 2), (5, 40, 64, 1), (1, 40, 64, 1), (3, 40, 24, 1),
                (5, 16, 8, 2), (3, 64, 24, 1)]
        dw = [(3, 16, 1), (5, 24, 2), (3, 64, 1)]
        fc = [(64, 16), (40, 24)]
    cases: list[mg.ConvCase | mg.FcCase] = [
        mg.ConvCase("conv2d", 10, 10, ic, oc, kernel=k, stride=s, dtype="int8", per_channel=True)
        for k, ic, oc, s in conv]
    cases += [mg.ConvCase("dwconv", 10, 10, c, kernel=k, stride=s, dtype="int8", per_channel=(c % 16 == 0))
              for k, c, s in dw]
    cases += [mg.FcCase(i, o, dtype="int8", per_channel=(o % 16 == 0)) for i, o in fc]
    if not full:
        cases.append(mg.ConvCase("conv2d", 10, 10, 16, 20, kernel=3, dtype="int8"))  # per-tensor weights
    return [pytest.param(c, id=c.name) for c in cases]


def _check_model(case: mg.ConvCase | mg.FcCase, clib: ctypes.CDLL) -> None:
    data = case.build()
    raw = compile_raw(data)
    assert raw.read_only_region == 0
    w, bias, (s_in, s_w, s_out), code = _op_tensors(data)
    ops = _kickoffs(raw.words, raw.read_only)
    assert ops, "no convolution in Vela's stream"
    o0 = 0
    for op in ops:
        g = op["geom"]
        mine = w[o0:o0 + g.ofm_depth]
        vela_values = np.array(mlw_codec.decode(bytearray(op["weights"])))
        assert np.array_equal(bricks.reorder(mine, g), vela_values)
        rc, c_values, err = c_decode(clib, op["weights"])
        assert rc == 0, err
        assert np.array_equal(c_values, vela_values)
        assert np.array_equal(c_unorder(clib, c_values, g), mine)
        assert np.array_equal(mlw.decode(mlw.encode(bricks.reorder(mine, g))), vela_values)
        # scale records: same bytes as Vela's, from the model's own numbers
        rescale = scales.conv_scale(float(s_in[0]), s_w[o0:o0 + g.ofm_depth] if s_w.size > 1 else s_w,
                                    float(s_out[0]), fully_connected=(code == 9))
        mult, shift = scales.quantize_scale(np.broadcast_to(rescale, (g.ofm_depth,)))
        assert scales.pack_records(bias[o0:o0 + g.ofm_depth], mult, shift, align=True) == op["scales"]
        o0 += g.ofm_depth
    assert o0 == w.shape[0]


@pytest.mark.parametrize("case", _model_cases(False))
def test_vela_compile_bricks_and_scales(case: mg.ConvCase | mg.FcCase, clib: ctypes.CDLL) -> None:
    _check_model(case, clib)


@pytest.mark.slow
@pytest.mark.parametrize("case", _model_cases(True))
def test_vela_compile_bricks_and_scales_sweep(case: mg.ConvCase | mg.FcCase, clib: ctypes.CDLL) -> None:
    _check_model(case, clib)


def _random_indices(rng: np.random.Generator, setting: tuple[int, bool] | None, n: int) -> tuple[np.ndarray, int | None]:
    """n weight indices every value of which `setting` codes, and the uncompressed width (None for GRC)."""
    if setting is None:
        return rng.integers(0, 1 << 9, n).astype(np.int64), 9
    div, trunc = setting
    q_max = 2 if trunc else mlw.GRC_Q_MAX
    q = rng.integers(0, q_max + 1, n) if n % 2 else rng.integers(0, 2, n)  # odd n: long quotients; even: 0 or 1
    return ((q << div) | rng.integers(0, 1 << div, n)).astype(np.int64), None


@pytest.mark.parametrize("zdiv", [None, 0, 1, 2, 3], ids=lambda z: "plain" if z is None else f"zdiv{z}")
@pytest.mark.parametrize("cfg", range(len(mlw.W_CONFIGS)), ids=lambda c: f"wconfig{c}")
def test_library_stream_matches_numpy(cfg: int, zdiv: int | None) -> None:
    """The library's stream writer (teflon_native_ethosu_mlw_stream) writes the numpy reference's bytes
    (`mlw._write_reference`) for every weight setting, without zero runs and with every zero-run divisor: chunk
    edges, a partly filled last chunk, long quotients, runs spanning several ZUNARY chunks, weights leading the
    runs by 8 symbols, a palette, and a stream of three slices (this setting between two others)."""
    rng = np.random.default_rng(9100 + 16 * cfg + (zdiv if zdiv is not None else 8))
    setting = mlw.W_CONFIGS[cfg]
    for n, run_max in ((1, 0), (11, 3), (12, 40), (13, 1), (24, 300), (500, 9), (4097, 2)):
        idx, ub = _random_indices(rng, setting, n)
        pal = mlw.Palette((), 0, 9) if ub else mlw.Palette(tuple(range(2, 34, 2)), 3, 6)
        # three slices: this setting between plain divisor 2 and truncated divisor 0 (indices 0..2)
        head = ((rng.integers(0, 8, 5) << 2) | rng.integers(0, 4, 5)).astype(np.int64)
        tail = rng.integers(0, 3, 7).astype(np.int64)
        for slices, values in (([(0, n, cfg)], idx),
                               ([(0, 5, 2), (5, 5 + n, cfg), (5 + n, 12 + n, 6)], np.concatenate([head, idx, tail]))):
            runs = None if zdiv is None else rng.integers(0, run_max + 1, values.size + 1).astype(np.int64)
            plan = mlw.Plan(zdiv is not None, pal, tuple(slices), mlw.ZDIV_DISABLE if zdiv is None else zdiv)
            assert mlw._write(plan, values, runs) == mlw._write_reference(plan, values, runs), (cfg, zdiv, n)


@pytest.mark.parametrize("density", [0.0, 0.3, 0.9, 1.0], ids=lambda d: f"zeros{d}")
def test_library_plan_passes_match_numpy(density: float) -> None:
    """The library's passes over a stream's values (teflon_native_ethosu_mlw_stats / _indices) give what numpy
    computes: the code histogram, the zero-run sums of every divisor, the indices under a palette, the zero runs
    (`_split_zero_runs`) and the per-segment costs (`segment_costs`)."""
    from teflon import native

    rng = np.random.default_rng(int(density * 10))
    n = 3 * mlw.SEGMENT + 77
    values = rng.integers(-255, 256, n)
    values[rng.random(n) < density] = 0
    values = values.astype(np.int16)
    codes = mlw.sign_magnitude(values)
    freq, run_sums = native.ethosu_mlw_stats(values)
    assert np.array_equal(freq, np.bincount(codes, minlength=mlw.INDEX_MAX + 1))
    pal = mlw.choose_palette(freq, True)
    lut = mlw.index_lut(pal)
    idx, runs, hist = native.ethosu_mlw_indices(values, lut, None, mlw.SEGMENT_SHIFT)
    assert runs is None and np.array_equal(idx, lut[codes])
    assert hist is not None and np.array_equal(mlw.histogram_costs(hist, None), mlw.segment_costs(idx, None))
    if not values.any():
        return
    nonzero, ref_runs = mlw._split_zero_runs(values)
    assert np.array_equal(run_sums, [(ref_runs >> d).sum() for d in range(4)])
    freq[0] = 0
    lut = mlw.index_lut(mlw.choose_palette(freq, False))
    idx, runs, hist = native.ethosu_mlw_indices(values, lut, int((values == 0).sum()), mlw.SEGMENT_SHIFT)
    assert np.array_equal(idx, lut[mlw.sign_magnitude(nonzero)]) and np.array_equal(runs, ref_runs)
    if idx.size > mlw.SEGMENT:
        assert hist is not None and np.array_equal(mlw.histogram_costs(hist, None), mlw.segment_costs(idx, None))
    with pytest.raises(ValueError, match="-255..255"):
        native.ethosu_mlw_stats(np.array([1, -256], dtype=np.int16))


@pytest.mark.parametrize("nseg", [1, 2, 37, 3000], ids=lambda n: f"segments{n}")
def test_library_slice_plan_matches_python(nseg: int) -> None:
    """The library's slice-plan dynamic programme (teflon_native_ethosu_mlw_viterbi) chooses what the scalar
    Python form does, ties included (integer-valued costs tie often)."""
    rng = np.random.default_rng(nseg)
    for cost in (rng.random((nseg, len(mlw.W_CONFIGS))).astype(np.float32) * 4000,
                 rng.integers(2000, 2060, (nseg, len(mlw.W_CONFIGS))).astype(np.float32)):
        choice, total = mlw._viterbi(cost)
        ref, ref_total = mlw._viterbi_reference(cost)
        assert choice.tolist() == ref and total == ref_total


def test_scale_records_at_the_field_limits() -> None:
    """The 10-byte records byte by byte at the ends of each field (40-bit signed bias, 32-bit multiplier, 6-bit
    shift; docs/hardware/ethosu-weights.md §4), and back through unpack_records; values past a field refused."""
    bias = np.array([-(1 << 39), (1 << 39) - 1, -1, 0, 0x0102030405], np.int64)
    mult = np.array([0, (1 << 32) - 1, 1, 1 << 31, 0x0A0B0C0D], np.int64)
    shift = np.array([0, 63, 1, 31, 17], np.int64)
    want = b"".join(int(b).to_bytes(5, "little", signed=True) + int(m).to_bytes(4, "little") + bytes([int(s)])
                    for b, m, s in zip(bias, mult, shift))
    got = scales.pack_records(bias, mult, shift)
    assert got == want
    assert scales.pack_records(bias, mult, shift, align=True) == want + bytes(-len(want) % 16)
    for a, b in zip(scales.unpack_records(got, bias.size), (bias, mult, shift)):
        assert np.array_equal(a, b)
    for b, m, s in (((1 << 39), 0, 0), (0, 1 << 32, 0), (0, 0, 64), (0, -1, 0)):
        with pytest.raises(ValueError):
            scales.pack_records(np.array([b]), np.array([m]), np.array([s]))
