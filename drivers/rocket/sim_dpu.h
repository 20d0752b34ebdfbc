/* The DPU on its own ("flying mode": op-enable DPU + DPU_RDMA, no CNA/CORE): DPU_RDMA's main read DMA brings
 * the input cube from memory, the DPU stages run per element, the WDMA writes the output cube. Shared by both
 * generations; each generation's file decodes its registers into struct rkt_dpu_task (docs/hardware/rocket-sim.md
 * "DPU-only tasks"). The LUT RAM itself lives in rkt_npu (loaded through LUT_ACCESS_CFG/DATA at fetch time).
 */
#ifndef TEFLON_SIM_DPU_H
#define TEFLON_SIM_DPU_H

#include <stdint.h>

#include "sim_npu_priv.h"

/* One table's index arithmetic (NVDLA SDP LUT: input - START, >> INDEX_SELECT, hit when START <= x <= END). */
struct rkt_lut_range {
    int32_t start, end;
    int select;
};

struct rkt_dpu_task {
    int w, h, c;               /* cube: width, height, channels (CHANNEL + 1) */
    uint32_t in_iova, out_iova;
    uint64_t surf_pitch;       /* bytes between 16-channel surfaces (input and output) */
    int lut;                   /* the EW stage's LUT is enabled */
    struct rkt_lut_range range[2]; /* LE (0) and LO (1) */
    int hybrid_lo;             /* both tables hit: LUT_HYBRID_PRIORITY (0 LE, 1 LO) */
    int32_t out_offset;        /* OUT_CVT: sat8(((v * scale + 2^(shift-1)) >> shift) + offset) */
    uint32_t out_scale;
    int out_shift;
};

/* LUT_ACCESS_CFG / LUT_ACCESS_DATA side effects (called by the PC as the words are fetched). */
void rkt_lut_access_cfg(rkt_npu *n, uint32_t addr, int table, int write);
int rkt_lut_access_data(rkt_npu *n, uint32_t value);

/* Run a validated DPU-only task: read, map, requantize, write. */
int rkt_dpu_run(rkt_npu *n, const struct rkt_dpu_task *t);

#endif
