"""Board constants of the etnaviv targets (teflon.board; sources and calibration: docs/hardware/board-model.md).

The etnaviv simulator counts per command stream, so a counted unit is a whole partition: `overlap` 0 (MAC and DRAM
time summed) fits the published figures where per-stream max() cannot (the dense layers are MAC-bound, the
depthwise ones DRAM-bound). MACs are those with a non-zero weight (`mac_basis`): the v7 lowering computes
depthwise convolutions as dense ones whose weights are zero off the diagonal (etnaviv.md §1.3), and A311D's
published MobileNetV1 time is below what its dense MACs would take at any rate its MAC count allows.
"""

from __future__ import annotations

from typing import Any

from ..board import BoardTable, Fact
from ..targets import get

_ZERO_SKIP = Fact(0.0, "MAC and DRAM time summed: the unit is a whole command stream", "calibrated")
_SUBMIT = Fact(50.0, "DRM_IOCTL_ETNAVIV_GEM_SUBMIT (softpin BO list, command buffer copy) + WAIT_FENCE "
                     "(etnaviv.md §7)", "inferred")
_ROUND_TRIP = Fact(100.0, "fence wait wake-up, GEM_CPU_PREP / CPU_FINI cache maintenance (etnaviv.md §7)",
                   "inferred")
_HOST_COPY = Fact(1.0, "host layout conversion of the partition's tensors by one Cortex-A core, GB/s", "inferred")
_OP = Fact(8.0, "front end: one NN/TP job kicked from the command stream and waited on (semaphore stall) per "
                 "operation (etnaviv.md §7); fitted with mac_efficiency to the two Mesa figures", "calibrated")


# what both Vivante tables share: the kernel path, the per-operation cost, the per-stream counting
_COMMON: dict[str, Any] = {
    "task_us": _OP, "job_us": Fact(0.0, "one command stream per partition: its cost is the submit's", "inferred"),
    "submit_us": _SUBMIT, "partition_us": _ROUND_TRIP, "host_copy_gbps": _HOST_COPY, "overlap": _ZERO_SKIP,
    "mac_basis": "macs_nz"}


def _macs(name: str) -> dict[str, Fact]:
    p = get(name).params
    return {"int8": Fact(p["nn_core_count"] * p["nn_mad_per_core"],
                         "NN cores x MADs per core of the Vivante feature database entry (targets.py params, "
                         "etnaviv.md §8 'Peak MAC throughput implied by the HWDB')")}


TABLES: dict[str, BoardTable] = {
    "a311d": BoardTable(
        soc="a311d",
        macs_per_cycle=_macs("a311d"),
        clock_mhz=Fact(800, "A311D NPU clock 800 MHz", "inferred"),
        mac_efficiency=Fact(0.75, "calibrated: Mesa MobileNetV1 6.6 ms / MobileNetV2 6.9 ms on A311D (Mesa "
                                 "docs/teflon.rst, peers-2026.md §4a)", "calibrated"),
        dram_gbps=Fact(4.2, "calibrated: ZRL weight compression took Mesa's MobileNetV1 from 15.65 to 9.99 ms on "
                            "A311D (Mesa MR !27513, peers-2026.md §4a) while the coefficient bytes fell by ~23.6 MB "
                            "(29.3 MB dense-expanded uint8 weights -> 5.7 MB compressed, as teflon's v7 streams)",
                       "calibrated"),
        sram_bytes=Fact(0x80000 + 0x100000, "VIP SRAM 512 KiB + AXI SRAM 1 MiB (Vivante feature DB, etnaviv.md §6)"),
        **_COMMON,
    ),
    "imx8mp": BoardTable(
        soc="imx8mp",
        macs_per_cycle=_macs("imx8mp"),
        clock_mhz=Fact(1000, "i.MX8M Plus NPU clock 1 GHz (overdrive)", "inferred"),
        mac_efficiency=Fact(0.7, "calibrated: Mesa MobileNetV1 7.9 ms / MobileNetV2 8.0 ms on i.MX8M Plus (Mesa "
                                 "docs/teflon.rst, peers-2026.md §4a)", "calibrated"),
        dram_gbps=Fact(3.0, "calibrated on the same two figures (32-bit LPDDR4-4000, 16 GB/s peak: the NPU "
                            "reaches a fifth)", "calibrated"),
        sram_bytes=Fact(0x40000, "VIP SRAM 256 KiB, no AXI SRAM (Vivante feature DB, etnaviv.md §6)"),
        **_COMMON,
    ),
}
