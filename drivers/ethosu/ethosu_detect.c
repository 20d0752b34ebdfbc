/* device=auto for ethosu: an accel device whose platform device is bound to the "ethosu" driver (ethosu_drv.c's
 * platform driver name) and whose devicetree node carries an ethosu row's first compatible (fsl,imx93-npu: the
 * binding npu/arm,ethos.yaml pairs the SoC's compatible with arm,ethos-u65). Needs no open device and no privileges.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../targets.h"
#include "ethosu.h"
#include "ethosu_uapi.h"

/* The ethosu row one of whose compatibles is in the NUL-separated list buf[0..n), or NULL. */
static const teflon_target *ethosu_row_of(const char *buf, size_t n)
{
    for (size_t i = 0; i < TEFLON_NUM_TARGETS; i++) {
        const teflon_target *t = teflon_target_at(i);
        if (strcmp(t->family, "ethosu") != 0)
            continue;
        for (size_t k = 0; k < n; k += strlen(buf + k) + 1)
            if (strcmp(buf + k, t->compatibles[0]) == 0)
                return t;
    }
    return NULL;
}

int ethosu_detect(const struct teflon_family *f, const char *root, char *out, size_t len)
{
    (void)f;
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/sys/class/accel", root);
    DIR *dir = opendir(path);
    if (!dir)
        return -ENODEV;
    int rc = -ENODEV;
    for (struct dirent *e; rc != 0 && (e = readdir(dir));) {
        if (strncmp(e->d_name, "accel", 5) != 0)
            continue;
        char dev[PATH_MAX], buf[512];
        snprintf(dev, sizeof(dev), "%s/sys/class/accel/%s/device", root, e->d_name);
        if (!teflon_dev_bound_to(dev, ETHOSU_DRIVER_NAME))
            continue;
        snprintf(path, sizeof(path), "%s/of_node/compatible", dev);
        const size_t n = teflon_read_compatible(path, buf, sizeof(buf));
        const teflon_target *t = ethosu_row_of(buf, n);
        if (t) {
            snprintf(out, len, "%s", t->name);
            rc = 0;
        } else if (rc == -ENODEV) { /* an Ethos-U no row names (a U85 board): say which */
            snprintf(out, len, "%s", n ? buf : "an ethosu NPU without a devicetree compatible");
            rc = -ENOTSUP;
        }
    }
    closedir(dir);
    return rc;
}
