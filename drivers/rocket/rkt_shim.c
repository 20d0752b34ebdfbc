/* accel/rocket shim: an LD_PRELOAD library, in the spirit of Mesa's drm-shim, that lets the real rocket client
 * (rocket_kernel.c) run without hardware. The shared half (../shim_core.c: interposed libc calls, fake files, BOs,
 * mmap, VERSION, GEM_CLOSE, the fake sysfs) serves a fake /dev/accel/accel0; this half answers the rocket ioctls
 * from the simulated kernel (sim_kernel.c, the very backend sim=1 opens), so both paths run the same simulator.
 * Test-only: built, never installed (docs/shim.md).
 *
 *   TEFLON_ROCKET_SHIM_TARGET  the rocket row to impersonate (rk3588 when unset; rk3576)
 *   TEFLON_ROCKET_SHIM_NODE    the fake node's path (default /dev/accel/accel0)
 *   TEFLON_ROCKET_SHIM_LOG     file that gets one line per served call (the order tests check)
 *
 * Device discovery (rkt_detect): the NPU cores bound to the rocket platform driver, with the row's devicetree
 * compatible (/sys/bus/platform/drivers/rocket/<core>/of_node/compatible, the upstream layout), and an accel
 * class device; the machine's own /sys/class/accel and rocket driver directory are hidden.
 *
 * The UAPI semantics modelled (../../../shared/docs/rocket.md §5, restated in docs/hardware/rocket-sim.md):
 * DRM_IOCTL_VERSION "rocket"; CREATE_BO (size > 0; handle, IOVA and fake offset out; the IOVA is the simulated
 * kernel's); mmap of the offset: the simulated kernel's BO memory itself (the simulated kernel is coherent, so
 * the CPU's view is the device's; PREP_BO / FINI_BO check their arguments and the handle); GEM_CLOSE; SUBMIT:
 * the job and task arrays are read with the strides the caller gives, every listed handle must be a live BO of
 * this file, and the jobs go to the simulated kernel's submit in one call, synchronously. Argument errors are
 * returned by the ioctl. A submit the simulated kernel refuses or that faults the NPU is, like a job timeout on
 * silicon, not an ioctl error: its message goes to stderr and the log, and — a shim choice, so that tests see
 * it — PREP_BO of a BO one of its jobs writes fails until a later submit writes that BO: with the injected
 * fault's errno (ETIMEDOUT, EIO, EFAULT; TEFLON_SIM_FAULT, docs/faults.md), or EIO for a refused stream.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../shim_core.h"
#include "rocket.h"
#include "rocket_uapi.h"

/* A BO whose last writing submit failed, and the errno PREP_BO then reports for it. */
struct rkt_shim_failure {
    uint32_t handle;
    int rc;
};

/* The rocket device behind one open fake node: the simulated kernel's backend and the BOs whose last
 * writing submit failed. */
struct rkt_shim_dev {
    void *impl;
    const struct teflon_backend *ops;
    struct rkt_shim_failure *failed;
    size_t nfailed, cap;
    uint32_t submits;
};

/* 0, or the (negative) errno of the failed submit that last wrote `handle`. */
static int rkt_shim_failed(const struct rkt_shim_dev *d, uint32_t handle)
{
    for (size_t i = 0; i < d->nfailed; i++)
        if (d->failed[i].handle == handle)
            return d->failed[i].rc;
    return 0;
}

/* The errno a waiter sees for a failed submit: an injected fault's own (ETIMEDOUT for a hang or a lost
 * interrupt, EIO for a bus error, EFAULT for an IOMMU fault: drivers/fault.c); EIO for a stream the simulated
 * NPU refused. */
static int rkt_shim_wait_errno(int submit_rc)
{
    return submit_rc == -ETIMEDOUT || submit_rc == -EFAULT ? submit_rc : -EIO;
}

/* Record (rc < 0) or clear (rc = 0) the failure of the last submit writing `handle`. */
static void rkt_shim_mark(struct rkt_shim_dev *d, uint32_t handle, int rc)
{
    for (size_t i = 0; i < d->nfailed; i++)
        if (d->failed[i].handle == handle) {
            if (!rc)
                d->failed[i] = d->failed[--d->nfailed];
            else
                d->failed[i].rc = rc;
            return;
        }
    if (!rc)
        return;
    if (d->nfailed == d->cap) {
        const size_t cap = d->cap ? 2 * d->cap : 16;
        struct rkt_shim_failure *n = realloc(d->failed, cap * sizeof(*n));
        if (!n)
            return; /* only the shim's diagnosis is lost */
        d->failed = n;
        d->cap = cap;
    }
    d->failed[d->nfailed++] = (struct rkt_shim_failure){handle, rc};
}

/* ---- the ioctls ----------------------------------------------------------------------------------------- */

static int rkt_shim_create_bo(struct teflon_shim_file *f, struct drm_rocket_create_bo *c)
{
    struct rkt_shim_dev *d = f->dev;
    char msg[256] = "";
    teflon_bo bo;
    uint64_t offset = 0;
    int rc = c->size ? d->ops->bo_create(d->impl, c->size, &bo, msg, sizeof(msg)) : -EINVAL;
    if (!rc && (rc = teflon_shim_bo_add(f, &bo, &offset)))
        d->ops->bo_destroy(d->impl, &bo);
    if (!rc) {
        c->handle = bo.handle;
        c->dma_address = bo.iova;
        c->offset = offset;
    }
    teflon_shim_log("CREATE_BO size=%u = %s%u%s%s", c->size, rc ? "error " : "handle ", rc ? (unsigned)-rc : c->handle,
                    *msg ? ": " : "", msg);
    return rc;
}

/* PREP_BO (sync = 1) and FINI_BO share their checks: a live handle, reserved 0, and the simulated kernel's. */
static int rkt_shim_sync(struct teflon_shim_file *f, uint32_t handle, uint32_t reserved, int prep)
{
    struct rkt_shim_dev *d = f->dev;
    struct teflon_shim_bo *b = teflon_shim_bo_of(f, handle);
    char msg[256] = "";
    int rc = !b ? -ENOENT : reserved ? -EINVAL : 0;
    if (!rc)
        rc = (prep ? d->ops->cpu_prep : d->ops->cpu_fini)(d->impl, &b->bo, msg, sizeof(msg));
    if (!rc && prep && rkt_shim_failed(d, handle)) {
        rc = rkt_shim_failed(d, handle);
        snprintf(msg, sizeof(msg), "the last submit writing it failed");
    }
    teflon_shim_log("%s handle=%u%s%s%s%s%s", prep ? "PREP_BO" : "FINI_BO", handle, rc ? " = error " : "",
                    rc ? strerror(-rc) : "", *msg ? " (" : "", msg, *msg ? ")" : "");
    return rc;
}

/* Every handle of a job's list is a live BO of the file (the kernel looks each up before queueing). */
static int rkt_shim_check_handles(struct teflon_shim_file *f, const uint32_t *h, uint32_t n, char *msg,
                                  size_t msglen)
{
    if (n && !h) {
        snprintf(msg, msglen, "NULL BO handle array");
        return -EFAULT;
    }
    for (uint32_t i = 0; i < n; i++)
        if (!teflon_shim_bo_of(f, h[i])) {
            snprintf(msg, msglen, "unknown BO handle %u", h[i]);
            return -ENOENT;
        }
    return 0;
}

/* The job and task arrays of a submit as the simulated kernel takes them (family-neutral jobs whose tasks are
 * byte ranges of BOs). On success the caller frees *tasks. */
static int rkt_shim_read_jobs(struct teflon_shim_file *f, const struct drm_rocket_submit *s, teflon_job *jobs,
                              teflon_task **tasks, char *msg, size_t msglen)
{
    if (s->reserved || s->job_struct_size < sizeof(struct drm_rocket_job)) {
        snprintf(msg, msglen, "reserved %llu, job_struct_size %u", (unsigned long long)s->reserved,
                 s->job_struct_size);
        return -EINVAL;
    }
    if (s->job_count && !s->jobs) {
        snprintf(msg, msglen, "NULL job array");
        return -EFAULT;
    }
    uint64_t ntasks = 0;
    for (uint32_t i = 0; i < s->job_count; i++) {
        struct drm_rocket_job j;
        memcpy(&j, (const uint8_t *)(uintptr_t)s->jobs + (uint64_t)i * s->job_struct_size, sizeof(j));
        int rc = !j.task_count || j.task_struct_size < sizeof(struct drm_rocket_task) ? -EINVAL
                 : !j.tasks                                                            ? -EFAULT
                                                                                       : 0;
        if (rc)
            snprintf(msg, msglen, "job %u: %u tasks of stride %u", i, j.task_count, j.task_struct_size);
        if (!rc)
            rc = rkt_shim_check_handles(f, (const uint32_t *)(uintptr_t)j.in_bo_handles, j.in_bo_handle_count,
                                        msg, msglen);
        if (!rc)
            rc = rkt_shim_check_handles(f, (const uint32_t *)(uintptr_t)j.out_bo_handles, j.out_bo_handle_count,
                                        msg, msglen);
        if (rc)
            return rc;
        jobs[i] = (teflon_job){.ntasks = j.task_count, .nin = j.in_bo_handle_count, .nout = j.out_bo_handle_count,
                               .in_bos = (const uint32_t *)(uintptr_t)j.in_bo_handles,
                               .out_bos = (const uint32_t *)(uintptr_t)j.out_bo_handles};
        ntasks += j.task_count;
    }
    teflon_task *t = *tasks = calloc(ntasks ? ntasks : 1, sizeof(*t));
    if (!t) {
        snprintf(msg, msglen, "out of memory");
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < s->job_count; i++) {
        struct drm_rocket_job j;
        memcpy(&j, (const uint8_t *)(uintptr_t)s->jobs + (uint64_t)i * s->job_struct_size, sizeof(j));
        jobs[i].tasks = t;
        for (uint32_t k = 0; k < j.task_count; k++, t++) {
            struct drm_rocket_task kt;
            memcpy(&kt, (const uint8_t *)(uintptr_t)j.tasks + (uint64_t)k * j.task_struct_size, sizeof(kt));
            /* the regcmd's BO, for the neutral task's handle and offset; the simulated kernel fetches by IOVA
             * only, so a regcmd outside every BO faults there as on the silicon */
            if (kt.regcmd_count > UINT32_MAX / 8) {
                snprintf(msg, msglen, "job %u task %u: regcmd_count %u", i, k, kt.regcmd_count);
                free(*tasks);
                return -EINVAL;
            }
            const struct teflon_shim_bo *b = teflon_shim_bo_at(f, kt.regcmd);
            *t = (teflon_task){.bo = b ? b->bo.handle : 0, .bytes = kt.regcmd_count * 8u,
                               .offset = b ? kt.regcmd - b->bo.iova : 0, .iova = kt.regcmd};
        }
    }
    return 0;
}

static int rkt_shim_submit(struct teflon_shim_file *f, const struct drm_rocket_submit *s)
{
    struct rkt_shim_dev *d = f->dev;
    char msg[512] = "";
    teflon_job *jobs = calloc(s->job_count ? s->job_count : 1, sizeof(*jobs));
    teflon_task *tasks = NULL;
    int rc = jobs ? rkt_shim_read_jobs(f, s, jobs, &tasks, msg, sizeof(msg)) : -ENOMEM;
    if (rc) {
        teflon_shim_log("SUBMIT jobs=%u = error %s (%s)", s->job_count, strerror(-rc), msg);
        free(jobs);
        return rc;
    }
    teflon_submit_stats stats = {0};
    const int failed = d->ops->submit(d->impl, jobs, s->job_count, &stats, msg, sizeof(msg));
    const uint32_t n = ++d->submits;
    for (uint32_t i = 0; i < s->job_count; i++)
        for (uint32_t k = 0; k < jobs[i].nout; k++)
            rkt_shim_mark(d, jobs[i].out_bos[k], failed ? rkt_shim_wait_errno(failed) : 0);
    if (failed)
        fprintf(stderr, "[rocket-shim] submit %u failed (%s): %s\n", n, strerror(-failed), msg);
    teflon_shim_log("SUBMIT jobs=%u tasks=%llu = %s%s", s->job_count, (unsigned long long)stats.tasks,
                    failed ? "FAILED: " : "ok", failed ? msg : "");
    free(tasks);
    free(jobs);
    return 0;
}

/* ---- the family row of the shim --------------------------------------------------------------------------- */

static int rkt_shim_ioctl(struct teflon_shim_file *f, unsigned long req, void *arg)
{
    switch (req) {
    case DRM_IOCTL_ROCKET_CREATE_BO:
        return rkt_shim_create_bo(f, arg);
    case DRM_IOCTL_ROCKET_PREP_BO: {
        const struct drm_rocket_prep_bo *p = arg;
        return rkt_shim_sync(f, p->handle, p->reserved, 1); /* synchronous execution: never busy */
    }
    case DRM_IOCTL_ROCKET_FINI_BO: {
        const struct drm_rocket_fini_bo *p = arg;
        return rkt_shim_sync(f, p->handle, p->reserved, 0);
    }
    case DRM_IOCTL_ROCKET_SUBMIT:
        return rkt_shim_submit(f, arg);
    default:
        return teflon_shim_unknown_ioctl(req);
    }
}

static void *rkt_shim_open(const teflon_target *t, char *msg, size_t msglen)
{
    struct rkt_shim_dev *d = calloc(1, sizeof(*d));
    if (!d) {
        snprintf(msg, msglen, "out of memory");
        return NULL;
    }
    if (rkt_sim_open(t, &d->impl, &d->ops, msg, msglen)) {
        free(d);
        return NULL;
    }
    return d;
}

static void rkt_shim_close(void *dev)
{
    struct rkt_shim_dev *d = dev;
    d->ops->close(d->impl);
    free(d->failed);
    free(d);
}

static void rkt_shim_bo_release(void *dev, teflon_bo *bo)
{
    struct rkt_shim_dev *d = dev;
    d->ops->bo_destroy(d->impl, bo);
}

/* rkt_detect's view: one platform device per NPU core of the row bound to the rocket driver, each with the
 * row's core compatible (upstream: the accel device hangs off a facade device without a devicetree node). */
static int rkt_shim_tree(const teflon_target *t, const char *node, struct teflon_shim_tree *tree)
{
    const char *name = strrchr(node, '/');
    char path[256];
    snprintf(path, sizeof(path), "/sys/class/accel/%s/dev", name ? name + 1 : node);
    int rc = teflon_shim_tree_file(tree, path, "261:0\n", 6); /* ACCEL_MAJOR (include/drm/drm_accel.h), minor 0 */
    for (unsigned c = 0; !rc && c < t->cores; c++) {
        snprintf(path, sizeof(path), "/sys/bus/platform/drivers/rocket/npu-core%u/of_node/compatible", c);
        rc = teflon_shim_tree_file(tree, path, t->compatibles[0], strlen(t->compatibles[0]) + 1);
    }
    return rc;
}

static const char *const rkt_shim_faked[] = {"/sys/class/accel", "/sys/bus/platform/drivers/rocket", NULL};

const struct teflon_shim_family teflon_shim_family = {
    .family = "rocket",
    .tag = "rocket-shim",
    .env_prefix = "TEFLON_ROCKET_SHIM",
    .default_target = "rk3588",
    .default_node = "/dev/accel/accel0",
    .driver_name = "rocket",
    .version = {0, 0, 0}, /* illustrative: the client reads only the name */
    .faked_prefixes = rkt_shim_faked,
    .tree = rkt_shim_tree,
    .open = rkt_shim_open,
    .close = rkt_shim_close,
    .ioctl = rkt_shim_ioctl,
    .bo_release = rkt_shim_bo_release,
};
