/* Internal to the rocket family: what its kernel client and its simulator share. The family's one table of
 * per-generation facts (rkt_family.c), keyed on the target row's `generation`, and the conversion of a
 * family-neutral task (a byte range of a BO) into what the rocket PC fetches (a regcmd address + word count).
 */
#ifndef TEFLON_RKT_FAMILY_H
#define TEFLON_RKT_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include "../driver.h"

/* The most NPU cores of any rocket row of the registry (RK3588: 3, from its devicetree binding, see its row in
 * python/teflon/targets.py); a row with more is refused by the simulator. */
#define RKT_MAX_CORES 3

struct rkt_soc; /* the simulated register semantics of a generation (sim_npu_priv.h) */

struct rkt_gen {
    const char *generation;    /* teflon_target.generation */
    const struct rkt_soc *soc; /* its register table and semantics in the simulator */
    uint32_t task_con;         /* PC_TASK_CON of the kernel's one-task kick */
    int polled;                /* the kernel's completion: 0 interrupt, 1 poll of INTERRUPT_RAW_STATUS */
    /* The simulator's time model of one task on one core (docs/hardware/rocket-sim.md "time"): a fixed cost per
     * task (kick, completion, the kernel's next kick) plus the longer of its MACs at the core's MAC rate and its
     * DMA bytes at the core's bandwidth. A model to compare schedules with, not a measurement. */
    uint32_t task_overhead_ns;
    uint32_t macs_per_ns;
    uint32_t bytes_per_ns;
    /* 64-bit regcmd words per PC_REGISTER_AMOUNTS unit (the vendor's pc_data_amount_scale: RK3588/RK3576 2,
     * RK356x 1 [VEND rknpu_drv.c]): the kernel writes ceil(words / scale) - 1, the PC fetches scale x (amount + 1) */
    uint32_t amount_scale;
};

/* The generation named `generation`, or NULL. */
const struct rkt_gen *rkt_gen_named(const char *generation);
/* The generation of a rocket target row, or NULL for another family or an unknown generation. */
const struct rkt_gen *rkt_gen_of(const teflon_target *t);

/* A task as the rocket PC takes it: drm_rocket_task's regcmd IOVA and count of 64-bit words. */
struct rkt_regcmd {
    uint32_t iova;
    uint32_t count;
};

/* The regcmd stream of task `task` of job `job`: a non-empty whole number of 64-bit words, 16-byte aligned
 * (PC_BASE_ADDRESS holds PC_SEL in its low bits) and below 4 GiB (the NPU's address registers are 32 bits),
 * docs/hardware/rocket-sim.md "fetch". -EINVAL with a message otherwise. */
int rkt_task_regcmd(const teflon_task *t, uint32_t job, uint32_t task, struct rkt_regcmd *out, char *err,
                    size_t errlen);

#endif
