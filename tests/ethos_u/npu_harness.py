"""The simulated Ethos-U65 (drivers/ethosu/ethosu_npu*.c) through ctypes, fed with Vela's raw output.

Vela (the `ethos-u-vela` test dependency) compiles a .tflite for ethos-u65-256 into its raw .npz: the command
stream behind a COP1 driver-actions header, the read-only blob (weights and scales, region 0), the scratch
sizes and where each input and output sits. The simulator runs those bytes; tests compare the outputs with
TFLite's CPU kernels. The simulator decodes weight streams with the project's decoder (ethosu_mlw.c); a test
hook can decode with Vela's `mlw_codec` instead, undoing the brick order with a permutation measured by
encoding index tensors with the same codec (a cross-check; no knowledge of the order is written here).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
SIM_DIR = REPO / "drivers" / "ethosu"
ACCEL = "ethos-u65-256"
# U65-256 micro-block depths the weight encoder works in (Vela architecture_features: ArchitectureConfig of
# Ethos_U65_256, ifm_ublock and ofm_ublock Block(2, 2, 8)).
UBLOCK_DEPTH = 8


class Region(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("size", ctypes.c_uint64)]


class Stats(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("ops", "macs", "feature_rd", "weight_rd", "bias_rd", "data_wr")]


class WDesc(ctypes.Structure):
    _fields_ = [("stream", ctypes.POINTER(ctypes.c_uint8)), ("len", ctypes.c_size_t),
                ("ofm_depth", ctypes.c_int), ("kh", ctypes.c_int), ("kw", ctypes.c_int), ("ifm_depth", ctypes.c_int),
                ("ofm_block_depth", ctypes.c_int), ("ifm_bits", ctypes.c_int), ("depthwise", ctypes.c_bool),
                ("part_kernel", ctypes.c_bool), ("dilation_x", ctypes.c_int), ("dilation_y", ctypes.c_int),
                ("decomposition", ctypes.c_int)]


# err is a void pointer: ctypes would hand a char * argument to the callback as an immutable bytes copy.
DECODE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(WDesc), ctypes.POINTER(ctypes.c_int16),
                             ctypes.c_void_p, ctypes.c_size_t)


class Opts(ctypes.Structure):
    # struct ethosu_npu_opts: the weight decoder, the rules (NULL: defaults), the conv hook (NULL: the reference)
    _fields_ = [("decode_weights", DECODE_FN), ("decode_ctx", ctypes.c_void_p), ("rules", ctypes.c_void_p),
                ("conv", ctypes.c_void_p), ("conv_ctx", ctypes.c_void_p)]


def build_library(out_dir: Path) -> Path:
    """Compile drivers/ethosu's simulator into a test shared library (-O3, warnings are errors)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    gen = REPO / "python" / "teflon" / "hw" / "gen_c_header.py"
    subprocess.run([sys.executable, str(gen), "--table", "teflon.ethosu.regs:U65", "--prefix", "ETHOSU_U65", "-o",
                    str(out_dir / "ethosu_regs_u65.h")], check=True)
    lib = out_dir / "libethosu_npu_test.so"
    # the NPU, its weight decoder, and the simulated kernel's fast convolution datapath with the MAC kernels it
    # shares with etnaviv (ethosu_fast.c; Simulator(kernels=...))
    sources = sorted(str(p) for p in [*SIM_DIR.glob("ethosu_npu*.c"), SIM_DIR / "ethosu_mlw.c",
                                      *SIM_DIR.glob("ethosu_fast*.c"), SIM_DIR.parent / "etnaviv" / "etna_sim_dot.c"])
    # ETHOSU_NPU_SANITIZE=1: instrument with ASan/UBSan (run under LD_PRELOAD of the sanitizer runtimes, as
    # scripts/test-asan.sh does for libteflon).
    san = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined"] \
        if os.environ.get("ETHOSU_NPU_SANITIZE") else []
    proc = subprocess.run([cc, "-std=c11", "-O3", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", *san,
                           f"-I{out_dir}", "-o", str(lib), *sources], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return lib


def load_library(path: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))
    lib.ethosu_npu_run_opts.restype = ctypes.c_int
    lib.ethosu_npu_run_opts.argtypes = [ctypes.POINTER(Region), ctypes.POINTER(ctypes.c_uint32), ctypes.c_size_t,
                                        ctypes.POINTER(Stats), ctypes.c_char_p, ctypes.c_size_t,
                                        ctypes.POINTER(Opts)]
    lib.ethosu_fast_create.restype = ctypes.c_void_p
    lib.ethosu_fast_create.argtypes = [ctypes.c_char_p]
    lib.ethosu_fast_destroy.argtypes = [ctypes.c_void_p]
    lib.ethosu_fast_kernels.restype = ctypes.c_char_p
    lib.ethosu_fast_kernels.argtypes = [ctypes.c_void_p]
    return lib


# ---------------------------------------------------------------------------------------------------------------
# Vela


def vela_module():
    """Vela's mlw_codec extension, or a clean skip when Vela is not installed."""
    from ethos_u.vela_oracle import mlw_codec

    return mlw_codec()


def _blob(a: np.ndarray) -> bytes:
    """Regor's .npz stores blobs as one fixed-size bytes scalar (whose .item() would drop trailing zero bytes),
    the legacy core's as a uint8 array."""
    return a.tobytes() if a.dtype.kind == "S" else a.astype(np.uint8).tobytes()


def strip_cop1(buf: bytes) -> np.ndarray:
    """The command words behind Vela's driver-actions header (fourcc COP1; tags: 1 config + 2 words, 5 NOP,
    2 command stream with a 24-bit word count; Vela driver_actions.py)."""
    words = np.frombuffer(buf[: len(buf) // 4 * 4], dtype="<u4")
    if len(words) == 0 or words[0] != 0x31504F43:
        return words.astype(np.uint32)
    i = 1
    while i < len(words):
        tag = int(words[i])
        kind, hi, param = tag & 0xFF, (tag >> 8) & 0xFF, tag >> 16
        i += 1
        if kind == 1:
            i += 2
        elif kind == 5:
            continue
        elif kind == 2:
            n = (hi << 16) | param
            return words[i: i + n].astype(np.uint32)
        else:
            raise ValueError(f"driver action 0x{tag:08x} not handled")
    raise ValueError("no command stream in the driver actions")


@dataclass
class VelaOutput:
    cmds: np.ndarray
    read_only: bytes
    read_only_region: int
    scratch: dict[int, int]  # region -> bytes
    inputs: list[tuple[int, int, tuple[int, ...]]]  # (region, offset, shape)
    outputs: list[tuple[int, int, tuple[int, ...]]]
    summary: str = ""


# Compiles every model of a directory in one Vela process (Vela's import takes a second, a compile ~50 ms).
_VELA_BATCH = """
import contextlib, io, pathlib, sys
from ethosu.vela import vela
d = pathlib.Path(sys.argv[1])
for m in sorted(d.glob("*.tflite")):
    buf, rc = io.StringIO(), 0
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        try:
            rc = vela.main(sys.argv[2:] + ["--output-dir", str(d / m.stem), str(m)]) or 0
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else 1
        except Exception as e:  # reported per model
            print(repr(e))
            rc = 1
    (d / (m.stem + ".log")).write_text(buf.getvalue() + f"\\nrc={rc}\\n")
"""


def _load_npz(npz: Path, summary: str) -> VelaOutput:
    z = np.load(npz, allow_pickle=True)  # the file Vela wrote just now
    raw = {k: z[k] for k in z.files}
    scratch = {int(raw["scratch_region"]): int(raw["scratch_size"])}
    fast = int(raw["scratch_fast_region"])
    scratch[fast] = max(scratch.get(fast, 0), int(raw["scratch_fast_size"]))

    def places(kind: str) -> list[tuple[int, int, tuple[int, ...]]]:
        return [(int(raw[f"{kind}_region"][i]), int(raw[f"{kind}_offset"][i]),
                 tuple(int(d) for d in raw[f"{kind}_shape"][i])) for i in range(len(raw[f"{kind}_region"]))]

    return VelaOutput(strip_cop1(_blob(raw["cmd_data"])), _blob(raw["weight_data"]), int(raw["weight_region"]),
                      scratch, places("input"), places("output"), summary)


def vela_compile_many(models: dict[str, bytes], extra: tuple[str, ...] = ()) -> dict[str, VelaOutput | str]:
    """`vela --accelerator-config ethos-u65-256 --output-format raw` for each model, in one process.
    Returns name -> VelaOutput, or name -> Vela's message when it failed."""
    vela_module()
    with tempfile.TemporaryDirectory() as td:
        d = Path(td)
        for name, model in models.items():
            (d / f"{name}.tflite").write_bytes(model)
        proc = subprocess.run([sys.executable, "-c", _VELA_BATCH, td, "--accelerator-config", ACCEL,
                               "--output-format", "raw", *extra], capture_output=True, text=True, cwd=td,
                              check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"vela batch failed: {proc.stderr.strip()[-400:]}")
        res: dict[str, VelaOutput | str] = {}
        for name in models:
            log = (d / f"{name}.log").read_text() if (d / f"{name}.log").exists() else "no log"
            npz = list((d / name).glob("*.npz"))
            res[name] = _load_npz(npz[0], log) if npz and log.rstrip().endswith("rc=0") else log[-400:]
        return res


def vela_compile(model: bytes, extra: tuple[str, ...] = ()) -> VelaOutput:
    """One model; Vela's failure raises RuntimeError."""
    out = vela_compile_many({"model": model}, extra)["model"]
    if not isinstance(out, VelaOutput):
        raise RuntimeError(f"vela failed: {out}")  # noqa: TRY004 (a compile failure, not a type error)
    return out


def npu_only(vo: VelaOutput) -> bool:
    """Whether Vela put every operator on the NPU (its summary: "CPU operators = 0")."""
    return "CPU operators = 0 " in vo.summary


# ---------------------------------------------------------------------------------------------------------------
# Weight decoding through Vela's codec (test-only)


@dataclass
class WeightDecoder:
    """Decodes a weight stream with mlw_codec.decode and un-orders it into OHWI with a measured permutation."""

    perms: dict[tuple, np.ndarray] = field(default_factory=dict)
    calls: int = 0

    def permutation(self, shape: tuple[int, int, int, int], blk: int, dw: bool, pk: bool, bits: int,
                    dil: tuple[int, int], decomp: int) -> np.ndarray:
        """Stream position -> OHWI index (-1: padding), from encoding two base-128 digit tensors."""
        key = (shape, blk, dw, pk, bits, dil, decomp)
        if key in self.perms:
            return self.perms[key]
        codec = vela_module()
        idx = np.arange(int(np.prod(shape)))
        res: np.ndarray | None = None
        for d in range((max(1, int(idx.size - 1).bit_length()) + 6) // 7):
            digit = (((idx >> (7 * d)) & 127) + 1).astype(np.int16).reshape(shape)  # 0 marks padding
            buf, _ = codec.reorder_encode(UBLOCK_DEPTH, UBLOCK_DEPTH, digit, blk, dw, pk, bits,
                                          decomp // dil[1], decomp // dil[0])
            dec = np.asarray(codec.decode(buf), dtype=np.int64)
            part = np.where(dec > 0, dec - 1, -1)
            res = part if res is None else np.where(part >= 0, res + (part << (7 * d)), -1)
        assert res is not None
        self.perms[key] = res
        return res

    def _decode(self, stream: bytes) -> np.ndarray:
        """Vela's decoder (it exits the process on a malformed stream: use it on Vela's own streams only)."""
        return np.asarray(vela_module().decode(bytearray(stream)), dtype=np.int64)

    def __call__(self, _ctx: int, dp, out, err, errlen) -> int:
        d = dp.contents
        self.calls += 1
        shape = (d.ofm_depth, d.kh, d.kw, d.ifm_depth)
        stream = bytearray(ctypes.string_at(d.stream, d.len))
        try:
            values = self._decode(bytes(stream))
            perm = self.permutation(shape, d.ofm_block_depth, bool(d.depthwise), bool(d.part_kernel), d.ifm_bits,
                                    (d.dilation_x, d.dilation_y), d.decomposition)
            if len(values) != len(perm):
                raise ValueError(f"stream decodes to {len(values)} values, the order expects {len(perm)}")
            ohwi = np.zeros(int(np.prod(shape)), dtype=np.int16)
            ohwi[perm[perm >= 0]] = values[perm >= 0]
            ctypes.memmove(out, ohwi.ctypes.data, ohwi.nbytes)
        except Exception as e:  # noqa: BLE001 (a C callback must not raise; the simulator reports the message)
            msg = f"test weight decoder: {e}".encode()[: max(errlen - 1, 0)]
            ctypes.memmove(err, msg + b"\0", len(msg) + 1)
            return -22
        return 0


# ---------------------------------------------------------------------------------------------------------------
# Running a stream


@dataclass
class SimRun:
    rc: int
    error: str
    outputs: list[np.ndarray]
    stats: Stats
    memory: dict[int, np.ndarray] = field(default_factory=dict)  # region -> its bytes after the run


class Simulator:
    """The simulator with its own weight decoder (ethosu_mlw.c); vela_weights=True decodes with Vela's codec
    through the hook instead (a cross-check of the decoder)."""

    def __init__(self, lib: ctypes.CDLL, vela_weights: bool = False, kernels: str | None = None) -> None:
        """kernels: run convolutions through the fast datapath with that kernel set (ethosu_fast.c; "" the best),
        whose kept weights live as long as this simulator (close()); None: the reference loop."""
        self.lib = lib
        self.decoder = WeightDecoder()  # also measures weight orders for the mutation test's conditions
        self._fn = DECODE_FN(self.decoder)  # kept alive as long as the simulator
        self.opts = Opts(self._fn, None) if vela_weights else Opts()
        self.fast: int | None = None
        if kernels is not None:
            self.fast = lib.ethosu_fast_create(kernels.encode())
            assert self.fast, "out of memory"
            self.opts.conv = ctypes.cast(lib.ethosu_fast_conv, ctypes.c_void_p).value
            self.opts.conv_ctx = self.fast

    @property
    def kernels(self) -> str | None:
        """The fast datapath's kernel set in use, or None (the reference loop)."""
        return self.lib.ethosu_fast_kernels(self.fast).decode() if self.fast else None

    def close(self) -> None:
        if self.fast:
            self.lib.ethosu_fast_destroy(self.fast)
            self.fast = None
            self.opts.conv = self.opts.conv_ctx = None

    def run_on(self, vo: VelaOutput, mem: dict[int, np.ndarray], words: np.ndarray) -> tuple[int, str]:
        """Runs `words` on the regions `mem` as they are (no copy): (rc, error)."""
        regions = (Region * 8)()
        for r, a in mem.items():
            regions[r] = Region(a.ctypes.data, a.size)
        words = np.ascontiguousarray(words, dtype=np.uint32)
        stats = Stats()
        err = ctypes.create_string_buffer(512)
        rc = self.lib.ethosu_npu_run_opts(regions, words.ctypes.data_as(ctypes.POINTER(ctypes.c_uint32)), words.size,
                                          ctypes.byref(stats), err, 512, ctypes.byref(self.opts))
        return rc, err.value.decode(errors="replace")

    def run(self, vo: VelaOutput, inputs: list[np.ndarray], cmds: np.ndarray | None = None,
            like: list[np.ndarray] | None = None) -> SimRun:
        """Runs the stream (vo.cmds or `cmds`); outputs take the dtype and shape of `like` (default int8)."""
        mem: dict[int, np.ndarray] = {r: np.zeros(max(size, 1), dtype=np.uint8) for r, size in vo.scratch.items()}
        mem[vo.read_only_region] = np.frombuffer(vo.read_only, dtype=np.uint8).copy()
        for (region, off, _shape), arr in zip(vo.inputs, inputs):
            raw = np.ascontiguousarray(arr).view(np.uint8).ravel()
            mem[region][off: off + raw.size] = raw
        regions = (Region * 8)()
        for r, a in mem.items():
            regions[r] = Region(a.ctypes.data, a.size)
        words = np.ascontiguousarray(vo.cmds if cmds is None else cmds, dtype=np.uint32)
        stats = Stats()
        err = ctypes.create_string_buffer(512)
        rc = self.lib.ethosu_npu_run_opts(regions, words.ctypes.data_as(ctypes.POINTER(ctypes.c_uint32)), words.size,
                                          ctypes.byref(stats), err, 512, ctypes.byref(self.opts))
        outs = []
        for i, (region, off, shape) in enumerate(vo.outputs):
            dt = like[i].dtype if like else np.dtype(np.int8)
            n = int(np.prod(shape)) * dt.itemsize
            out = mem[region][off: off + n].view(dt)
            outs.append(out.reshape(like[i].shape if like else shape).copy())
        return SimRun(rc, err.value.decode(errors="replace"), outs, stats, mem)


def words_to_commands(words: np.ndarray) -> list[tuple[int, int]]:
    """(word index, word count) of each command: cmd1 (bit 14) takes a payload word."""
    out, i = [], 0
    while i < len(words):
        n = 2 if int(words[i]) & 0x4000 else 1
        out.append((i, n))
        i += n
    return out


def pack_u32(values: list[int]) -> bytes:
    return struct.pack(f"<{len(values)}I", *values)
