"""The NPU's stored domain, and TFLite quantization read into it: the lowest layer of rocket's lowering.

The hardware computes on signed int8, so uint8 tensors are stored as q - 128 and int8 tensors as q (Mesa's
"x - 0x80" expressions for uint8 become "stored(x)", and one encoder serves int8 per-tensor models too). Every op
lowering reads its tensors' quantization through here, and refuses a node with `LoweringError`, defined here because
it is the refusal every layer above raises.
"""

from __future__ import annotations

import numpy as np

from ..ir import Tensor


class LoweringError(ValueError):
    """The node cannot run on the NPU; the message is the human reason."""


def stored_offset(dtype: str) -> int:
    """Value subtracted from a quantized value to get the byte the NPU computes on."""
    if dtype == "uint8":
        return 128
    if dtype == "int8":
        return 0
    raise LoweringError(f"tensor type {dtype} not supported (uint8 or int8 only)")


def tensor_quant(t: Tensor, what: str) -> tuple[np.float32, int]:
    """(scale, zero point) of a per-tensor quantized tensor; `what` names it in the refusal."""
    if t.quant is None or len(t.quant.scales) == 0:
        raise LoweringError(f"{what} tensor {t.index} is not quantized")
    if not t.quant.per_tensor:
        n = len(t.quant.scales)
        raise LoweringError(f"per-channel {what} quantization ({n} scales) not supported")
    return np.float32(t.quant.scale), t.quant.zero_point


def stored_bytes(wq: np.ndarray, off: int) -> np.ndarray:
    """stored = q - off as int8: for uint8 that is q ^ 0x80 (q - 128 == q + 128 mod 256), for int8 q itself."""
    return (wq ^ np.uint8(0x80)).view(np.int8) if off else wq.view(np.int8)


def quantized(stored: np.ndarray, dtype: str) -> np.ndarray:
    """The inverse of stored_bytes: stored int8 weights (w - the stored zero point) as the quantized bytes of
    `dtype`."""
    return (stored.astype(np.int16) + stored_offset(dtype)).astype(dtype)


def activation_bounds(act: str, dtype: str, sy: np.float32, zy: int, clamp: bool) -> tuple[int | None, int | None]:
    """The fused activation's quantized bounds (TFLite's: zy and zy + round(6 / sy)) that fall inside the output
    range, (None, None) when the range already clamps. Without `clamp` (no DPU clamp stage) such a bound is a
    LoweringError."""
    if act == "NONE":
        return None, None
    qmin, qmax = (0, 255) if dtype == "uint8" else (-128, 127)
    if act not in ("RELU", "RELU6"):
        raise LoweringError(f"fused activation {act} not supported")
    lo = zy if zy > qmin else None
    hi = None
    if act == "RELU6":
        six = zy + int(np.floor(np.float32(6.0) / sy + np.float32(0.5)))
        hi = six if six < qmax else None
    if not clamp:
        if lo is not None:
            raise LoweringError(f"fused {act} with output zero point {zy} > {qmin} (the NPU path has no ReLU stage "
                                "enabled)")
        if hi is not None:
            raise LoweringError(f"fused RELU6 clamps at {hi} < {qmax} (the NPU path has no ReLU stage enabled)")
    return lo, hi
