"""v7 NN descriptor specifics (Amlogic A311D class, etnaviv.md §2.4).

v7 has a 15-bit post multiplier, programs the SRAM kernel/image caching, never uses the native depthwise
mode (depthwise convolutions are expanded to dense kernels by the lowering) and sets neither no_z_offset
nor no_flush.
"""

from __future__ import annotations

from typing import Any

from .desc import NN_V7
from .requant import post_scale

TABLE = NN_V7
VERSION = 7


def version_fields(fields: dict[str, Any], scale: float, depthwise: bool, negative_offset: bool,
                   nearest: bool = False) -> dict[str, Any]:
    """Complete the shared fields with the v7 ones (caching fields are kept as computed)."""
    ps = post_scale(scale, VERSION, nearest)
    out = dict(fields)
    out.update(no_z_offset=0, no_flush=0, post_multiplier=ps.multiplier, post_shift=ps.shift)
    return out
