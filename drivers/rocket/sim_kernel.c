/* Simulated accel/rocket kernel driver: buffer objects in host memory with IOVAs, and a submit
 * that kicks each task of each job on a simulated NPU core exactly as the real driver does
 * (rocket_job_hw_submit: one kick and one DPU completion per task, docs/hardware/rocket-sim.md;
 * RK3576: the 16-bit TASK_NUMBER kick word and polled completion, docs/hardware/rocket-rk3576-sim.md).
 *
 * IOVAs are handed out page-aligned from 0 upwards, lowest free range first, like the kernel's
 * drm_mm allocator over the per-file IOMMU domain; all NPU address registers are 32-bit, so the
 * address space ends at 4 GiB.
 *
 * Cores and time (docs/hardware/rocket-sim.md "Time"): the simulated cores belong to the device and are shared by
 * every open file of it (rkt_sim_open, then open_peer); each file is one scheduler entity, as in accel/rocket, so a
 * file's jobs stay on one core while one of them is unfinished. Execution is synchronous on the host; what is
 * modelled is the NPU's timeline: each core is busy until some simulated time, each BO carries the end of its last
 * writer (its fence), and the host's clock advances only when it waits for a BO.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../errmsg.h"
#include "../fault.h"
#include "rocket.h"
#include "sim_kernel.h"
#include "sim_npu.h"

#define PAGE 4096u
#define IOVA_END (1ull << 32)

struct sim_bo {
    uint32_t handle;
    uint64_t iova;
    uint64_t span;   /* page-rounded size */
    uint64_t size;
    uint8_t *mem;
    uint64_t fence;  /* simulated ns at which its last writer job finishes (the write fence in its reservation) */
};

/* The NPU itself, shared by every open file of the simulated device (teflon_dev_open_peer): its cores, the
 * simulated time each core is busy until, and the host's view of simulated time (advanced when the host
 * waits for a BO). */
struct sim_hw {
    unsigned refs;       /* open files */
    unsigned ncores;     /* the cores it was given (option cores; 1 .. the target row's) */
    rkt_npu *npu[RKT_MAX_CORES];
    uint64_t busy_until[RKT_MAX_CORES];
    uint64_t host_now;
    struct teflon_sim_fault fault; /* $TEFLON_SIM_FAULT, read at open; counts the submits of every file */
    struct teflon_sim_rules rules; /* $TEFLON_SIM_RULES, read at open (sim_rules.h) */
};

/* One open file: its BOs and address space, and its scheduler entity (accel/rocket: one per file, over all
 * cores). */
struct sim_dev {
    const struct rkt_gen *gen;
    struct sim_hw *hw;
    struct sim_bo *bos;  /* sorted by iova */
    size_t nbos, cap;
    uint32_t next_handle;
    unsigned entity_core;  /* the core the entity's jobs run on */
    uint64_t entity_done;  /* simulated ns at which its last job finishes */
};

int rkt_kick_sequence(const struct rkt_gen *gen, unsigned core, struct rkt_regcmd task,
                      struct rkt_mmio seq[RKT_KICK_WRITES])
{
    const uint32_t spointer = RKT_SPOINTER_PP | 0x10000000u * core;
    const struct rkt_mmio s[RKT_KICK_WRITES] = {
        {RKT_PC_BASE_ADDRESS, 0x1},
        {RKT_CNA_S_POINTER, spointer},
        {RKT_CORE_S_POINTER, spointer},
        {RKT_PC_BASE_ADDRESS, task.iova},
        {RKT_PC_REGISTER_AMOUNTS, (task.count + gen->amount_scale - 1) / gen->amount_scale - 1},
        {RKT_PC_INTERRUPT_MASK, RKT_IRQ_DONE_BITS},
        {RKT_PC_INTERRUPT_CLEAR, RKT_IRQ_DONE_BITS},
        {RKT_PC_TASK_CON, gen->task_con},
        {RKT_PC_TASK_DMA_BASE_ADDR, 0},
        {RKT_PC_OPERATION_ENABLE, 1},
    };
    memcpy(seq, s, sizeof(s));
    return RKT_KICK_WRITES;
}

/* Host pointer for [iova, iova + len) inside one BO. */
static uint8_t *lookup(void *ctx, uint64_t iova, uint64_t len)
{
    const struct sim_dev *d = ctx;
    size_t lo = 0, hi = d->nbos;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (d->bos[mid].iova + d->bos[mid].span <= iova)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == d->nbos)
        return NULL;
    const struct sim_bo *b = &d->bos[lo];
    if (iova < b->iova || len > b->size || iova - b->iova > b->size - len)
        return NULL;
    return b->mem + (iova - b->iova);
}

static struct sim_bo *find_handle(struct sim_dev *d, uint32_t handle)
{
    for (size_t i = 0; i < d->nbos; i++)
        if (d->bos[i].handle == handle)
            return &d->bos[i];
    return NULL;
}

static int sim_bo_create(void *impl, uint64_t size, teflon_bo *out, char *err, size_t errlen)
{
    struct sim_dev *d = impl;
    if (size == 0 || size > UINT32_MAX) {
        teflon_errf(err, errlen, "BO size %llu not supported (1 byte .. 4 GiB)", (unsigned long long)size);
        return -EINVAL;
    }
    const uint64_t span = (size + PAGE - 1) / PAGE * PAGE;
    /* lowest gap that fits */
    uint64_t at = 0;
    size_t pos = 0;
    for (; pos < d->nbos; pos++) {
        if (d->bos[pos].iova - at >= span)
            break;
        at = d->bos[pos].iova + d->bos[pos].span;
    }
    if (at + span > IOVA_END) {
        teflon_errf(err, errlen, "out of 32-bit NPU address space for a BO of %llu bytes", (unsigned long long)size);
        return -ENOSPC;
    }
    if (d->nbos == d->cap) {
        size_t ncap = d->cap ? 2 * d->cap : 64;
        struct sim_bo *n = realloc(d->bos, ncap * sizeof(*n));
        if (!n)
            goto oom;
        d->bos = n;
        d->cap = ncap;
    }
    /* Anonymous pages arrive zeroed, as the kernel's shmem BOs do, and cost nothing until touched: a program's
     * activation buffers are not faulted in at load (a cached program then loads in a few ms). */
    uint8_t *mem = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        goto oom;
    memmove(&d->bos[pos + 1], &d->bos[pos], (d->nbos - pos) * sizeof(*d->bos));
    d->bos[pos] = (struct sim_bo){.handle = ++d->next_handle, .iova = at, .span = span, .size = size, .mem = mem};
    d->nbos++;
    *out = (teflon_bo){.handle = d->bos[pos].handle, .iova = at, .size = size, .map = mem};
    return 0;
oom:
    teflon_errf(err, errlen, "out of host memory for a simulated BO of %llu bytes", (unsigned long long)size);
    return -ENOMEM;
}

static void sim_bo_destroy(void *impl, teflon_bo *bo)
{
    struct sim_dev *d = impl;
    struct sim_bo *b = find_handle(d, bo->handle);
    if (!b)
        return;
    munmap(b->mem, b->span);
    size_t i = (size_t)(b - d->bos);
    memmove(&d->bos[i], &d->bos[i + 1], (d->nbos - i - 1) * sizeof(*d->bos));
    d->nbos--;
    bo->map = NULL;
}

static int sim_bo_sync(void *impl, teflon_bo *bo, char *err, size_t errlen)
{
    /* execution is synchronous and memory coherent: only check the handle */
    if (!find_handle(impl, bo->handle)) {
        teflon_errf(err, errlen, "unknown BO handle %u", bo->handle);
        return -ENOENT;
    }
    return 0;
}

/* PREP_BO: the host waits for the BO's writers, in simulated time. */
static int sim_bo_prep(void *impl, teflon_bo *bo, char *err, size_t errlen)
{
    struct sim_dev *d = impl;
    const struct sim_bo *b = find_handle(d, bo->handle);
    if (!b)
        return sim_bo_sync(impl, bo, err, errlen);
    if (b->fence > d->hw->host_now)
        d->hw->host_now = b->fence;
    return 0;
}

static int check_bo_lists(struct sim_dev *d, const teflon_job *j, uint32_t ji, char *err, size_t errlen)
{
    const uint32_t n = j->nin + j->nout;
    for (uint32_t a = 0; a < n; a++) {
        const uint32_t h = a < j->nin ? j->in_bos[a] : j->out_bos[a - j->nin];
        if (!find_handle(d, h)) {
            teflon_errf(err, errlen, "job %u: unknown BO handle %u", ji, h);
            return -ENOENT;
        }
        for (uint32_t b = a + 1; b < n; b++)
            if (h == (b < j->nin ? j->in_bos[b] : j->out_bos[b - j->nin])) {
                /* the real driver is reported to wedge on this: reject it */
                teflon_errf(err, errlen, "job %u: BO handle %u listed twice (in/out lists must be disjoint)", ji, h);
                return -EINVAL;
            }
    }
    return 0;
}

/* Kick one task the way rocket_job_hw_submit does, then take the completion: the interrupt (RK3588) or
 * a poll of INTERRUPT_RAW_STATUS until a DPU (conv) or PPU (pool) bit shows, up to the job timeout (RK3576). The simulated
 * NPU runs the task synchronously inside the OPERATION_ENABLE write; `hang` leaves that write out (an injected
 * job that never completes), so the completion is looked for in vain: RKT_POLLS_PER_TIMEOUT polls of simulated
 * time, no real waiting. */
static int kick(struct sim_dev *d, rkt_npu *npu, unsigned core, struct rkt_regcmd task, int hang)
{
    struct rkt_mmio seq[RKT_KICK_WRITES];
    const int n = rkt_kick_sequence(d->gen, core, task, seq) - (hang ? 1 : 0);
    for (int i = 0; i < n; i++) {
        int rc = rkt_npu_mmio_write(npu, seq[i].off, seq[i].val);
        if (rc)
            return rc;
    }
    uint32_t raw = rkt_npu_mmio_read(npu, RKT_PC_INTERRUPT_RAW_STATUS);
    for (unsigned poll = 1; d->gen->polled && !(raw & RKT_IRQ_DONE_BITS) && poll < RKT_POLLS_PER_TIMEOUT; poll++)
        raw = rkt_npu_mmio_read(npu, RKT_PC_INTERRUPT_RAW_STATUS);
    rkt_npu_mmio_write(npu, RKT_PC_OPERATION_ENABLE, 0);
    rkt_npu_mmio_write(npu, RKT_PC_INTERRUPT_CLEAR, 0x1FFFF);
    return raw & RKT_IRQ_DONE_BITS ? 0 : -ETIMEDOUT;
}

/* The first device address past every BO: unmapped in the file's IOMMU domain. */
static uint64_t unmapped_iova(const struct sim_dev *d)
{
    return d->nbos ? d->bos[d->nbos - 1].iova + d->bos[d->nbos - 1].span : 0;
}

/* An injected fault on one task, as the kernel meets it (docs/faults.md): the task hangs, completes without its
 * interrupt, or fails on a bus error or an IOMMU page fault; in every case the job ends in error and the kernel
 * resets the core (rocket_reset), so the next job starts from a clean core. Returns the errno; `what` says why. */
static int inject(struct sim_dev *d, rkt_npu *npu, unsigned core, struct rkt_regcmd task, enum teflon_fault_kind k,
                  char *what, size_t len)
{
    /* whatever the simulated NPU makes of the task, the fault decides the outcome */
    switch (k) {
    case TEFLON_FAULT_TIMEOUT:
        (void)kick(d, npu, core, task, 1);
        teflon_errf(what, len, "NPU job timed out: no DPU completion within the kernel's %u ms job timeout; core "
                    "reset", RKT_JOB_TIMEOUT_MS);
        break;
    case TEFLON_FAULT_LOST_IRQ:
        /* the NPU finishes (its writes land) but the kernel never learns it */
        (void)kick(d, npu, core, task, 0);
        teflon_errf(what, len, "NPU job timed out: the task completed but its %s never came within the kernel's %u "
                    "ms job timeout; core reset", d->gen->polled ? "completion (polled)" : "DPU interrupt",
                    RKT_JOB_TIMEOUT_MS);
        break;
    case TEFLON_FAULT_DMA_READ:
        teflon_errf(what, len, "DMA read error (INTERRUPT_RAW_STATUS DMA_READ_ERROR); no DPU completion, core reset");
        break;
    case TEFLON_FAULT_DMA_WRITE:
        (void)kick(d, npu, core, task, 0);
        teflon_errf(what, len, "DMA write error (INTERRUPT_RAW_STATUS DMA_WRITE_ERROR); the output is not valid, "
                    "core reset");
        break;
    case TEFLON_FAULT_IOMMU:
        teflon_errf(what, len, "IOMMU page fault at 0x%08llx; core and IOMMU reset",
                    (unsigned long long)unmapped_iova(d));
        break;
    default:
        return 0;
    }
    rkt_npu_job_begin(npu);
    return teflon_fault_errno(k);
}

/* The modelled NPU time of one task (rkt_gen: a fixed cost, then MACs or DMA bytes, whichever takes longer). */
static uint64_t task_ns(const struct rkt_gen *gen, const struct rkt_npu_counters *c)
{
    const uint64_t bytes = c->feature_rd + c->weight_rd + c->bias_rd + c->data_wr;
    const uint64_t mac_ns = c->macs / gen->macs_per_ns, dma_ns = bytes / gen->bytes_per_ns;
    return gen->task_overhead_ns + (mac_ns > dma_ns ? mac_ns : dma_ns);
}

/* The simulated time at which every BO of the job's lists is free for it: in-BOs wait for their writers and
 * out-BOs for every fence they carry (drm_sched_job_add_implicit_dependencies; accel/rocket attaches only write
 * fences, to out-BOs), so both wait for the last writer. */
static uint64_t deps_ready(struct sim_dev *d, const teflon_job *j)
{
    uint64_t t = 0;
    for (uint32_t a = 0; a < j->nin + j->nout; a++) {
        const struct sim_bo *b = find_handle(d, a < j->nin ? j->in_bos[a] : j->out_bos[a - j->nin]);
        if (b && b->fence > t)
            t = b->fence;
    }
    return t;
}

/* The core of the file's next job, as the DRM scheduler picks it (drm_sched_entity_select_rq): the entity stays
 * on its core while it has a job queued or running, else it moves to the least loaded core (docs/hardware/rocket.md
 * "multi-core"); least loaded = free first here, the lowest index on a tie. */
static unsigned pick_core(struct sim_dev *d, uint64_t now)
{
    const struct sim_hw *hw = d->hw;
    if (d->entity_done > now)
        return d->entity_core;
    unsigned best = 0;
    for (unsigned c = 1; c < hw->ncores; c++) {
        const uint64_t bc = hw->busy_until[best] > now ? hw->busy_until[best] : now;
        const uint64_t cc = hw->busy_until[c] > now ? hw->busy_until[c] : now;
        if (cc < bc)
            best = c;
    }
    d->entity_core = best;
    return best;
}

/* Where task ti of kernel job j stands in the caller's program: the program job's number (the runner merges
 * several into one kernel job, teflon_job.task_job), the task's index in it and that job's task count. */
struct prog_pos {
    uint32_t job, task, ntasks;
};

static struct prog_pos prog_pos(const teflon_job *j, uint32_t jn, uint32_t ti)
{
    if (!j->task_job)
        return (struct prog_pos){jn, ti, j->ntasks};
    const uint32_t pj = j->task_job[ti];
    uint32_t first = ti, end = ti + 1;
    while (first > 0 && j->task_job[first - 1] == pj)
        first--;
    while (end < j->ntasks && j->task_job[end] == pj)
        end++;
    return (struct prog_pos){pj, ti - first, end - first};
}

/* The program jobs a submit carries (a merged kernel job carries several). */
static uint32_t prog_jobs(const teflon_job *jobs, uint32_t njobs)
{
    uint32_t n = 0;
    for (uint32_t ji = 0; ji < njobs; ji++)
        for (uint32_t ti = 0; ti < jobs[ji].ntasks; ti++)
            n += ti == 0 || (jobs[ji].task_job && jobs[ji].task_job[ti] != jobs[ji].task_job[ti - 1]);
    return n;
}

static int sim_submit(void *impl, const teflon_job *jobs, uint32_t njobs, teflon_submit_stats *stats, char *err,
                      size_t errlen)
{
    struct sim_dev *d = impl;
    struct sim_hw *hw = d->hw;
    uint64_t macs0 = 0;
    for (unsigned c = 0; c < hw->ncores; c++)
        macs0 += rkt_npu_macs(hw->npu[c]);
    stats->tasks = 0;
    stats->macs = 0;
    /* an injected fault hits the first task of the middle program job (as the caller's program numbers its jobs,
     * inside merged kernel jobs too), so jobs before it ran and jobs after it do not */
    const enum teflon_fault_kind fault = njobs ? teflon_sim_fault_tick(&hw->fault) : TEFLON_FAULT_NONE;
    const uint32_t nprog = fault ? prog_jobs(jobs, njobs) : 0;
    uint32_t unit = 0; /* program jobs started so far */
    const uint64_t now = hw->host_now; /* the submit reaches the kernel at the host's current time */
    for (uint32_t ji = 0; ji < njobs; ji++) {
        const teflon_job *j = &jobs[ji];
        const uint32_t jn = j->number ? j->number : ji + 1;
        if (j->ntasks == 0) {
            teflon_errf(err, errlen, "job %u has no tasks", jn);
            return -EINVAL;
        }
        int rc = check_bo_lists(d, j, jn - 1, err, errlen);
        if (rc)
            return rc;
        const unsigned core = pick_core(d, now);
        rkt_npu *npu = hw->npu[core];
        /* the file's IOMMU domain goes onto the core for the job (rocket_job_run: iommu_attach_group); the core's
         * state at a job's start is not the program's to rely on (docs/hardware/rocket-sim.md §1 "new job"), while
         * between the tasks of one job nothing but the kick sequence touches it */
        rkt_npu_attach(npu, lookup, d);
        rkt_npu_job_begin(npu);
        uint64_t t = deps_ready(d, j);
        if (t < now)
            t = now;
        if (t < hw->busy_until[core])
            t = hw->busy_until[core];
        for (uint32_t ti = 0; ti < j->ntasks; ti++) {
            struct rkt_regcmd task;
            rc = rkt_task_regcmd(&j->tasks[ti], jn - 1, ti, &task, err, errlen);
            if (rc)
                return rc;
            const struct prog_pos at = prog_pos(j, jn, ti);
            if (fault && at.task == 0 && unit++ == nprog / 2) {
                char what[256];
                rc = inject(d, npu, core, task, fault, what, sizeof(what));
                teflon_errf(err, errlen, "job %u of %u, task %u of %u: %s (simulated fault '%s')", at.job, nprog,
                            at.task + 1, at.ntasks, what, teflon_fault_name(fault));
                return rc;
            }
            rc = kick(d, npu, core, task, 0);
            if (rc) {
                const char *m = rkt_npu_error(npu);
                teflon_errf(err, errlen, "job %u task %u: %s", at.job - 1, at.task,
                        rc == -ETIMEDOUT && !*m ? d->gen->polled
                            ? "timeout: INTERRUPT_RAW_STATUS showed no DPU bit within the job timeout (polled)"
                            : "timeout: no DPU interrupt"
                        : m);
                return rc;
            }
            struct rkt_npu_counters c;
            rkt_npu_task_counters(npu, &c);
            const uint64_t ns = task_ns(d->gen, &c);
            if (stats->per_task)
                stats->per_task[stats->tasks] = (teflon_task_counters){
                    .feature_rd = c.feature_rd, .weight_rd = c.weight_rd, .bias_rd = c.bias_rd, .data_wr = c.data_wr,
                    .macs = c.macs, .ns = ns, .core = core, .start_ns = t};
            t += ns;
            stats->tasks++;
        }
        hw->busy_until[core] = t;
        d->entity_done = t;
        for (uint32_t a = 0; a < j->nout; a++)
            find_handle(d, j->out_bos[a])->fence = t;
    }
    uint64_t macs1 = 0;
    for (unsigned c = 0; c < hw->ncores; c++)
        macs1 += rkt_npu_macs(hw->npu[c]);
    stats->macs = macs1 - macs0;
    return 0;
}

static uint64_t sim_npu_idle(void *impl)
{
    struct sim_hw *hw = ((struct sim_dev *)impl)->hw;
    for (unsigned c = 0; c < hw->ncores; c++)
        if (hw->busy_until[c] > hw->host_now)
            hw->host_now = hw->busy_until[c];
    return hw->host_now;
}

static void hw_put(struct sim_hw *hw)
{
    if (!hw || --hw->refs)
        return;
    for (unsigned c = 0; c < RKT_MAX_CORES; c++)
        rkt_npu_destroy(hw->npu[c]);
    free(hw);
}

static void sim_close(void *impl)
{
    struct sim_dev *d = impl;
    for (size_t i = 0; i < d->nbos; i++)
        munmap(d->bos[i].mem, d->bos[i].span);
    free(d->bos);
    hw_put(d->hw);
    free(d);
}

/* Cores 1 .. cores-1 join core 0 (before any job ran). */
static int sim_set_cores(void *impl, unsigned cores, char *err, size_t errlen)
{
    struct sim_dev *d = impl;
    struct sim_hw *hw = d->hw;
    if (cores < 1 || cores > RKT_MAX_CORES) {
        teflon_errf(err, errlen, "the simulator has 1..%u cores, not %u", RKT_MAX_CORES, cores);
        return -EINVAL;
    }
    for (unsigned c = hw->ncores; c < cores; c++) {
        if (!(hw->npu[c] = rkt_npu_create(d->gen, &hw->rules, lookup, d))) {
            teflon_errf(err, errlen, "out of memory creating simulated core %u", c);
            return -ENOMEM;
        }
        hw->ncores = c + 1;
    }
    return 0;
}

static int sim_open_peer(void *impl, void **peer, char *err, size_t errlen)
{
    struct sim_dev *d = impl;
    struct sim_dev *p = calloc(1, sizeof(*p));
    if (!p) {
        teflon_errf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    p->gen = d->gen;
    p->hw = d->hw;
    d->hw->refs++;
    *peer = p;
    return 0;
}

static const struct teflon_backend sim_ops = {
    .name = "rocket-sim",
    .is_sim = 1,
    .bo_create = sim_bo_create,
    .bo_destroy = sim_bo_destroy,
    .cpu_prep = sim_bo_prep,
    .cpu_fini = sim_bo_sync,
    .submit = sim_submit,
    .close = sim_close,
    .set_cores = sim_set_cores,
    .open_peer = sim_open_peer,
    .npu_idle = sim_npu_idle,
};

int rkt_sim_open(const teflon_target *t, void **impl, const struct teflon_backend **ops, char *err, size_t errlen)
{
    const struct rkt_gen *gen = rkt_gen_of(t);
    if (!gen || t->cores < 1 || t->cores > RKT_MAX_CORES) {
        teflon_errf(err, errlen, "no rocket simulator for %s (generation %s, %u cores)", t->name, t->generation, t->cores);
        return -ENOTSUP;
    }
    struct teflon_sim_fault fault;
    int rc = teflon_sim_fault_from_env(&fault, err, errlen);
    if (rc)
        return rc;
    struct teflon_sim_rules rules;
    if ((rc = teflon_sim_rules_from_env(&rules, err, errlen)))
        return rc;
    struct sim_dev *d = calloc(1, sizeof(*d));
    struct sim_hw *hw = calloc(1, sizeof(*hw));
    int ok = d && hw;
    if (ok) {
        d->gen = gen;
        d->hw = hw;
        hw->refs = 1;
        hw->fault = fault;
        hw->rules = rules;
        /* one core until set_cores gives it more (option cores) */
        ok = (hw->npu[0] = rkt_npu_create(gen, &hw->rules, lookup, d)) != NULL;
        hw->ncores = ok;
    }
    if (!ok) {
        if (d && d->hw)
            sim_close(d);
        else {
            free(d);
            free(hw);
        }
        teflon_errf(err, errlen, "out of memory creating the rocket simulator");
        return -ENOMEM;
    }
    *impl = d;
    *ops = &sim_ops;
    return 0;
}
