/* Program runner (see runner.h). */
#include "runner.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "program.h"
#include "errmsg.h"

struct teflon_runner {
    teflon_dev *dev;
    teflon_program *prog;
    teflon_bo *bos;          /* one per program buffer */
    teflon_task *tasks;
    teflon_job *jobs;
    uint32_t *handles;       /* bolist as BO handles */
    uint8_t *out_bufs;       /* 1 for buffers bound to an output */
    teflon_submit_stats last;
    teflon_task_counters *counters; /* one per program task, of the last run */
};

void teflon_runner_free(teflon_runner *r)
{
    if (!r)
        return;
    if (r->bos)
        for (uint32_t i = 0; i < r->prog->nbuffers; i++)
            teflon_bo_destroy(r->dev, &r->bos[i]);
    free(r->bos);
    free(r->tasks);
    free(r->jobs);
    free(r->handles);
    free(r->out_bufs);
    free(r->counters);
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
static int apply_reloc(teflon_runner *r, uint32_t i, char *err, size_t errlen)
{
    const teflon_program *p = r->prog;
    const tp_reloc *rl = &p->relocs[i];
    const unsigned bytes = tp_reloc_word_bytes(rl);
    uint8_t *at = (uint8_t *)r->bos[rl->buffer].map + rl->offset;
    const uint64_t iova = r->bos[rl->target].iova, mask = (1ull << rl->width) - 1;
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

static int apply_relocs(teflon_runner *r, char *err, size_t errlen)
{
    for (uint32_t i = 0; i < r->prog->nrelocs; i++)
        if (apply_reloc(r, i, err, errlen))
            return -ERANGE;
    return 0;
}

teflon_runner *teflon_runner_load(teflon_dev *dev, const uint8_t *blob, uint64_t len, char *err, size_t errlen)
{
    teflon_runner *r = calloc(1, sizeof(*r));
    if (!r) {
        teflon_errf(err, errlen, "out of memory");
        return NULL;
    }
    r->dev = dev;
    r->prog = teflon_program_parse(blob, len, err, errlen);
    if (!r->prog)
        goto fail;
    const teflon_program *p = r->prog;
    if (p->target != teflon_dev_target(dev)) {
        teflon_errf(err, errlen, "program compiled for %s, device is %s", p->target->name, teflon_dev_soc(dev));
        goto fail;
    }
    r->bos = calloc(p->nbuffers ? p->nbuffers : 1, sizeof(*r->bos));
    r->tasks = calloc(p->ntasks ? p->ntasks : 1, sizeof(*r->tasks));
    r->jobs = calloc(p->njobs ? p->njobs : 1, sizeof(*r->jobs));
    r->handles = calloc(p->nbolist ? p->nbolist : 1, sizeof(*r->handles));
    r->out_bufs = calloc(p->nbuffers ? p->nbuffers : 1, 1);
    r->counters = calloc(p->ntasks ? p->ntasks : 1, sizeof(*r->counters));
    if (!r->bos || !r->tasks || !r->jobs || !r->handles || !r->out_bufs || !r->counters) {
        teflon_errf(err, errlen, "out of memory");
        goto fail;
    }
    for (uint32_t i = 0; i < p->nbuffers; i++) {
        const tp_buffer *b = &p->buffers[i];
        if (teflon_bo_create(dev, b->size, &r->bos[i])) {
            teflon_errf(err, errlen, "buffer %s: %s", b->name, teflon_dev_error(dev));
            goto fail;
        }
        if (b->data)
            memcpy(r->bos[i].map, b->data, b->data_size);
    }
    if (apply_relocs(r, err, errlen))
        goto fail;
    for (uint32_t i = 0; i < p->nbuffers; i++)
        if (teflon_bo_cpu_fini(dev, &r->bos[i])) {
            teflon_errf(err, errlen, "buffer %s: %s", p->buffers[i].name, teflon_dev_error(dev));
            goto fail;
        }
    for (uint32_t i = 0; i < p->ntasks; i++) {
        const tp_task *t = &p->tasks[i];
        const teflon_bo *bo = &r->bos[t->buffer];
        r->tasks[i] = (teflon_task){.bo = bo->handle, .bytes = t->bytes, .offset = t->offset,
                                    .iova = bo->iova + t->offset};
    }
    for (uint32_t i = 0; i < p->nbolist; i++)
        r->handles[i] = r->bos[p->bolist[i]].handle;
    for (uint32_t i = 0; i < p->njobs; i++) {
        const tp_job *j = &p->jobs[i];
        r->jobs[i] = (teflon_job){.tasks = &r->tasks[j->first_task], .ntasks = j->ntasks, .nin = j->nin,
                                  .nout = j->nout, .in_bos = &r->handles[j->first_in],
                                  .out_bos = &r->handles[j->first_out]};
    }
    for (uint32_t i = 0; i < p->nio; i++)
        if (p->io[i].direction == TP_DIR_OUT)
            r->out_bufs[p->io[i].buffer] = 1;
    return r;
fail:
    teflon_runner_free(r);
    return NULL;
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

int teflon_runner_set_input(teflon_runner *r, int32_t tensor, const void *host, uint64_t bytes)
{
    const teflon_program *p = r->prog;
    int rc = teflon_runner_check_binding(r, tensor, 0, bytes);
    if (rc)
        return rc;
    for (int i = next_binding(p, 0, tensor, TP_DIR_IN); i >= 0;
         i = next_binding(p, (uint32_t)i + 1, tensor, TP_DIR_IN)) {
        const tp_io *io = &p->io[i];
        teflon_bo *bo = &r->bos[io->buffer];
        teflon_layout_to_device(io, host, bo->map);
        rc = teflon_bo_cpu_fini(r->dev, bo);
        if (rc)
            return rc;
    }
    return 0;
}

/* The last job that lists BO `handle` among its outputs, or njobs. */
static uint32_t writer_of(const teflon_runner *r, uint32_t handle)
{
    for (uint32_t j = r->prog->njobs; j-- > 0;)
        for (uint32_t k = 0; k < r->jobs[j].nout; k++)
            if (r->jobs[j].out_bos[k] == handle)
                return j;
    return r->prog->njobs;
}

int teflon_runner_run(teflon_runner *r, char *err, size_t errlen)
{
    const teflon_program *p = r->prog;
    memset(&r->last, 0, sizeof(r->last));
    memset(r->counters, 0, (p->ntasks ? p->ntasks : 1) * sizeof(*r->counters));
    int rc = teflon_submit(r->dev, r->jobs, p->njobs, r->counters);
    if (rc) {
        teflon_errf(err, errlen, "%s", teflon_dev_error(r->dev));
        return rc;
    }
    teflon_dev_last_stats(r->dev, &r->last);
    for (uint32_t i = 0; i < p->nbuffers; i++)
        if (r->out_bufs[i] && (rc = teflon_bo_cpu_prep(r->dev, &r->bos[i]))) {
            /* a real kernel reports a job's failure when the output is waited for: name the job writing it */
            const uint32_t j = writer_of(r, r->bos[i].handle);
            if (j < p->njobs)
                teflon_errf(err, errlen, "job %u of %u (writes %s): %s", j + 1, p->njobs, p->buffers[i].name,
                            teflon_dev_error(r->dev));
            else
                teflon_errf(err, errlen, "%s: %s", p->buffers[i].name, teflon_dev_error(r->dev));
            return rc;
        }
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
    teflon_layout_from_device(io, r->bos[io->buffer].map, host);
    return 0;
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
    sum->ns += c->ns;
}

static void print_counters(FILE *f, const teflon_task_counters *c)
{
    fprintf(f, "feature_rd=%llu weight_rd=%llu bias_rd=%llu data_wr=%llu macs=%llu time=%.3fms\n",
            (unsigned long long)c->feature_rd, (unsigned long long)c->weight_rd, (unsigned long long)c->bias_rd,
            (unsigned long long)c->data_wr, (unsigned long long)c->macs, (double)c->ns / 1e6);
}

void teflon_runner_print_perf(const teflon_runner *r, FILE *f, const char *who)
{
    const teflon_program *p = r->prog;
    for (uint32_t j = 0; j < p->njobs; j++) {
        const tp_job *job = &p->jobs[j];
        teflon_task_counters sum = {0};
        for (uint32_t t = job->first_task; t < job->first_task + job->ntasks && t < p->ntasks; t++)
            add_counters(&sum, &r->counters[t]);
        fprintf(f, "%s: perf job %u/%u tasks=%u ", who, j + 1, p->njobs, job->ntasks);
        print_counters(f, &sum);
        for (uint32_t t = job->first_task; t < job->first_task + job->ntasks && t < p->ntasks; t++) {
            fprintf(f, "%s: perf job %u task %u ", who, j + 1, t - job->first_task + 1);
            print_counters(f, &r->counters[t]);
        }
    }
}
