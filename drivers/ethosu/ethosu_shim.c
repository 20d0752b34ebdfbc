/* accel/ethosu shim: an LD_PRELOAD library, in the spirit of Mesa's drm-shim, that lets the real ethosu client
 * (ethosu_kernel.c) run without hardware. The shared half (../shim_core.c: interposed libc calls, fake files, BOs,
 * mmap, VERSION, GEM_CLOSE, the fake sysfs) serves a fake /dev/accel/accel0; this half answers the accel/ethosu
 * ioctls from the simulated kernel (ethosu_kernel_sim.c, the very kernel sim=1 runs), so the command-stream
 * validator, the job checks and the NPU are the same on both paths. Test-only: built, never installed
 * (docs/shim.md).
 *
 *   TEFLON_ETHOSU_SHIM_TARGET  the ethosu row to impersonate (imx93 when unset)
 *   TEFLON_ETHOSU_SHIM_NODE    the fake node's path (default /dev/accel/accel0)
 *   TEFLON_ETHOSU_SHIM_LOG     file that gets one line per served call (the order tests check)
 *   TEFLON_SIM_FAULT           kind[@N] (docs/faults.md): the Nth job fails its writers' next BO_WAIT
 *
 * Device discovery (ethosu_detect): /sys/class/accel/accel0/device is a platform device bound to the "ethosu"
 * driver whose devicetree node carries the row's compatibles.
 *
 * The UAPI semantics are the simulated kernel's (docs/hardware/ethosu-kernel.md). BO memory is the simulated
 * kernel's own, so the CPU's view is the device's; BO_MMAP_OFFSET answers the shim's fake offset. A job the NPU
 * faults on, like on silicon, fails no ioctl: its message goes to stderr and the log, and BO_WAIT of a BO it
 * writes fails once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../shim_core.h"
#include "ethosu_ksim.h"
#include "ethosu_uapi.h"

/* Adds the simulated kernel's BO `handle` to the shim's table (for mmap and GEM_CLOSE). */
static int ethosu_shim_add(struct teflon_shim_file *f, uint32_t handle)
{
    uint64_t size = 0, offset;
    void *mem = ethosu_ksim_bo_map(f->dev, handle, &size);
    const teflon_bo bo = {.handle = handle, .size = size, .map = mem};
    const int rc = teflon_shim_bo_add(f, &bo, &offset);
    if (rc) {
        struct teflon_drm_gem_close gc = {.handle = handle};
        ethosu_ksim_ioctl(f->dev, TEFLON_DRM_IOCTL_GEM_CLOSE, &gc);
    }
    return rc;
}

static const char *ethosu_shim_err(int rc)
{
    return rc ? strerror(-rc) : "ok";
}

static int ethosu_shim_bo_create(struct teflon_shim_file *f, struct ethosu_drm_bo_create *c)
{
    const uint64_t asked = c->size;
    int rc = ethosu_ksim_ioctl(f->dev, ETHOSU_IOCTL_BO_CREATE, c);
    if (!rc)
        rc = ethosu_shim_add(f, c->handle);
    teflon_shim_log("BO_CREATE size=%llu flags=0x%x = %s handle=%u", (unsigned long long)asked, c->flags,
                    ethosu_shim_err(rc), rc ? 0 : c->handle);
    return rc;
}

static int ethosu_shim_mmap_offset(struct teflon_shim_file *f, struct ethosu_drm_bo_mmap_offset *m)
{
    const struct teflon_shim_bo *b = m->pad ? NULL : teflon_shim_bo_of(f, m->handle);
    const int rc = m->pad ? -EINVAL : b ? 0 : -ENOENT;
    if (b)
        m->offset = b->offset;
    teflon_shim_log("BO_MMAP_OFFSET handle=%u = %s", m->handle, ethosu_shim_err(rc));
    return rc;
}

static int ethosu_shim_cmdstream(struct teflon_shim_file *f, struct ethosu_drm_cmdstream_bo_create *c)
{
    int rc = ethosu_ksim_ioctl(f->dev, ETHOSU_IOCTL_CMDSTREAM_BO_CREATE, c);
    char why[512] = "";
    if (rc)
        ethosu_ksim_last_job(f->dev, NULL, why, sizeof(why));
    else
        rc = ethosu_shim_add(f, c->handle);
    teflon_shim_log("CMDSTREAM_BO_CREATE words=%u = %s handle=%u%s%s", c->size / 4, ethosu_shim_err(rc),
                    rc ? 0 : c->handle, *why ? " " : "", why);
    return rc;
}

static int ethosu_shim_submit(struct teflon_shim_file *f, struct ethosu_drm_submit *s)
{
    const int rc = ethosu_ksim_ioctl(f->dev, ETHOSU_IOCTL_SUBMIT, s);
    char why[512] = "";
    const int failed = ethosu_ksim_last_job(f->dev, NULL, why, sizeof(why));
    const struct ethosu_drm_job *j = (const struct ethosu_drm_job *)(uintptr_t)s->jobs;
    char regions[128] = "";
    for (int r = 0, n = 0; j && s->job_count && r < ETHOSU_MAX_REGIONS; r++)
        if (j->region_bo_handles[r])
            n += snprintf(regions + n, sizeof(regions) - (size_t)n, " r%d=%u", r, j->region_bo_handles[r]);
    if (!rc && failed)
        fprintf(stderr, "[ethosu-shim] job failed (%s): %s\n", strerror(-failed), why);
    teflon_shim_log("SUBMIT jobs=%u cmd=%u sram=%u%s = %s%s%s", s->job_count, j && s->job_count ? j->cmd_bo : 0,
                    j && s->job_count ? j->sram_size : 0, regions, ethosu_shim_err(rc),
                    rc || failed ? " " : "", rc || failed ? why : "");
    return rc;
}

static int ethosu_shim_ioctl(struct teflon_shim_file *f, unsigned long req, void *arg)
{
    int rc;
    switch (req) {
    case ETHOSU_IOCTL_DEV_QUERY: {
        struct ethosu_drm_dev_query *q = arg;
        rc = ethosu_ksim_ioctl(f->dev, req, arg);
        teflon_shim_log("DEV_QUERY type=%u size=%u = %s", q->type, q->size, ethosu_shim_err(rc));
        return rc;
    }
    case ETHOSU_IOCTL_BO_CREATE:
        return ethosu_shim_bo_create(f, arg);
    case ETHOSU_IOCTL_BO_MMAP_OFFSET:
        return ethosu_shim_mmap_offset(f, arg);
    case ETHOSU_IOCTL_BO_WAIT: {
        const struct ethosu_drm_bo_wait *w = arg;
        rc = teflon_shim_bo_of(f, w->handle) ? ethosu_ksim_ioctl(f->dev, req, arg) : -EINVAL;
        teflon_shim_log("BO_WAIT handle=%u = %s", w->handle, ethosu_shim_err(rc));
        return rc;
    }
    case ETHOSU_IOCTL_CMDSTREAM_BO_CREATE:
        return ethosu_shim_cmdstream(f, arg);
    case ETHOSU_IOCTL_SUBMIT:
        return ethosu_shim_submit(f, arg);
    default:
        return teflon_shim_unknown_ioctl(req);
    }
}

static void *ethosu_shim_open(const teflon_target *t, char *msg, size_t msglen)
{
    return ethosu_ksim_create(t, msg, msglen);
}

static void ethosu_shim_close(void *dev)
{
    ethosu_ksim_destroy(dev);
}

static void ethosu_shim_bo_release(void *dev, teflon_bo *bo)
{
    struct teflon_drm_gem_close gc = {.handle = bo->handle};
    ethosu_ksim_ioctl(dev, TEFLON_DRM_IOCTL_GEM_CLOSE, &gc);
}

/* ethosu_detect's view: accel0's device is the NPU's platform device, bound to "ethosu", with the row's
 * devicetree compatibles (NUL-separated). */
static int ethosu_shim_tree(const teflon_target *t, const char *node, struct teflon_shim_tree *tree)
{
    const char *name = strrchr(node, '/');
    char path[256], compatible[256];
    size_t n = 0;
    for (const char *const *c = t->compatibles; *c && n < sizeof(compatible); c++)
        n += (size_t)snprintf(compatible + n, sizeof(compatible) - n, "%s", *c) + 1;
    n = n < sizeof(compatible) ? n : sizeof(compatible);
    int rc = teflon_shim_tree_file(tree, "/sys/devices/platform/soc/4a900000.npu/of_node/compatible", compatible, n);
    snprintf(path, sizeof(path), "/sys/class/accel/%s/device", name ? name + 1 : node);
    if (!rc)
        rc = teflon_shim_tree_link(tree, path, "../../../devices/platform/soc/4a900000.npu");
    if (!rc)
        rc = teflon_shim_tree_link(tree, "/sys/devices/platform/soc/4a900000.npu/driver",
                                   "../../../../bus/platform/drivers/ethosu");
    return rc;
}

static const char *const ethosu_shim_faked[] = {"/sys/class/accel", "/sys/devices/platform/soc/4a900000.npu", NULL};

const struct teflon_shim_family teflon_shim_family = {
    .family = "ethosu",
    .tag = "ethosu-shim",
    .env_prefix = "TEFLON_ETHOSU_SHIM",
    .default_target = "imx93",
    .default_node = "/dev/accel/accel0",
    .driver_name = ETHOSU_DRIVER_NAME,
    .version = {1, 0, 0}, /* ethosu_drv.c: "1.0 - initial interface" */
    .faked_prefixes = ethosu_shim_faked,
    .tree = ethosu_shim_tree,
    .open = ethosu_shim_open,
    .close = ethosu_shim_close,
    .ioctl = ethosu_shim_ioctl,
    .bo_release = ethosu_shim_bo_release,
};
