"""Board constants of the Ethos-U target (teflon.board; sources: docs/hardware/board-model.md).

No published i.MX93 timing was found (peers-2026.md §4a: the Linaro figures were not retrievable), so nothing here
is calibrated: the rates are the configuration's and the fixed costs inferences.
"""

from __future__ import annotations

from ..board import BoardTable, Fact
from ..targets import get

TABLES: dict[str, BoardTable] = {
    "imx93": BoardTable(
        soc="imx93",
        macs_per_cycle={"int8": Fact(get("imx93").params["macs"],
                                     "Ethos-U65-256: 256 int8 MACs per cycle (CONFIG register image, targets.py)")},
        clock_mhz=Fact(1000, "0.5 TOPS for the i.MX93 NPU (NXP material as summarised by emb-exp.com 'NXP NPUs') "
                             "= 256 MACs x 2 x 1 GHz", "inferred"),
        mac_efficiency=Fact(0.7, "as the other NPUs' calibrated values; no figure to fit", "inferred"),
        dram_gbps=Fact(3.0, "16-bit LPDDR4X-3733 on the i.MX93 (7.5 GB/s peak) through the NPU's AXI port; no "
                            "figure to fit", "inferred"),
        sram_bytes=Fact(get("imx93").params["sram_size"], "i.MX93 dts sram node 0x18000 (targets.py)"),
        task_us=Fact(1.0, "a kick inside the command stream: no CPU involvement (ethosu-kernel.md)", "inferred"),
        job_us=Fact(0.0, "one job per submit: its cost is the submit's", "inferred"),
        submit_us=Fact(50.0, "DRM_IOCTL_ETHOSU_SUBMIT: command stream validation (ethosu_validate.c), BO "
                             "reservation, one interrupt at the stream's end", "inferred"),
        partition_us=Fact(100.0, "fence wait wake-up and cache maintenance", "inferred"),
        host_copy_gbps=Fact(1.0, "host layout conversion by one Cortex-A55, GB/s", "inferred"),
        overlap=Fact(0.5, "weight and feature DMA run beside the MACs within a kick, not across the stream's "
                          "layers (one unit = the stream)", "inferred"),
    ),
}
