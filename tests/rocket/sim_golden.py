"""Helpers for the simulator tests: Mesa's golden RK3588 streams as teflon programs, and an exact
numpy model of TFLite's quantized CONV_2D / DEPTHWISE_CONV_2D (int64 accumulation, QuantizeMultiplier,
MultiplyByQuantizedMultiplier with its double rounding, clamp to uint8).

A golden file (../shared/golden/rocket-rk3588/*.json, see its README) holds, for one convolution,
exactly what Mesa hands the kernel: per-task regcmd words with fake addresses, packed weights and the
bias table. `golden_program` turns it into a Program: one buffer each for the input and output
tensors, `op<k>.weights`, `op<k>.bias`, `op<k>.regcmd` (words at their offsets in Mesa's regcmd BO);
every address word becomes a relocation whose value keeps only the offset inside its buffer.
"""

from __future__ import annotations

import base64
import json
import math
import struct
from pathlib import Path
from typing import Any

import numpy as np

from conftest import shared_path
from teflon.program import LAYOUT_NC1HWC2, LAYOUT_ROWS, Buffer, IOBinding, Job, Program, Task
from teflon.rocket.assemble import regcmd_reloc
from teflon.rocket.rounding import shift_even

SHARED = shared_path() or Path("/nonexistent/shared")
GOLDEN = SHARED / "golden" / "rocket-rk3588"
FILES = sorted(GOLDEN.glob("*.json")) if GOLDEN.is_dir() else []

VALUE_MASK = 0xFFFFFFFF << 16


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def f32(hexbits: str) -> float:
    """The exact float32 value of a scale, as a Python float (double)."""
    return float(np.frombuffer(struct.pack("<I", int(hexbits, 16)), "<f4")[0])


def _role_buffer(role: str, k: int) -> str:
    if role == "input":
        return "input"
    if role == "output":
        return "output"
    for kind in ("weights", "biases", "regcmd"):
        if role.startswith(kind):
            return f"op{k}.{'bias' if kind == 'biases' else kind}"
    raise ValueError(f"unknown address role {role!r}")


def task_words(task: dict[str, Any]) -> list[int]:
    """The task's words with every address word reduced to the offset inside its buffer."""
    words = [int(w, 16) for w in task["regcmd"]]
    for a in task["address_words"]:
        i = a["word_index"]
        words[i] = (words[i] & ~VALUE_MASK) | (a["offset"] << 16)
    return words


def golden_program(d: dict[str, Any]) -> Program:
    p = d["params"]
    fake = d["fake_addresses"]["tensor_bos"]
    _, ih, iw, ic = p["input"]["shape_nhwc"]
    _, oh, ow, oc = p["output"]["shape_nhwc"]
    prog = Program(device="rk3588")
    prog.add_buffer(Buffer("input", int(fake["0"]["size"]), tensor=True))
    prog.add_buffer(Buffer("output", int(fake["3"]["size"]), tensor=True))
    jobs: list[Job] = []
    for k, op in enumerate(d["outputs"]["operations"]):
        wbo, bbo = op["weights_bo"], op["bias_bo"]
        prog.add_buffer(Buffer(f"op{k}.weights", wbo["alloc_size"], base64.b64decode(wbo["packed_b64"])))
        prog.add_buffer(Buffer(f"op{k}.bias", bbo["alloc_size"], base64.b64decode(bbo["bytes_b64"])))
        regcmd = bytearray(op["regcmd_bo"]["alloc_size"])
        tasks = []
        for t in op["tasks"]:
            off = t["regcmd_offset_in_bo"]
            words = task_words(t)
            struct.pack_into(f"<{len(words)}Q", regcmd, off, *words)
            for a in t["address_words"]:
                prog.relocs.append(regcmd_reloc(f"op{k}.regcmd", off + 8 * a["word_index"], _role_buffer(a["role"], k)))
            tasks.append(Task(f"op{k}.regcmd", off, 8 * len(words)))
        prog.add_buffer(Buffer(f"op{k}.regcmd", len(regcmd), bytes(regcmd)))
        groups = [tasks] if op["reuse_weights_cbuf"] else [[t] for t in tasks]
        jobs += [Job(g, ["input"], ["output"]) for g in groups]
    prog.jobs = jobs
    zin = p["input"]["zero_point"]
    if ic == 1:
        pitch = max(iw, 16)
        prog.io.append(
            IOBinding(0, "in", "input", "uint8", ih, iw, 1, layout=LAYOUT_ROWS, row_pitch=pitch, xor=0, pad_value=zin)
        )
    else:
        prog.io.append(
            IOBinding(
                0,
                "in",
                "input",
                "uint8",
                ih,
                iw,
                ic,
                layout=LAYOUT_NC1HWC2,
                c2=16,
                row_pitch=iw * 16,
                plane_pitch=ih * iw * 16,
                xor=0x80,
                pad_value=zin - 0x80,
            )
        )
    prog.io.append(
        IOBinding(
            3,
            "out",
            "output",
            "uint8",
            oh,
            ow,
            oc,
            layout=LAYOUT_NC1HWC2,
            c2=16,
            row_pitch=ow * 16,
            plane_pitch=oh * ow * 16,
            xor=0x80,
        )
    )
    return prog


# ---- TFLite's integer requantization, exactly -------------------------------------------------------------------


def quantize_multiplier(m: float) -> tuple[int, int]:
    """tflite::QuantizeMultiplier: m = q * 2^(shift - 31), q in [2^30, 2^31)."""
    if m == 0.0:
        return 0, 0
    q, shift = math.frexp(m)
    qf = math.floor(abs(q) * (1 << 31) + 0.5) * (1 if q >= 0 else -1)  # std::round
    if qf == 1 << 31:
        qf //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return qf, shift


def _trunc_div_pow2(x: np.ndarray, n: int) -> np.ndarray:
    return np.where(x >= 0, x >> n, -((-x) >> n))


def multiply_by_quantized_multiplier(x: np.ndarray, q: int, shift: int) -> np.ndarray:
    """tflite::MultiplyByQuantizedMultiplier (double rounding) on int32 values held in int64."""
    left, right = max(shift, 0), max(-shift, 0)
    a = np.clip(x.astype(np.int64) * (1 << left), -(1 << 31), (1 << 31) - 1)
    ab = a * q
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    hi = _trunc_div_pow2(ab + nudge, 31)
    hi = np.where((a == -(1 << 31)) & (q == -(1 << 31)), (1 << 31) - 1, hi)
    if right == 0:
        return hi
    mask = (1 << right) - 1
    rem = hi & mask
    threshold = (mask >> 1) + (hi < 0)
    return (hi >> right) + (rem > threshold)


def reference(d: dict[str, Any], x: np.ndarray) -> np.ndarray:
    """TFLite's uint8 CONV_2D / DEPTHWISE_CONV_2D on NHWC x (batch 1), no fused activation."""
    p = d["params"]
    zx, zw, zy = p["input"]["zero_point"], p["weights"]["zero_point"], p["output"]["zero_point"]
    sx, sw, sy = f32(p["input"]["scale_f32_hex"]), f32(p["weights"]["scale_f32_hex"]), f32(p["output"]["scale_f32_hex"])
    kh, kw = p["kernel_hw"]
    sh, sww = p["stride_hw"]
    pads = p["explicit_pads_tf"]
    _, oh, ow, oc = p["output"]["shape_nhwc"]
    w = np.frombuffer(base64.b64decode(p["weights"]["data_b64"]), np.uint8).reshape(p["weights"]["shape"])
    bias = np.array(p["bias"]["values"], np.int64)

    xp = np.pad(x[0].astype(np.int64) - zx, ((pads["top"], pads["bottom"]), (pads["left"], pads["right"]), (0, 0)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(0, 1))[::sh, ::sww][:oh, :ow]
    # win: (oh, ow, C, kh, kw)
    wt = w.astype(np.int64) - zw
    if p["depthwise"]:
        acc = np.einsum("yxchw,hwc->yxc", win, wt[0], optimize=True)
    else:
        # exact in float64: |terms| < 2^16, at most ~10^5 terms
        acc = np.rint(
            np.tensordot(
                win.astype(np.float64), wt.transpose(3, 1, 2, 0).astype(np.float64), axes=([2, 3, 4], [0, 1, 2])
            )
        ).astype(np.int64)
    acc = acc + bias
    q, shift = quantize_multiplier(float(np.float64(sx) * np.float64(sw) / np.float64(sy)))
    y = multiply_by_quantized_multiplier(acc, q, shift) + zy
    return np.clip(y, 0, 255).astype(np.uint8).reshape(1, oh, ow, oc)


def random_input(d: dict[str, Any], seed: int = 0) -> np.ndarray:
    shape = tuple(d["params"]["input"]["shape_nhwc"])
    return np.random.default_rng(seed).integers(0, 256, size=shape, dtype=np.uint8)


def compare(ref: np.ndarray, out: np.ndarray) -> tuple[float, int]:
    diff = np.abs(ref.astype(np.int32) - out.astype(np.int32))
    return float(np.mean(diff == 0)), int(diff.max())


def hardware_model(d: dict[str, Any], x: np.ndarray, ow_op: int | None = None) -> np.ndarray:
    """The simulator's documented datapath (docs/hardware/rocket-sim.md §3) in numpy, for a single-task
    NC1HWC2 golden stream: stored int8 features and weights, Σx·w + BS_OW_OP·Σx, CLIP_TRUNCATE (round half
    up), + bias table, OUT_CVT (round half to even), clamp. Register values come from the stream itself."""
    p = d["params"]
    op = d["outputs"]["operations"][0]
    regs = {w & 0xFFFF: (w >> 16) & 0xFFFFFFFF for w in (int(v, 16) for v in op["tasks"][0]["regcmd"])}
    scale, shift = regs[0x4084] & 0xFFFF, regs[0x4088] & 0xFFF
    offset = int(np.int32(np.uint32(regs[0x4080])))
    trunc = regs[0x301C] & 0x1F
    ow = int(np.int16(np.uint16(regs[0x4054] & 0xFFFF))) if ow_op is None else ow_op
    pad = int(np.int8(np.uint8(regs[0x1184] & 0xFF)))
    bias = np.array(op["bias_bo"]["values_int32"], np.int64)
    kh, kw = p["kernel_hw"]
    sh, sw = p["stride_hw"]
    pads = p["explicit_pads_tf"]
    _, oh, oww, _ = p["output"]["shape_nhwc"]
    xs = x[0].astype(np.int64) - 128
    xp = np.pad(xs, ((pads["top"], pads["bottom"]), (pads["left"], pads["right"]), (0, 0)), constant_values=pad)
    if p["depthwise"]:  # the odd channels among the first 32 of each 64 pad with PAD_CON1 byte 1 (rocket.md §7)
        ch = np.arange(xs.shape[-1])
        border = np.ones(xp.shape[:2], bool)
        border[pads["top"]:pads["top"] + xs.shape[0], pads["left"]:pads["left"] + xs.shape[1]] = False
        xp[border[:, :, None] & ((ch % 64 < 32) & (ch % 2 == 1))] = int(np.int8(np.uint8((regs[0x1184] >> 8) & 0xFF)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(0, 1))[::sh, ::sw][:oh, :oww]
    w = np.frombuffer(base64.b64decode(p["weights"]["data_b64"]), np.uint8).reshape(p["weights"]["shape"])
    w = w.astype(np.int64) - 128
    if p["depthwise"]:
        acc = np.einsum("yxchw,hwc->yxc", win, w[0])
        s = win.sum(axis=(3, 4))
    else:
        acc = np.rint(
            np.tensordot(
                win.astype(np.float64), w.transpose(3, 1, 2, 0).astype(np.float64), axes=([2, 3, 4], [0, 1, 2])
            )
        ).astype(np.int64)
        s = win.sum(axis=(2, 3, 4))[..., None]
    core = acc + ow * s
    if trunc:
        core = (core + (1 << (trunc - 1))) >> trunc
    v = np.clip(core + bias, -(1 << 31), (1 << 31) - 1)
    q = shift_even(v * scale, shift) + offset
    return (np.clip(q, -128, 127) + 128).astype(np.uint8).reshape(1, oh, oww, -1)
