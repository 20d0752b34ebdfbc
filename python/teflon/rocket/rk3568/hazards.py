"""RK3568 hazards the register table alone cannot express, checked on a finished task's words (rocket/check.py).

A PPU pooling window not covered by input and padding starves the PPU and stalls the whole chain [IAV RELOG T62]:
with POOLING_PADDING_CFG's left/top/right/bottom pads, (out - 1) x stride + kernel must not exceed pad + input +
pad along either axis, and no pad may reach the kernel (a window of padding alone). The table's single-value fields
(DPU_RDMA burst length 8 [IAV T24/T27], CNA_DMA_CON0 0x00171C07 [IAV T28/T38]) are refused by the table itself;
DPU_RDMA 0x503C (meaning unknown) must be 0 or the EW surface stride - 8, the only relation seen [GOLD; IAV T55/T57].
"""

from __future__ import annotations

from collections.abc import Sequence

from ...hw.regmap import WORD_TARGET_SHIFT, RegMap, RegMapError


def _fields(regmap: RegMap, words: Sequence[int]) -> dict[str, tuple[int, dict[str, int]]]:
    """Register name -> (word index, fields) of the last write of each register in the task."""
    out: dict[str, tuple[int, dict[str, int]]] = {}
    for i, w in enumerate(words):
        try:
            _, name, fields = regmap.decode(w)
        except RegMapError:
            continue  # the table check reports it
        out[name] = (i, fields)
    return out


def _writes(regmap: RegMap, reg_name: str, words: Sequence[int]) -> bool:
    """Whether a word of `words` addresses register `reg_name` (its write target and offset, any value)."""
    reg = regmap.register(reg_name)
    key = (regmap.unit(reg.unit).write_target << WORD_TARGET_SHIFT) | reg.offset
    mask = (0xFFFF << WORD_TARGET_SHIFT) | 0xFFFF
    return any(w & mask == key for w in words)


def check_task(regmap: RegMap, words: Sequence[int]) -> list[tuple[int, str]]:
    """(word index, reason) for each hazard in one task's words."""
    if not (_writes(regmap, "PPU_POOLING_KERNEL_CFG", words) or _writes(regmap, "DPU_RDMA_UNDOC_503C", words)):
        return []  # neither pooling nor the EW read's 0x503C: nothing to decode (most tasks)
    f = _fields(regmap, words)
    if "DPU_RDMA_UNDOC_503C" in f:
        i, v = f["DPU_RDMA_UNDOC_503C"][0], f["DPU_RDMA_UNDOC_503C"][1].get("VALUE", 0)
        ew = f.get("DPU_RDMA_EW_SURF_STRIDE", (0, {}))[1].get("EW_SURF_STRIDE_BYTES", 0)
        if v != 0 and v != ew - 8:
            return [(i, (f"DPU_RDMA 0x503C = {v:#x}: only 0 or the EW surface stride - 8 ({ew - 8:#x}) is known to run "
                        "[GOLD; IAV T55/T57]"))]
    if "PPU_POOLING_KERNEL_CFG" not in f:
        return []
    need = ("PPU_DATA_CUBE_IN_WIDTH", "PPU_DATA_CUBE_IN_HEIGHT", "PPU_DATA_CUBE_OUT_WIDTH", "PPU_DATA_CUBE_OUT_HEIGHT",
            "PPU_POOLING_PADDING_CFG")
    if any(n not in f for n in need):
        return [(f["PPU_POOLING_KERNEL_CFG"][0], "PPU task without its cube or padding words")]
    i, k = f["PPU_POOLING_KERNEL_CFG"]
    pad = f["PPU_POOLING_PADDING_CFG"][1]
    axes = (("width", "WIDTH", "PAD_LEFT", "PAD_RIGHT"), ("height", "HEIGHT", "PAD_TOP", "PAD_BOTTOM"))
    problems = []
    for axis, up, lo_name, hi_name in axes:
        size = f[f"PPU_DATA_CUBE_IN_{up}"][1].get(f"CUBE_IN_{up}", 0) + 1
        out = f[f"PPU_DATA_CUBE_OUT_{up}"][1].get(f"CUBE_OUT_{up}", 0) + 1
        kern = k.get(f"KERNEL_{up}", 0) + 1
        stride = k.get(f"KERNEL_STRIDE_{up}", 0) + 1
        lo, hi = pad.get(lo_name, 0), pad.get(hi_name, 0)
        if (out - 1) * stride + kern > lo + size + hi or max(lo, hi) >= kern:
            why = f"pooling window not covered by input + padding along the {axis} (the PPU stalls the chain [IAV T62])"
            problems.append((i, why))
    return problems
