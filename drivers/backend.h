/* Internal: what a family (drivers/<family>/) provides to driver.c.
 *
 * driver.c owns the teflon_dev and its error buffer; a backend gets `err`/`errlen` with every
 * call that can fail and writes a message there (teflon_errf, errmsg.h) before returning a negative errno.
 */
#ifndef TEFLON_BACKEND_H
#define TEFLON_BACKEND_H

#include "driver.h"

/* An open device of a family: its kernel client or its simulator. */
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
    /* Optional (NULL: the family has one core per device, or does not model them). */
    /* The NPU cores this device may use (1..target cores), before any BO exists. */
    int (*set_cores)(void *impl, unsigned cores, char *err, size_t errlen);
    /* Another open file of the same device: its own BOs, address space and scheduler entity, the same cores
     * (the kernel: a second open() of the node; the simulator: the same simulated cores). */
    int (*open_peer)(void *impl, void **peer, char *err, size_t errlen);
    /* Simulator only: waits (in simulated time) until every job submitted so far through any file of the device
     * has finished, and returns that simulated time in ns. */
    uint64_t (*npu_idle)(void *impl);
};

/* Opens the kernel client or the simulator of target `t` (a row of this family). Returns -ENODEV when the
 * device is absent, so auto mode can fall back to the simulator. */
typedef int (*teflon_family_open)(const teflon_target *t, void **impl, const struct teflon_backend **ops, char *err,
                                  size_t errlen);

/* One row of driver.c's family table. */
struct teflon_family {
    const char *name;               /* teflon_target.family */
    teflon_family_open kernel_open; /* NULL: no driver for this family in this build */
    teflon_family_open sim_open;    /* NULL: no simulator for this family in this build */
    /* As teflon_detect_soc, with every path below `root`; -ENODEV when this family's NPU is not there. */
    int (*detect)(const struct teflon_family *f, const char *root, char *out, size_t len);
};

/* Reads a devicetree `compatible` file (NUL-separated strings) into buf, NUL-terminated; returns the bytes
 * read, 0 when the file is absent. */
size_t teflon_read_compatible(const char *path, char *buf, size_t len);

/* 1 when the sysfs device directory `dir` has a `driver` link to a kernel driver named `driver`. */
int teflon_dev_bound_to(const char *dir, const char *driver);

#endif
