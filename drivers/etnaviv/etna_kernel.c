/* Real etnaviv DRM client: the render node whose DRM driver is "etnaviv" and whose core (pipe) GET_PARAM
 * MODEL / REVISION match the row's chip_model / chip_revision. Softpin only: this client owns the NPU's
 * address space (VAs from GET_PARAM SOFTPIN_START_ADDR, 4 KiB aligned) and passes each BO's VA as `presumed`
 * with ETNA_SUBMIT_SOFTPIN, so relocations are resolved by the runner before submission and the kernel never
 * patches the stream. BOs: GEM_NEW (write-combined) + GEM_INFO + mmap, GEM_CLOSE to free; CPU access bracketed
 * by GEM_CPU_PREP / GEM_CPU_FINI. One GEM_SUBMIT per task (the stream is read from user memory: the task's
 * bytes in the command stream BO's mapping), then WAIT_FENCE on each task's fence in order (a failed wait names
 * its job and task, docs/faults.md), so a submit has retired when teflon_submit returns and a freed BO's VA can
 * be handed out again (etnaviv.md §7.1).
 * Written against the UAPI only (etna_uapi.h); facts in ../shared/docs/etnaviv.md §7 and
 * docs/hardware/etnaviv-kernel.md.
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
#include "etna.h"
#include "etna_family.h"
#include "etna_uapi.h"

/* DRM render node minors are 128..191 (drm_minor type RENDER, 64 minors per type in drm_drv.c). */
#define ETNA_RENDER_FIRST 128
#define ETNA_RENDER_LAST 191
/* Mesa waits 5 s in CPU_PREP (etnaviv.md §7.2); the same bound for the fence of a submit. */
#define ETNA_WAIT_SEC 5

struct etna_kbo {
    uint32_t handle;
    uint64_t va;
    uint64_t size;
    void *map;
};

struct etna_kdev {
    int fd;
    uint32_t pipe;
    struct etna_vas vas;
    struct etna_kbo *bos;
    size_t nbos, cap;
    int stuck;            /* a fence wait timed out: the job may still use its BOs and VAs */
    uint32_t stuck_fence; /* the last fence of that submit */
};

/* Absolute CLOCK_MONOTONIC deadline ETNA_WAIT_SEC from now (the UAPI's timeouts are absolute). */
static struct etna_drm_timespec etna_deadline(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (struct etna_drm_timespec){.tv_sec = now.tv_sec + ETNA_WAIT_SEC, .tv_nsec = now.tv_nsec};
}

static struct etna_kbo *etna_kdev_bo(struct etna_kdev *d, uint32_t handle)
{
    for (size_t i = 0; i < d->nbos; i++)
        if (d->bos[i].handle == handle)
            return &d->bos[i];
    return NULL;
}

static void etna_gem_close(int fd, uint32_t handle)
{
    struct teflon_drm_gem_close c = {.handle = handle};
    teflon_drm_ioctl(fd, TEFLON_DRM_IOCTL_GEM_CLOSE, &c);
}

/* GEM_NEW + GEM_INFO + mmap: a write-combined BO and its CPU mapping. */
static int etna_gem_new(struct etna_kdev *d, uint64_t size, struct etna_kbo *b, char *err, size_t errlen)
{
    struct etna_drm_gem_new n = {.size = size, .flags = ETNA_BO_WC};
    int rc = teflon_drm_ioctl(d->fd, ETNA_IOCTL_GEM_NEW, &n);
    if (rc) {
        teflon_errf(err, errlen, "DRM_IOCTL_ETNAVIV_GEM_NEW(%llu bytes): %s", (unsigned long long)size, strerror(-rc));
        return rc;
    }
    struct etna_drm_gem_info info = {.handle = n.handle};
    rc = teflon_drm_ioctl(d->fd, ETNA_IOCTL_GEM_INFO, &info);
    if (rc) {
        teflon_errf(err, errlen, "DRM_IOCTL_ETNAVIV_GEM_INFO(handle %u): %s", n.handle, strerror(-rc));
        etna_gem_close(d->fd, n.handle);
        return rc;
    }
    void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, d->fd, (off_t)info.offset);
    if (map == MAP_FAILED) {
        rc = -errno;
        teflon_errf(err, errlen, "mmap of etnaviv BO %u (%llu bytes): %s", n.handle, (unsigned long long)size,
                    strerror(-rc));
        etna_gem_close(d->fd, n.handle);
        return rc;
    }
    *b = (struct etna_kbo){.handle = n.handle, .size = size, .map = map};
    return 0;
}

static int etna_kbo_create(void *impl, uint64_t size, teflon_bo *out, char *err, size_t errlen)
{
    struct etna_kdev *d = impl;
    if (etna_grow((void **)&d->bos, &d->cap, d->nbos, sizeof(*d->bos))) {
        teflon_errf(err, errlen, "out of memory for the BO table");
        return -ENOMEM;
    }
    uint64_t va;
    int rc = etna_vas_alloc(&d->vas, size, &va);
    if (rc) {
        teflon_errf(err, errlen, "no room for a BO of %llu bytes in the NPU's softpin address space",
                    (unsigned long long)size);
        return rc;
    }
    struct etna_kbo b;
    rc = etna_gem_new(d, size, &b, err, errlen);
    if (rc) {
        etna_vas_free(&d->vas, va);
        return rc;
    }
    b.va = va;
    d->bos[d->nbos++] = b;
    *out = (teflon_bo){.handle = b.handle, .iova = va, .size = size, .map = b.map};
    return 0;
}

static void etna_kbo_destroy(void *impl, teflon_bo *bo)
{
    struct etna_kdev *d = impl;
    struct etna_kbo *b = etna_kdev_bo(d, bo->handle);
    if (!b)
        return;
    munmap(b->map, b->size);
    etna_gem_close(d->fd, b->handle);
    if (!d->stuck) /* a job that never retired may still reach this VA: never hand it out again */
        etna_vas_free(&d->vas, b->va);
    *b = d->bos[--d->nbos];
    bo->map = NULL;
}

static int etna_kbo_prep(void *impl, teflon_bo *bo, char *err, size_t errlen)
{
    struct etna_kdev *d = impl;
    struct etna_drm_gem_cpu_prep p = {.handle = bo->handle, .op = ETNA_PREP_READ, .timeout = etna_deadline()};
    int rc = teflon_drm_ioctl(d->fd, ETNA_IOCTL_GEM_CPU_PREP, &p);
    if (rc)
        teflon_errf(err, errlen, "DRM_IOCTL_ETNAVIV_GEM_CPU_PREP(handle %u, %d s): %s", bo->handle, ETNA_WAIT_SEC,
                    rc == -ETIMEDOUT || rc == -EBUSY ? "the NPU did not finish in time" : strerror(-rc));
    return rc;
}

static int etna_kbo_fini(void *impl, teflon_bo *bo, char *err, size_t errlen)
{
    struct etna_kdev *d = impl;
    struct etna_drm_gem_cpu_fini f = {.handle = bo->handle};
    int rc = teflon_drm_ioctl(d->fd, ETNA_IOCTL_GEM_CPU_FINI, &f);
    if (rc)
        teflon_errf(err, errlen, "DRM_IOCTL_ETNAVIV_GEM_CPU_FINI(handle %u): %s", bo->handle, strerror(-rc));
    return rc;
}

/* The job's BOs as the submit takes them: each handle once (the kernel refuses a BO listed twice), READ for
 * inputs, WRITE for outputs (both when a BO is both), presumed = its softpin VA. */
static int etna_submit_bos(struct etna_kdev *d, const teflon_job *j, uint32_t ji, struct etna_drm_gem_submit_bo *sb,
                           uint32_t *n, char *err, size_t errlen)
{
    *n = 0;
    for (uint32_t a = 0; a < j->nin + j->nout; a++) {
        const uint32_t h = a < j->nin ? j->in_bos[a] : j->out_bos[a - j->nin];
        const uint32_t flag = a < j->nin ? ETNA_SUBMIT_BO_READ : ETNA_SUBMIT_BO_WRITE;
        const struct etna_kbo *b = etna_kdev_bo(d, h);
        if (!b) {
            teflon_errf(err, errlen, "job %u: unknown BO handle %u", ji, h);
            return -ENOENT;
        }
        uint32_t k = 0;
        while (k < *n && sb[k].handle != h)
            k++;
        if (k == *n)
            sb[(*n)++] = (struct etna_drm_gem_submit_bo){.handle = h, .presumed = b->va};
        sb[k].flags |= flag;
    }
    return 0;
}

static int etna_submit_task(struct etna_kdev *d, const teflon_task *t, uint32_t ji, uint32_t ti,
                            struct etna_drm_gem_submit_bo *sb, uint32_t nsb, uint32_t *fence, char *err, size_t errlen)
{
    const struct etna_kbo *b = etna_kdev_bo(d, t->bo);
    if (!b) {
        teflon_errf(err, errlen, "job %u task %u: unknown command stream BO handle %u", ji, ti, t->bo);
        return -ENOENT;
    }
    const uint32_t *words;
    uint32_t nwords;
    int rc = etna_task_words(t, b->map, b->size, ji, ti, &words, &nwords, err, errlen);
    if (rc)
        return rc;
    struct etna_drm_gem_submit s = {
        .pipe = d->pipe, .exec_state = ETNA_PIPE_3D, .nr_bos = nsb, .stream_size = nwords * 4u,
        .bos = (uint64_t)(uintptr_t)sb, .stream = (uint64_t)(uintptr_t)words, .flags = ETNA_SUBMIT_SOFTPIN,
    };
    rc = teflon_drm_ioctl(d->fd, ETNA_IOCTL_GEM_SUBMIT, &s);
    if (rc) {
        teflon_errf(err, errlen, "job %u task %u: %s (DRM_IOCTL_ETNAVIV_GEM_SUBMIT(pipe %u, %u BOs, %u bytes): %s)",
                    ji, ti, teflon_fault_errno_text(rc), d->pipe, nsb, nwords * 4u, strerror(-rc));
        return rc;
    }
    *fence = s.fence;
    return 0;
}

static int etna_wait(struct etna_kdev *d, uint32_t fence, struct etna_drm_timespec deadline, char *err, size_t errlen)
{
    struct etna_drm_wait_fence w = {.pipe = d->pipe, .fence = fence, .timeout = deadline};
    int rc = teflon_drm_ioctl(d->fd, ETNA_IOCTL_WAIT_FENCE, &w);
    if (rc == -ETIMEDOUT || rc == -EBUSY)
        teflon_errf(err, errlen, "%s: fence %u did not signal within %d s (DRM_IOCTL_ETNAVIV_WAIT_FENCE)",
                    teflon_fault_errno_text(rc), fence, ETNA_WAIT_SEC);
    else if (rc)
        teflon_errf(err, errlen, "%s (DRM_IOCTL_ETNAVIV_WAIT_FENCE, fence %u: %s)", teflon_fault_errno_text(rc), fence,
                    strerror(-rc));
    return rc;
}

/* A submit left behind by a timed-out wait: the kernel recovers a hung core after its own job timeout
 * (etnaviv_sched.c), so once that fence has signalled the NPU and the BOs are free again. */
static int etna_unstick(struct etna_kdev *d, char *err, size_t errlen)
{
    char werr[256];
    const int rc = d->stuck ? etna_wait(d, d->stuck_fence, etna_deadline(), werr, sizeof(werr)) : 0;
    if (rc == -ETIMEDOUT || rc == -EBUSY) {
        teflon_errf(err, errlen, "an earlier etnaviv job still has not finished (%s); reopen the device", werr);
        return -EIO;
    }
    d->stuck = 0;
    return 0;
}

/* Which job and task each submitted fence belongs to, so a failed wait names them. */
struct etna_fence_of {
    uint32_t fence, job, task;
};

/* Waits for every submitted task in order (one deadline for all): the first that fails names its job and task;
 * everything queued is still waited for, since its BOs' VAs must not be reused before it retires. */
static int etna_wait_all(struct etna_kdev *d, const struct etna_fence_of *f, uint32_t n, const teflon_job *jobs,
                         uint32_t njobs, char *err, size_t errlen)
{
    const struct etna_drm_timespec deadline = etna_deadline();
    char werr[256];
    int rc = 0;
    for (uint32_t i = 0; i < n && !rc; i++) {
        rc = etna_wait(d, f[i].fence, deadline, werr, sizeof(werr));
        if (rc)
            teflon_errf(err, errlen, "job %u of %u, task %u of %u: %s", f[i].job + 1, njobs, f[i].task + 1,
                        jobs[f[i].job].ntasks, werr);
    }
    if (rc && rc != -ETIMEDOUT && rc != -EBUSY) {
        const int drain = etna_wait(d, f[n - 1].fence, deadline, werr, sizeof(werr));
        if (drain == -ETIMEDOUT || drain == -EBUSY)
            rc = -ETIMEDOUT;
    }
    if (rc == -ETIMEDOUT || rc == -EBUSY) {
        d->stuck = 1;
        d->stuck_fence = f[n - 1].fence;
    }
    return rc;
}

static int etna_kdev_submit(void *impl, const teflon_job *jobs, uint32_t njobs, teflon_submit_stats *stats, char *err,
                            size_t errlen)
{
    struct etna_kdev *d = impl;
    stats->tasks = 0;
    stats->macs = 0;
    int rc = etna_unstick(d, err, errlen);
    if (rc)
        return rc;
    uint32_t maxbos = 0, ntasks = 0, submitted = 0;
    for (uint32_t ji = 0; ji < njobs; ji++) {
        maxbos = jobs[ji].nin + jobs[ji].nout > maxbos ? jobs[ji].nin + jobs[ji].nout : maxbos;
        ntasks += jobs[ji].ntasks;
    }
    struct etna_drm_gem_submit_bo *sb = calloc(maxbos ? maxbos : 1, sizeof(*sb));
    struct etna_fence_of *fences = calloc(ntasks ? ntasks : 1, sizeof(*fences));
    if (!sb || !fences) {
        free(sb);
        free(fences);
        teflon_errf(err, errlen, "out of memory building the submit");
        return -ENOMEM;
    }
    for (uint32_t ji = 0; ji < njobs && !rc; ji++) {
        uint32_t nsb;
        rc = etna_submit_bos(d, &jobs[ji], ji, sb, &nsb, err, errlen);
        if (!rc && jobs[ji].ntasks == 0) {
            teflon_errf(err, errlen, "job %u has no tasks", ji);
            rc = -EINVAL;
        }
        for (uint32_t ti = 0; ti < jobs[ji].ntasks && !rc; ti++) {
            uint32_t fence;
            rc = etna_submit_task(d, &jobs[ji].tasks[ti], ji, ti, sb, nsb, &fence, err, errlen);
            if (!rc)
                fences[submitted++] = (struct etna_fence_of){fence, ji, ti};
        }
    }
    free(sb);
    if (submitted) {
        char werr[512];
        const int wrc = etna_wait_all(d, fences, submitted, jobs, njobs, werr, sizeof(werr));
        if (wrc && !rc)
            teflon_errf(err, errlen, "%s", werr);
        rc = rc ? rc : wrc;
    }
    stats->tasks = rc ? 0 : submitted;
    free(fences);
    return rc;
}

static void etna_kdev_close(void *impl)
{
    struct etna_kdev *d = impl;
    for (size_t i = 0; i < d->nbos; i++) {
        munmap(d->bos[i].map, d->bos[i].size);
        etna_gem_close(d->fd, d->bos[i].handle);
    }
    close(d->fd);
    etna_vas_fini(&d->vas);
    free(d->bos);
    free(d);
}

static const struct teflon_backend etna_kdev_ops = {
    .name = "etnaviv",
    .is_sim = 0,
    .bo_create = etna_kbo_create,
    .bo_destroy = etna_kbo_destroy,
    .cpu_prep = etna_kbo_prep,
    .cpu_fini = etna_kbo_fini,
    .submit = etna_kdev_submit,
    .close = etna_kdev_close,
};

/* ---- opening: the render node and the NPU core ------------------------------------------------------ */

static int etna_is_etnaviv(int fd)
{
    char name[32] = {0};
    struct teflon_drm_version v = {.name_len = sizeof(name) - 1, .name = (uint64_t)(uintptr_t)name};
    return teflon_drm_ioctl(fd, TEFLON_DRM_IOCTL_VERSION, &v) == 0 && strcmp(name, "etnaviv") == 0;
}

static int etna_get_param(int fd, uint32_t pipe, uint32_t param, uint64_t *value)
{
    struct etna_drm_param p = {.pipe = pipe, .param = param};
    const int rc = teflon_drm_ioctl(fd, ETNA_IOCTL_GET_PARAM, &p);
    *value = p.value;
    return rc;
}

/* The pipe whose MODEL/REVISION are the row's; -ENODEV with the cores seen appended to `seen`. */
static int etna_find_pipe(int fd, uint32_t model, uint32_t revision, uint32_t *pipe, char *seen, size_t seenlen)
{
    for (uint32_t p = 0; p < ETNA_MAX_PIPES; p++) {
        uint64_t m, r;
        /* a pipe without a core answers -ENXIO */
        if (etna_get_param(fd, p, ETNA_PARAM_GPU_MODEL, &m) || etna_get_param(fd, p, ETNA_PARAM_GPU_REVISION, &r))
            continue;
        if (m == model && r == revision) {
            *pipe = p;
            return 0;
        }
        const size_t used = strlen(seen);
        snprintf(seen + used, seenlen - used, "%s0x%llx/0x%llx", used ? ", " : "", (unsigned long long)m,
                 (unsigned long long)r);
    }
    return -ENODEV;
}

/* The NPU core on an open etnaviv node: 0 with *pipe and *start, or a message and -ENODEV / -ENOTSUP. */
static int etna_probe(int fd, const char *path, const teflon_target *t, uint32_t *pipe, uint64_t *start, char *seen,
                      size_t seenlen, char *err, size_t errlen)
{
    uint32_t model, revision;
    int rc = etna_ids_of(t, &model, &revision, err, errlen);
    if (rc)
        return rc;
    if (etna_find_pipe(fd, model, revision, pipe, seen, seenlen))
        return -ENODEV;
    /* ~0 (or an old kernel's -EINVAL for the unknown param): MMUv1, userspace cannot place BOs */
    if (etna_get_param(fd, *pipe, ETNA_PARAM_SOFTPIN_START_ADDR, start) || *start == ~0ull ||
        *start % ETNA_VA_PAGE || *start >= ETNA_VA_END) {
        teflon_errf(err, errlen, "%s: the %s NPU (pipe %u) has no softpin support (GET_PARAM SOFTPIN_START_ADDR); "
                    "a kernel >= 6.7 (A311D) / 6.8 (i.MX8MP) is needed", path, t->name, *pipe);
        return -ENOTSUP;
    }
    return 0;
}

static int etna_kdev_new(int fd, uint32_t pipe, uint64_t start, void **impl, const struct teflon_backend **ops,
                         char *err, size_t errlen)
{
    struct etna_kdev *d = calloc(1, sizeof(*d));
    if (!d) {
        close(fd);
        teflon_errf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    d->fd = fd;
    d->pipe = pipe;
    etna_vas_init(&d->vas, start, ETNA_VA_END);
    *impl = d;
    *ops = &etna_kdev_ops;
    return 0;
}

int etna_kernel_open(const teflon_target *t, void **impl, const struct teflon_backend **ops, char *err,
                     size_t errlen)
{
    char seen[256] = "";
    int denied = 0;
    for (int minor = ETNA_RENDER_FIRST; minor <= ETNA_RENDER_LAST; minor++) {
        char path[32];
        snprintf(path, sizeof(path), "/dev/dri/renderD%d", minor);
        const int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0) {
            denied |= errno == EACCES;
            continue;
        }
        uint32_t pipe;
        uint64_t start;
        int rc = etna_is_etnaviv(fd) ? etna_probe(fd, path, t, &pipe, &start, seen, sizeof(seen), err, errlen)
                                     : -ENODEV;
        if (rc == 0)
            return etna_kdev_new(fd, pipe, start, impl, ops, err, errlen);
        close(fd);
        if (rc != -ENODEV)
            return -ENODEV; /* the NPU is here but unusable: the message says why; auto mode falls back */
    }
    uint32_t model = 0, revision = 0;
    etna_ids_of(t, &model, &revision, NULL, 0);
    teflon_errf(err, errlen, "no %s NPU: no /dev/dri/renderD* node with DRM driver \"etnaviv\" has a core with model/"
                "revision 0x%x/0x%x%s%s%s%s", t->name, model, revision, *seen ? " (etnaviv cores seen: " : "", seen,
                *seen ? ")" : "", denied ? "; some render nodes could not be opened (permission denied)" : "");
    return -ENODEV;
}
