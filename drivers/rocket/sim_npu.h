/* Simulated rocket NPU core (RK3588, RK3576): the PC, the register file and the op-enable trigger.
 *
 * The simulated kernel drives it exactly like accel/rocket drives the silicon: direct register
 * writes (sim_npu_mmio_write) of the PC block and the CNA/CORE S_POINTERs, then
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

/* Host pointer for [iova, iova + len) if that range lies inside one live BO, else NULL. */
typedef uint8_t *(*sim_mem_lookup)(void *ctx, uint64_t iova, uint64_t len);

typedef struct sim_npu sim_npu;

/* soc: "rk3588" or "rk3576" (its register table and register semantics); NULL for another SoC or
 * without memory. */
sim_npu *sim_npu_create(const char *soc, sim_mem_lookup lookup, void *ctx);
void sim_npu_destroy(sim_npu *n);

/* A new job may land on any core: forget register contents and CBUF contents. */
void sim_npu_job_begin(sim_npu *n);

/* Direct (MMIO) register access, as the kernel does it. Writing PC OPERATION_ENABLE = 1 runs
 * the task synchronously; a negative return means the NPU faulted (see sim_npu_error). */
int sim_npu_mmio_write(sim_npu *n, uint32_t offset, uint32_t value);
uint32_t sim_npu_mmio_read(const sim_npu *n, uint32_t offset);

const char *sim_npu_error(const sim_npu *n);
/* MACs performed by the MAC array since creation (programmed geometry). */
uint64_t sim_npu_macs(const sim_npu *n);

#endif
