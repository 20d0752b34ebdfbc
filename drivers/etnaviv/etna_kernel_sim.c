/* Simulated etnaviv kernel: BOs softpinned at VAs this backend allocates (as the real client does, from the
 * kernel's softpin start), synchronous submits of each task's command stream on the simulated NPU
 * (etna_sim.h, docs/hardware/etnaviv-sim.md). The simulator owns BO memory; its mapping is the CPU mapping,
 * so cpu_prep/cpu_fini have nothing to sync (execution is synchronous and memory coherent).
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../errmsg.h"
#include "../fault.h"
#include "../sim_rules.h"
#include "etna.h"
#include "etna_family.h"
#include "etna_sim.h"

struct etna_sbo {
    uint32_t handle;
    uint32_t va;
    uint64_t size;
    void *map;
};

struct etna_sdev {
    etna_sim *sim;
    struct etna_vas vas;
    struct etna_sbo *bos;
    size_t nbos, cap;
    uint32_t next_handle;
    struct teflon_sim_fault fault; /* $TEFLON_SIM_FAULT, read at open */
};

/* The etnaviv scheduler's job timeout (etnaviv_sched.c: 500 ms, extended while the front end makes progress). */
#define ETNA_JOB_TIMEOUT_MS 500u

static struct etna_sbo *etna_sdev_bo(struct etna_sdev *d, uint32_t handle)
{
    for (size_t i = 0; i < d->nbos; i++)
        if (d->bos[i].handle == handle)
            return &d->bos[i];
    return NULL;
}

static int etna_sdev_bo_create(void *impl, uint64_t size, teflon_bo *out, char *err, size_t errlen)
{
    struct etna_sdev *d = impl;
    if (etna_grow((void **)&d->bos, &d->cap, d->nbos, sizeof(*d->bos))) {
        teflon_errf(err, errlen, "out of host memory for the simulated BO table");
        return -ENOMEM;
    }
    uint64_t va;
    int rc = etna_vas_alloc(&d->vas, size, &va);
    if (rc) {
        teflon_errf(err, errlen, "no room for a BO of %llu bytes in the NPU's 32-bit address space",
                    (unsigned long long)size);
        return rc;
    }
    void *map;
    char msg[256];
    if (etna_sim_bo_create_at(d->sim, (uint32_t)va, size, &map, msg, sizeof(msg))) {
        etna_vas_free(&d->vas, va);
        teflon_errf(err, errlen, "simulated BO of %llu bytes: %s", (unsigned long long)size, msg);
        return -ENOMEM;
    }
    const struct etna_sbo b = {++d->next_handle, (uint32_t)va, size, map};
    d->bos[d->nbos++] = b;
    *out = (teflon_bo){.handle = b.handle, .iova = b.va, .size = size, .map = map};
    return 0;
}

static void etna_sdev_bo_destroy(void *impl, teflon_bo *bo)
{
    struct etna_sdev *d = impl;
    struct etna_sbo *b = etna_sdev_bo(d, bo->handle);
    if (!b)
        return;
    etna_sim_bo_destroy(d->sim, b->va);
    etna_vas_free(&d->vas, b->va);
    *b = d->bos[--d->nbos];
    bo->map = NULL;
}

static int etna_sdev_sync(void *impl, teflon_bo *bo, char *err, size_t errlen)
{
    if (!etna_sdev_bo(impl, bo->handle)) {
        teflon_errf(err, errlen, "unknown BO handle %u", bo->handle);
        return -ENOENT;
    }
    return 0;
}

/* Every BO the job names must exist (the kernel refuses an unknown handle with -ENOENT). */
static int etna_sdev_check_bos(struct etna_sdev *d, const teflon_job *j, uint32_t ji, char *err, size_t errlen)
{
    for (uint32_t a = 0; a < j->nin + j->nout; a++) {
        const uint32_t h = a < j->nin ? j->in_bos[a] : j->out_bos[a - j->nin];
        if (!etna_sdev_bo(d, h)) {
            teflon_errf(err, errlen, "job %u: unknown BO handle %u", ji, h);
            return -ENOENT;
        }
    }
    return 0;
}

static int etna_sdev_run_task(struct etna_sdev *d, const teflon_task *t, uint32_t ji, uint32_t ti, char *err,
                              size_t errlen)
{
    const struct etna_sbo *b = etna_sdev_bo(d, t->bo);
    if (!b) {
        teflon_errf(err, errlen, "job %u task %u: unknown command stream BO handle %u", ji, ti, t->bo);
        return -ENOENT;
    }
    const uint32_t *words;
    uint32_t n;
    int rc = etna_task_words(t, b->map, b->size, ji, ti, &words, &n, err, errlen);
    if (rc)
        return rc;
    char msg[512];
    if (etna_sim_submit(d->sim, words, n, msg, sizeof(msg))) {
        teflon_errf(err, errlen, "job %u task %u: %s", ji, ti, msg);
        return -EIO;
    }
    return 0;
}

/* The first device address past every BO: unmapped in the NPU's MMU context. */
static uint64_t etna_sdev_unmapped_va(const struct etna_sdev *d)
{
    uint64_t end = ETNA_SOFTPIN_START;
    for (size_t i = 0; i < d->nbos; i++) {
        const uint64_t e = d->bos[i].va + (d->bos[i].size + ETNA_VA_PAGE - 1) / ETNA_VA_PAGE * ETNA_VA_PAGE;
        end = e > end ? e : end;
    }
    return end;
}

/* An injected fault on one task, as the kernel meets it (docs/faults.md): the stream hangs, completes without its
 * event interrupt, or trips an AXI bus error or an MMU exception; the job ends in error and the kernel recovers
 * the core (etnaviv_gpu_recover_hang), so the next submit runs normally. Returns the errno; `what` says why. */
static int etna_sdev_inject(struct etna_sdev *d, const teflon_task *t, uint32_t ji, uint32_t ti,
                            enum teflon_fault_kind k, char *what, size_t len)
{
    char ignored[512];
    switch (k) {
    case TEFLON_FAULT_TIMEOUT:
        teflon_errf(what, len, "NPU job timed out: no completion and no front-end progress within the kernel's %u ms "
                    "job timeout; core recovered", ETNA_JOB_TIMEOUT_MS);
        break;
    case TEFLON_FAULT_LOST_IRQ:
        /* the NPU finishes (its writes land) but the event interrupt never signals the fence */
        (void)etna_sdev_run_task(d, t, ji, ti, ignored, sizeof(ignored));
        teflon_errf(what, len, "NPU job timed out: the stream completed but its event interrupt never came within "
                    "the kernel's %u ms job timeout; core recovered", ETNA_JOB_TIMEOUT_MS);
        break;
    case TEFLON_FAULT_DMA_READ:
        teflon_errf(what, len, "DMA read error (AXI bus error interrupt); the job did not complete, core recovered");
        break;
    case TEFLON_FAULT_DMA_WRITE:
        (void)etna_sdev_run_task(d, t, ji, ti, ignored, sizeof(ignored));
        teflon_errf(what, len, "DMA write error (AXI bus error interrupt); the output is not valid, core recovered");
        break;
    case TEFLON_FAULT_IOMMU:
        teflon_errf(what, len, "IOMMU page fault at 0x%08llx (MMU exception); core recovered",
                    (unsigned long long)etna_sdev_unmapped_va(d));
        break;
    default:
        return 0;
    }
    return teflon_fault_errno(k);
}

static int etna_sdev_submit(void *impl, const teflon_job *jobs, uint32_t njobs, teflon_submit_stats *stats, char *err,
                            size_t errlen)
{
    struct etna_sdev *d = impl;
    struct etna_sim_stats s0, s1;
    etna_sim_get_stats(d->sim, &s0);
    stats->tasks = 0;
    stats->macs = 0;
    int rc = 0;
    /* an injected fault hits the first task of the middle job, so jobs before it ran and jobs after it do not */
    const enum teflon_fault_kind fault = njobs ? teflon_sim_fault_tick(&d->fault) : TEFLON_FAULT_NONE;
    for (uint32_t ji = 0; ji < njobs && !rc; ji++) {
        const teflon_job *j = &jobs[ji];
        if (j->ntasks == 0) {
            teflon_errf(err, errlen, "job %u has no tasks", ji);
            return -EINVAL;
        }
        rc = etna_sdev_check_bos(d, j, ji, err, errlen);
        if (!rc && fault && ji == njobs / 2) {
            char what[256];
            rc = etna_sdev_inject(d, &j->tasks[0], ji, 0, fault, what, sizeof(what));
            teflon_errf(err, errlen, "job %u of %u, task 1 of %u: %s (simulated fault '%s')", ji + 1, njobs,
                        j->ntasks, what, teflon_fault_name(fault));
            break;
        }
        for (uint32_t ti = 0; ti < j->ntasks && !rc; ti++) {
            struct etna_sim_stats a, b;
            struct timespec t0, t1;
            etna_sim_get_stats(d->sim, &a);
            clock_gettime(CLOCK_MONOTONIC, &t0);
            rc = etna_sdev_run_task(d, &j->tasks[ti], ji, ti, err, errlen);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            etna_sim_get_stats(d->sim, &b);
            if (!rc && stats->per_task)
                stats->per_task[stats->tasks] = (teflon_task_counters){
                    .feature_rd = b.feature_rd - a.feature_rd, .weight_rd = b.weight_rd - a.weight_rd,
                    .bias_rd = b.other_rd - a.other_rd, .data_wr = b.data_wr - a.data_wr, .macs = b.macs - a.macs,
                    .macs_nz = b.macs_nz - a.macs_nz,
                    .ns = (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec))};
            stats->tasks += !rc;
        }
    }
    etna_sim_get_stats(d->sim, &s1);
    stats->macs = s1.macs - s0.macs;
    return rc;
}

static void etna_sdev_close(void *impl)
{
    struct etna_sdev *d = impl;
    etna_sim_destroy(d->sim); /* frees every BO's memory */
    etna_vas_fini(&d->vas);
    free(d->bos);
    free(d);
}

static const struct teflon_backend etna_sdev_ops = {
    .name = "etnaviv-sim",
    .is_sim = 1,
    .bo_create = etna_sdev_bo_create,
    .bo_destroy = etna_sdev_bo_destroy,
    .cpu_prep = etna_sdev_sync,
    .cpu_fini = etna_sdev_sync,
    .submit = etna_sdev_submit,
    .close = etna_sdev_close,
};

int etna_simulated_open(const teflon_target *t, void **impl, const struct teflon_backend **ops, char *err,
                        size_t errlen)
{
    struct etna_chip chip;
    struct teflon_sim_fault fault;
    int rc = etna_chip_of(t, &chip, err, errlen);
    struct teflon_sim_rules rules;
    if (!rc)
        rc = teflon_sim_fault_from_env(&fault, err, errlen);
    if (!rc)
        rc = teflon_sim_rules_from_env(&rules, err, errlen);
    if (rc)
        return rc;
    struct etna_sdev *d = calloc(1, sizeof(*d));
    if (!d) {
        teflon_errf(err, errlen, "out of memory creating the etnaviv simulator");
        return -ENOMEM;
    }
    char msg[256];
    d->sim = etna_sim_create(&chip, msg, sizeof(msg));
    if (!d->sim) {
        free(d);
        teflon_errf(err, errlen, "etnaviv simulator for %s: %s", t->name, msg);
        return -EINVAL;
    }
    etna_sim_set_rules(d->sim, &rules);
    etna_vas_init(&d->vas, ETNA_SOFTPIN_START, ETNA_VA_END);
    d->fault = fault;
    *impl = d;
    *ops = &etna_sdev_ops;
    return 0;
}
