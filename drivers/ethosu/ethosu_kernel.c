/* The accel/ethosu client (ethosu_client.h): buffer objects by BO_CREATE + BO_MMAP_OFFSET + mmap, one validated
 * command-stream BO per task (CMDSTREAM_BO_CREATE of the task's words after its teflon header, created at the
 * task's first submit and kept until its BO goes), one SUBMIT per task with the region BOs and sram_size the task
 * header names, and BO_WAIT with a bounded timeout before the CPU reads. Written against the UAPI only
 * (ethosu_uapi.h; docs/hardware/ethosu-kernel.md). Also the real device: /dev/accel/accelN bound to "ethosu".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../errmsg.h"
#include "../fault.h"
#include "../targets.h"
#include "ethosu.h"
#include "ethosu_client.h"
#include "ethosu_task.h"
#include "ethosu_uapi.h"

#define ETHOSU_MAX_ACCEL_NODES 16
/* How long BO_WAIT waits for the NPU's writers. The kernel times a job out after 500 ms (JOB_TIMEOUT_MS,
 * ethosu_job.c) and resets the NPU; this bound only keeps a wedged kernel from blocking the caller forever. */
#define ETHOSU_WAIT_SEC 5

struct ethosu_cbo {
    uint32_t handle;
    uint64_t size; /* mapped bytes */
    void *map;
};

/* A task's command-stream BO, kept across invokes, and what its header says. */
struct ethosu_ccmd {
    uint32_t task_bo, bytes;
    uint64_t offset;
    uint32_t handle;
    uint32_t sram_size;
    uint32_t region[ETHOSU_MAX_REGIONS]; /* index into the job's BO list, or ETHOSU_TASK_NO_BO */
};

struct ethosu_client {
    const struct ethosu_transport *tp;
    void *t;
    const teflon_target *target;
    struct ethosu_drm_npu_info npu;
    struct ethosu_cbo *bos;
    size_t nbos, bcap;
    struct ethosu_ccmd *cmds;
    size_t ncmds, ccap;
};

static int ethosu_grow(void **items, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    const size_t ncap = *cap ? 2 * *cap : 16;
    void *p = realloc(*items, ncap * elem);
    if (!p)
        return -ENOMEM;
    *items = p;
    *cap = ncap;
    return 0;
}

static struct ethosu_cbo *ethosu_cbo_of(struct ethosu_client *c, uint32_t handle)
{
    for (size_t i = 0; i < c->nbos; i++)
        if (c->bos[i].handle == handle)
            return &c->bos[i];
    return NULL;
}

static void ethosu_gem_close(struct ethosu_client *c, uint32_t handle)
{
    struct teflon_drm_gem_close gc = {.handle = handle};
    c->tp->ioctl(c->t, TEFLON_DRM_IOCTL_GEM_CLOSE, &gc);
}

/* ---- buffer objects ---------------------------------------------------------------------------------------- */

static int ethosu_c_bo_create(void *impl, uint64_t size, teflon_bo *out, char *err, size_t errlen)
{
    struct ethosu_client *c = impl;
    if (!size) {
        teflon_errf(err, errlen, "DRM_IOCTL_ETHOSU_BO_CREATE: a BO of 0 bytes");
        return -EINVAL;
    }
    if (ethosu_grow((void **)&c->bos, &c->bcap, c->nbos, sizeof(*c->bos))) {
        teflon_errf(err, errlen, "out of memory for the BO table");
        return -ENOMEM;
    }
    struct ethosu_drm_bo_create bc = {.size = size};
    int rc = c->tp->ioctl(c->t, ETHOSU_IOCTL_BO_CREATE, &bc);
    if (rc) {
        teflon_errf(err, errlen, "DRM_IOCTL_ETHOSU_BO_CREATE(%llu bytes): %s", (unsigned long long)size, strerror(-rc));
        return rc;
    }
    struct ethosu_drm_bo_mmap_offset mo = {.handle = bc.handle};
    rc = c->tp->ioctl(c->t, ETHOSU_IOCTL_BO_MMAP_OFFSET, &mo);
    void *map = NULL;
    if (!rc)
        map = c->tp->map(c->t, mo.offset, bc.size, &rc);
    if (rc) {
        ethosu_gem_close(c, bc.handle);
        teflon_errf(err, errlen, "mapping ethosu BO %u (%llu bytes): %s", bc.handle, (unsigned long long)bc.size,
                    strerror(-rc));
        return rc;
    }
    c->bos[c->nbos++] = (struct ethosu_cbo){bc.handle, bc.size, map};
    /* no relocations in ethosu programs: the NPU addresses memory as region + offset, the kernel sets BASEP */
    *out = (teflon_bo){.handle = bc.handle, .iova = 0, .size = size, .map = map};
    return 0;
}

/* Drops the command-stream BOs made from tasks in BO `handle`. */
static void ethosu_drop_cmds(struct ethosu_client *c, uint32_t handle)
{
    for (size_t i = 0; i < c->ncmds;)
        if (c->cmds[i].task_bo == handle) {
            ethosu_gem_close(c, c->cmds[i].handle);
            c->cmds[i] = c->cmds[--c->ncmds];
        } else {
            i++;
        }
}

static void ethosu_c_bo_destroy(void *impl, teflon_bo *bo)
{
    struct ethosu_client *c = impl;
    struct ethosu_cbo *b = ethosu_cbo_of(c, bo->handle);
    if (!b)
        return;
    ethosu_drop_cmds(c, b->handle);
    c->tp->unmap(c->t, b->map, b->size);
    ethosu_gem_close(c, b->handle);
    *b = c->bos[--c->nbos];
    bo->map = NULL;
}

static int ethosu_c_cpu_prep(void *impl, teflon_bo *bo, char *err, size_t errlen)
{
    struct ethosu_client *c = impl;
    /* timeout_ns is absolute, CLOCK_MONOTONIC (drm_timeout_abs_to_jiffies) */
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    struct ethosu_drm_bo_wait w = {.handle = bo->handle,
                                   .timeout_ns = ((int64_t)now.tv_sec + ETHOSU_WAIT_SEC) * 1000000000 + now.tv_nsec};
    const int rc = c->tp->ioctl(c->t, ETHOSU_IOCTL_BO_WAIT, &w);
    if (rc == -ETIMEDOUT || rc == -EBUSY)
        teflon_errf(err, errlen, "%s: no completion within %d s (DRM_IOCTL_ETHOSU_BO_WAIT, handle %u)",
                    teflon_fault_errno_text(rc), ETHOSU_WAIT_SEC, bo->handle);
    else if (rc)
        teflon_errf(err, errlen, "%s (DRM_IOCTL_ETHOSU_BO_WAIT, handle %u: %s)", teflon_fault_errno_text(rc),
                    bo->handle, strerror(-rc));
    return rc;
}

/* The BOs are write-combined DMA memory (drm_gem_dma): nothing to flush after the CPU writes. */
static int ethosu_c_cpu_fini(void *impl, teflon_bo *bo, char *err, size_t errlen)
{
    if (!ethosu_cbo_of(impl, bo->handle)) {
        teflon_errf(err, errlen, "unknown BO handle %u", bo->handle);
        return -ENOENT;
    }
    return 0;
}

/* ---- tasks ---------------------------------------------------------------------------------------------- */

/* The task's header (ethosu_task.h) and command words, read from its BO. */
static int ethosu_task_words(struct ethosu_client *c, const teflon_task *task, const uint32_t **words, uint32_t *n,
                             char *err, size_t errlen)
{
    const struct ethosu_cbo *b = ethosu_cbo_of(c, task->bo);
    if (!b) {
        teflon_errf(err, errlen, "unknown task BO handle %u", task->bo);
        return -ENOENT;
    }
    if (task->bytes % 4 || task->offset % 4 || task->bytes <= ETHOSU_TASK_HEADER_WORDS * 4 || task->offset > b->size ||
        task->bytes > b->size - task->offset) {
        teflon_errf(err, errlen, "task of %u bytes at offset %llu of a %llu-byte BO is not a teflon ethosu task (whole "
                    "words: a %d-word header, then the command stream)", task->bytes, (unsigned long long)task->offset,
                    (unsigned long long)b->size, ETHOSU_TASK_HEADER_WORDS);
        return -EINVAL;
    }
    *words = (const uint32_t *)((const uint8_t *)b->map + task->offset);
    *n = task->bytes / 4;
    if ((*words)[0] != ETHOSU_TASK_MAGIC) {
        teflon_errf(err, errlen, "task header magic 0x%08x is not ETHOSU_TASK_MAGIC 0x%08x", (*words)[0],
                    ETHOSU_TASK_MAGIC);
        return -EINVAL;
    }
    return 0;
}

/* The task's command-stream BO: cached, or validated by the kernel now. */
static int ethosu_task_cmd(struct ethosu_client *c, const teflon_task *task, const struct ethosu_ccmd **out, char *err,
                           size_t errlen)
{
    for (size_t i = 0; i < c->ncmds; i++)
        if (c->cmds[i].task_bo == task->bo && c->cmds[i].offset == task->offset && c->cmds[i].bytes == task->bytes) {
            *out = &c->cmds[i];
            return 0;
        }
    const uint32_t *w;
    uint32_t n;
    int rc = ethosu_task_words(c, task, &w, &n, err, errlen);
    if (!rc && w[1] > c->npu.sram_size) {
        teflon_errf(err, errlen, "the task uses %u bytes of NPU SRAM, this NPU has %u", w[1], c->npu.sram_size);
        rc = -EINVAL;
    }
    if (!rc && ethosu_grow((void **)&c->cmds, &c->ccap, c->ncmds, sizeof(*c->cmds))) {
        teflon_errf(err, errlen, "out of memory for the command-stream table");
        rc = -ENOMEM;
    }
    if (rc)
        return rc;
    struct ethosu_drm_cmdstream_bo_create cc = {.size = (n - ETHOSU_TASK_HEADER_WORDS) * 4,
                                                .data = (uint64_t)(uintptr_t)(w + ETHOSU_TASK_HEADER_WORDS)};
    rc = c->tp->ioctl(c->t, ETHOSU_IOCTL_CMDSTREAM_BO_CREATE, &cc);
    if (rc) {
        char why[384] = "";
        if (c->tp->last_job)
            c->tp->last_job(c->t, NULL, why, sizeof(why));
        teflon_errf(err, errlen, "the kernel refused the command stream (DRM_IOCTL_ETHOSU_CMDSTREAM_BO_CREATE, "
                    "%u words): %s%s%s", n - ETHOSU_TASK_HEADER_WORDS, strerror(-rc), *why ? ": " : "", why);
        return rc;
    }
    struct ethosu_ccmd *e = &c->cmds[c->ncmds++];
    *e = (struct ethosu_ccmd){.task_bo = task->bo, .bytes = task->bytes, .offset = task->offset, .handle = cc.handle,
                              .sram_size = w[1]};
    memcpy(e->region, w + 2, sizeof(e->region));
    *out = e;
    return 0;
}

/* The kernel's job for a task: its command-stream BO, sram_size and the BO of each region it uses. */
static int ethosu_task_job(struct ethosu_client *c, const teflon_job *j, const teflon_task *task,
                           struct ethosu_drm_job *kj, char *err, size_t errlen)
{
    const struct ethosu_ccmd *cmd;
    int rc = ethosu_task_cmd(c, task, &cmd, err, errlen);
    if (rc)
        return rc;
    *kj = (struct ethosu_drm_job){.cmd_bo = cmd->handle, .sram_size = cmd->sram_size};
    for (int r = 0; r < ETHOSU_MAX_REGIONS; r++) {
        const uint32_t i = cmd->region[r];
        if (i == ETHOSU_TASK_NO_BO)
            continue;
        if (i >= j->nin + j->nout) {
            teflon_errf(err, errlen, "the task header puts region %d in BO %u of a job listing %u", r, i,
                        j->nin + j->nout);
            return -EINVAL;
        }
        kj->region_bo_handles[r] = i < j->nin ? j->in_bos[i] : j->out_bos[i - j->nin];
    }
    return 0;
}

/* What a refused SUBMIT means (the kernel's errno for each check, ethosu_job.c). */
static const char *ethosu_submit_errno_text(int rc)
{
    switch (-rc) {
    case EOVERFLOW:
        return "a region's BO is smaller than the command stream reaches into it";
    case ENOENT:
        return "an unknown BO handle";
    case EINVAL:
        return "a BO for a region the stream does not use, region 2 given both a BO and SRAM, or SRAM beyond the NPU's";
    default:
        return teflon_fault_errno_text(rc);
    }
}

static int ethosu_submit_task(struct ethosu_client *c, const teflon_job *j, const teflon_task *task,
                              struct ethosu_npu_stats *st, char *err, size_t errlen)
{
    struct ethosu_drm_job kj;
    int rc = ethosu_task_job(c, j, task, &kj, err, errlen);
    if (rc)
        return rc;
    struct ethosu_drm_submit s = {.jobs = (uint64_t)(uintptr_t)&kj, .job_count = 1};
    rc = c->tp->ioctl(c->t, ETHOSU_IOCTL_SUBMIT, &s);
    char why[512] = "";
    int ran = 0;
    if (c->tp->last_job)
        ran = c->tp->last_job(c->t, st, why, sizeof(why));
    if (rc)
        teflon_errf(err, errlen, "DRM_IOCTL_ETHOSU_SUBMIT refused the job: %s (%s)%s%s", ethosu_submit_errno_text(rc),
                    strerror(-rc), *why ? ": " : "", why);
    else if (ran)
        teflon_errf(err, errlen, "%s", why);
    return rc ? rc : ran;
}

static int ethosu_c_submit(void *impl, const teflon_job *jobs, uint32_t njobs, teflon_submit_stats *stats, char *err,
                           size_t errlen)
{
    struct ethosu_client *c = impl;
    stats->tasks = stats->macs = 0;
    for (uint32_t ji = 0; ji < njobs; ji++) {
        const teflon_job *j = &jobs[ji];
        for (uint32_t ti = 0; ti < j->ntasks; ti++) {
            struct ethosu_npu_stats st = {0};
            char msg[768];
            const int rc = ethosu_submit_task(c, j, &j->tasks[ti], &st, msg, sizeof(msg));
            if (rc) {
                teflon_errf(err, errlen, "job %u of %u, task %u of %u: %s", j->number ? j->number : ji + 1, njobs,
                            ti + 1, j->ntasks, msg);
                return rc;
            }
            if (stats->per_task)
                stats->per_task[stats->tasks] = (teflon_task_counters){
                    .feature_rd = st.feature_rd, .weight_rd = st.weight_rd, .bias_rd = st.bias_rd,
                    .data_wr = st.data_wr, .macs = st.macs};
            stats->tasks++;
            stats->macs += st.macs;
        }
    }
    return 0;
}

static void ethosu_c_close(void *impl)
{
    struct ethosu_client *c = impl;
    for (size_t i = 0; i < c->ncmds; i++)
        ethosu_gem_close(c, c->cmds[i].handle);
    for (size_t i = 0; i < c->nbos; i++) {
        c->tp->unmap(c->t, c->bos[i].map, c->bos[i].size);
        ethosu_gem_close(c, c->bos[i].handle);
    }
    c->tp->close(c->t);
    free(c->cmds);
    free(c->bos);
    free(c);
}

static const struct teflon_backend ethosu_kernel_ops = {
    .name = "ethosu",
    .is_sim = 0,
    .bo_create = ethosu_c_bo_create,
    .bo_destroy = ethosu_c_bo_destroy,
    .cpu_prep = ethosu_c_cpu_prep,
    .cpu_fini = ethosu_c_cpu_fini,
    .submit = ethosu_c_submit,
    .close = ethosu_c_close,
};

static const struct teflon_backend ethosu_sim_ops = {
    .name = "ethosu-sim",
    .is_sim = 1,
    .bo_create = ethosu_c_bo_create,
    .bo_destroy = ethosu_c_bo_destroy,
    .cpu_prep = ethosu_c_cpu_prep,
    .cpu_fini = ethosu_c_cpu_fini,
    .submit = ethosu_c_submit,
    .close = ethosu_c_close,
};

/* DEV_QUERY NPU_INFO, and whether the NPU is the row's: the same architecture (ID bits 31:28) and MAC count
 * (CONFIG bits 3:0 = log2 MACs per cycle). */
static int ethosu_query(const teflon_target *t, const struct ethosu_transport *tp, void *ti,
                        struct ethosu_drm_npu_info *npu, char *err, size_t errlen)
{
    struct ethosu_drm_dev_query q = {.type = ETHOSU_DEV_QUERY_NPU_INFO, .size = sizeof(*npu),
                                     .pointer = (uint64_t)(uintptr_t)npu};
    int rc = tp->ioctl(ti, ETHOSU_IOCTL_DEV_QUERY, &q);
    if (rc) {
        teflon_errf(err, errlen, "DRM_IOCTL_ETHOSU_DEV_QUERY(NPU_INFO): %s", strerror(-rc));
        return rc;
    }
    uint32_t id = 0, macs = 0;
    if (teflon_target_param_get(t, "id", &id) || teflon_target_param_get(t, "macs", &macs)) {
        teflon_errf(err, errlen, "target %s lacks the \"id\" / \"macs\" parameters (python/teflon/targets.py)",
                    t->name);
        return -EINVAL;
    }
    if (ETHOSU_ID_ARCH_MAJOR(npu->id) != ETHOSU_ID_ARCH_MAJOR(id) || (1u << (npu->config & 0xf)) != macs) {
        teflon_errf(err, errlen, "the ethosu NPU here (ID 0x%08x, CONFIG 0x%08x: architecture %u, %u MACs) is not %s's "
                    "(architecture %u, %u MACs)", npu->id, npu->config, ETHOSU_ID_ARCH_MAJOR(npu->id),
                    1u << (npu->config & 0xf), t->name, ETHOSU_ID_ARCH_MAJOR(id), macs);
        return -ENODEV;
    }
    return 0;
}

int ethosu_client_open(const teflon_target *t, const struct ethosu_transport *tp, void *ti, void **impl,
                       const struct teflon_backend **ops, char *err, size_t errlen)
{
    struct ethosu_client *c = calloc(1, sizeof(*c));
    if (!c) {
        teflon_errf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    *c = (struct ethosu_client){.tp = tp, .t = ti, .target = t};
    const int rc = ethosu_query(t, tp, ti, &c->npu, err, errlen);
    if (rc) {
        free(c);
        return rc;
    }
    *impl = c;
    *ops = tp->is_sim ? &ethosu_sim_ops : &ethosu_kernel_ops;
    return 0;
}

/* ---- the real device ------------------------------------------------------------------------------------ */

struct ethosu_fd {
    int fd;
};

static int ethosu_fd_ioctl(void *t, unsigned long req, void *arg)
{
    return teflon_drm_ioctl(((struct ethosu_fd *)t)->fd, req, arg);
}

static void *ethosu_fd_map(void *t, uint64_t offset, uint64_t size, int *err)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, ((struct ethosu_fd *)t)->fd, (off_t)offset);
    *err = p == MAP_FAILED ? -errno : 0;
    return p == MAP_FAILED ? NULL : p;
}

static void ethosu_fd_unmap(void *t, void *p, uint64_t size)
{
    (void)t;
    if (p)
        munmap(p, size);
}

static void ethosu_fd_close(void *t)
{
    close(((struct ethosu_fd *)t)->fd);
    free(t);
}

static const struct ethosu_transport ethosu_fd_transport = {
    .name = "ethosu",
    .ioctl = ethosu_fd_ioctl,
    .map = ethosu_fd_map,
    .unmap = ethosu_fd_unmap,
    .close = ethosu_fd_close,
};

static int ethosu_is_driver(int fd)
{
    char name[32] = {0};
    struct teflon_drm_version v = {.name_len = sizeof(name) - 1, .name = (uint64_t)(uintptr_t)name};
    return teflon_drm_ioctl(fd, TEFLON_DRM_IOCTL_VERSION, &v) == 0 && strcmp(name, ETHOSU_DRIVER_NAME) == 0;
}

int ethosu_kernel_open(const teflon_target *t, void **impl, const struct teflon_backend **ops, char *err,
                       size_t errlen)
{
    for (int i = 0; i < ETHOSU_MAX_ACCEL_NODES; i++) {
        char path[32];
        snprintf(path, sizeof(path), "/dev/accel/accel%d", i);
        const int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
            continue;
        struct ethosu_fd *f = ethosu_is_driver(fd) ? malloc(sizeof(*f)) : NULL;
        if (!f) {
            close(fd);
            continue;
        }
        f->fd = fd;
        const int rc = ethosu_client_open(t, &ethosu_fd_transport, f, impl, ops, err, errlen);
        if (rc)
            ethosu_fd_close(f);
        return rc;
    }
    teflon_errf(err, errlen, "no ethosu NPU: no /dev/accel/accel* node with DRM driver \"%s\"", ETHOSU_DRIVER_NAME);
    return -ENODEV;
}
