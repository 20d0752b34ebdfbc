/* Runs a compiled program on a device: one BO per program buffer (initial data uploaded,
 * relocations applied), then per inference: inputs converted into their BOs, all jobs in one
 * submit (each run of TP_JOB_JOIN jobs as one kernel job), outputs read back after cpu_prep. Used by the delegate's kernels and by native.c. */
#ifndef TEFLON_RUNNER_H
#define TEFLON_RUNNER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "driver.h"

typedef struct teflon_runner teflon_runner;

teflon_runner *teflon_runner_load(teflon_dev *dev, const uint8_t *blob, uint64_t len, char *err, size_t errlen);
/* The same for a malloc'd blob the runner takes over (no copy; freed by the runner, or at once on failure). */
teflon_runner *teflon_runner_load_owned(teflon_dev *dev, uint8_t *blob, uint64_t len, char *err, size_t errlen);
void teflon_runner_free(teflon_runner *r);
/* 1 when every input binding of `tensor` lands in a buffer no job reads or writes and no output binding reads: the
 * program ignores the tensor (Vela's scratch tensors, which TFLite hands over as inputs but never allocates). */
int teflon_runner_input_ignored(const teflon_runner *r, int32_t tensor);

/* Convert a host NHWC tensor into every input binding of `tensor`. -ENOENT: no binding;
 * -EINVAL: wrong byte count. */
int teflon_runner_set_input(teflon_runner *r, int32_t tensor, const void *host, uint64_t bytes);
int teflon_runner_run(teflon_runner *r, char *err, size_t errlen);
int teflon_runner_get_output(teflon_runner *r, int32_t tensor, void *host, uint64_t bytes);
/* Whether `tensor` is bound as an input (output = 0) or output (output = 1) of `bytes` host bytes:
 * 0, -ENOENT (no binding) or -EINVAL (wrong byte count), as set_input / get_output would answer. */
int teflon_runner_check_binding(const teflon_runner *r, int32_t tensor, int output, uint64_t bytes);
/* Files (lanes) the program runs on: 1, or up to the device's cores when its jobs are not one chain. */
uint32_t teflon_runner_lanes(const teflon_runner *r);
/* Simulated NPU time of the last run, in ns (first submit to the last job's end; 0 on a real device). */
uint64_t teflon_runner_npu_ns(const teflon_runner *r);
/* Counters of the last run. */
void teflon_runner_stats(const teflon_runner *r, uint64_t *tasks, uint64_t *macs);
/* Each task's counters in the last run (program task order; zero for tasks that did not run), and how many. */
const teflon_task_counters *teflon_runner_task_counters(const teflon_runner *r, uint32_t *ntasks);
/* TEFLON_DEBUG=perf: one line per job of the last run (its tasks' counters summed, and its time), then one
 * line per task, prefixed with `who`. */
void teflon_runner_print_perf(const teflon_runner *r, FILE *f, const char *who);

#endif
