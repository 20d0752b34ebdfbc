"""The simulated etnaviv NPU (drivers/etnaviv) against TFLite semantics, on Mesa's golden command streams.

For every golden file of ../shared/golden/etnaviv-v7 and -v8: buffers are created at the golden fake addresses,
the golden descriptors, coefficient buffers and PWL LUTs are written into them, the graph inputs get random uint8
data (NHWC, as Mesa uploads them), the golden init + invoke command streams are submitted, and the graph output is
compared with a numpy model of the TFLite op (uint8 per-tensor quantization, TFLite's integer requantization).
The hardware's own requantization (etnaviv.md §4) may differ from TFLite by 1 LSB: the per-file figures (max |diff|,
exact fraction) are printed with -s and the test asserts the project target (max |diff| <= 1, >= 99.5 % exact).
The traffic counters must show each NN job reading exactly its coefficient buffer and each TP core its PWL table.

The simulator is compiled from drivers/etnaviv/*.c into a temporary shared library with the headers generated from
teflon.etnaviv.desc, so the test does not depend on the meson build.

Mutation test: every NN descriptor field of a few golden jobs is flipped (lowest and highest bit); the submit must
then fail or change the output, unless the field is a documented don't-care (NN_DONT_CARE, see
docs/hardware/etnaviv-sim.md). Coefficient bytes are flipped the same way (a sample of positions per buffer).
"""

from __future__ import annotations

import base64
import ctypes
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from conftest import shared_path
from teflon.hw.descriptor import DescTable

REPO = Path(__file__).resolve().parents[2]
SIM_DIR = REPO / "drivers" / "etnaviv"
SHARED = shared_path()
GOLDEN = {v: SHARED / "golden" / f"etnaviv-{v}" for v in ("v7", "v8")} if SHARED else {}

# Golden files whose result is Mesa-undefined (README §6), with the reason; they are skipped.
MESA_UNDEFINED = {
    ("v7", "sub-14x14x48"): "v7 SUB: Mesa asserts type == ADD; a release build lowers SUB as ADD (README §6 finding 3)",
    ("v7", "sub-9x9x16"): "v7 SUB: Mesa asserts type == ADD; a release build lowers SUB as ADD (README §6 finding 3)",
}

# Kinds whose Mesa lowering itself approximates the TFLite op: ADD/SUB become a convolution whose two weights
# quantize the input-scale ratio to 8 bits (etnaviv.md §1.3), so up to ~5 % of the outputs differ by 1 LSB from
# TFLite whatever the hardware does. Only max |diff| <= 1 is asserted for them.
LOWERING_APPROX = {"add", "sub"}

# NN descriptor fields whose value does not change the computed result in the simulator's model (timing or
# placement only, or unused by the v8 format); docs/hardware/etnaviv-sim.md "Don't-care fields".
NN_DONT_CARE = {
    "out_image_tile_x_size", "out_image_tile_y_size",             # tiling: order of work, not results
    "kernel_pattern_msb", "kernel_pattern_low", "kernel_pattern_high",  # v7 partial kernel caching pattern
    "kernel_cache_start_address", "kernel_cache_end_address",     # SRAM placement (checked for range only)
    "image_cache_start_address", "image_cache_end_address",
    "image_caching_mode", "kernel_caching_mode",                  # v7: 0/1/2 all give the same data
}
# v7 places each kernel's output plane by its trailer word; out_image_y_stride is only checked (>= the rows written,
# trailers multiples of the plane), which a job with a single output channel (trailer 0) cannot show.
NN_DONT_CARE_V7_ONE_CHANNEL = {"out_image_y_stride"}
# v8 codes (w - zp) mod 256; the zero point only decides where a delta wraps, which shows only for weights more
# than 127 away from it (none in some jobs).
NN_DONT_CARE_V8 = {"coef_zero_point"}


# ---------------------------------------------------------------------------------------------------------------
# The simulator through ctypes


class EtnaChip(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint) for n in ("version", "nn_core_count", "tp_core_count", "on_chip_sram_size",
                                             "nn_zrl_bits", "nn_input_buffer_depth", "nn_accum_buffer_depth")]


class EtnaStats(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("submits", "nn_jobs", "tp_jobs", "tp_descriptors", "macs",
                                               "tp_elements", "feature_rd", "weight_rd", "other_rd", "data_wr",
                                               "macs_nz")]


def _build_library(out_dir: Path) -> Path:
    """Generate the descriptor headers and compile drivers/etnaviv into a test shared library."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    gen = REPO / "python" / "teflon" / "hw" / "gen_c_header.py"
    for table in ("NN_V7", "NN_V8", "TP"):
        subprocess.run([sys.executable, str(gen), "--table", f"teflon.etnaviv.desc:{table}", "--prefix",
                        f"ETNA_{table}", "-o", str(out_dir / f"etna_{table.lower()}_desc.h")], check=True)
    lib = out_dir / "libetna_sim_test.so"
    sources = sorted(str(p) for p in SIM_DIR.glob("etna_sim*.c"))
    proc = subprocess.run([cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared",
                           f"-I{out_dir}", "-o", str(lib), *sources, "-lm"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return lib


@pytest.fixture(scope="session")
def simlib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(_build_library(tmp_path_factory.mktemp("etna_sim"))))
    lib.etna_sim_create.restype = ctypes.c_void_p
    lib.etna_sim_create.argtypes = [ctypes.POINTER(EtnaChip), ctypes.c_char_p, ctypes.c_size_t]
    lib.etna_sim_destroy.argtypes = [ctypes.c_void_p]
    lib.etna_sim_bo_create_at.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64,
                                          ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t]
    lib.etna_sim_submit.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32), ctypes.c_uint32,
                                    ctypes.c_char_p, ctypes.c_size_t]
    lib.etna_sim_get_stats.argtypes = [ctypes.c_void_p, ctypes.POINTER(EtnaStats)]
    return lib


class Sim:
    """One simulator instance with the golden file's buffers at their fake addresses."""

    def __init__(self, lib: ctypes.CDLL, chip: dict) -> None:
        self.lib = lib
        self.err = ctypes.create_string_buffer(512)
        c = EtnaChip(*(int(chip[k]) for k in ("nn_core_version", "nn_core_count", "tp_core_count",
                                               "on_chip_sram_size", "nn_zrl_bits", "nn_input_buffer_depth",
                                               "nn_accum_buffer_depth")))
        self.h = lib.etna_sim_create(ctypes.byref(c), self.err, 512)
        assert self.h, self.err.value.decode()
        self.maps: dict[int, np.ndarray] = {}

    def close(self) -> None:
        if self.h:
            self.lib.etna_sim_destroy(self.h)
            self.h = None

    def bo(self, addr: int, size: int) -> np.ndarray:
        ptr = ctypes.c_void_p()
        rc = self.lib.etna_sim_bo_create_at(self.h, addr, size, ctypes.byref(ptr), self.err, 512)
        assert rc == 0, self.err.value.decode()
        arr = np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_uint8)), shape=(size,))
        self.maps[addr] = arr
        return arr

    def view(self, addr: int) -> tuple[np.ndarray, int]:
        """(BO map, offset) of the BO holding addr."""
        for base, arr in self.maps.items():
            if base <= addr < base + arr.size:
                return arr, addr - base
        raise KeyError(hex(addr))

    def submit(self, words: list[int]) -> str | None:
        buf = (ctypes.c_uint32 * len(words))(*words)
        rc = self.lib.etna_sim_submit(self.h, buf, len(words), self.err, 512)
        return None if rc == 0 else self.err.value.decode()

    def stats(self) -> EtnaStats:
        s = EtnaStats()
        self.lib.etna_sim_get_stats(self.h, ctypes.byref(s))
        return s


# ---------------------------------------------------------------------------------------------------------------
# Golden files


def _golden_files() -> list[tuple[str, Path]]:
    out = []
    for v, d in GOLDEN.items():
        if d.is_dir():
            out += [(v, p) for p in sorted(d.glob("*.json"))]
    return out


def _f32(hexstr: str) -> float:
    return float(np.frombuffer(int(hexstr, 16).to_bytes(4, "little"), dtype=np.float32)[0])


def _words(hexes: list[str]) -> list[int]:
    return [int(x, 16) for x in hexes]


def _tensor_location(g: dict, idx: int) -> tuple[int, str]:
    """Device address and actual layout of a Mesa tensor (TFLite index)."""
    for b in g["fake_addresses"]["buffers"]:
        for t in b.get("mesa_tensors", []):
            if t["idx"] == idx:
                return int(b["addr"], 16) + t["offset"], t["actual_layout"]
    raise KeyError(idx)


@dataclass
class Loaded:
    sim: Sim
    g: dict
    inputs: dict[int, np.ndarray]


def load(lib: ctypes.CDLL, g: dict, seed: int = 1) -> Loaded:
    """A simulator with every golden buffer, descriptor, coefficient buffer and LUT in place, random inputs."""
    sim = Sim(lib, g["chip"])
    for b in g["fake_addresses"]["buffers"]:
        sim.bo(int(b["addr"], 16), int(b["size"]))
    for job in g["outputs"]["jobs"]:
        for d in job["descriptors"]:
            arr, off = sim.view(int(d["addr"], 16))
            w = np.array(_words(d["words_hex"]), dtype="<u4").view(np.uint8)
            arr[off:off + w.size] = w
        coefs = job.get("coefficients")
        if coefs:
            arr, off = sim.view(int(coefs["addr"], 16))
            data = np.frombuffer(base64.b64decode(coefs["bytes_b64"]), dtype=np.uint8)
            arr[off:off + data.size] = data
        lut = job.get("pwl_lut")
        if lut is not None:
            arr, off = sim.view(int(lut["addr"], 16))
            w = np.array(_words(lut["words_hex"]), dtype="<u4").view(np.uint8)
            arr[off:off + w.size] = w
    rng = np.random.default_rng(seed)
    inputs = {}
    for idx in g["graph"]["graph_inputs"]:
        t = g["graph"]["tensors"][str(idx)]
        x = rng.integers(0, 256, size=t["shape"], dtype=np.uint8)
        addr, _ = _tensor_location(g, idx)
        arr, off = sim.view(addr)
        arr[off:off + x.size] = x.reshape(-1)
        inputs[idx] = x
    return Loaded(sim, g, inputs)


def run(ld: Loaded) -> tuple[str | None, np.ndarray | None]:
    cs = ld.g["outputs"]["cmdstream"]
    for words in (cs["init_words_hex"], cs["invoke_words_hex"]):
        err = ld.sim.submit(_words(words))
        if err:
            return err, None
    (out_idx,) = ld.g["graph"]["graph_outputs"]
    t = ld.g["graph"]["tensors"][str(out_idx)]
    n, h, w, c = t["shape"]
    # Graph outputs are NHWC in memory: Mesa appends a detranspose job for every planar output with H, W and
    # C > 1 (and for the other shapes both layouts are the same bytes). The golden `actual_layout` records Mesa's
    # tensor flag before that job, so it is not used here.
    addr, _ = _tensor_location(ld.g, out_idx)
    arr, off = ld.sim.view(addr)
    return None, arr[off:off + n * h * w * c].copy().reshape(n, h, w, c)


# ---------------------------------------------------------------------------------------------------------------
# TFLite reference (uint8 per-tensor), integer requantization as TFLite's reference kernels do it


def _quantize_multiplier(m: float) -> tuple[int, int]:
    if m == 0:
        return 0, 0
    q, shift = np.frexp(m)
    qf = round(float(q) * (1 << 31))
    if qf == 1 << 31:
        qf //= 2
        shift += 1
    return qf, int(shift)


def _mbqm(x: np.ndarray, qf: int, shift: int) -> np.ndarray:
    """TFLite MultiplyByQuantizedMultiplier: SaturatingRoundingDoublingHighMul + RoundingDivideByPOT."""
    x = x.astype(np.int64) * (1 << max(shift, 0))
    ab = x * qf
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    hi = (ab + nudge)
    hi = np.where(hi >= 0, hi >> 31, -((-hi) >> 31))  # C division truncates toward zero
    e = max(-shift, 0)
    if e == 0:
        return hi
    mask = (1 << e) - 1
    rem = hi & mask
    thr = (mask >> 1) + (hi < 0)
    return (hi >> e) + (rem > thr)


def _tensor(g: dict, idx: int) -> dict:
    return g["graph"]["tensors"][str(idx)]


def _const(g: dict, idx: int, dtype: str) -> np.ndarray:
    t = _tensor(g, idx)
    return np.frombuffer(base64.b64decode(t["data_b64"]), dtype=dtype).reshape(t["shape"])


def _scale(t: dict) -> float:
    return _f32(t["scale_f32_hex"])


def _finish(acc: np.ndarray, real_mult: float, out: dict, relu: bool) -> np.ndarray:
    qf, sh = _quantize_multiplier(real_mult)
    v = _mbqm(acc, qf, sh) + out["zero_point"]
    lo = out["zero_point"] if relu else 0
    return np.clip(v, lo, 255).astype(np.uint8)


def reference(g: dict, inputs: dict[int, np.ndarray]) -> np.ndarray:
    (op,) = g["graph"]["operations"]
    kind = op["type"]
    ins, (o,) = op["inputs"], op["outputs"]
    out_t = _tensor(g, o)
    x = inputs[ins[0]].astype(np.int64)
    it = _tensor(g, ins[0])
    if kind in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        wt = _tensor(g, ins[1])
        w = _const(g, ins[1], "u1").astype(np.int64) - wt["zero_point"]
        bias = _const(g, ins[2], "<i4").astype(np.int64)
        sy, sx = op["stride"]
        top, _, left, _ = op["pads_tblr"]
        _, oh, ow, oc = out_t["shape"]
        kh, kw = w.shape[1], w.shape[2]
        xc = x - it["zero_point"]
        ph = max((oh - 1) * sy + kh - x.shape[1], 0)
        pw = max((ow - 1) * sx + kw - x.shape[2], 0)
        xp = np.pad(xc, ((0, 0), (top, ph - top + 1), (left, pw - left + 1), (0, 0)))
        acc = np.zeros((1, oh, ow, oc), dtype=np.int64)
        for a in range(kh):
            for b in range(kw):
                patch = xp[:, a:a + (oh - 1) * sy + 1:sy, b:b + (ow - 1) * sx + 1:sx, :]
                if kind == "CONV_2D":
                    acc += np.einsum("nhwi,oi->nhwo", patch, w[:, a, b, :])
                else:
                    acc += patch * w[0, a, b, :]
        acc += bias
        return _finish(acc, _scale(it) * _scale(wt) / _scale(out_t), out_t, op.get("relu", False))
    if kind == "FULLY_CONNECTED":
        wt = _tensor(g, ins[1])
        w = _const(g, ins[1], "u1").astype(np.int64).reshape(-1, x.size) - wt["zero_point"]
        bias = _const(g, ins[2], "<i4").astype(np.int64)
        acc = w @ (x.reshape(-1) - it["zero_point"]) + bias
        res = _finish(acc, _scale(it) * _scale(wt) / _scale(out_t), out_t, op.get("relu", False))
        return res.reshape(out_t["shape"])
    if kind in ("ADD", "SUB"):
        t1 = _tensor(g, ins[1])
        x1 = inputs[ins[1]].astype(np.int64)
        s0, s1, so = _scale(it), _scale(t1), _scale(out_t)
        left = 20
        twice_max = 2 * max(s0, s1)
        q0, e0 = _quantize_multiplier(s0 / twice_max)
        q1, e1 = _quantize_multiplier(s1 / twice_max)
        qo, eo = _quantize_multiplier(twice_max / ((1 << left) * so))
        a = _mbqm((x - it["zero_point"]) << left, q0, e0)
        b = _mbqm((x1 - t1["zero_point"]) << left, q1, e1)
        v = _mbqm(a + b if kind == "ADD" else a - b, qo, eo) + out_t["zero_point"]
        return np.clip(v, 0, 255).astype(np.uint8)
    if kind == "PAD":
        pads = [(0, 0), tuple(op["pad_x"]), tuple(op["pad_y"]), tuple(op["pad_z"])]
        return np.pad(inputs[ins[0]], pads, constant_values=it["zero_point"])
    if kind in ("RELU", "ABS"):
        xc = x - it["zero_point"]
        xc = np.abs(xc) if kind == "ABS" else np.maximum(xc, 0)
        return _finish(xc, _scale(it) / _scale(out_t), out_t, False)
    if kind == "LOGISTIC":
        y = 1 / (1 + np.exp(-_scale(it) * (x - it["zero_point"])))
        return np.clip(np.round(y / _scale(out_t)) + out_t["zero_point"], 0, 255).astype(np.uint8)
    raise NotImplementedError(kind)


# ---------------------------------------------------------------------------------------------------------------
# Tests

FILES = _golden_files()
RESULTS: dict[str, tuple[int, float]] = {}


def _id(p: tuple[str, Path]) -> str:
    return f"{p[0]}-{p[1].stem}"


@pytest.mark.skipif(SHARED is None, reason="../shared (golden data) not found")
@pytest.mark.parametrize("case", FILES, ids=[_id(c) for c in FILES])
def test_golden_against_tflite(simlib: ctypes.CDLL, case: tuple[str, Path]) -> None:
    version, path = case
    if (version, path.stem) in MESA_UNDEFINED:
        pytest.skip(MESA_UNDEFINED[(version, path.stem)])
    g = json.loads(path.read_text())
    ld = load(simlib, g)
    try:
        err, got = run(ld)
        assert err is None, f"simulator refused the golden stream: {err}"
        stats = ld.sim.stats()
        n_nn = sum(1 for j in g["outputs"]["jobs"] if j["kind"] == "NN")
        assert stats.nn_jobs == n_nn
        assert stats.tp_jobs == len(g["outputs"]["jobs"]) - n_nn
        # traffic counters: every NN job reads exactly Mesa's coefficient buffer (streams and bias), every TP
        # descriptor (one per TP core) its own 4 KiB PWL table
        jobs = g["outputs"]["jobs"]
        assert stats.weight_rd == sum(len(base64.b64decode(j["coefficients"]["bytes_b64"])) for j in jobs
                                      if j.get("coefficients"))
        assert stats.other_rd == 4096 * sum(len(j["descriptors"]) for j in jobs if j.get("pwl_lut") is not None)
    finally:
        ld.sim.close()
    want = reference(g, ld.inputs)
    assert got.shape == want.shape
    diff = np.abs(got.astype(np.int32) - want.astype(np.int32))
    exact = float(np.mean(diff == 0))
    RESULTS[_id(case)] = (int(diff.max()), exact)
    print(f"\n{_id(case)}: max|diff| {int(diff.max())}, exact {exact:.4%}, macs {stats.macs}")
    assert diff.max() <= 1, f"max |diff| {diff.max()}, exact {exact:.4%}"
    if g["kind"] not in LOWERING_APPROX:
        assert exact >= 0.995, f"exact {exact:.4%} below the 99.5 % target"


# --- mutation -------------------------------------------------------------------------------------------------

MUTATION_FILES = {
    "v7": ["conv-in8x8x3-oc64-k3-s1-same-zp211", "dwconv-in8x8x16-k3-s2-same-zp211-sparse", "add-8x8x16",
           "conv-in8x8x64-oc16-k3-s1-same-zp122-izp139-relu"],
    "v8": ["conv-in8x8x3-oc64-k3-s1-same-zp211", "dwconv-in8x8x16-k3-s2-same-zp211-sparse", "add-8x8x16",
           "conv-in8x8x64-oc16-k3-s1-same-zp122-izp139-relu"],
}
MUTATION_CASES = [(v, n) for v, names in MUTATION_FILES.items() for n in names]


def _nn_table(version: str) -> DescTable:
    from teflon.etnaviv.desc import NN_V7, NN_V8

    return NN_V7 if version == "v7" else NN_V8


def _golden_path(version: str, name: str) -> Path:
    return GOLDEN[version] / f"{name}.json"


def _outcome(lib: ctypes.CDLL, g: dict, baseline: np.ndarray) -> str:
    ld = load(lib, g)
    try:
        err, got = run(ld)
    finally:
        ld.sim.close()
    if err:
        return "rejected"
    return "changed" if not np.array_equal(got, baseline) else "same"


@pytest.mark.skipif(SHARED is None, reason="../shared (golden data) not found")
@pytest.mark.parametrize("case", MUTATION_CASES, ids=[f"{v}-{n}" for v, n in MUTATION_CASES])
def test_nn_descriptor_mutation(simlib: ctypes.CDLL, case: tuple[str, str]) -> None:
    version, name = case
    path = _golden_path(version, name)
    if not path.is_file():
        pytest.skip(f"{path.name} not in this golden subset")
    g = json.loads(path.read_text())
    err, baseline = run(load(simlib, g))
    assert err is None, err
    table = _nn_table(version)
    one_channel = g["outputs"]["jobs"][-1]["kind"] == "NN" and len(g["graph"]["graph_outputs"]) == 1 and \
        [j for j in g["outputs"]["jobs"] if j["kind"] == "NN"][-1]["descriptors"][0]["fields_decoded"][
            "out_image_z_size"] == 1
    dont_care = NN_DONT_CARE | (NN_DONT_CARE_V7_ONE_CHANNEL if version == "v7" and one_channel else set())
    dont_care |= NN_DONT_CARE_V8 if version == "v8" else set()
    (jidx,) = [i for i, j in enumerate(g["outputs"]["jobs"]) if j["kind"] == "NN"][-1:]
    desc = g["outputs"]["jobs"][jidx]["descriptors"][0]
    words = _words(desc["words_hex"])
    undetected = []
    for field in table.fields:
        name_ = field.name
        value = table.decode(words)[name_]
        width = field.width
        outcomes = []
        for bit in sorted({0, width - 1}):
            raw = (value & ((1 << width) - 1)) ^ (1 << bit)
            new = raw - (1 << width) if field.signed and raw >> (width - 1) else raw
            mutated = list(words)
            try:
                table.put(mutated, name_, new)
            except (ValueError, KeyError):
                outcomes.append("rejected")  # not even encodable: refused by the table itself
                continue
            desc["words_hex"] = [f"0x{w:08x}" for w in mutated]
            outcomes.append(_outcome(simlib, g, baseline))
        desc["words_hex"] = [f"0x{w:08x}" for w in words]
        if all(o == "same" for o in outcomes) and name_ not in dont_care:
            undetected.append(name_)
    assert not undetected, f"fields whose mutation is neither rejected nor visible: {undetected}"


@pytest.mark.skipif(SHARED is None, reason="../shared (golden data) not found")
@pytest.mark.parametrize("case", MUTATION_CASES, ids=[f"{v}-{n}" for v, n in MUTATION_CASES])
def test_coefficient_mutation(simlib: ctypes.CDLL, case: tuple[str, str]) -> None:
    version, name = case
    path = _golden_path(version, name)
    if not path.is_file():
        pytest.skip(f"{path.name} not in this golden subset")
    g = json.loads(path.read_text())
    err, baseline = run(load(simlib, g))
    assert err is None, err
    (job,) = [j for j in g["outputs"]["jobs"] if j["kind"] == "NN"][-1:]
    coefs = job["coefficients"]
    data = bytearray(base64.b64decode(coefs["bytes_b64"]))
    rng = np.random.default_rng(7)
    positions = rng.choice(len(data), size=min(len(data), 96), replace=False)
    undetected = []
    for pos in positions:
        # Bit 0 of a bias word changes the accumulator by 1, usually below the output resolution: a byte counts
        # as covered when flipping its lowest or its highest bit is rejected or visible.
        outcomes = []
        for bit in (0, 7):
            mutated = bytearray(data)
            mutated[pos] ^= 1 << bit
            coefs["bytes_b64"] = base64.b64encode(bytes(mutated)).decode()
            outcomes.append(_outcome(simlib, g, baseline))
        if all(o == "same" for o in outcomes):
            undetected.append(int(pos))
    coefs["bytes_b64"] = base64.b64encode(bytes(data)).decode()
    assert not undetected, f"coefficient bytes whose bit flips are neither rejected nor visible: {undetected[:20]}"
