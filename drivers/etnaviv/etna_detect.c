/* device=auto for etnaviv: the NPU is a core of an etnaviv DRM device, and the same kernel driver also runs
 * Vivante GPUs, so a render node bound to "etnaviv" only counts on an SoC that a row names: the devicetree
 * root compatible (/proc/device-tree/compatible) must match one of an etnaviv row's compatibles. Which core
 * of the device is the NPU (chip_model / chip_revision) is checked when the device is opened
 * (etna_kernel.c); detection needs no open device and no privileges. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../targets.h"
#include "etna.h"

/* 1 when the device behind <root>/sys/class/<cls>/<name> is bound to the kernel driver `driver`. */
static int etna_class_dev_bound_to(const char *root, const char *cls, const char *name, const char *driver)
{
    char dev[PATH_MAX];
    snprintf(dev, sizeof(dev), "%s/sys/class/%s/%s/device", root, cls, name);
    return teflon_dev_bound_to(dev, driver);
}

/* 1 when a device of class `cls` whose name starts with `prefix` is bound to `driver`. */
static int etna_driver_present(const char *root, const char *cls, const char *prefix, const char *driver)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/sys/class/%s", root, cls);
    DIR *dir = opendir(path);
    int found = 0;
    if (!dir)
        return 0;
    for (struct dirent *e; !found && (e = readdir(dir));)
        found = strncmp(e->d_name, prefix, strlen(prefix)) == 0 && etna_class_dev_bound_to(root, cls, e->d_name, driver);
    closedir(dir);
    return found;
}

/* 1 when the devicetree root compatible list has an entry starting with `prefix`. */
static int etna_soc_compatible(const char *root, const char *prefix)
{
    char buf[1024], path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/proc/device-tree/compatible", root);
    const size_t n = teflon_read_compatible(path, buf, sizeof(buf));
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
        if (strncmp(buf + i, prefix, strlen(prefix)) == 0)
            return 1;
    return 0;
}

int etna_detect(const struct teflon_family *f, const char *root, char *out, size_t len)
{
    if (!etna_driver_present(root, "drm", "renderD", f->name))
        return -ENODEV;
    for (size_t i = 0; i < TEFLON_NUM_TARGETS; i++) {
        const teflon_target *t = teflon_target_at(i);
        if (strcmp(t->family, f->name) != 0)
            continue;
        for (const char *const *c = t->compatibles; *c; c++)
            if (etna_soc_compatible(root, *c)) {
                snprintf(out, len, "%s", t->name);
                return 0;
            }
    }
    return -ENODEV;
}
