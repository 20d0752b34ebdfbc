"""The bytes of one ethosu task: a small teflon header, then the command words as the kernel takes them.

Same layout and constants as drivers/ethosu/ethosu_task.h (the contract between the compiler and the driver): the
kernel's SUBMIT wants one BO per NPU region and an SRAM size for region 2, while a teflon job only lists its BOs, so
the header says which listed BO (in_buffers, then out_buffers) backs which region. All fields little-endian u32:

    word 0        MAGIC ("TEU1")
    word 1        sram_size: bytes of the NPU's SRAM the job uses as region 2 (0: none)
    words 2..9    region r: index into the job's BO list, or NO_BO
    words 10..    the command words (no Vela COP1 header)
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

MAGIC = 0x31554554  # "TEU1" little-endian
NO_BO = 0xFFFFFFFF
MAX_REGIONS = 8  # drm_ethosu_job.region_bo_handles[8] (include/uapi/drm/ethosu_accel.h)
HEADER_WORDS = 2 + MAX_REGIONS
SRAM_REGION = 2  # the region the kernel maps to the NPU's SRAM when sram_size is set (ethosu_device.h)


def header(sram_size: int, regions: Mapping[int, int]) -> bytes:
    """The header: `regions` maps a region number to the index of its BO in the job's BO list."""
    if not 0 <= sram_size < 1 << 32:
        raise ValueError(f"sram_size {sram_size} does not fit 32 bits")
    slots = [NO_BO] * MAX_REGIONS
    for r, bo in regions.items():
        if not 0 <= r < MAX_REGIONS or not 0 <= bo < NO_BO:
            raise ValueError(f"region {r} -> BO {bo}: regions are 0..{MAX_REGIONS - 1}, BOs a job list index")
        slots[r] = bo
    if sram_size and slots[SRAM_REGION] != NO_BO:
        raise ValueError("region 2 is the SRAM when sram_size is set: it takes no BO")
    return struct.pack(f"<{HEADER_WORDS}I", MAGIC, sram_size, *slots)


def pack(words: Sequence[int], sram_size: int, regions: Mapping[int, int]) -> bytes:
    """A whole task: the header, then the command words."""
    return header(sram_size, regions) + struct.pack(f"<{len(words)}I", *words)


def unpack(data: bytes) -> tuple[int, dict[int, int], tuple[int, ...]]:
    """(sram_size, {region: BO index}, command words) of a task's bytes."""
    if len(data) % 4 or len(data) < 4 * HEADER_WORDS:
        raise ValueError(f"an ethosu task is whole words with a {HEADER_WORDS}-word header; got {len(data)} bytes")
    w = struct.unpack(f"<{len(data) // 4}I", data)
    if w[0] != MAGIC:
        raise ValueError(f"task magic 0x{w[0]:08x} is not 0x{MAGIC:08x}")
    regions = {r: w[2 + r] for r in range(MAX_REGIONS) if w[2 + r] != NO_BO}
    return w[1], regions, w[HEADER_WORDS:]
