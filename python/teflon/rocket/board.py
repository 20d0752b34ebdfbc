"""Board constants of the rocket targets (teflon.board; sources and calibration: docs/hardware/board-model.md).

One table per target. Sources in short form: [R76-GREG], [R76-BLOG], [RELOG], [ZOO] are the third-party RK3576 /
RK3568 accounts and the Rockchip model zoo as digested in the project's shared hardware notes (rocket.md §6-7,
rk356x.md §7); "calibrated" values are fitted to the published figures of docs/PERFORMANCE.md "Board estimate".
"""

from __future__ import annotations

from typing import Any

from ..board import BoardTable, Fact

# The upstream accel/rocket kernel (Linux 6.18) kicks every task itself and takes one interrupt per task
# (rocket.md §5.3): the per-task cost of RK3588 and of the RK3568 series built on it.
_IRQ_TASK = Fact(30.0, "kick (10 MMIO writes) + DPU interrupt + threaded handler per task, accel/rocket "
                       "rocket_job_hw_submit / IRQ thread (rocket.md §5.3); the µs figure is an estimate", "inferred")
_SUBMIT = Fact(20.0, "DRM_IOCTL_ROCKET_SUBMIT: BO lookups, job and fence creation (rocket.md §5.2)", "inferred")
_ROUND_TRIP = Fact(100.0, "PREP_BO wait wake-up after the last job's fence, FINI_BO / PREP_BO cache maintenance "
                          "(rocket.md §5.5)", "inferred")
_HOST_COPY = Fact(1.0, "NHWC <-> NC1HWC2 byte shuffle by one Cortex-A core (delegate/layout.c), GB/s", "inferred")
_CBUF = Fact(384 * 1024, "12 banks x 32 KiB per core (Mesa rkt_ml.h, rocket.md §4.3)")
# RKNN's single-core figures (chained tasks, one job, one submit: see board.PUBLISHED) fix the hardware rates of
# the RK3588 and RK3576 tables; MobileNetV2 is DRAM-bound there, MobileNetV1 partly MAC-bound.
_DRAM_RK3588 = Fact(10.0, "calibrated: RKNN MobileNetV1 1.98-2.87 ms / MobileNetV2 2.22-2.31 ms on one RK3588 core "
                         "([ZOO], peers-2026.md §4b) from teflon's per-task bytes; LPDDR4X/5 64-bit is 34-44 GB/s "
                         "peak", "calibrated")

# the submit ioctl, the round trip and the host's layout conversion: the same kernel path and CPUs on every row
_KERNEL: dict[str, Any] = {"submit_us": _SUBMIT, "partition_us": _ROUND_TRIP, "host_copy_gbps": _HOST_COPY}

TABLES: dict[str, BoardTable] = {
    "rk3588": BoardTable(
        soc="rk3588",
        macs_per_cycle={"int8": Fact(1024, "6 TOPS int8 for three cores (Rockchip RK3588 brief) at the 1 GHz top "
                                           "OPP: ~1000 MACs/cycle/core; 1024 = 32 x 32-channel groups", "inferred")},
        clock_mhz=Fact(1000, "RK3588 NPU top operating point 1 GHz (vendor devicetree OPP table)", "inferred"),
        mac_efficiency=Fact(0.6, "calibrated with the RKNN single-core figures (see dram_gbps)", "calibrated"),
        dram_gbps=_DRAM_RK3588,
        sram_bytes=_CBUF,
        task_us=_IRQ_TASK,
        job_us=Fact(255.0, "calibrated: Mesa 26.0.2 MobileNetV1 11.18 ms on RK3588 (widgetii BENCHMARKS.md, "
                           "peers-2026.md §4a) less the hardware time and the per-task costs, over its jobs: "
                           "drm_sched run_job and dependency wake-up, IOMMU attach/detach, fence per job",
                    "calibrated"),
        **_KERNEL,
    ),
    "rk3576": BoardTable(
        soc="rk3576",
        macs_per_cycle={"int8": Fact(1536, "6 TOPS int8 for two cores (Rockchip RK3576 brief) at ~1 GHz: "
                                           "~1500 MACs/cycle/core", "inferred")},
        clock_mhz=Fact(1000, "RK3576 NPU top operating point ~1 GHz", "inferred"),
        mac_efficiency=Fact(0.6, "as RK3588 (same CNA design, rocket-rk3576.md); MobileNetV2 on RK3576 is "
                                 "DRAM-bound, so the RKNN figure does not fix it", "inferred"),
        dram_gbps=Fact(13.0, "calibrated: RKNN MobileNetV2 2.21 ms (452.3 FPS) on one RK3576 core ([ZOO], "
                            "peers-2026.md §4b); 32-bit LPDDR5 is ~17 GB/s peak", "calibrated"),
        sram_bytes=Fact(448 * 1024, "~448 KiB pool shared by data and weights [R76-GREG] (rocket.md §6.2)"),
        # PC_DONE cannot reach the GIC on RK3576: kernels poll for completion (rocket.md §6.2)
        task_us=Fact(440.0, "completion poll 50 µs + DPU-bit retire: ~0.44 ms per task [R76-GREG] "
                            "(rocket.md §6.3)"),
        job_us=Fact(30.0, "drm_sched run_job and fence per job, as the IRQ-driven kernels less the IOMMU "
                          "re-attach the RK3576 series drops (rocket.md §6.3)", "inferred"),
        **_KERNEL,
    ),
    "rk3568": BoardTable(
        soc="rk3568",
        macs_per_cycle={"int8": Fact(512, "~1 TOPS int8, one core (RK3568 datasheet 'up to 1 TOPS', rk356x.md §1) "
                                          "at 1 GHz: ~500 MACs/cycle", "inferred")},
        clock_mhz=Fact(1000, "vendor OPP 200-1000 MHz via SCMI (rk356x.md §7)"),
        mac_efficiency=Fact(0.5, "calibrated: RKNN MobileNetV2 197.4 FPS (5.07 ms) on RK3566/68 [ZOO v2.0.0] "
                                 "(with dram_gbps)", "calibrated"),
        dram_gbps=Fact(3.8, "calibrated with mac_efficiency on the same figure; 32-bit LPDDR4 at 3200 MT/s is "
                            "12.8 GB/s peak", "calibrated"),
        sram_bytes=Fact(256 * 1024, "8 CBUF banks, 256 KiB (RK3568 TRM Part 2 §9.1 as cited by the RK3568 Mesa "
                                    "drafts, rk356x.md §1)"),
        task_us=_IRQ_TASK,
        job_us=Fact(90.0, "calibrated: MobileNetV1 9 ms with per-op jobs -> 6 ms as one chained job at 600 MHz "
                          "([RELOG] T50 -> T59, rk356x.md §7): ~3 ms over ~28 jobs, less the submit each had; "
                          "[RELOG] T59 states ~0.2 ms per job", "calibrated"),
        **_KERNEL,
    ),
}
TABLES["rk3566"] = TABLES["rk3568"]  # one NPU (targets.py: the rk3566 row runs rk3568's programs)
