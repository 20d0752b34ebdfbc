/* Family dispatch for drivers/driver.h: picks the backend by SoC name and sim mode, owns the
 * device's error message and last-submit counters. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "driver.h"
#include "errmsg.h"

#define ERRLEN 1024

struct teflon_dev {
    const struct teflon_backend *ops;
    void *impl;
    char soc[16];
    teflon_submit_stats stats;
    char err[ERRLEN];
};

struct family {
    const char *soc;
    int (*open_real)(const char *, void **, const struct teflon_backend **, char *, size_t);
    int (*open_sim)(const char *, void **, const struct teflon_backend **, char *, size_t);
};

static const struct family families[] = {
    {"rk3588", rocket_kernel_open, rocket_sim_open},
    {"rk3576", rocket_kernel_open, rocket_sim_open},
};

int teflon_dev_open(const char *soc, int sim, teflon_dev **out, char *err, size_t errlen)
{
    *out = NULL;
    const struct family *f = NULL;
    for (size_t i = 0; soc && i < sizeof(families) / sizeof(families[0]); i++)
        if (strcmp(families[i].soc, soc) == 0)
            f = &families[i];
    if (!f) {
        teflon_errf(err, errlen, "unknown SoC \"%s\" (known: rk3588, rk3576)", soc ? soc : "(null)");
        return -EINVAL;
    }
    if (sim < -1 || sim > 1) {
        teflon_errf(err, errlen, "sim must be -1 (auto), 0 (real device) or 1 (simulator), not %d", sim);
        return -EINVAL;
    }
    teflon_dev *d = calloc(1, sizeof(*d));
    if (!d) {
        teflon_errf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    snprintf(d->soc, sizeof(d->soc), "%s", soc);
    int rc = -ENODEV;
    if (sim != 1) {
        rc = f->open_real(soc, &d->impl, &d->ops, d->err, sizeof(d->err));
        if (rc && sim == 0) {
            teflon_errf(err, errlen, "%s (sim=0 forbids the simulator)", d->err);
            free(d);
            return rc;
        }
    }
    if (rc) {
        rc = f->open_sim(soc, &d->impl, &d->ops, d->err, sizeof(d->err));
        if (rc) {
            teflon_errf(err, errlen, "%s", d->err);
            free(d);
            return rc;
        }
    }
    d->err[0] = 0;
    *out = d;
    return 0;
}

void teflon_dev_close(teflon_dev *dev)
{
    if (!dev)
        return;
    dev->ops->close(dev->impl);
    free(dev);
}

const char *teflon_dev_error(const teflon_dev *dev)
{
    return dev->err;
}

int teflon_detect_soc(char *out, size_t len)
{
    if (out && len)
        out[0] = '\0';
    const char *root = getenv("TEFLON_SYSFS_ROOT");
    return rocket_detect_soc(root ? root : "", out, len);
}

const char *teflon_dev_soc(const teflon_dev *dev)
{
    return dev->soc;
}

int teflon_dev_is_sim(const teflon_dev *dev)
{
    return dev->ops->is_sim;
}

int teflon_bo_create(teflon_dev *dev, uint64_t size, teflon_bo *out)
{
    memset(out, 0, sizeof(*out));
    return dev->ops->bo_create(dev->impl, size, out, dev->err, sizeof(dev->err));
}

void teflon_bo_destroy(teflon_dev *dev, teflon_bo *bo)
{
    if (bo && bo->handle)
        dev->ops->bo_destroy(dev->impl, bo);
}

int teflon_bo_cpu_prep(teflon_dev *dev, teflon_bo *bo)
{
    return dev->ops->cpu_prep(dev->impl, bo, dev->err, sizeof(dev->err));
}

int teflon_bo_cpu_fini(teflon_dev *dev, teflon_bo *bo)
{
    return dev->ops->cpu_fini(dev->impl, bo, dev->err, sizeof(dev->err));
}

int teflon_submit(teflon_dev *dev, const teflon_job *jobs, uint32_t njobs)
{
    memset(&dev->stats, 0, sizeof(dev->stats));
    return dev->ops->submit(dev->impl, jobs, njobs, &dev->stats, dev->err, sizeof(dev->err));
}

void teflon_dev_last_stats(const teflon_dev *dev, teflon_submit_stats *out)
{
    *out = dev->stats;
}
