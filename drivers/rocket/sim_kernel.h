/* Internal to the simulated accel/rocket kernel (sim_kernel.c): the per-SoC kick, exposed so tests can
 * check the exact MMIO sequence and drive a simulated core with a modified one (tests/c/). */
#ifndef TEFLON_SIM_KERNEL_H
#define TEFLON_SIM_KERNEL_H

#include <stdint.h>

#define SIM_MAX_CORES 3
#define SIM_KICK_WRITES 10
/* 500 ms job timeout over a 50 us completion poll (rocket.md §5.3, §6.3) */
#define SIM_POLLS_PER_TIMEOUT 10000u

/* PC registers and values of the kick (the same offsets on RK3588 and RK3576) */
#define SIM_KICK_PC_OPERATION_ENABLE 0x0008u
#define SIM_KICK_PC_BASE_ADDRESS 0x0010u
#define SIM_KICK_PC_REGISTER_AMOUNTS 0x0014u
#define SIM_KICK_PC_INTERRUPT_MASK 0x0020u
#define SIM_KICK_PC_INTERRUPT_CLEAR 0x0024u
#define SIM_KICK_PC_INTERRUPT_RAW_STATUS 0x002Cu
#define SIM_KICK_PC_TASK_CON 0x0030u
#define SIM_KICK_PC_TASK_DMA_BASE_ADDR 0x0034u
#define SIM_KICK_CNA_S_POINTER 0x1004u
#define SIM_KICK_CORE_S_POINTER 0x3004u
#define SIM_KICK_SPOINTER 0xEu        /* POINTER_PP_EN | EXECUTER_PP_EN | POINTER_PP_MODE (+ core << 28) */
#define SIM_KICK_DPU_BITS 0x300u      /* INTERRUPT_*: DPU_0 | DPU_1 */

struct sim_kernel_soc {
    const char *name;
    int ncores;         /* cores the scheduler spreads jobs over */
    uint32_t task_con;  /* PC_TASK_CON of a one-task kick */
    int polled;         /* completion: 0 interrupt, 1 poll of INTERRUPT_RAW_STATUS */
};

struct sim_mmio {
    uint32_t off, val;
};

/* The kernel's behaviour for "rk3588" / "rk3576", NULL for another SoC. */
const struct sim_kernel_soc *sim_kernel_soc(const char *soc);

/* The MMIO writes that kick one task (regcmd IOVA, count in 64-bit words) on `core`, in order. */
int sim_kernel_kick_sequence(const struct sim_kernel_soc *soc, unsigned core, uint32_t regcmd, uint32_t count,
                             struct sim_mmio seq[SIM_KICK_WRITES]);

#endif
