/* Family dispatch for drivers/driver.h: picks the family by the target row's `family` and the backend by
 * sim mode, owns the device's error message and last-submit counters, and asks the families which NPU
 * this machine has. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "driver.h"
#include "errmsg.h"
#include "etnaviv/etna.h"
#include "ethosu/ethosu.h"
#include "rocket/rocket.h"
#include "targets.h"

#define ERRLEN 1024

struct teflon_dev {
    const struct teflon_backend *ops;
    void *impl;
    const teflon_target *target;
    unsigned cores;
    teflon_submit_stats stats;
    char err[ERRLEN];
};

/* Every family this build knows. Adding one: its subdir() in drivers/meson.build and its row here. */
static const struct teflon_family families[] = {
    {"rocket", rkt_kernel_open, rkt_sim_open, rkt_detect},
    {"etnaviv", etna_kernel_open, etna_simulated_open, etna_detect},
    {"ethosu", ethosu_kernel_open, ethosu_sim_open, ethosu_detect},
};

#define NFAMILIES (sizeof(families) / sizeof(families[0]))

static const struct teflon_family *family_of(const teflon_target *t)
{
    for (size_t i = 0; i < NFAMILIES; i++)
        if (strcmp(families[i].name, t->family) == 0)
            return &families[i];
    return NULL;
}

/* The target row and family for `soc`, or a message and NULL. */
static const struct teflon_family *drivable_family(const char *soc, const teflon_target **t, char *err, size_t errlen)
{
    char list[128];
    teflon_target_list(list, sizeof(list), 1);
    *t = teflon_target_named(soc);
    if (!*t) {
        teflon_errf(err, errlen, "unknown SoC \"%s\" (known: %s)", soc ? soc : "(null)", list);
        return NULL;
    }
    const struct teflon_family *f = family_of(*t);
    if (!(*t)->drivable || !f || !f->sim_open || !f->kernel_open) {
        teflon_errf(err, errlen, "%s (%s family) cannot be driven by this build yet (drivable: %s)", soc,
                    (*t)->family, list);
        return NULL;
    }
    return f;
}

int teflon_dev_open(const char *soc, int sim, teflon_dev **out, char *err, size_t errlen)
{
    return teflon_dev_open_cores(soc, sim, 1, out, err, errlen);
}

int teflon_dev_open_cores(const char *soc, int sim, unsigned cores, teflon_dev **out, char *err, size_t errlen)
{
    *out = NULL;
    const teflon_target *t;
    const struct teflon_family *f = drivable_family(soc, &t, err, errlen);
    if (!f)
        return -EINVAL;
    if (cores < 1 || cores > t->cores) {
        teflon_errf(err, errlen, "%s has %u NPU core%s: cores must be 1..%u, not %u", t->name, t->cores,
                    t->cores == 1 ? "" : "s", t->cores, cores);
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
    d->target = t;
    int rc = -ENODEV;
    if (sim != 1) {
        rc = f->kernel_open(t, &d->impl, &d->ops, d->err, sizeof(d->err));
        if (rc && sim == 0) {
            teflon_errf(err, errlen, "%s (sim=0 forbids the simulator)", d->err);
            free(d);
            return rc;
        }
    }
    if (rc) {
        rc = f->sim_open(t, &d->impl, &d->ops, d->err, sizeof(d->err));
        if (rc) {
            teflon_errf(err, errlen, "%s", d->err);
            free(d);
            return rc;
        }
    }
    d->cores = 1;
    if (cores > 1) {
        rc = d->ops->set_cores ? d->ops->set_cores(d->impl, cores, d->err, sizeof(d->err)) : -ENOTSUP;
        if (rc) {
            teflon_errf(err, errlen, "cores=%u: %s", cores, rc == -ENOTSUP ? "not supported by this driver" : d->err);
            d->ops->close(d->impl);
            free(d);
            return rc;
        }
        d->cores = cores;
    }
    d->err[0] = 0;
    *out = d;
    return 0;
}

int teflon_dev_open_peer(teflon_dev *dev, teflon_dev **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!dev->ops->open_peer) {
        teflon_errf(err, errlen, "the %s driver cannot open a second file of the device", dev->ops->name);
        return -ENOTSUP;
    }
    teflon_dev *d = calloc(1, sizeof(*d));
    if (!d) {
        teflon_errf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    *d = (teflon_dev){.ops = dev->ops, .target = dev->target, .cores = dev->cores};
    const int rc = dev->ops->open_peer(dev->impl, &d->impl, d->err, sizeof(d->err));
    if (rc) {
        teflon_errf(err, errlen, "%s", d->err);
        free(d);
        return rc;
    }
    *out = d;
    return 0;
}

unsigned teflon_dev_cores(const teflon_dev *dev)
{
    return dev->cores;
}

uint64_t teflon_dev_npu_idle(teflon_dev *dev)
{
    return dev->ops->npu_idle ? dev->ops->npu_idle(dev->impl) : 0;
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

/* ---- which NPU this machine has ------------------------------------------------------------------ */

size_t teflon_read_compatible(const char *path, char *buf, size_t len)
{
    FILE *f = len ? fopen(path, "rb") : NULL;
    if (!f) {
        if (len)
            buf[0] = '\0';
        return 0;
    }
    const size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    return n;
}

int teflon_dev_bound_to(const char *dir, const char *driver)
{
    char path[PATH_MAX + 16], target[PATH_MAX];
    snprintf(path, sizeof(path), "%s/driver", dir);
    const ssize_t n = readlink(path, target, sizeof(target) - 1);
    if (n <= 0)
        return 0;
    target[n] = '\0';
    const char *base = strrchr(target, '/');
    return strcmp(base ? base + 1 : target, driver) == 0;
}

int teflon_detect_soc(char *out, size_t len)
{
    if (out && len)
        out[0] = '\0';
    const char *root = getenv("TEFLON_SYSFS_ROOT");
    /* the first family that finds its NPU (or one it cannot name) answers */
    for (size_t i = 0; i < NFAMILIES; i++) {
        if (!families[i].detect)
            continue;
        const int rc = families[i].detect(&families[i], root ? root : "", out, len);
        if (rc != -ENODEV)
            return rc;
    }
    return -ENODEV;
}

const teflon_target *teflon_dev_target(const teflon_dev *dev)
{
    return dev->target;
}

const char *teflon_dev_soc(const teflon_dev *dev)
{
    return dev->target->name;
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

int teflon_submit(teflon_dev *dev, const teflon_job *jobs, uint32_t njobs, teflon_task_counters *per_task)
{
    memset(&dev->stats, 0, sizeof(dev->stats));
    dev->stats.per_task = per_task;
    return dev->ops->submit(dev->impl, jobs, njobs, &dev->stats, dev->err, sizeof(dev->err));
}

void teflon_dev_last_stats(const teflon_dev *dev, teflon_submit_stats *out)
{
    *out = dev->stats;
}
