/* Real accel/rocket client: /dev/accel/accel* whose DRM driver name is "rocket".
 * BOs: CREATE_BO + mmap of the fake offset; GEM_CLOSE to free; PREP_BO/FINI_BO for cache
 * maintenance; one SUBMIT per teflon_submit (ordering between jobs comes from their BO lists).
 * Written against the UAPI only (rocket_uapi.h); facts in ../shared/docs/rocket.md §5.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <limits.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../errmsg.h"
#include "../fault.h"
#include "../targets.h"
#include "rkt_family.h"
#include "rocket.h"
#include "rocket_uapi.h"

#define MAX_ACCEL_NODES 16
/* How long PREP_BO waits for the NPU's writers. The kernel itself times a job out after 500 ms and resets the
 * core (rocket_job.c); this bound only keeps a wedged kernel from blocking the caller forever (Mesa passes
 * INT64_MAX). */
#define RKT_WAIT_SEC 5

struct rk_dev {
    int fd;
    char path[32]; /* the node, opened again for a peer file */
};

static int is_rocket(int fd)
{
    char name[32] = {0};
    struct teflon_drm_version v;
    memset(&v, 0, sizeof(v));
    v.name_len = sizeof(name) - 1;
    v.name = (uint64_t)(uintptr_t)name;
    if (teflon_drm_ioctl(fd, TEFLON_DRM_IOCTL_VERSION, &v))
        return 0;
    return strcmp(name, "rocket") == 0;
}

static int rk_bo_create(void *impl, uint64_t size, teflon_bo *out, char *err, size_t errlen)
{
    struct rk_dev *d = impl;
    if (size == 0 || size > UINT32_MAX) {
        teflon_errf(err, errlen, "BO size %llu not supported by DRM_IOCTL_ROCKET_CREATE_BO", (unsigned long long)size);
        return -EINVAL;
    }
    struct drm_rocket_create_bo c = {.size = (uint32_t)size};
    int rc = teflon_drm_ioctl(d->fd, DRM_IOCTL_ROCKET_CREATE_BO, &c);
    if (rc) {
        teflon_errf(err, errlen, "DRM_IOCTL_ROCKET_CREATE_BO(%llu bytes): %s", (unsigned long long)size, strerror(-rc));
        return rc;
    }
    void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, d->fd, (off_t)c.offset);
    if (map == MAP_FAILED) {
        rc = -errno;
        struct teflon_drm_gem_close gc = {.handle = c.handle};
        teflon_drm_ioctl(d->fd, TEFLON_DRM_IOCTL_GEM_CLOSE, &gc);
        teflon_errf(err, errlen, "mmap of rocket BO (%llu bytes): %s", (unsigned long long)size, strerror(-rc));
        return rc;
    }
    if (c.dma_address + size > (1ull << 32)) {
        /* every NPU address register is 32 bits wide; RK356x's NPU and its IOMMU reach 32 bits only (rk3568.md §5) */
        munmap(map, size);
        struct teflon_drm_gem_close gc = {.handle = c.handle};
        teflon_drm_ioctl(d->fd, TEFLON_DRM_IOCTL_GEM_CLOSE, &gc);
        teflon_errf(err, errlen, "rocket BO at device address 0x%llx (+%llu bytes) lies beyond the NPU's 32-bit "
                    "address registers: this kernel's IOMMU domain is not limited to 32 bits",
                    (unsigned long long)c.dma_address, (unsigned long long)size);
        return -ERANGE;
    }
    *out = (teflon_bo){.handle = c.handle, .iova = c.dma_address, .size = size, .map = map};
    return 0;
}

static void rk_bo_destroy(void *impl, teflon_bo *bo)
{
    struct rk_dev *d = impl;
    if (bo->map)
        munmap(bo->map, bo->size);
    struct teflon_drm_gem_close gc = {.handle = bo->handle};
    teflon_drm_ioctl(d->fd, TEFLON_DRM_IOCTL_GEM_CLOSE, &gc);
    bo->map = NULL;
}

static int rk_cpu_prep(void *impl, teflon_bo *bo, char *err, size_t errlen)
{
    struct rk_dev *d = impl;
    /* timeout_ns is absolute, CLOCK_MONOTONIC (drm_timeout_abs_to_jiffies) */
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    const int64_t deadline = ((int64_t)now.tv_sec + RKT_WAIT_SEC) * 1000000000 + now.tv_nsec;
    struct drm_rocket_prep_bo p = {.handle = bo->handle, .timeout_ns = deadline};
    int rc = teflon_drm_ioctl(d->fd, DRM_IOCTL_ROCKET_PREP_BO, &p);
    if (rc == -ETIMEDOUT || rc == -EBUSY)
        teflon_errf(err, errlen, "%s: no completion within %d s (DRM_IOCTL_ROCKET_PREP_BO, handle %u)",
                    teflon_fault_errno_text(rc), RKT_WAIT_SEC, bo->handle);
    else if (rc)
        teflon_errf(err, errlen, "%s (DRM_IOCTL_ROCKET_PREP_BO, handle %u: %s)", teflon_fault_errno_text(rc),
                    bo->handle, strerror(-rc));
    return rc;
}

static int rk_cpu_fini(void *impl, teflon_bo *bo, char *err, size_t errlen)
{
    struct rk_dev *d = impl;
    struct drm_rocket_fini_bo f = {.handle = bo->handle};
    int rc = teflon_drm_ioctl(d->fd, DRM_IOCTL_ROCKET_FINI_BO, &f);
    if (rc)
        teflon_errf(err, errlen, "DRM_IOCTL_ROCKET_FINI_BO(handle %u): %s", bo->handle, strerror(-rc));
    return rc;
}

static int rk_submit(void *impl, const teflon_job *jobs, uint32_t njobs, teflon_submit_stats *stats, char *err,
                     size_t errlen)
{
    struct rk_dev *d = impl;
    uint64_t ntasks = 0;
    for (uint32_t i = 0; i < njobs; i++)
        ntasks += jobs[i].ntasks;
    struct drm_rocket_job *kj = calloc(njobs ? njobs : 1, sizeof(*kj));
    struct drm_rocket_task *kt = calloc(ntasks ? ntasks : 1, sizeof(*kt));
    int rc = 0;
    if (!kj || !kt) {
        teflon_errf(err, errlen, "out of memory building the submit");
        rc = -ENOMEM;
        goto out;
    }
    uint64_t ti = 0;
    for (uint32_t i = 0; i < njobs; i++) {
        const teflon_job *j = &jobs[i];
        kj[i].tasks = (uint64_t)(uintptr_t)&kt[ti];
        kj[i].task_count = j->ntasks;
        kj[i].task_struct_size = sizeof(struct drm_rocket_task);
        kj[i].in_bo_handles = (uint64_t)(uintptr_t)j->in_bos;
        kj[i].in_bo_handle_count = j->nin;
        kj[i].out_bo_handles = (uint64_t)(uintptr_t)j->out_bos;
        kj[i].out_bo_handle_count = j->nout;
        for (uint32_t t = 0; t < j->ntasks; t++, ti++) {
            struct rkt_regcmd task;
            rc = rkt_task_regcmd(&j->tasks[t], i, t, &task, err, errlen);
            if (rc)
                goto out;
            kt[ti].regcmd = task.iova;
            kt[ti].regcmd_count = task.count;
        }
    }
    struct drm_rocket_submit s = {.jobs = (uint64_t)(uintptr_t)kj, .job_count = njobs,
                                  .job_struct_size = sizeof(struct drm_rocket_job)};
    rc = teflon_drm_ioctl(d->fd, DRM_IOCTL_ROCKET_SUBMIT, &s);
    if (rc)
        teflon_errf(err, errlen, "jobs 1-%u of %u: %s (DRM_IOCTL_ROCKET_SUBMIT: %s)", njobs, njobs,
                    teflon_fault_errno_text(rc), strerror(-rc));
    stats->tasks = rc ? 0 : ntasks;
    stats->macs = 0;
out:
    free(kj);
    free(kt);
    return rc;
}

static void rk_close(void *impl)
{
    struct rk_dev *d = impl;
    close(d->fd);
    free(d);
}

/* The kernel spreads jobs over every core it has; `cores` only bounds how many files the runner opens (one
 * scheduler entity each, docs/hardware/rocket.md "multi-core"), so there is nothing to set here. */
static int rk_set_cores(void *impl, unsigned cores, char *err, size_t errlen)
{
    (void)impl;
    (void)cores;
    (void)err;
    (void)errlen;
    return 0;
}

static int rk_open_peer(void *impl, void **peer, char *err, size_t errlen)
{
    const struct rk_dev *d = impl;
    struct rk_dev *p = calloc(1, sizeof(*p));
    if (!p) {
        teflon_errf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    p->fd = open(d->path, O_RDWR | O_CLOEXEC);
    if (p->fd < 0) {
        const int rc = -errno;
        teflon_errf(err, errlen, "opening %s a second time: %s", d->path, strerror(errno));
        free(p);
        return rc;
    }
    snprintf(p->path, sizeof(p->path), "%s", d->path);
    *peer = p;
    return 0;
}

static const struct teflon_backend rk_ops = {
    .name = "rocket",
    .is_sim = 0,
    .bo_create = rk_bo_create,
    .bo_destroy = rk_bo_destroy,
    .cpu_prep = rk_cpu_prep,
    .cpu_fini = rk_cpu_fini,
    .submit = rk_submit,
    .close = rk_close,
    .set_cores = rk_set_cores,
    .open_peer = rk_open_peer,
};

/* ---- SoC detection: the devicetree compatible of the NPU cores -------------------------------- */

/* The rocket row whose devicetree compatibles (of an NPU core node: Linux Documentation/devicetree/bindings/
 * npu/rockchip,rk3588-rknn-core.yaml; RK3576 from the enablement series, rocket.md §6.3) prefix `c`, or NULL.
 * A prefix match also covers the "-top" variant of an older binding. */
static const teflon_target *core_target(const char *c)
{
    for (size_t i = 0; i < TEFLON_NUM_TARGETS; i++) {
        const teflon_target *t = teflon_target_at(i);
        if (strcmp(t->family, "rocket") != 0)
            continue;
        for (const char *const *k = t->compatibles; *k; k++)
            if (strncmp(c, *k, strlen(*k)) == 0)
                return t;
    }
    return NULL;
}

/* Match one of_node/compatible file (NUL-separated strings): 1 known target (name in out), 2 a Rockchip NPU
 * core of another SoC (the compatible in out), 0 no NPU core. */
static int match_compatible(const char *path, char *out, size_t len)
{
    char buf[512];
    const size_t n = teflon_read_compatible(path, buf, sizeof(buf));
    int found = 0;
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1) {
        const char *c = buf + i;
        const teflon_target *t = core_target(c);
        if (t) {
            snprintf(out, len, "%s", t->name);
            return 1;
        }
        if (!found && strncmp(c, "rockchip,", 9) == 0 && strstr(c, "-rknn-core")) {
            snprintf(out, len, "%s", c);
            found = 2;
        }
    }
    return found;
}

/* Scan <root><dir>/<entry>/<leaf> for every entry of dir whose name starts with prefix: as
 * match_compatible, a known SoC winning over another core's unknown compatible. */
static int scan(const char *root, const char *dir, const char *prefix, const char *leaf, char *out, size_t len)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s%s", root, dir);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    int found = 0;
    char got[256], other[256] = "";
    for (struct dirent *e; found != 1 && (e = readdir(d));) {
        if (e->d_name[0] == '.' || strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        snprintf(path, sizeof(path), "%s%s/%s/%s", root, dir, e->d_name, leaf);
        const int m = match_compatible(path, got, sizeof(got));
        if (m == 1) {
            snprintf(out, len, "%s", got);
            found = 1;
        } else if (m == 2 && !found) {
            snprintf(other, sizeof(other), "%s", got);
            found = 2;
        }
    }
    closedir(d);
    if (found == 2)
        snprintf(out, len, "%s", other);
    return found;
}

int rkt_detect(const struct teflon_family *f, const char *root, char *out, size_t len)
{
    (void)f;
    /* A kernel whose accel device is a core itself carries the compatible there; upstream rocket hangs
     * the accel device off a facade platform device ("rknn", no devicetree node) and binds the cores,
     * one platform device per devicetree core node, to the "rocket" platform driver. */
    static const struct {
        const char *dir, *prefix, *leaf;
    } places[] = {
        {"/sys/class/accel", "accel", "device/of_node/compatible"},
        {"/sys/bus/platform/drivers/rocket", "", "of_node/compatible"},
    };
    int unknown = 0;
    for (size_t i = 0; i < sizeof(places) / sizeof(places[0]); i++) {
        const int m = scan(root, places[i].dir, places[i].prefix, places[i].leaf, out, len);
        if (m == 1)
            return 0;
        unknown |= m == 2;
    }
    if (!unknown && len)
        out[0] = '\0';
    return unknown ? -ENOTSUP : -ENODEV;
}

/* ---- the device --------------------------------------------------------------------------------- */

int rkt_kernel_open(const teflon_target *t, void **impl, const struct teflon_backend **ops, char *err, size_t errlen)
{
    /* One accel device serves all of the SoC's cores; the streams are SoC specific, so refuse a device
     * whose cores the devicetree names as another SoC (when it can be told). */
    char found[64];
    const char *root = getenv("TEFLON_SYSFS_ROOT");
    /* rows of one generation share the NPU (rk3566 / rk3568: one compatible, rocket.md and rk3568.md §1) */
    const teflon_target *ft = NULL;
    if (rkt_detect(NULL, root ? root : "", found, sizeof(found)) == 0 && strcmp(found, t->name) != 0 &&
        !((ft = teflon_target_named(found)) && strcmp(ft->generation, t->generation) == 0)) {
        teflon_errf(err, errlen, "the rocket NPU here is an %s (devicetree compatible of its cores), not %s", found,
                    t->name);
        return -ENODEV;
    }
    for (int i = 0; i < MAX_ACCEL_NODES; i++) {
        char path[32];
        snprintf(path, sizeof(path), "/dev/accel/accel%d", i);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
            continue;
        if (!is_rocket(fd)) {
            close(fd);
            continue;
        }
        struct rk_dev *d = calloc(1, sizeof(*d));
        if (!d) {
            close(fd);
            teflon_errf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        d->fd = fd;
        snprintf(d->path, sizeof(d->path), "%s", path);
        *impl = d;
        *ops = &rk_ops;
        return 0;
    }
    teflon_errf(err, errlen, "no rocket NPU: no /dev/accel/accel* node with DRM driver \"rocket\"");
    return -ENODEV;
}
