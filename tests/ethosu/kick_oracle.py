"""Vela 5.2.0 (default Regor core, ethos-u65-256) as the decision oracle for teflon's Ethos-U compiler.

`compile_raw(model)` runs `vela --output-format raw` once per model per process (cached by the model's hash) and
returns the command words and the read-only blob. `commands(words)` decodes the words into (name, fields) with the
field layouts of the installed Vela's U55/U65 register module (an oracle: it only reads). `kick_states` gives the
register state in force at each compute kick. Nothing here is used by teflon itself.
"""

from __future__ import annotations

import ctypes
import hashlib
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

ACCEL = "ethos-u65-256"
KICKS = ("NPU_OP_CONV", "NPU_OP_DEPTHWISE", "NPU_OP_POOL", "NPU_OP_ELEMENTWISE")
# Commands whose value is an address or a stream length: allowed to differ (placement / compression).
ADDRESS_LIKE = {
    "NPU_SET_IFM_BASE0", "NPU_SET_IFM_BASE1", "NPU_SET_IFM_BASE2", "NPU_SET_IFM_BASE3",
    "NPU_SET_OFM_BASE0", "NPU_SET_OFM_BASE1", "NPU_SET_OFM_BASE2", "NPU_SET_OFM_BASE3",
    "NPU_SET_IFM2_BASE0", "NPU_SET_IFM2_BASE1", "NPU_SET_IFM2_BASE2", "NPU_SET_IFM2_BASE3",
    "NPU_SET_WEIGHT_BASE", "NPU_SET_WEIGHT_LENGTH", "NPU_SET_SCALE_BASE", "NPU_SET_SCALE_LENGTH",
    "NPU_SET_WEIGHT1_BASE", "NPU_SET_WEIGHT1_LENGTH", "NPU_SET_SCALE1_BASE", "NPU_SET_SCALE1_LENGTH",
    "NPU_SET_DMA0_SRC", "NPU_SET_DMA0_DST",
}


def available() -> bool:
    try:
        import ethosu.vela  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass(frozen=True)
class VelaOutput:
    words: tuple[int, ...]  # command words, driver-actions header stripped
    weights: bytes  # the read-only blob (region 0)
    npz: dict


def _strip_header(buf: bytes) -> list[int]:
    words = list(struct.unpack(f"<{len(buf) // 4}I", buf[: len(buf) // 4 * 4]))
    if not words or words[0] != 0x31504F43:  # "COP1"
        return words
    i = 1
    while i < len(words):
        tag = words[i]
        kind, hi, param = tag & 0xFF, (tag >> 8) & 0xFF, tag >> 16
        i += 1
        if kind == 1:  # config: two register images
            i += 2
        elif kind == 2:  # the command stream
            n = (hi << 16) | param
            return words[i : i + n]
    return []


def _as_bytes(a: np.ndarray) -> bytes:
    return bytes(a.item()) if a.dtype.kind == "S" else a.astype(np.uint8).tobytes()


@cache
def _compile_cached(model: bytes) -> VelaOutput:
    vela = str(Path(sys.executable).with_name("vela"))
    with tempfile.TemporaryDirectory() as td:
        src = Path(td) / f"m{hashlib.sha256(model).hexdigest()[:12]}.tflite"
        src.write_bytes(model)
        subprocess.run([vela, "--accelerator-config", ACCEL, "--output-format", "raw", "--output-dir", td, str(src)],
                       capture_output=True, text=True, check=True, cwd=td)
        z = np.load(next(Path(td).glob("*.npz")), allow_pickle=True)
        raw = {k: z[k] for k in z.files}
    return VelaOutput(tuple(_strip_header(_as_bytes(raw["cmd_data"]))), _as_bytes(raw["weight_data"]), raw)


def compile_raw(model: bytes) -> VelaOutput:
    return _compile_cached(model)


@cache
def _tables() -> tuple[dict[int, str], dict[int, str], object]:
    from ethosu.vela.ethos_u55_regs import ethos_u55_regs as regs

    return ({m.value: m.name for m in regs.cmd0}, {m.value: m.name for m in regs.cmd1}, regs)


_SKIP = ("cmd_code", "must_be_zero", "must_be_zero0", "payload_size")


def commands(words: list[int] | tuple[int, ...]) -> list[tuple[str, dict[str, int]]]:
    """(name, fields) per command, fields as Vela's register module lays them out (reserved bits dropped)."""
    n0, n1, regs = _tables()
    out = []
    i = 0
    while i < len(words):
        w = words[i]
        op, cmd1 = w & 0x3FF, bool(w & 0x4000)
        raw = struct.pack("<I", w) + (struct.pack("<I", words[i + 1]) if cmd1 else b"")
        i += 2 if cmd1 else 1
        name = (n1 if cmd1 else n0).get(op, f"OP_{op:#x}")
        cls = getattr(regs, name.lower() + "_t", None)
        if cls is None:
            out.append((name, {"raw": int.from_bytes(raw, "little")}))
            continue
        s = cls.from_buffer_copy(raw.ljust(ctypes.sizeof(cls), b"\0"))
        out.append((name, {f[0]: int(getattr(s, f[0])) for f in cls._fields_
                           if f[0] not in _SKIP and not f[0].startswith("reserved")}))
    return out


def values(words: list[int] | tuple[int, ...]) -> list[tuple[str, int]]:
    """(name, value) per command: the 16-bit param of a cmd0, param << 32 | payload of a cmd1."""
    n0, n1, _ = _tables()
    out = []
    i = 0
    while i < len(words):
        w = words[i]
        op, cmd1, param = w & 0x3FF, bool(w & 0x4000), w >> 16
        if cmd1:
            out.append((n1.get(op, f"CMD1_{op:#x}"), param << 32 | words[i + 1]))
            i += 2
        else:
            out.append((n0.get(op, f"CMD0_{op:#x}"), param))
            i += 1
    return out


def kick_states(cmds: list[tuple[str, int]]) -> list[dict[str, int]]:
    """The register state (name -> value) in force at each compute kick; the kick itself under its own name."""
    state: dict[str, int] = {}
    out = []
    for name, fields in cmds:
        if name in KICKS:
            snap = dict(state)
            snap[name] = fields
            out.append(snap)
        elif name.startswith("NPU_SET_"):
            state[name] = fields
    return out


def diff_state(ours: dict[str, int], theirs: dict[str, int],
               ignore: set[str] | frozenset[str] = frozenset(ADDRESS_LIKE)) -> list[str]:
    """Registers whose fields differ (addresses and stream lengths ignored); a register only one side set and the
    other left at its reset value 0 counts as equal."""
    out = []
    for k in sorted(set(ours) | set(theirs)):
        if k in ignore:
            continue
        a, b = ours.get(k), theirs.get(k)
        if a == b:
            continue
        if (a or 0) == (b or 0):
            continue
        out.append(f"{k}: ours {a} vela {b}")
    return out
