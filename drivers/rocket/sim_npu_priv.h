/* Internal to the simulated rocket NPU: the core state shared by the SoC-independent PC and register
 * file (sim_npu.c) and the per-SoC register semantics (sim_rk3588.c, sim_rk3576.c).
 *
 * A SoC provides its generated register table, the width of PC_TASK_CON.TASK_NUMBER and an `execute`
 * that reads the executing register groups (rkt_rd / rkt_want / rkt_check), validates them, reaches
 * device memory through rkt_mem and runs the shared datapath (sim_conv.h).
 */
#ifndef TEFLON_SIM_NPU_PRIV_H
#define TEFLON_SIM_NPU_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "sim_conv.h"
#include "sim_dot.h"
#include "sim_npu.h"

#ifndef ROCKET_REG_DESC_DEFINED
#define ROCKET_REG_DESC_DEFINED
/* Same layout as the generated rocket_regs_<soc>.h headers define it. */
struct rocket_reg_desc {
    uint16_t target;
    uint16_t offset;
    const char *name;
    uint32_t defined_mask;
};
#endif

#define RKT_NSLOTS (0x8000 / 4) /* register slots: offsets 0x0000..0x7ffc */
#define RKT_SXT(v, bits) ((int32_t)((uint32_t)(v) << (32 - (bits))) >> (32 - (bits)))

/* Special words and the DPU S_POINTERs (the PC block and CNA/CORE S_POINTER are in sim_npu.h): identical
 * on RK3588 and RK3576, checked at compile time in the generation files against their generated tables. */
#define RKT_DPU_S_POINTER 0x4004u
#define RKT_DPU_RDMA_S_POINTER 0x5004u
#define RKT_TARGET_SYNC 0x0041u
#define RKT_TARGET_OP_ENABLE 0x0081u
#define RKT_OFFSET_OP_ENABLE 0x0008u
#define RKT_OPEN_CONV_BITMAP 0x1Du           /* CNA | CORE | DPU | DPU_RDMA */
#define RKT_OPEN_PPU_BITMAP 0x60u            /* PPU | PPU_RDMA: a pooling task [TRM GLOBAL_OPERATION_ENABLE] */

/* PPU / PPU_RDMA offsets, identical on RK3588 (TRM, registers.xml) and RK3576 (vendor pool programs); each
 * generation file checks them against its generated table (RKT_ASSERT_PPU_LAYOUT). The padding values and the
 * RDMA data format differ and go through the generation's hooks (struct rkt_soc). */
#define RKT_PPU_S_POINTER 0x6004u
#define RKT_PPU_CUBE_IN_WIDTH 0x600Cu
#define RKT_PPU_CUBE_IN_HEIGHT 0x6010u
#define RKT_PPU_CUBE_IN_CHANNEL 0x6014u
#define RKT_PPU_CUBE_OUT_WIDTH 0x6018u
#define RKT_PPU_CUBE_OUT_HEIGHT 0x601Cu
#define RKT_PPU_CUBE_OUT_CHANNEL 0x6020u
#define RKT_PPU_OPERATION_MODE_CFG 0x6024u
#define RKT_PPU_POOLING_KERNEL_CFG 0x6034u
#define RKT_PPU_RECIP_KERNEL_WIDTH 0x6038u
#define RKT_PPU_RECIP_KERNEL_HEIGHT 0x603Cu
#define RKT_PPU_POOLING_PADDING_CFG 0x6040u
#define RKT_PPU_DST_BASE_ADDR 0x6070u
#define RKT_PPU_DST_SURF_STRIDE 0x607Cu
#define RKT_PPU_DATA_FORMAT 0x6084u
#define RKT_PPU_MISC_CTRL 0x60DCu
#define RKT_PPU_RDMA_S_POINTER 0x7004u
#define RKT_PPU_RDMA_CUBE_IN_WIDTH 0x700Cu
#define RKT_PPU_RDMA_CUBE_IN_HEIGHT 0x7010u
#define RKT_PPU_RDMA_CUBE_IN_CHANNEL 0x7014u
#define RKT_PPU_RDMA_SRC_BASE_ADDR 0x701Cu
#define RKT_PPU_RDMA_SRC_LINE_STRIDE 0x7024u
#define RKT_PPU_RDMA_SRC_SURF_STRIDE 0x7028u
#define RKT_PPU_RDMA_DATA_FORMAT 0x7030u
#define RKT_IRQ_PPU_0 10 /* INTERRUPT_*: PPU_0 / PPU_1 = bits 10 / 11 [XML] */

#define RKT_ASSERT_PPU_LAYOUT(SOC)                                                                              \
    _Static_assert(SOC##_PPU_S_POINTER == RKT_PPU_S_POINTER && SOC##_PPU_DATA_CUBE_IN_WIDTH == RKT_PPU_CUBE_IN_WIDTH && \
                       SOC##_PPU_DATA_CUBE_IN_HEIGHT == RKT_PPU_CUBE_IN_HEIGHT &&                                 \
                       SOC##_PPU_DATA_CUBE_IN_CHANNEL == RKT_PPU_CUBE_IN_CHANNEL &&                               \
                       SOC##_PPU_DATA_CUBE_OUT_WIDTH == RKT_PPU_CUBE_OUT_WIDTH &&                                 \
                       SOC##_PPU_DATA_CUBE_OUT_HEIGHT == RKT_PPU_CUBE_OUT_HEIGHT &&                               \
                       SOC##_PPU_DATA_CUBE_OUT_CHANNEL == RKT_PPU_CUBE_OUT_CHANNEL &&                             \
                       SOC##_PPU_OPERATION_MODE_CFG == RKT_PPU_OPERATION_MODE_CFG &&                              \
                       SOC##_PPU_POOLING_KERNEL_CFG == RKT_PPU_POOLING_KERNEL_CFG &&                              \
                       SOC##_PPU_RECIP_KERNEL_WIDTH == RKT_PPU_RECIP_KERNEL_WIDTH &&                              \
                       SOC##_PPU_RECIP_KERNEL_HEIGHT == RKT_PPU_RECIP_KERNEL_HEIGHT &&                            \
                       SOC##_PPU_POOLING_PADDING_CFG == RKT_PPU_POOLING_PADDING_CFG &&                            \
                       SOC##_PPU_DST_BASE_ADDR == RKT_PPU_DST_BASE_ADDR && SOC##_PPU_DST_SURF_STRIDE == RKT_PPU_DST_SURF_STRIDE && \
                       SOC##_PPU_DATA_FORMAT == RKT_PPU_DATA_FORMAT && SOC##_PPU_MISC_CTRL == RKT_PPU_MISC_CTRL &&  \
                       SOC##_PPU_RDMA_S_POINTER == RKT_PPU_RDMA_S_POINTER &&                                      \
                       SOC##_PPU_RDMA_CUBE_IN_WIDTH == RKT_PPU_RDMA_CUBE_IN_WIDTH &&                              \
                       SOC##_PPU_RDMA_CUBE_IN_HEIGHT == RKT_PPU_RDMA_CUBE_IN_HEIGHT &&                            \
                       SOC##_PPU_RDMA_CUBE_IN_CHANNEL == RKT_PPU_RDMA_CUBE_IN_CHANNEL &&                          \
                       SOC##_PPU_RDMA_SRC_BASE_ADDR == RKT_PPU_RDMA_SRC_BASE_ADDR &&                              \
                       SOC##_PPU_RDMA_SRC_LINE_STRIDE == RKT_PPU_RDMA_SRC_LINE_STRIDE &&                          \
                       SOC##_PPU_RDMA_SRC_SURF_STRIDE == RKT_PPU_RDMA_SRC_SURF_STRIDE &&                          \
                       SOC##_PPU_RDMA_DATA_FORMAT == RKT_PPU_RDMA_DATA_FORMAT &&                                  \
                       SOC##_PC_INTERRUPT_RAW_STATUS__PPU_0__SHIFT == RKT_IRQ_PPU_0,                              \
                   "the shared PPU step assumes these " #SOC " offsets")
#define RKT_OPEN_DPU_BITMAP 0x18u            /* DPU | DPU_RDMA: the DPU alone (flying mode, sim_dpu.h) */
#define RKT_DPU_LUT_ACCESS_CFG 0x4100u
#define RKT_DPU_LUT_ACCESS_DATA 0x4104u
#define RKT_LUT_ENTRIES 1024                 /* LUT_ACCESS_CFG.LUT_ADDR is 10 bits */

/* Each SoC file checks that its generated table agrees with the constants above. */
#define RKT_ASSERT_PC_LAYOUT(SOC)                                                                               \
    _Static_assert(SOC##_PC_BASE_ADDRESS == RKT_PC_BASE_ADDRESS && SOC##_PC_REGISTER_AMOUNTS == RKT_PC_REGISTER_AMOUNTS && \
                       SOC##_PC_TASK_CON == RKT_PC_TASK_CON && SOC##_PC_INTERRUPT_RAW_STATUS == RKT_PC_INTERRUPT_RAW_STATUS && \
                       SOC##_PC_OPERATION_ENABLE == RKT_PC_OPERATION_ENABLE && SOC##_CNA_S_POINTER == RKT_CNA_S_POINTER && \
                       SOC##_CORE_S_POINTER == RKT_CORE_S_POINTER && SOC##_DPU_S_POINTER == RKT_DPU_S_POINTER &&   \
                       SOC##_DPU_RDMA_S_POINTER == RKT_DPU_RDMA_S_POINTER && SOC##_TARGET_SYNC == RKT_TARGET_SYNC && \
                       SOC##_TARGET_OP_ENABLE == RKT_TARGET_OP_ENABLE &&                                          \
                       SOC##_PC_INTERRUPT_RAW_STATUS__DPU_0__SHIFT == RKT_IRQ_DPU_0 &&                            \
                       SOC##_PC_TASK_CON__TASK_NUMBER__SHIFT == 0,                                                \
                   "the generic PC assumes these " #SOC " offsets")

/* U_CMAC: RK3568's CMAC block (0x2xxx, its own S_POINTER; docs/hardware/rk3568.md §2); no register of the other
 * generations' tables lies there. */
enum rkt_unit { U_CNA, U_CORE, U_DPU, U_RDMA, U_PPU, U_PPU_RDMA, U_CMAC, U_COUNT, U_PC = -1, U_NONE = -2 };
#define RKT_CMAC_S_POINTER 0x2004u

struct rkt_soc {
    const struct rocket_reg_desc *regs;
    int nregs;
    uint32_t task_number_mask;      /* PC_TASK_CON.TASK_NUMBER, from bit 0 */
    const char *task_con_hint;      /* appended to the TASK_NUMBER error */
    int stream_core_spointers;      /* CNA/CORE S_POINTER may be written (with RKT_SPOINTER_PP) from a stream */
    int (*execute)(rkt_npu *n);     /* a conv task (op-enable 0x1D) */
    /* PPU task (op-enable 0x60), the generation's parts: the stored padding value its registers hold (reads and
     * checks them; `average` selects the accepted form), and the only PPU_RDMA DATA_FORMAT word understood */
    int32_t (*ppu_pad_value)(rkt_npu *n, int average);
    uint32_t ppu_rdma_8bit;
    /* POOLING_PADDING_CFG: the bit offsets of the left, top, right and bottom pad fields (3 bits each); with
     * ppu_pad_pairs_equal only left = top and right = bottom are understood (which of a pair is x is unknown) */
    uint8_t ppu_pad_shift[4];
    int ppu_pad_pairs_equal;
    /* the op-enable word of a conv task (0: RKT_OPEN_CONV_BITMAP 0x1D; RK3568 0x1F with CMAC) */
    uint32_t conv_op_enable;
    /* a PPU task raises no PC interrupt bit (RK3568 [IAV T61]): a pool kicked alone never completes */
    int ppu_no_irq;
};

/* The generations' semantics, for the per-generation table (rkt_family.c). */
extern const struct rkt_soc rkt_soc_rk3588;
extern const struct rkt_soc rkt_soc_rk3576;
extern const struct rkt_soc rkt_soc_rk3568;

/* Weights left in the CBUF by an earlier task of the same job, for reuse. */
struct rkt_resident_weights {
    int valid;
    uint32_t iova;
    uint32_t bytes;
    int data_bank, weight_bank; /* RK3588 bank split (RK3576: 0) */
    struct rkt_conv_geom g;
};

/* RK3576 CBUF data ring: 64-byte granules, each tagged with the row format that last filled it in this
 * job (0: not filled). */
struct rkt_cbuf_ring {
    uint8_t *data;
    uint32_t *tag;
    uint32_t granules; /* capacity allocated */
};

struct rkt_npu {
    const struct rkt_gen *gen;
    struct teflon_sim_rules rules; /* the open facts' hypotheses this core follows (sim_rules.h) */
    const struct rkt_soc *soc; /* gen->soc */
    rkt_mem_lookup lookup;
    void *ctx;

    /* PC block (not ping-ponged) */
    uint32_t pc_base, pc_amount, int_mask, int_raw, task_con, task_dma_base;
    uint32_t chain_base, chain_amount; /* trailer values written by the stream */

    /* per-unit ping-pong state */
    uint32_t spointer[U_COUNT];
    int ptr[U_COUNT], exe[U_COUNT];

    uint32_t regs[2][RKT_NSLOTS];
    uint8_t written[2][RKT_NSLOTS];
    uint8_t dirty[2][RKT_NSLOTS];
    uint16_t word_at[2][RKT_NSLOTS]; /* index of the regcmd word that last wrote the register */
    uint8_t consumed[RKT_NSLOTS];
    int16_t desc[RKT_NSLOTS]; /* slot -> index in soc->regs, -1 unknown */

    struct rkt_resident_weights cbuf;
    struct rkt_cbuf_ring ring;
    rkt_conv *conv;

    /* per-task host copies of what the DPU reads from tables (bias / coefficients), and the RK3576 CBUF
     * window handed to the datapath */
    int32_t *bias;
    int16_t *ow, *mul;
    size_t table_cap;
    uint8_t *window;
    size_t window_cap;

    /* the EW lookup tables (LE 0, LO 1): one RAM loaded through LUT_ACCESS_CFG/DATA as the words are fetched,
     * not ping-ponged [INFERRED: NVDLA's LUT access registers are single registers]; `loaded` holds the job's
     * 1-based serial of the task that wrote the entry (0: not in this job), cleared per job */
    int16_t lut[2][RKT_LUT_ENTRIES];
    uint32_t lut_loaded[2][RKT_LUT_ENTRIES];
    uint32_t job_tasks; /* tasks completed in this job */
    uint32_t lut_task;  /* serial of this job's last completed LUT-load task (RK3576), 0 none */
    uint32_t lut_addr;
    int lut_table, lut_write;
    struct rkt_lut_stage lut_stage; /* the executing conv task's LUT stage (RK3576), read from lut[] */
    atomic_uint lut_faults;         /* values the LUT stage could not map in that task (sim_dot.h) */
    uint32_t op_enable; /* the executing task's op-enable bitmap */

    uint64_t macs;
    struct rkt_npu_counters task_ctr; /* the executing task's traffic (reset per task) */
    unsigned word;     /* index of the word being decoded */
    int in_stream;     /* errors name the word */
    int bad;
    int hang; /* the executing task never completes (a TEFLON_SIM_RULES hypothesis): no datapath, no interrupt */
    char err[512];
};

int rkt_unit_of(uint32_t offset);
const char *rkt_reg_name(const rkt_npu *n, uint32_t offset);

/* Record the first error (later ones are dropped); returns -EINVAL. */
int rkt_fail(rkt_npu *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Read a register of the executing group: marks it consumed; never written in this job is an error. */
uint32_t rkt_rd(rkt_npu *n, uint32_t off);
/* The register must hold exactly `expect` (the only value the simulator understands). */
uint32_t rkt_want(rkt_npu *n, uint32_t off, uint32_t expect, const char *why);
/* Fail naming register and value unless `ok`. */
void rkt_check(rkt_npu *n, int ok, uint32_t off, uint32_t v, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Which counter a device-memory access adds to (struct rkt_npu_counters); RKT_DMA_EXTENT only checks that a
 * whole range the unit will reach lies inside one BO, its bytes are counted by the accesses themselves. */
enum rkt_dma { RKT_DMA_EXTENT, RKT_DMA_FEATURE, RKT_DMA_WEIGHT, RKT_DMA_BIAS, RKT_DMA_WRITE };
/* Host pointer for a device range inside one BO, else a "DMA fault" error naming `what`. Every byte a unit
 * moves passes here once, as one access (a burst) of class `dma`, which counts its `len` bytes. */
uint8_t *rkt_mem(rkt_npu *n, enum rkt_dma dma, const char *what, uint32_t iova, uint64_t len);
/* Every register written since the executing groups last ran must have been consumed by this task. */
int rkt_check_all_consumed(rkt_npu *n);
/* Run a validated task on the datapath and count its MACs. */
int rkt_run_conv(rkt_npu *n, const struct rkt_conv_task *t);
/* Validate and run a PPU pooling task (sim_ppu.c). */
int rkt_ppu_execute(rkt_npu *n);
/* Grow the per-task table arrays to n entries each. */
int rkt_tables_reserve(rkt_npu *n, size_t entries);

#endif
