/* Internal: what a family backend (real kernel client or simulator) provides to driver.c.
 *
 * driver.c owns the teflon_dev and its error buffer; a backend gets `err`/`errlen` with every
 * call that can fail and writes a message there before returning a negative errno.
 */
#ifndef TEFLON_BACKEND_H
#define TEFLON_BACKEND_H

#include "driver.h"

struct teflon_backend {
    const char *name; /* "rocket", "rocket-sim" */
    int is_sim;
    int (*bo_create)(void *impl, uint64_t size, teflon_bo *out, char *err, size_t errlen);
    void (*bo_destroy)(void *impl, teflon_bo *bo);
    int (*cpu_prep)(void *impl, teflon_bo *bo, char *err, size_t errlen);
    int (*cpu_fini)(void *impl, teflon_bo *bo, char *err, size_t errlen);
    int (*submit)(void *impl, const teflon_job *jobs, uint32_t njobs, teflon_submit_stats *stats, char *err,
                  size_t errlen);
    void (*close)(void *impl);
};

/* The rocket SoC from the devicetree compatible of the NPU cores under `root` (see teflon_detect_soc). */
int rocket_detect_soc(const char *root, char *out, size_t len);

/* Each opener returns -ENODEV when its device is absent (so auto mode can fall back). */
int rocket_kernel_open(const char *soc, void **impl, const struct teflon_backend **ops, char *err, size_t errlen);
int rocket_sim_open(const char *soc, void **impl, const struct teflon_backend **ops, char *err, size_t errlen);

#endif
