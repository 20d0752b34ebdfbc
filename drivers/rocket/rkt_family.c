/* The rocket family's per-generation table and task conversion (rkt_family.h). */
#include "rkt_family.h"

#include <errno.h>
#include <string.h>

#include "../errmsg.h"
#include "sim_npu_priv.h"

/* Per generation: the simulator's register semantics, and the kernel's kick and completion. */
static const struct rkt_gen generations[] = {
    /* TASK_NUMBER@0..11 = 1, TASK_PP_EN, TASK_COUNT_CLEAR, bit 14 (rocket.md §5.3) */
    /* time model [INFERRED]: Rockchip quotes 6 TOPS int8 for the three cores, i.e. 1 TMAC/s per core; an
     * interrupt-driven completion is taken as 20 us per task; 8 bytes/ns of DMA per core */
    {"rk3588", &rkt_soc_rk3588, 0x7001, 0, 20000, 1000, 8, 2},
    /* the same control bits above a 16-bit TASK_NUMBER; PC_DONE cannot reach the GIC, so the kernel polls
     * INTERRUPT_RAW_STATUS and retires on a DPU bit (rocket.md §6.2, §6.4) */
    /* time model: 6 TOPS int8 for the two cores [INFERRED: 1.5 TMAC/s per core]; ~0.44 ms per task with a 50 us
     * completion poll (rocket.md §6.3, R76-GREG); 8 bytes/ns [INFERRED] */
    {"rk3576", &rkt_soc_rk3576, 0x70001, 1, 440000, 1500, 8, 2},
    /* RK3566/RK3568 (docs/hardware/rk3568.md §5): the accel/rocket kick of one task (TASK_NUMBER 1 in the 12-bit field,
     * as RK3588 [VEND rknpu rk356x config]) completed by the DPU interrupt; PC amount scale 1 [VEND]. Time model
     * [INFERRED]: ~1 TOPS int8 for the one core (0.5 TMAC/s), 20 us per task as RK3588, 4 bytes/ns */
    {"rk3568", &rkt_soc_rk3568, 0x7001, 0, 20000, 500, 4, 1},
};

const struct rkt_gen *rkt_gen_named(const char *generation)
{
    for (size_t i = 0; generation && i < sizeof(generations) / sizeof(generations[0]); i++)
        if (strcmp(generations[i].generation, generation) == 0)
            return &generations[i];
    return NULL;
}

const struct rkt_gen *rkt_gen_of(const teflon_target *t)
{
    return t && strcmp(t->family, "rocket") == 0 ? rkt_gen_named(t->generation) : NULL;
}

int rkt_task_regcmd(const teflon_task *t, uint32_t job, uint32_t task, struct rkt_regcmd *out, char *err,
                    size_t errlen)
{
    if (t->bytes == 0 || t->bytes % 8 || t->iova % 16 || t->iova > UINT32_MAX) {
        teflon_errf(err, errlen, "job %u task %u: regcmd 0x%llx of %u bytes not accepted by the kernel (whole 64-bit "
                    "words, 16-byte aligned, below 4 GiB)", job, task, (unsigned long long)t->iova, t->bytes);
        return -EINVAL;
    }
    *out = (struct rkt_regcmd){.iova = (uint32_t)t->iova, .count = t->bytes / 8};
    return 0;
}
