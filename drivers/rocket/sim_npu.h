/* Simulated rocket NPU core (RK3588, RK3576): the PC, the register file and the op-enable trigger.
 *
 * The simulated kernel drives it exactly like accel/rocket drives the silicon: direct register
 * writes (rkt_npu_mmio_write) of the PC block and the CNA/CORE S_POINTERs, then
 * PC OPERATION_ENABLE = 1, which makes the PC fetch the regcmd words from device memory, decode
 * each into a register write checked against the generated register table, and run the datapath
 * on the op-enable word. Completion shows in PC INTERRUPT_RAW_STATUS (DPU_0/DPU_1).
 *
 * Device memory is reached only through the lookup callback (IOVA -> host pointer, bounds-checked
 * to a single buffer object).
 */
#ifndef TEFLON_SIM_NPU_H
#define TEFLON_SIM_NPU_H

#include <stddef.h>
#include <stdint.h>

#include "rkt_family.h"
#include "../sim_rules.h"

/* The core's MMIO interface the kernel drives: PC block and CNA/CORE S_POINTER, the same offsets on RK3588 and
 * RK3576 (Mesa registers.xml, rocket.md §5.3; checked at compile time against each generation's generated
 * table, RKT_ASSERT_PC_LAYOUT in sim_npu_priv.h). */
#define RKT_PC_OPERATION_ENABLE 0x0008u
#define RKT_PC_BASE_ADDRESS 0x0010u
#define RKT_PC_REGISTER_AMOUNTS 0x0014u
#define RKT_PC_INTERRUPT_MASK 0x0020u
#define RKT_PC_INTERRUPT_CLEAR 0x0024u
#define RKT_PC_INTERRUPT_STATUS 0x0028u
#define RKT_PC_INTERRUPT_RAW_STATUS 0x002Cu
#define RKT_PC_TASK_CON 0x0030u
#define RKT_PC_TASK_DMA_BASE_ADDR 0x0034u
#define RKT_CNA_S_POINTER 0x1004u
#define RKT_CORE_S_POINTER 0x3004u
#define RKT_IRQ_DPU_0 8                       /* INTERRUPT_*: DPU_0 / DPU_1 = bits 8 / 9 (ping-pong group) */
#define RKT_IRQ_DPU_BITS (3u << RKT_IRQ_DPU_0) /* DPU_0 | DPU_1: a conv task's completion */
/* DPU_0 | DPU_1 | PPU_0 | PPU_1: what the simulated kernel unmasks and waits for. Upstream accel/rocket unmasks
 * only the DPU bits, so a PPU-only (pooling) task would time out there: docs/hardware/rocket.md, "Pooling". */
#define RKT_IRQ_DONE_BITS (0xFu << RKT_IRQ_DPU_0)
#define RKT_SPOINTER_PP 0xEu                   /* POINTER_PP_EN | EXECUTER_PP_EN | POINTER_PP_MODE */
#define RKT_SPOINTER_CORE_SELECT 0x30000000u   /* bits 28..29, written by the kernel only */

/* Host pointer for [iova, iova + len) if that range lies inside one live BO, else NULL. */
typedef uint8_t *(*rkt_mem_lookup)(void *ctx, uint64_t iova, uint64_t len);

typedef struct rkt_npu rkt_npu;

/* A core of generation `gen` (its register table and register semantics) following the hypotheses `rules` picks
 * for the open hardware facts (sim_rules.h); NULL without memory. */
rkt_npu *rkt_npu_create(const struct rkt_gen *gen, const struct teflon_sim_rules *rules, rkt_mem_lookup lookup,
                        void *ctx);
void rkt_npu_destroy(rkt_npu *n);

/* The address space the core reaches from now on: the kernel attaches the submitting file's IOMMU domain to
 * the core before each job (rocket_job_run), so cores shared by several open files see each file's BOs. */
void rkt_npu_attach(rkt_npu *n, rkt_mem_lookup lookup, void *ctx);

/* A new job may land on any core: forget register contents and CBUF contents. */
void rkt_npu_job_begin(rkt_npu *n);

/* Direct (MMIO) register access, as the kernel does it. Writing PC OPERATION_ENABLE = 1 runs
 * the task synchronously; a negative return means the NPU faulted (see rkt_npu_error). */
int rkt_npu_mmio_write(rkt_npu *n, uint32_t offset, uint32_t value);
uint32_t rkt_npu_mmio_read(const rkt_npu *n, uint32_t offset);

const char *rkt_npu_error(const rkt_npu *n);

/* What the last task moved, counted where each unit reaches device memory (rkt_mem): bytes, not the
 * hardware's 16-byte units. */
struct rkt_npu_counters {
    uint64_t feature_rd; /* CNA feature DMA */
    uint64_t weight_rd;  /* CNA weight DMA (0 when the CBUF kept the weights) */
    uint64_t bias_rd;    /* DPU_RDMA: bias / BS coefficient / shift tables */
    uint64_t data_wr;    /* DPU WDMA */
    uint64_t macs;
};
void rkt_npu_task_counters(const rkt_npu *n, struct rkt_npu_counters *out);
/* MACs performed by the MAC array since creation (programmed geometry). */
uint64_t rkt_npu_macs(const rkt_npu *n);

#endif
