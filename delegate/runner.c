/* Program runner (see runner.h). */
#include "runner.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "program.h"
#include "errmsg.h"

/* The runner's copy of the program on one open file of the device. With the option cores = N > 1, a program
 * whose jobs do not all depend on each other runs on N files (lanes): accel/rocket gives each open file one
 * scheduler entity, which keeps all of that file's jobs on one core at a time, so jobs can only run on
 * different cores at once when they come from different files (docs/hardware/rocket.md "multi-core"). Each lane
 * holds a whole copy of the program's buffers (its own IOVAs and relocations); a buffer a job needs that was last
 * written in another lane is copied over by the CPU after that lane's jobs finished.
 *
 * Kernel jobs: the program's jobs are the units of dependency (one per operation, or per task); a job marked
 * TP_JOB_JOIN may share the kernel job of the job submitted right before it on the same file, so each submit
 * hands the kernel one job per run of joined jobs (merge(): the tasks in order, the union of the buffer lists).
 * The jobs of one file run in order on one core either way (docs/hardware/rocket.md "Kernel jobs"). */
struct lane {
    teflon_dev *dev;         /* lane 0: the caller's device; others: files the runner opened (and closes) */
    teflon_bo *bos;          /* one per program buffer */
    teflon_task *tasks;
    teflon_job *jobs;
    uint32_t *handles;       /* bolist as BO handles */
    uint8_t *valid;          /* per buffer: this copy holds the latest bytes */
    uint32_t *queued;        /* program job indices waiting for the next submit of this lane */
    uint32_t nqueued;
    int32_t wait_buf;        /* an out buffer of the last submitted job, -1 when nothing is in flight */
    /* the kernel jobs of one submit (merge()) */
    teflon_job *kjobs;
    teflon_task *ktasks;
    uint32_t *ktask_job;     /* per task of ktasks: its program job's number */
    uint32_t *khandles;      /* the kernel jobs' buffer lists */
    uint32_t *all;           /* 0 .. njobs-1: every job in program order (the one-lane submit) */
};

#define MAX_LANES 8

struct teflon_runner {
    teflon_program *prog;
    uint32_t nlanes;
    struct lane lanes[MAX_LANES];
    uint8_t *out_bufs;       /* 1 for buffers bound to an output */
    uint32_t *order;         /* jobs in (level, index) order: a job after every job it depends on */
    uint8_t *job_lane;
    uint32_t *level;         /* per job: its level (schedule) */
    uint32_t *group;         /* per job: its run of TP_JOB_JOIN jobs (a job joins the one before it in its run) */
    uint32_t nkjobs;         /* one lane: the kernel jobs of lane 0's kjobs */
    teflon_submit_stats last;
    teflon_task_counters *counters; /* one per program task, of the last run */
    teflon_task_counters *scratch;  /* one submit's counters, in its order */
    uint64_t npu_ns;                /* simulated NPU time of the last run */
};

static void lane_free(struct lane *l, const teflon_program *p, int own_dev)
{
    if (l->bos)
        for (uint32_t i = 0; i < p->nbuffers; i++)
            teflon_bo_destroy(l->dev, &l->bos[i]);
    free(l->bos);
    free(l->tasks);
    free(l->jobs);
    free(l->handles);
    free(l->valid);
    free(l->queued);
    free(l->kjobs);
    free(l->ktasks);
    free(l->ktask_job);
    free(l->khandles);
    free(l->all);
    if (own_dev)
        teflon_dev_close(l->dev);
}

void teflon_runner_free(teflon_runner *r)
{
    if (!r)
        return;
    for (uint32_t i = 0; i < r->nlanes && r->prog; i++)
        lane_free(&r->lanes[i], r->prog, i > 0);
    free(r->out_bufs);
    free(r->order);
    free(r->job_lane);
    free(r->level);
    free(r->group);
    free(r->counters);
    free(r->scratch);
    teflon_program_free(r->prog);
    free(r);
}

/* Little-endian load/store of the u32 or u64 word a relocation patches. */
static uint64_t load_word(const uint8_t *at, unsigned bytes)
{
    uint64_t w = 0;
    for (unsigned i = 0; i < bytes; i++)
        w |= (uint64_t)at[i] << (8 * i);
    return w;
}

static void store_word(uint8_t *at, unsigned bytes, uint64_t w)
{
    for (unsigned i = 0; i < bytes; i++)
        at[i] = (uint8_t)(w >> (8 * i));
}

/* Relocation i: the field gets (device address of the target) >> shift added. The field already holds the
 * offset inside the target, in the same units; the address must be aligned to those units and the sum must
 * fit the field. */
static int apply_reloc(const teflon_program *p, struct lane *l, uint32_t i, char *err, size_t errlen)
{
    const tp_reloc *rl = &p->relocs[i];
    const unsigned bytes = tp_reloc_word_bytes(rl);
    uint8_t *at = (uint8_t *)l->bos[rl->buffer].map + rl->offset;
    const uint64_t iova = l->bos[rl->target].iova, mask = (1ull << rl->width) - 1;
    const char *target = p->buffers[rl->target].name;
    if (iova & ((1ull << rl->shift) - 1)) {
        teflon_errf(err, errlen, "relocation %u: %s at 0x%llx is not aligned to the field's %llu-byte units", i, target,
                    (unsigned long long)iova, 1ull << rl->shift);
        return -ERANGE;
    }
    const uint64_t w = load_word(at, bytes), field = (w >> rl->pos) & mask, v = field + (iova >> rl->shift);
    if (v > mask) {
        teflon_errf(err, errlen, "relocation %u: %s (0x%llx) + 0x%llx does not fit the %u-bit field", i, target,
                    (unsigned long long)iova, (unsigned long long)field, rl->width);
        return -ERANGE;
    }
    store_word(at, bytes, (w & ~(mask << rl->pos)) | v << rl->pos);
    return 0;
}

static int apply_relocs(const teflon_program *p, struct lane *l, char *err, size_t errlen)
{
    for (uint32_t i = 0; i < p->nrelocs; i++)
        if (apply_reloc(p, l, i, err, errlen))
            return -ERANGE;
    return 0;
}

/* The program's buffers, relocations, tasks and jobs on lane `l`'s device. */
static int lane_load(const teflon_program *p, struct lane *l, char *err, size_t errlen)
{
    teflon_dev *dev = l->dev;
    l->bos = calloc(p->nbuffers ? p->nbuffers : 1, sizeof(*l->bos));
    l->tasks = calloc(p->ntasks ? p->ntasks : 1, sizeof(*l->tasks));
    l->jobs = calloc(p->njobs ? p->njobs : 1, sizeof(*l->jobs));
    l->handles = calloc(p->nbolist ? p->nbolist : 1, sizeof(*l->handles));
    l->valid = malloc(p->nbuffers ? p->nbuffers : 1);
    l->queued = calloc(p->njobs ? p->njobs : 1, sizeof(*l->queued));
    l->kjobs = calloc(p->njobs ? p->njobs : 1, sizeof(*l->kjobs));
    l->ktasks = calloc(p->ntasks ? p->ntasks : 1, sizeof(*l->ktasks));
    l->ktask_job = calloc(p->ntasks ? p->ntasks : 1, sizeof(*l->ktask_job));
    l->khandles = calloc(p->nbolist ? p->nbolist : 1, sizeof(*l->khandles));
    l->all = calloc(p->njobs ? p->njobs : 1, sizeof(*l->all));
    l->wait_buf = -1;
    if (!l->bos || !l->tasks || !l->jobs || !l->handles || !l->valid || !l->queued || !l->kjobs || !l->ktasks ||
        !l->ktask_job || !l->khandles || !l->all) {
        teflon_errf(err, errlen, "out of memory");
        return -1;
    }
    memset(l->valid, 1, p->nbuffers ? p->nbuffers : 1); /* every lane starts from the program's initial bytes */
    for (uint32_t i = 0; i < p->nbuffers; i++) {
        const tp_buffer *b = &p->buffers[i];
        if (teflon_bo_create(dev, b->size, &l->bos[i])) {
            teflon_errf(err, errlen, "buffer %s: %s", b->name, teflon_dev_error(dev));
            return -1;
        }
        if (b->data)
            memcpy(l->bos[i].map, b->data, b->data_size);
    }
    if (apply_relocs(p, l, err, errlen))
        return -1;
    for (uint32_t i = 0; i < p->nbuffers; i++)
        if (teflon_bo_cpu_fini(dev, &l->bos[i])) {
            teflon_errf(err, errlen, "buffer %s: %s", p->buffers[i].name, teflon_dev_error(dev));
            return -1;
        }
    for (uint32_t i = 0; i < p->ntasks; i++) {
        const tp_task *t = &p->tasks[i];
        const teflon_bo *bo = &l->bos[t->buffer];
        l->tasks[i] = (teflon_task){.bo = bo->handle, .bytes = t->bytes, .offset = t->offset,
                                    .iova = bo->iova + t->offset};
    }
    for (uint32_t i = 0; i < p->nbolist; i++)
        l->handles[i] = l->bos[p->bolist[i]].handle;
    for (uint32_t i = 0; i < p->njobs; i++) {
        const tp_job *j = &p->jobs[i];
        l->all[i] = i;
        l->jobs[i] = (teflon_job){.tasks = &l->tasks[j->first_task], .ntasks = j->ntasks, .nin = j->nin,
                                  .nout = j->nout, .number = i + 1, .in_bos = &l->handles[j->first_in],
                                  .out_bos = &l->handles[j->first_out]};
    }
    return 0;
}

/* 1 when handle h is among list[0 .. n). */
static int listed(const uint32_t *list, uint32_t n, uint32_t h)
{
    for (uint32_t i = 0; i < n; i++)
        if (list[i] == h)
            return 1;
    return 0;
}

/* The kernel jobs of one submit of lane l holding the program jobs `jobs[0 .. n)` in that order: a job that
 * belongs to the same run of joined jobs as the one before it in the submit (r->group) goes into that job's kernel
 * job. A kernel job runs its tasks in order and lists every buffer its jobs write as written, once, and every
 * other buffer they read as read, once (the kernel wants the two lists disjoint and without repeats). Fills l->kjobs
 * and returns how many. */
static uint32_t merge(const teflon_runner *r, struct lane *l, const uint32_t *jobs, uint32_t n)
{
    const teflon_program *p = r->prog;
    uint32_t nk = 0, nt = 0, nh = 0;
    for (uint32_t a = 0, b; a < n; a = b) {
        for (b = a + 1; b < n && r->group[jobs[b]] == r->group[jobs[b - 1]]; b++) {
        }
        teflon_job *k = &l->kjobs[nk++];
        *k = (teflon_job){.tasks = &l->ktasks[nt], .number = jobs[a] + 1, .task_job = &l->ktask_job[nt]};
        for (uint32_t q = a; q < b; q++) {
            const tp_job *j = &p->jobs[jobs[q]];
            memcpy(&l->ktasks[nt], &l->tasks[j->first_task], j->ntasks * sizeof(*l->ktasks));
            for (uint32_t t = 0; t < j->ntasks; t++)
                l->ktask_job[nt + t] = jobs[q] + 1;
            nt += j->ntasks;
            k->ntasks += j->ntasks;
        }
        uint32_t *out = &l->khandles[nh];
        for (uint32_t q = a; q < b; q++) {
            const tp_job *j = &p->jobs[jobs[q]];
            for (uint32_t x = 0; x < j->nout; x++)
                if (!listed(out, k->nout, l->handles[j->first_out + x]))
                    out[k->nout++] = l->handles[j->first_out + x];
        }
        nh += k->nout;
        uint32_t *in = &l->khandles[nh];
        for (uint32_t q = a; q < b; q++) {
            const tp_job *j = &p->jobs[jobs[q]];
            for (uint32_t x = 0; x < j->nin; x++) {
                const uint32_t h = l->handles[j->first_in + x];
                if (!listed(out, k->nout, h) && !listed(in, k->nin, h))
                    in[k->nin++] = h;
            }
        }
        nh += k->nin;
        k->in_bos = in;
        k->out_bos = out;
        if (b - a == 1) /* one program job: the kernel job is that job (numbered, listed and ordered as it) */
            *k = l->jobs[jobs[a]];
    }
    return nk;
}

/* r->group: a job starts a new run unless it is marked TP_JOB_JOIN. */
static void join_groups(teflon_runner *r)
{
    const teflon_program *p = r->prog;
    for (uint32_t j = 0, g = 0; j < p->njobs; j++) {
        if (j > 0 && !(p->jobs[j].flags & TP_JOB_JOIN))
            g++;
        r->group[j] = g;
    }
}

/* 1 when job a (earlier) and job b must keep their order: one writes a buffer the other reads or writes (the
 * kernel orders read-after-write and write-after-write through the BOs' fences; write-after-read only holds
 * inside one file's queue, so it counts here too). */
static int conflict(const teflon_program *p, const tp_job *a, const tp_job *b)
{
    for (uint32_t x = 0; x < a->nin + a->nout; x++) {
        const int aw = x >= a->nin;
        const uint32_t ba = p->bolist[aw ? a->first_out + x - a->nin : a->first_in + x];
        for (uint32_t y = 0; y < b->nin + b->nout; y++) {
            const int bw = y >= b->nin;
            if ((aw || bw) && ba == p->bolist[bw ? b->first_out + y - b->nin : b->first_in + y])
                return 1;
        }
    }
    return 0;
}

/* Levels: a job's level is one more than the highest level of an earlier job it conflicts with, so the jobs of
 * one level are independent. r->order lists the jobs level by level (program order inside a level) and the i-th
 * job of a level goes to lane i mod `lanes`. Returns the widest level. */
static uint32_t schedule(teflon_runner *r, uint32_t lanes, char *err, size_t errlen)
{
    const teflon_program *p = r->prog;
    const uint32_t n = p->njobs;
    uint32_t *level = calloc(n ? n : 1, sizeof(*level)), *count = calloc(n + 2, sizeof(*count));
    r->order = calloc(n ? n : 1, sizeof(*r->order));
    r->job_lane = calloc(n ? n : 1, 1);
    uint32_t widest = n ? 1 : 0;
    if (!level || !count || !r->order || !r->job_lane) {
        teflon_errf(err, errlen, "out of memory");
        widest = 0;
        goto out;
    }
    for (uint32_t j = 0; j < n; j++)
        for (uint32_t i = 0; i < j; i++)
            if (level[i] + 1 > level[j] && conflict(p, &p->jobs[i], &p->jobs[j]))
                level[j] = level[i] + 1;
    for (uint32_t j = 0; j < n; j++)
        count[level[j] + 1]++;
    for (uint32_t l = 1; l <= n; l++) {
        if (count[l] > widest)
            widest = count[l];
        count[l] += count[l - 1];
    }
    for (uint32_t j = 0; j < n; j++) {
        r->order[count[level[j]]++] = j;
    }
    /* lane = position inside the level */
    for (uint32_t k = 0, pos = 0; k < n; k++) {
        pos = k > 0 && level[r->order[k]] == level[r->order[k - 1]] ? pos + 1 : 0;
        r->job_lane[r->order[k]] = (uint8_t)(pos % lanes);
    }
    r->nlanes = widest < lanes ? widest : lanes;
out:
    r->level = level;
    free(count);
    return widest;
}

/* A runner for the parsed program `prog` (owned from here on, freed on failure too). */
static teflon_runner *load(teflon_dev *dev, teflon_program *prog, char *err, size_t errlen)
{
    if (!prog)
        return NULL;
    teflon_runner *r = calloc(1, sizeof(*r));
    if (!r) {
        teflon_errf(err, errlen, "out of memory");
        teflon_program_free(prog);
        return NULL;
    }
    r->nlanes = 1;
    r->lanes[0].dev = dev;
    r->prog = prog;
    const teflon_program *p = r->prog;
    if (p->target != teflon_dev_target(dev)) {
        teflon_errf(err, errlen, "program compiled for %s, device is %s", p->target->name, teflon_dev_soc(dev));
        goto fail;
    }
    r->out_bufs = calloc(p->nbuffers ? p->nbuffers : 1, 1);
    r->counters = calloc(p->ntasks ? p->ntasks : 1, sizeof(*r->counters));
    r->scratch = calloc(p->ntasks ? p->ntasks : 1, sizeof(*r->scratch));
    r->group = calloc(p->njobs ? p->njobs : 1, sizeof(*r->group));
    if (!r->out_bufs || !r->counters || !r->scratch || !r->group) {
        teflon_errf(err, errlen, "out of memory");
        goto fail;
    }
    join_groups(r);
    uint32_t cores = teflon_dev_cores(dev);
    if (cores > MAX_LANES)
        cores = MAX_LANES;
    if (!schedule(r, cores ? cores : 1, err, errlen) && p->njobs)
        goto fail;
    if (r->nlanes < 1)
        r->nlanes = 1;
    /* the lanes beyond the first are files of their own; a program whose jobs form one chain keeps one */
    for (uint32_t i = 1; i < r->nlanes; i++)
        if (teflon_dev_open_peer(dev, &r->lanes[i].dev, err, errlen)) {
            r->nlanes = i;
            goto fail;
        }
    for (uint32_t i = 0; i < r->nlanes; i++)
        if (lane_load(p, &r->lanes[i], err, errlen))
            goto fail;
    /* one lane submits every job in program order, always the same kernel jobs */
    r->nkjobs = merge(r, &r->lanes[0], r->lanes[0].all, p->njobs);
    for (uint32_t i = 0; i < p->nio; i++)
        if (p->io[i].direction == TP_DIR_OUT)
            r->out_bufs[p->io[i].buffer] = 1;
    return r;
fail:
    teflon_runner_free(r);
    return NULL;
}

teflon_runner *teflon_runner_load(teflon_dev *dev, const uint8_t *blob, uint64_t len, char *err, size_t errlen)
{
    return load(dev, teflon_program_parse(blob, len, err, errlen), err, errlen);
}

teflon_runner *teflon_runner_load_owned(teflon_dev *dev, uint8_t *blob, uint64_t len, char *err, size_t errlen)
{
    return load(dev, teflon_program_adopt(blob, len, err, errlen), err, errlen);
}

/* The first binding of `tensor` in direction `dir` at or after index `from`, or -1. */
static int next_binding(const teflon_program *p, uint32_t from, int32_t tensor, uint32_t dir)
{
    for (uint32_t i = from; i < p->nio; i++)
        if (p->io[i].tensor == tensor && p->io[i].direction == dir)
            return (int)i;
    return -1;
}

int teflon_runner_check_binding(const teflon_runner *r, int32_t tensor, int output, uint64_t bytes)
{
    const teflon_program *p = r->prog;
    const uint32_t dir = output ? TP_DIR_OUT : TP_DIR_IN;
    int i = next_binding(p, 0, tensor, dir);
    if (i < 0)
        return -ENOENT;
    for (; i >= 0; i = next_binding(p, (uint32_t)i + 1, tensor, dir))
        if (bytes != teflon_io_host_bytes(&p->io[i]))
            return -EINVAL;
    return 0;
}

/* 1 when buffer b is listed by some job (read or written). */
static int buffer_in_jobs(const teflon_program *p, uint32_t b)
{
    for (uint32_t j = 0; j < p->njobs; j++) {
        const tp_job *job = &p->jobs[j];
        for (uint32_t k = 0; k < job->nin + job->nout; k++) {
            const uint32_t at = k < job->nin ? job->first_in + k : job->first_out + (k - job->nin);
            if (at < p->nbolist && p->bolist[at] == b)
                return 1;
        }
    }
    return 0;
}

/* 1 when some output binding reads buffer b (a view's output is its input's buffer: a partition made of views
 * alone hands its input back without any job). */
static int buffer_read_out(const teflon_program *p, uint32_t b)
{
    for (uint32_t i = 0; i < p->nio; i++)
        if (p->io[i].direction == TP_DIR_OUT && p->io[i].buffer == b)
            return 1;
    return 0;
}

int teflon_runner_input_ignored(const teflon_runner *r, int32_t tensor)
{
    const teflon_program *p = r->prog;
    int i = next_binding(p, 0, tensor, TP_DIR_IN);
    if (i < 0)
        return 0;
    for (; i >= 0; i = next_binding(p, (uint32_t)i + 1, tensor, TP_DIR_IN))
        if (buffer_in_jobs(p, p->io[i].buffer) || buffer_read_out(p, p->io[i].buffer))
            return 0;
    return 1;
}

int teflon_runner_set_input(teflon_runner *r, int32_t tensor, const void *host, uint64_t bytes)
{
    const teflon_program *p = r->prog;
    struct lane *l0 = &r->lanes[0];
    int rc = teflon_runner_check_binding(r, tensor, 0, bytes);
    if (rc)
        return rc;
    for (int i = next_binding(p, 0, tensor, TP_DIR_IN); i >= 0;
         i = next_binding(p, (uint32_t)i + 1, tensor, TP_DIR_IN)) {
        const tp_io *io = &p->io[i];
        teflon_bo *bo = &l0->bos[io->buffer];
        teflon_layout_to_device(io, host, bo->map);
        rc = teflon_bo_cpu_fini(l0->dev, bo);
        if (rc)
            return rc;
        for (uint32_t k = 1; k < r->nlanes; k++)
            r->lanes[k].valid[io->buffer] = 0;
        l0->valid[io->buffer] = 1;
    }
    return 0;
}

/* The last job that lists BO `handle` among its outputs, or njobs. */
static uint32_t writer_of(const teflon_runner *r, const struct lane *l, uint32_t handle)
{
    for (uint32_t j = r->prog->njobs; j-- > 0;)
        for (uint32_t k = 0; k < l->jobs[j].nout; k++)
            if (l->jobs[j].out_bos[k] == handle)
                return j;
    return r->prog->njobs;
}

/* The first lane whose copy of buffer b is current. */
static struct lane *holder(teflon_runner *r, uint32_t b)
{
    for (uint32_t k = 0; k < r->nlanes; k++)
        if (r->lanes[k].valid[b])
            return &r->lanes[k];
    return &r->lanes[0];
}

static void add_counters(teflon_task_counters *sum, const teflon_task_counters *c);

/* Submits lane l's queued jobs (one submit) and files their tasks' counters under the program's task order. */
static int flush(teflon_runner *r, uint32_t li, char *err, size_t errlen)
{
    const teflon_program *p = r->prog;
    struct lane *l = &r->lanes[li];
    if (!l->nqueued)
        return 0;
    const uint32_t nk = merge(r, l, l->queued, l->nqueued);
    int rc = teflon_submit(l->dev, l->kjobs, nk, r->scratch);
    if (rc) {
        if (r->nlanes > 1)
            teflon_errf(err, errlen, "lane %u of %u: %s", li + 1, r->nlanes, teflon_dev_error(l->dev));
        else
            teflon_errf(err, errlen, "%s", teflon_dev_error(l->dev));
        return rc;
    }
    teflon_submit_stats st;
    teflon_dev_last_stats(l->dev, &st);
    r->last.tasks += st.tasks;
    r->last.macs += st.macs;
    uint32_t at = 0;
    for (uint32_t q = 0; q < l->nqueued; q++) {
        const tp_job *j = &p->jobs[l->queued[q]];
        memcpy(&r->counters[j->first_task], &r->scratch[at], j->ntasks * sizeof(*r->counters));
        at += j->ntasks;
    }
    const tp_job *last = &p->jobs[l->queued[l->nqueued - 1]];
    l->wait_buf = last->nout ? (int32_t)p->bolist[last->first_out] : -1;
    l->nqueued = 0;
    return 0;
}

/* Every lane's queued jobs submitted and finished (PREP_BO on the last job's output: a file's jobs run in
 * order). */
static int barrier(teflon_runner *r, char *err, size_t errlen)
{
    /* every lane's queue goes to the kernel before the host waits for any of them */
    for (uint32_t k = 0; k < r->nlanes; k++) {
        int rc = flush(r, k, err, errlen);
        if (rc)
            return rc;
    }
    for (uint32_t k = 0; k < r->nlanes; k++) {
        struct lane *l = &r->lanes[k];
        if (l->wait_buf >= 0 && teflon_bo_cpu_prep(l->dev, &l->bos[l->wait_buf])) {
            teflon_errf(err, errlen, "lane %u of %u: %s", k + 1, r->nlanes, teflon_dev_error(l->dev));
            return -EIO;
        }
        l->wait_buf = -1;
    }
    return 0;
}

/* Brings lane l's copy of buffer b up to date from the lane that holds it. */
static int copy_in(teflon_runner *r, struct lane *l, uint32_t b, char *err, size_t errlen)
{
    struct lane *src = holder(r, b);
    int rc = teflon_bo_cpu_prep(src->dev, &src->bos[b]);
    if (!rc) {
        memcpy(l->bos[b].map, src->bos[b].map, r->prog->buffers[b].size);
        rc = teflon_bo_cpu_fini(l->dev, &l->bos[b]);
    }
    if (rc)
        teflon_errf(err, errlen, "copying %s between lanes: %s", r->prog->buffers[b].name,
                    teflon_dev_error(rc ? src->dev : l->dev));
    l->valid[b] = 1;
    return rc;
}

/* The buffer behind job j's x-th BO (its in-BOs, then its out-BOs). */
static uint32_t job_buffer(const teflon_program *p, const tp_job *j, uint32_t x)
{
    return p->bolist[x < j->nin ? j->first_in + x : j->first_out + x - j->nin];
}

/* Several lanes: the jobs level by level. Before a level, every buffer one of its jobs reads or writes that was
 * last written in another lane is copied over, after a barrier over the jobs queued so far (the earlier levels);
 * then the level's jobs are queued on their lanes, where they run at once on different cores. */
static int run_lanes(teflon_runner *r, char *err, size_t errlen)
{
    const teflon_program *p = r->prog;
    for (uint32_t k = 0, end; k < p->njobs; k = end) {
        for (end = k; end < p->njobs && r->level[r->order[end]] == r->level[r->order[k]]; end++) {
        }
        int waited = 0;
        for (uint32_t q = k; q < end; q++) {
            const tp_job *j = &p->jobs[r->order[q]];
            struct lane *l = &r->lanes[r->job_lane[r->order[q]]];
            for (uint32_t x = 0; x < j->nin + j->nout; x++) {
                const uint32_t b = job_buffer(p, j, x);
                if (l->valid[b])
                    continue;
                int rc = waited ? 0 : barrier(r, err, errlen);
                waited = 1;
                if (rc || (rc = copy_in(r, l, b, err, errlen)))
                    return rc;
            }
        }
        for (uint32_t q = k; q < end; q++) {
            const uint32_t ji = r->order[q];
            const tp_job *j = &p->jobs[ji];
            struct lane *l = &r->lanes[r->job_lane[ji]];
            l->queued[l->nqueued++] = ji;
            for (uint32_t x = j->nin; x < j->nin + j->nout; x++)
                for (uint32_t m = 0; m < r->nlanes; m++)
                    r->lanes[m].valid[job_buffer(p, j, x)] = &r->lanes[m] == l;
        }
    }
    for (uint32_t m = 0; m < r->nlanes; m++) {
        int rc = flush(r, m, err, errlen);
        if (rc)
            return rc;
    }
    return 0;
}

int teflon_runner_run(teflon_runner *r, char *err, size_t errlen)
{
    const teflon_program *p = r->prog;
    struct lane *l0 = &r->lanes[0];
    memset(&r->last, 0, sizeof(r->last));
    memset(r->counters, 0, (p->ntasks ? p->ntasks : 1) * sizeof(*r->counters));
    const uint64_t t0 = teflon_dev_npu_idle(l0->dev);
    for (uint32_t k = 0; k < r->nlanes; k++) { /* nothing left over from a run that failed */
        r->lanes[k].nqueued = 0;
        r->lanes[k].wait_buf = -1;
    }
    int rc;
    if (r->nlanes == 1) {
        rc = teflon_submit(l0->dev, l0->kjobs, r->nkjobs, r->counters);
        if (rc) {
            teflon_errf(err, errlen, "%s", teflon_dev_error(l0->dev));
            return rc;
        }
        teflon_dev_last_stats(l0->dev, &r->last);
    } else if ((rc = run_lanes(r, err, errlen))) {
        return rc;
    }
    for (uint32_t i = 0; i < p->nbuffers; i++) {
        struct lane *l = holder(r, i);
        if (r->out_bufs[i] && (rc = teflon_bo_cpu_prep(l->dev, &l->bos[i]))) {
            /* a real kernel reports a job's failure when the output is waited for: name the job writing it */
            const uint32_t j = writer_of(r, l, l->bos[i].handle);
            if (j < p->njobs)
                teflon_errf(err, errlen, "job %u of %u (writes %s): %s", j + 1, p->njobs, p->buffers[i].name,
                            teflon_dev_error(l->dev));
            else
                teflon_errf(err, errlen, "%s: %s", p->buffers[i].name, teflon_dev_error(l->dev));
            return rc;
        }
    }
    r->npu_ns = teflon_dev_npu_idle(l0->dev) - t0;
    return 0;
}

int teflon_runner_get_output(teflon_runner *r, int32_t tensor, void *host, uint64_t bytes)
{
    int i = next_binding(r->prog, 0, tensor, TP_DIR_OUT);
    if (i < 0)
        return -ENOENT;
    const tp_io *io = &r->prog->io[i];
    if (bytes != teflon_io_host_bytes(io))
        return -EINVAL;
    teflon_layout_from_device(io, holder(r, io->buffer)->bos[io->buffer].map, host);
    return 0;
}

uint32_t teflon_runner_lanes(const teflon_runner *r)
{
    return r->nlanes;
}

uint64_t teflon_runner_npu_ns(const teflon_runner *r)
{
    return r->npu_ns;
}

void teflon_runner_stats(const teflon_runner *r, uint64_t *tasks, uint64_t *macs)
{
    *tasks = r->last.tasks;
    *macs = r->last.macs;
}

const teflon_task_counters *teflon_runner_task_counters(const teflon_runner *r, uint32_t *ntasks)
{
    *ntasks = r->prog->ntasks;
    return r->counters;
}

static void add_counters(teflon_task_counters *sum, const teflon_task_counters *c)
{
    sum->feature_rd += c->feature_rd;
    sum->weight_rd += c->weight_rd;
    sum->bias_rd += c->bias_rd;
    sum->data_wr += c->data_wr;
    sum->macs += c->macs;
    sum->macs_nz += c->macs_nz;
    sum->ns += c->ns;
}

static void print_counters(FILE *f, const teflon_task_counters *c, int core)
{
    fprintf(f, "feature_rd=%llu weight_rd=%llu bias_rd=%llu data_wr=%llu macs=%llu time=%.3fms", (unsigned long long)
            c->feature_rd, (unsigned long long)c->weight_rd, (unsigned long long)c->bias_rd,
            (unsigned long long)c->data_wr, (unsigned long long)c->macs, (double)c->ns / 1e6);
    if (core >= 0)
        fprintf(f, " core=%d start=%.3fms", core, (double)c->start_ns / 1e6);
    fputc('\n', f);
}

void teflon_runner_print_perf(const teflon_runner *r, FILE *f, const char *who)
{
    const teflon_program *p = r->prog;
    /* cores and simulated start times exist where the device models time (the rocket simulator) */
    const int timed = r->npu_ns > 0;
    for (uint32_t j = 0; j < p->njobs; j++) {
        const tp_job *job = &p->jobs[j];
        teflon_task_counters sum = {0};
        for (uint32_t t = job->first_task; t < job->first_task + job->ntasks && t < p->ntasks; t++)
            add_counters(&sum, &r->counters[t]);
        if (job->ntasks && job->first_task < p->ntasks)
            sum.start_ns = r->counters[job->first_task].start_ns;
        fprintf(f, "%s: perf job %u/%u tasks=%u ", who, j + 1, p->njobs, job->ntasks);
        print_counters(f, &sum, timed && job->ntasks && job->first_task < p->ntasks
                                    ? (int)r->counters[job->first_task].core : -1);
        for (uint32_t t = job->first_task; t < job->first_task + job->ntasks && t < p->ntasks; t++) {
            fprintf(f, "%s: perf job %u task %u ", who, j + 1, t - job->first_task + 1);
            print_counters(f, &r->counters[t], timed ? (int)r->counters[t].core : -1);
        }
    }
    if (r->nlanes == 1)
        fprintf(f, "%s: perf kernel jobs=%u for %u program job(s)\n", who, r->nkjobs, p->njobs);
    if (timed)
        fprintf(f, "%s: perf npu time=%.3fms (simulated, %u lane(s) on %u core(s))\n", who, (double)r->npu_ns / 1e6,
            r->nlanes, teflon_dev_cores(r->lanes[0].dev));
}
