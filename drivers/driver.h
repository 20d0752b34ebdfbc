/* The device interface the delegate and the runner use; each NPU family (drivers/<family>/) implements it
 * behind drivers/backend.h, picked by the target row's family (targets.h).
 *
 * One device = one open kernel device node, or one simulated kernel + NPU behind the same calls. Buffer
 * objects carry an IOVA (device address) and a CPU mapping; jobs are lists of tasks (byte ranges of BOs
 * that the family's driver submits: rocket regcmd streams, etnaviv command streams) plus the BOs they read
 * and write, as the kernel UAPIs take them.
 *
 * Errors: functions return 0 on success, a negative errno-style value on
 * failure, and leave a message in teflon_dev_error().
 */
#ifndef TEFLON_DRIVER_H
#define TEFLON_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include "teflon_targets.h"

typedef struct teflon_dev teflon_dev;

typedef struct teflon_bo {
    uint32_t handle;
    uint32_t reserved;
    uint64_t iova;      /* device address; only the low 32 bits reach NPU registers */
    uint64_t size;
    void *map;          /* CPU mapping */
} teflon_bo;

/* A byte range of a BO that the family's driver submits as one unit; what the bytes mean (and which sizes and
 * alignments are valid) is the family's business. */
typedef struct teflon_task {
    uint32_t bo;        /* BO handle */
    uint32_t bytes;     /* length of the range */
    uint64_t offset;    /* first byte, inside the BO */
    uint64_t iova;      /* device address of the first byte (the BO's IOVA + offset) */
} teflon_task;

typedef struct teflon_job {
    const teflon_task *tasks;
    uint32_t ntasks;
    uint32_t nin;
    uint32_t nout;
    uint32_t number;         /* 1-based job number in the caller's program, for messages (0: its index here) */
    const uint32_t *in_bos;  /* BO handles read by the job */
    const uint32_t *out_bos; /* BO handles written by the job */
    /* A job the runner merged from several of the program's jobs (TP_JOB_JOIN): per task, the 1-based number of the
     * program job it came from, for messages; NULL: every task is job `number`'s. */
    const uint32_t *task_job;
} teflon_job;

/* soc: the name of a drivable target row (targets.h).
 * sim: -1 auto (real device if its node exists, else the simulator), 0 real only, 1 simulator. */
int teflon_dev_open(const char *soc, int sim, teflon_dev **out, char *err, size_t errlen);
/* As teflon_dev_open, allowing `cores` NPU cores (1 .. the target row's cores; the delegate option `cores`). */
int teflon_dev_open_cores(const char *soc, int sim, unsigned cores, teflon_dev **out, char *err, size_t errlen);
/* Another open file of `dev`'s device (own BOs and IOVAs, own kernel scheduler entity, same NPU cores): jobs
 * submitted through different files may run on different cores at once. -ENOTSUP when the family has none. */
int teflon_dev_open_peer(teflon_dev *dev, teflon_dev **out, char *err, size_t errlen);
/* The cores the device was opened with. */
unsigned teflon_dev_cores(const teflon_dev *dev);
/* Simulator: waits (in simulated time) for every job submitted through any file of the device and returns the
 * simulated NPU time in ns; a real device returns 0. */
uint64_t teflon_dev_npu_idle(teflon_dev *dev);
void teflon_dev_close(teflon_dev *dev);
const char *teflon_dev_error(const teflon_dev *dev);

/* The target whose NPU this machine's kernel exposes, asked of each family in driver.c's table in turn
 * (rocket: the devicetree compatible of the NPU core devices under /sys/class/accel/accelN/device/of_node and
 * /sys/bus/platform/drivers/rocket/<core>/of_node, matched against the rocket rows' compatibles; families on
 * a DRM render node: the render node's kernel driver and the devicetree root compatible).
 * Returns 0 with the target name in out; -ENODEV when no NPU is bound to a known driver; -ENOTSUP when one
 * is but no target row names it (out then holds what identifies it, e.g. the compatible string, for the
 * message). Needs no open device and no privileges. $TEFLON_SYSFS_ROOT, when set, is prepended to every
 * path (tests run it on a fake sysfs tree). */
int teflon_detect_soc(char *out, size_t len);
/* The target row the device was opened for, and its name. */
const teflon_target *teflon_dev_target(const teflon_dev *dev);
const char *teflon_dev_soc(const teflon_dev *dev);
int teflon_dev_is_sim(const teflon_dev *dev);

int teflon_bo_create(teflon_dev *dev, uint64_t size, teflon_bo *out);
void teflon_bo_destroy(teflon_dev *dev, teflon_bo *bo);
/* Before the CPU reads a BO the device wrote: waits for pending jobs, syncs caches. */
int teflon_bo_cpu_prep(teflon_dev *dev, teflon_bo *bo);
/* After the CPU wrote a BO the device will read: syncs caches for the device. */
int teflon_bo_cpu_fini(teflon_dev *dev, teflon_bo *bo);

/* Performance counters of one task, as the simulator counts them where a unit reads or writes device memory
 * (bytes; the rocket hardware's own counters report 16-byte units, docs/hardware/rocket-sim.md; etnaviv: every NN/TP
 * job of the task's command stream, docs/hardware/etnaviv-sim.md). A real device
 * leaves the byte counters and MACs 0. */
typedef struct teflon_task_counters {
    uint64_t feature_rd; /* input features fetched (rocket CNA feature DMA; etnaviv NN/TP input) */
    uint64_t weight_rd;  /* weights fetched (rocket CNA weight DMA, 0 when reused from the CBUF; etnaviv
                          * NN coefficient buffers, their bias included) */
    uint64_t bias_rd;    /* per-channel operands: bias / BS / EW tables (rocket DPU_RDMA; etnaviv TP PWL LUT) */
    uint64_t data_wr;    /* output written (rocket DPU WDMA; etnaviv NN/TP output) */
    uint64_t macs;       /* multiply-accumulates of the programmed geometry */
    uint64_t ns;         /* time of the task: rocket simulator, modelled NPU time (docs/hardware/rocket-sim.md
                          * "Time"); etnaviv simulator, host time spent simulating it */
    uint64_t core;       /* the NPU core the task ran on (rocket simulator; else 0) */
    uint64_t start_ns;   /* modelled NPU time at which the task started (rocket simulator; else 0) */
    uint64_t macs_nz;    /* of `macs`, those whose weight is not the zero point (etnaviv simulator, for the board
                          * estimate of an engine that skips zero weights; else 0: not counted) */
} teflon_task_counters;

/* Queue all jobs in one submission (ordering between jobs comes from their BO lists). `per_task`, when not
 * NULL, has room for every task of every job and receives each task's counters in submission order. */
int teflon_submit(teflon_dev *dev, const teflon_job *jobs, uint32_t njobs, teflon_task_counters *per_task);
/* Counters of the last submission (simulator: exact; real device: tasks only). */
typedef struct teflon_submit_stats {
    uint64_t tasks;
    uint64_t macs;
    teflon_task_counters *per_task; /* the caller's array (teflon_submit), or NULL */
} teflon_submit_stats;
void teflon_dev_last_stats(const teflon_dev *dev, teflon_submit_stats *out);

#endif
