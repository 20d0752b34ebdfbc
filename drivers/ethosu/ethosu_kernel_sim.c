/* The simulated accel/ethosu kernel (ethosu_ksim.h): buffer objects in host memory with fake DMA addresses, the
 * command-stream validator at CMDSTREAM_BO_CREATE (ethosu_validate.c), the job checks of SUBMIT, and a synchronous
 * run of each job on the simulated NPU (ethosu_npu.h) with the region BOs' memory at BASEP(n) and, for region 2
 * with sram_size set, the device's SRAM. Every rule and errno follows Linux drivers/accel/ethosu (ethosu_drv.c,
 * ethosu_gem.c, ethosu_job.c), restated in docs/hardware/ethosu-kernel.md.
 *
 * Not modelled: the scheduler's asynchrony (a job has finished when SUBMIT returns, so BO_WAIT never waits) and
 * the perfmon ioctls. Faults ($TEFLON_SIM_FAULT, docs/faults.md) hit the Nth job; the BOs it writes then fail their
 * next BO_WAIT with the fault's errno (a simulator choice: the real BO_WAIT only waits on the fence, so a failed job
 * shows there as a timeout at most).
 *
 * Also the simulator backend (ethosu_sim_open): the real client (ethosu_kernel.c) over this kernel.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../errmsg.h"
#include "../fault.h"
#include "../sim_rules.h"
#include "../targets.h"
#include "ethosu.h"
#include "ethosu_client.h"
#include "ethosu_fast.h"
#include "ethosu_ksim.h"
#include "ethosu_uapi.h"
#include "ethosu_validate.h"

#define ETHOSU_KSIM_PAGE 4096u
/* DMA addresses handed out from here (40-bit DMA mask, ethosu_drv.c; any nonzero start serves) */
#define ETHOSU_KSIM_DMA_START 0x80000000ull
/* JOB_TIMEOUT_MS of ethosu_job.c */
#define ETHOSU_JOB_TIMEOUT_MS 500u

struct ethosu_kbo {
    uint32_t handle;
    uint32_t flags;
    uint64_t size; /* page-aligned */
    uint64_t dma;
    uint8_t *mem;
    struct ethosu_cmd_info *info; /* a command-stream BO: what the validator found (NULL for a plain BO) */
    int wait_rc;                  /* the errno the next BO_WAIT reports (a failed job wrote it) */
};

struct ethosu_ksim {
    struct ethosu_drm_npu_info npu;
    uint8_t *sram;                /* npu.sram_size bytes */
    struct ethosu_kbo *bos;
    size_t nbos, cap;
    uint32_t next_handle;
    uint64_t next_dma;
    struct teflon_sim_fault fault;
    struct teflon_sim_rules rules; /* $TEFLON_SIM_RULES, read at open (../sim_rules.h) */
    /* the convolutions' fast datapath (ethosu_fast.c), or NULL for the reference loop: TEFLON_SIM_REFERENCE=1 at
     * open; TEFLON_SIM_KERNELS forces its kernel set */
    struct ethosu_fast *fast;
    /* the last job run */
    int last_rc;
    struct ethosu_npu_stats last_stats;
    char last_msg[512];
};

static int ethosu_kparam(const teflon_target *t, const char *name, uint32_t *v, char *err, size_t errlen)
{
    if (teflon_target_param_get(t, name, v)) {
        teflon_errf(err, errlen, "target %s has no \"%s\" parameter (python/teflon/targets.py params)", t->name, name);
        return -EINVAL;
    }
    return 0;
}

ethosu_ksim *ethosu_ksim_create(const teflon_target *t, char *err, size_t errlen)
{
    struct ethosu_drm_npu_info npu;
    struct teflon_sim_fault fault;
    if (ethosu_kparam(t, "id", &npu.id, err, errlen) || ethosu_kparam(t, "config", &npu.config, err, errlen) ||
        ethosu_kparam(t, "sram_size", &npu.sram_size, err, errlen) ||
        teflon_sim_fault_from_env(&fault, err, errlen))
        return NULL;
    struct teflon_sim_rules rules;
    if (teflon_sim_rules_from_env(&rules, err, errlen))
        return NULL;
    ethosu_ksim *k = calloc(1, sizeof(*k));
    uint8_t *sram = npu.sram_size ? calloc(1, npu.sram_size) : NULL;
    const char *ref = getenv("TEFLON_SIM_REFERENCE");
    struct ethosu_fast *fast = ref && strcmp(ref, "1") == 0 ? NULL : ethosu_fast_create(getenv("TEFLON_SIM_KERNELS"));
    if (!k || (npu.sram_size && !sram) || (!fast && !(ref && strcmp(ref, "1") == 0))) {
        free(k);
        free(sram);
        ethosu_fast_destroy(fast);
        teflon_errf(err, errlen, "out of memory creating the simulated ethosu kernel");
        return NULL;
    }
    *k = (ethosu_ksim){.npu = npu, .sram = sram, .next_dma = ETHOSU_KSIM_DMA_START, .fault = fault, .rules = rules,
                        .fast = fast};
    return k;
}

void ethosu_ksim_destroy(ethosu_ksim *k)
{
    if (!k)
        return;
    for (size_t i = 0; i < k->nbos; i++) {
        free(k->bos[i].mem);
        free(k->bos[i].info);
    }
    free(k->bos);
    free(k->sram);
    ethosu_fast_destroy(k->fast);
    free(k);
}

static struct ethosu_kbo *ethosu_kbo_of(ethosu_ksim *k, uint32_t handle)
{
    for (size_t i = 0; handle && i < k->nbos; i++)
        if (k->bos[i].handle == handle)
            return &k->bos[i];
    return NULL;
}

/* A new BO of `size` bytes (page-aligned, zeroed); NULL on -ENOMEM. */
static struct ethosu_kbo *ethosu_kbo_new(ethosu_ksim *k, uint64_t size, uint32_t flags)
{
    const uint64_t span = (size + ETHOSU_KSIM_PAGE - 1) / ETHOSU_KSIM_PAGE * ETHOSU_KSIM_PAGE;
    if (k->nbos == k->cap) {
        const size_t cap = k->cap ? 2 * k->cap : 32;
        struct ethosu_kbo *n = realloc(k->bos, cap * sizeof(*n));
        if (!n)
            return NULL;
        k->bos = n;
        k->cap = cap;
    }
    uint8_t *mem = span <= SIZE_MAX ? aligned_alloc(ETHOSU_KSIM_PAGE, (size_t)span) : NULL;
    if (!mem)
        return NULL;
    memset(mem, 0, (size_t)span);
    struct ethosu_kbo *b = &k->bos[k->nbos++];
    *b = (struct ethosu_kbo){.handle = ++k->next_handle, .flags = flags, .size = span, .dma = k->next_dma, .mem = mem};
    k->next_dma += span;
    return b;
}

void *ethosu_ksim_bo_map(ethosu_ksim *k, uint32_t handle, uint64_t *size)
{
    struct ethosu_kbo *b = ethosu_kbo_of(k, handle);
    if (size)
        *size = b ? b->size : 0;
    return b ? b->mem : NULL;
}

/* The fake mmap offset of a BO: its handle in the page number, as drm_vma_node gives each object its own range. */
static uint64_t ethosu_kbo_offset(const struct ethosu_kbo *b)
{
    return (uint64_t)b->handle << 32;
}

void *ethosu_ksim_map_offset(ethosu_ksim *k, uint64_t offset, uint64_t *size)
{
    struct ethosu_kbo *b = offset & 0xffffffffu ? NULL : ethosu_kbo_of(k, (uint32_t)(offset >> 32));
    if (!b || b->flags & ETHOSU_BO_NO_MMAP)
        return NULL; /* ethosu_gem_mmap: -EINVAL for a NO_MMAP object */
    *size = b->size;
    return b->mem;
}

/* ---- the ioctls --------------------------------------------------------------------------------------------- */

static int ethosu_k_dev_query(ethosu_ksim *k, struct ethosu_drm_dev_query *q)
{
    if (q->type != ETHOSU_DEV_QUERY_NPU_INFO)
        return -EINVAL;
    if (!q->pointer) {
        q->size = sizeof(k->npu);
        return 0;
    }
    if (q->size < sizeof(k->npu)) /* must reach sram_size */
        return -EINVAL;
    /* copy_struct_to_user: our bytes, zeros past them */
    memset((void *)(uintptr_t)q->pointer, 0, q->size);
    memcpy((void *)(uintptr_t)q->pointer, &k->npu, sizeof(k->npu));
    return 0;
}

static int ethosu_k_bo_create(ethosu_ksim *k, struct ethosu_drm_bo_create *c)
{
    if (!c->size || c->flags & ~ETHOSU_BO_NO_MMAP)
        return -EINVAL;
    struct ethosu_kbo *b = ethosu_kbo_new(k, c->size, c->flags);
    if (!b)
        return -ENOMEM;
    c->size = b->size;
    c->handle = b->handle;
    return 0;
}

static int ethosu_k_bo_wait(ethosu_ksim *k, const struct ethosu_drm_bo_wait *w)
{
    if (w->pad)
        return -EINVAL;
    struct ethosu_kbo *b = ethosu_kbo_of(k, w->handle);
    if (!b)
        return -EINVAL; /* drm_gem_dma_resv_wait: an unknown handle is -EINVAL */
    const int rc = b->wait_rc;
    b->wait_rc = 0; /* reported once: the kernel reset the NPU, later jobs run normally */
    return rc;
}

static int ethosu_k_mmap_offset(ethosu_ksim *k, struct ethosu_drm_bo_mmap_offset *m)
{
    if (m->pad)
        return -EINVAL;
    const struct ethosu_kbo *b = ethosu_kbo_of(k, m->handle);
    if (!b)
        return -ENOENT;
    m->offset = ethosu_kbo_offset(b);
    return 0;
}

static int ethosu_k_cmdstream(ethosu_ksim *k, struct ethosu_drm_cmdstream_bo_create *c)
{
    if (!c->size || !c->data || c->pad || c->flags)
        return -EINVAL;
    struct ethosu_cmd_info *info = calloc(1, sizeof(*info));
    if (!info)
        return -ENOMEM;
    /* the kernel copies the words from user memory as it validates them */
    const uint32_t *words = (const uint32_t *)(uintptr_t)c->data;
    char msg[256];
    int rc = ethosu_validate(words, c->size / 4, info, msg, sizeof(msg));
    if (rc) {
        snprintf(k->last_msg, sizeof(k->last_msg), "command stream refused: %s", msg);
        free(info);
        return rc;
    }
    struct ethosu_kbo *b = ethosu_kbo_new(k, c->size, ETHOSU_BO_NO_MMAP);
    if (!b) {
        free(info);
        return -ENOMEM;
    }
    memcpy(b->mem, words, c->size / 4 * 4);
    b->info = info;
    c->handle = b->handle;
    return 0;
}

/* The job checks of ethosu_ioctl_submit_job, in its order; -errno with the kernel's complaint in msg. */
static int ethosu_k_check_job(ethosu_ksim *k, const struct ethosu_drm_job *j, struct ethosu_kbo **cmd,
                              struct ethosu_kbo *regions[ETHOSU_MAX_REGIONS], char *msg, size_t len)
{
    if (j->region_bo_handles[ETHOSU_SRAM_REGION] && j->sram_size)
        return teflon_errf(msg, len, "region 2 has a BO although sram_size reserves it for SRAM"), -EINVAL;
    if (j->sram_size > k->npu.sram_size)
        return teflon_errf(msg, len, "sram_size %u exceeds the NPU's %u bytes of SRAM", j->sram_size,
                           k->npu.sram_size), -EINVAL;
    *cmd = ethosu_kbo_of(k, j->cmd_bo);
    if (!*cmd)
        return teflon_errf(msg, len, "unknown command-stream BO handle %u", j->cmd_bo), -ENOENT;
    const struct ethosu_cmd_info *info = (*cmd)->info;
    if (!info)
        return teflon_errf(msg, len, "BO %u is not a command-stream BO", j->cmd_bo), -EINVAL;
    for (int r = 0; r < ETHOSU_MAX_REGIONS; r++) {
        const uint32_t h = j->region_bo_handles[r];
        regions[r] = NULL;
        if (!h && !info->region_size[r])
            continue;
        if (!h && r == ETHOSU_SRAM_REGION) {
            if (info->region_size[r] <= k->npu.sram_size)
                continue;
            return teflon_errf(msg, len, "cmd stream region 2 size greater than SRAM size (%llu > %u)",
                               (unsigned long long)info->region_size[r], k->npu.sram_size), -EINVAL;
        }
        if (h && !info->region_size[r])
            return teflon_errf(msg, len, "BO handle %u set for unused region %d", h, r), -EINVAL;
        regions[r] = ethosu_kbo_of(k, h);
        if (!regions[r])
            return teflon_errf(msg, len, "invalid BO handle %u for region %d", h, r), -ENOENT;
        if (regions[r]->info)
            return teflon_errf(msg, len, "command-stream BO %u used for region %d", h, r), -EINVAL;
        if (info->region_size[r] > regions[r]->size)
            return teflon_errf(msg, len, "cmd stream region %d size greater than BO size (%llu > %llu)", r,
                               (unsigned long long)info->region_size[r], (unsigned long long)regions[r]->size),
                   -EOVERFLOW;
    }
    return 0;
}

/* An injected fault on a job (docs/faults.md): what the kernel would log; 1 when the stream still runs (the NPU
 * finished but the interrupt was lost, or its writes failed). */
static int ethosu_k_fault_words(enum teflon_fault_kind f, uint64_t dma_end, char *msg, size_t len)
{
    switch (f) {
    case TEFLON_FAULT_TIMEOUT:
        teflon_errf(msg, len, "NPU job timed out: no completion and no command-stream progress within the kernel's "
                    "%u ms job timeout; NPU reset", ETHOSU_JOB_TIMEOUT_MS);
        return 0;
    case TEFLON_FAULT_LOST_IRQ:
        teflon_errf(msg, len, "NPU job timed out: the stream completed but its interrupt never came within the "
                    "kernel's %u ms job timeout; NPU reset", ETHOSU_JOB_TIMEOUT_MS);
        return 1;
    case TEFLON_FAULT_DMA_READ:
        teflon_errf(msg, len, "DMA read error (error IRQ, STATUS.BUS_STATUS); the job did not complete, NPU reset");
        return 0;
    case TEFLON_FAULT_DMA_WRITE:
        teflon_errf(msg, len, "DMA write error (error IRQ, STATUS.BUS_STATUS); the output is not valid, NPU reset");
        return 1;
    case TEFLON_FAULT_IOMMU:
        /* the NPU has no MMU: an access past every BO is a bus error at an address nothing backs */
        teflon_errf(msg, len, "IOMMU page fault at 0x%08llx (no IOMMU here: a bus error outside every BO); NPU reset",
                    (unsigned long long)(dma_end & 0xffffffffu));
        return 0;
    default:
        return 1;
    }
}

/* Runs one checked job on the NPU: BASEP(r) = the region's BO, or the SRAM for region 2 with sram_size set. */
static int ethosu_k_run(ethosu_ksim *k, const struct ethosu_kbo *cmd,
                        struct ethosu_kbo *const regions[ETHOSU_MAX_REGIONS])
{
    struct ethosu_npu_region view[ETHOSU_NPU_REGIONS] = {{0}};
    for (int r = 0; r < ETHOSU_MAX_REGIONS; r++)
        if (regions[r])
            view[r] = (struct ethosu_npu_region){regions[r]->mem, regions[r]->size};
    /* the kernel writes BASEP(2) = SRAM only when the job sets sram_size; a job using region 2 without it finds
     * whatever BASEP(2) held, which after any SRAM job is the SRAM: the simulator gives it the SRAM too [INFERRED] */
    if (!regions[ETHOSU_SRAM_REGION] && cmd->info->region_size[ETHOSU_SRAM_REGION])
        view[ETHOSU_SRAM_REGION] = (struct ethosu_npu_region){k->sram, k->npu.sram_size};
    char npu_err[384];
    const struct ethosu_npu_opts opts = {NULL, NULL, &k->rules, k->fast ? ethosu_fast_conv : NULL, k->fast};
    const int rc = ethosu_npu_run_opts(view, (const uint32_t *)cmd->mem, cmd->info->cmd_bytes / 4, &k->last_stats,
                                       npu_err, sizeof(npu_err), &opts);
    if (rc)
        teflon_errf(k->last_msg, sizeof(k->last_msg),
                    "NPU error IRQ (STATUS.CMD_PARSE_ERR or bus error): %s; NPU reset", npu_err);
    return rc ? -EIO : 0;
}

static int ethosu_k_submit_job(ethosu_ksim *k, const struct ethosu_drm_job *j)
{
    struct ethosu_kbo *cmd, *regions[ETHOSU_MAX_REGIONS];
    k->last_msg[0] = '\0';
    memset(&k->last_stats, 0, sizeof(k->last_stats));
    int rc = ethosu_k_check_job(k, j, &cmd, regions, k->last_msg, sizeof(k->last_msg));
    if (rc) {
        k->last_rc = rc;
        return rc; /* refused: the ioctl fails */
    }
    const enum teflon_fault_kind fault = teflon_sim_fault_tick(&k->fault);
    const int runs = ethosu_k_fault_words(fault, k->next_dma, k->last_msg, sizeof(k->last_msg));
    rc = runs ? ethosu_k_run(k, cmd, regions) : 0;
    if (fault)
        rc = teflon_fault_errno(fault);
    k->last_rc = rc;
    for (int r = 0; r < ETHOSU_MAX_REGIONS; r++)
        if (regions[r] && cmd->info->output_region[r])
            regions[r]->wait_rc = rc;
    return 0; /* queued: a failing job fails its waiters, not SUBMIT */
}

static int ethosu_k_submit(ethosu_ksim *k, const struct ethosu_drm_submit *s)
{
    if (s->pad)
        return -EINVAL;
    if (s->job_count && !s->jobs)
        return -EFAULT;
    const struct ethosu_drm_job *jobs = (const struct ethosu_drm_job *)(uintptr_t)s->jobs;
    for (uint32_t i = 0; i < s->job_count; i++) {
        const int rc = ethosu_k_submit_job(k, &jobs[i]);
        if (rc)
            return rc;
    }
    return 0;
}

static int ethosu_k_gem_close(ethosu_ksim *k, const struct teflon_drm_gem_close *c)
{
    struct ethosu_kbo *b = ethosu_kbo_of(k, c->handle);
    if (!b)
        return -EINVAL;
    free(b->mem);
    free(b->info);
    *b = k->bos[--k->nbos];
    return 0;
}

int ethosu_ksim_ioctl(ethosu_ksim *k, unsigned long req, void *arg)
{
    switch (req) {
    case ETHOSU_IOCTL_DEV_QUERY:
        return ethosu_k_dev_query(k, arg);
    case ETHOSU_IOCTL_BO_CREATE:
        return ethosu_k_bo_create(k, arg);
    case ETHOSU_IOCTL_BO_WAIT:
        return ethosu_k_bo_wait(k, arg);
    case ETHOSU_IOCTL_BO_MMAP_OFFSET:
        return ethosu_k_mmap_offset(k, arg);
    case ETHOSU_IOCTL_CMDSTREAM_BO_CREATE:
        return ethosu_k_cmdstream(k, arg);
    case ETHOSU_IOCTL_SUBMIT:
        return ethosu_k_submit(k, arg);
    case TEFLON_DRM_IOCTL_GEM_CLOSE:
        return ethosu_k_gem_close(k, arg);
    default:
        return -ENOTTY;
    }
}

int ethosu_ksim_last_job(const ethosu_ksim *k, struct ethosu_npu_stats *stats, char *msg, size_t msglen)
{
    if (stats)
        *stats = k->last_stats;
    teflon_errf(msg, msglen, "%s", k->last_msg);
    return k->last_rc;
}

/* ---- the simulator backend: the real client over this kernel ---------------------------------------------- */

static int ethosu_ksim_tp_ioctl(void *t, unsigned long req, void *arg)
{
    return ethosu_ksim_ioctl(t, req, arg);
}

static void *ethosu_ksim_tp_map(void *t, uint64_t offset, uint64_t size, int *err)
{
    uint64_t have = 0;
    void *p = ethosu_ksim_map_offset(t, offset, &have);
    *err = !p || size > have ? -EINVAL : 0;
    return *err ? NULL : p;
}

static void ethosu_ksim_tp_unmap(void *t, void *p, uint64_t size)
{
    (void)t;
    (void)p;
    (void)size; /* the kernel's memory: freed at GEM_CLOSE */
}

static void ethosu_ksim_tp_close(void *t)
{
    ethosu_ksim_destroy(t);
}

static int ethosu_ksim_tp_last_job(void *t, struct ethosu_npu_stats *stats, char *msg, size_t msglen)
{
    return ethosu_ksim_last_job(t, stats, msg, msglen);
}

static const struct ethosu_transport ethosu_ksim_transport = {
    .name = "ethosu-sim",
    .is_sim = 1,
    .ioctl = ethosu_ksim_tp_ioctl,
    .map = ethosu_ksim_tp_map,
    .unmap = ethosu_ksim_tp_unmap,
    .close = ethosu_ksim_tp_close,
    .last_job = ethosu_ksim_tp_last_job,
};

int ethosu_sim_open(const teflon_target *t, void **impl, const struct teflon_backend **ops, char *err, size_t errlen)
{
    ethosu_ksim *k = ethosu_ksim_create(t, err, errlen);
    if (!k)
        return -EINVAL;
    const int rc = ethosu_client_open(t, &ethosu_ksim_transport, k, impl, ops, err, errlen);
    if (rc)
        ethosu_ksim_destroy(k);
    return rc;
}
