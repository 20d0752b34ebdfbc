"""v8 NN descriptor specifics (NXP i.MX8M Plus class, etnaviv.md §2.4).

v8 has a 23-bit post multiplier (the whole float mantissa), a native depthwise mode, sets no_z_offset and
no_flush, flags a negative input offset in two bits of word 18 (meaning unknown, copied from the vendor's
streams by Mesa), and runs with both SRAM caching modes off (the cache addresses are still written).
Its tile height is capped at 4 (etnaviv.tiling).
"""

from __future__ import annotations

from typing import Any

from .desc import NN_V8
from .requant import post_scale

TABLE = NN_V8
VERSION = 8


def version_fields(fields: dict[str, Any], scale: float, depthwise: bool, negative_offset: bool,
                   nearest: bool = False) -> dict[str, Any]:
    """Complete the shared fields with the v8 ones."""
    ps = post_scale(scale, VERSION, nearest)
    out = dict(fields)
    out.update(no_z_offset=1, no_flush=1, post_multiplier=ps.multiplier, post_shift=ps.shift,
               depthwise=int(depthwise), image_caching_mode=0, kernel_caching_mode=0,
               neg_offset_flag_a=int(negative_offset), neg_offset_flag_b=int(negative_offset))
    return out
