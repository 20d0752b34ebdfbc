/* Internal to the simulated accel/rocket kernel (sim_kernel.c): the kick of one task, exposed so tests can
 * check the exact MMIO sequence and drive a simulated core with a modified one (tests/c/). */
#ifndef TEFLON_SIM_KERNEL_H
#define TEFLON_SIM_KERNEL_H

#include <stdint.h>

#include "rkt_family.h"

#define RKT_KICK_WRITES 10
/* 500 ms job timeout (JOB_TIMEOUT_MS of accel/rocket's rocket_job.c) over a 50 us completion poll (rocket.md
 * §5.3, §6.3) */
#define RKT_JOB_TIMEOUT_MS 500u
#define RKT_POLLS_PER_TIMEOUT (RKT_JOB_TIMEOUT_MS * 20u)

struct rkt_mmio {
    uint32_t off, val;
};

/* The MMIO writes that kick one task (regcmd IOVA, count in 64-bit words) on `core` of a `gen` NPU, in
 * order (rocket_job_hw_submit, docs/hardware/rocket-sim.md "submit"). */
int rkt_kick_sequence(const struct rkt_gen *gen, unsigned core, struct rkt_regcmd task,
                      struct rkt_mmio seq[RKT_KICK_WRITES]);

#endif
