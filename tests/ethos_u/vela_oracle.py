"""Vela (ethos-u-vela 5.2.0, the Ethos-U oracle) run on a model, its raw output read back, cached on disk.

`compile_raw(model)` runs `vela --accelerator-config ethos-u65-256 --output-format raw` once per (model bytes,
accelerator, extra arguments) and caches what it wrote under $TEFLON_VELA_CACHE (default
~/.cache/teflon/vela/), so parallel workers and later runs share it. `compile_tflite(model)` does the same for the
`.tflite` form (the model with Vela's `ethos-u` custom op). Tests skip when Vela is not installed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from teflon.ethosu import cmdstream

VELA_VERSION = "5.2.0"
ACCEL = "ethos-u65-256"


def vela_exe() -> str:
    exe = Path(sys.executable).with_name("vela")
    if exe.is_file():
        return str(exe)
    found = shutil.which("vela")
    if found is None:
        pytest.skip("ethos-u-vela is not installed (pip install ethos-u-vela==5.2.0)")
    return found


def mlw_codec() -> ModuleType:
    """Vela's weight codec (`ethosu.mlw_codec`, an oracle for tests only), or a clean skip without Vela."""
    return pytest.importorskip("ethosu.mlw_codec", reason="ethos-u-vela is not installed (pip install "
                               "ethos-u-vela==5.2.0)")


def cache_dir() -> Path:
    env = os.environ.get("TEFLON_VELA_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "teflon" / "vela"


@dataclass(frozen=True)
class Placement:
    shape: tuple[int, ...]
    region: int
    offset: int
    elem_size: int


@dataclass(frozen=True)
class VelaRaw:
    words: tuple[int, ...]  # the command words, COP1 header stripped
    config_reg: int | None
    id_reg: int | None
    read_only: bytes  # region `read_only_region`: encoded weights, scale records, LUTs
    read_only_region: int
    scratch_region: int
    scratch_size: int
    fast_region: int
    fast_size: int
    inputs: tuple[Placement, ...]
    outputs: tuple[Placement, ...]


def _as_bytes(a: np.ndarray) -> bytes:
    """Regor's .npz stores blobs as one fixed-size bytes scalar, the legacy core's as a uint8 array."""
    return a.tobytes() if a.dtype.kind == "S" else a.astype(np.uint8).tobytes()  # .item() drops trailing zeros


def _run(model: bytes, fmt: str, accel: str, extra: tuple[str, ...]) -> Path:
    """Path of Vela's output file for `model` (cached)."""
    key = hashlib.sha256(model + repr((VELA_VERSION, fmt, accel, extra)).encode()).hexdigest()[:32]
    suffix = ".npz" if fmt == "raw" else ".tflite"
    out = cache_dir() / f"{key}{suffix}"
    if out.is_file():
        return out
    exe = vela_exe()
    with tempfile.TemporaryDirectory() as td:
        src = Path(td) / "model.tflite"
        src.write_bytes(model)
        cmd = [exe, "--accelerator-config", accel, "--output-format", fmt, "--output-dir", td, *extra, str(src)]
        p = subprocess.run(cmd, check=False, capture_output=True, text=True)
        if p.returncode:
            raise RuntimeError(f"vela failed ({p.returncode}): {p.stderr.strip() or p.stdout.strip()}")
        made = Path(td) / f"model_vela{suffix}"
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        shutil.copyfile(made, tmp)
        os.replace(tmp, out)  # atomic: a parallel worker sees the whole file or none
    return out


def compile_raw(model: bytes, accel: str = ACCEL, extra: tuple[str, ...] = ()) -> VelaRaw:
    z = np.load(_run(model, "raw", accel, extra), allow_pickle=True)  # written by Vela, read back as data
    payload = cmdstream.parse(_as_bytes(z["cmd_data"]))

    def places(prefix: str) -> tuple[Placement, ...]:
        return tuple(Placement(tuple(int(x) for x in z[f"{prefix}_shape"][i]), int(z[f"{prefix}_region"][i]),
                               int(z[f"{prefix}_offset"][i]), int(z[f"{prefix}_elem_size"][i]))
                     for i in range(len(z[f"{prefix}_region"])))

    return VelaRaw(payload.words, payload.config_reg, payload.id_reg, _as_bytes(z["weight_data"]),
                   int(z["weight_region"]), int(z["scratch_region"]), int(z["scratch_size"]),
                   int(z["scratch_fast_region"]), int(z["scratch_fast_size"]), places("input"), places("output"))


def compile_tflite(model: bytes, accel: str = ACCEL, extra: tuple[str, ...] = ()) -> bytes:
    """The Vela-optimised .tflite (one `ethos-u` custom op where the whole model maps to the NPU)."""
    return _run(model, "tflite", accel, extra).read_bytes()


def ref_kernels(model: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """TFLite's reference kernels (OpResolverType.BUILTIN_REF: no optimized paths, no delegates), whose arithmetic
    Vela implements."""
    tfl = pytest.importorskip("tflite_runtime.interpreter")
    it = tfl.Interpreter(model_content=model, experimental_op_resolver_type=tfl.OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]
