/* Delegated partitions: compiled (Python) and loaded (runner) during the delegate's Prepare, then
 * adopted by the TFLite kernel that replaces the partition's nodes. Invoke is C only. */
#ifndef TEFLON_KERNEL_H
#define TEFLON_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "delegate.h"
#include "teflon_graph.h"
#include "tflite_abi.h"

typedef struct teflon_partition {
    struct teflon_partition *next;
    int id;                 /* numbering for debug output */
    int debug;
    int perf;               /* TEFLON_DEBUG=perf */
    int32_t *nodes;         /* sorted node indices */
    int nnodes;
    int32_t *inputs;        /* non-constant partition inputs, in TFLite's order */
    int ninputs;
    int32_t *outputs;
    int noutputs;
    uint64_t *input_bytes;  /* sizes at compile time: shapes are static */
    int32_t *ignored;       /* partition inputs the program ignores (teflon_runner_input_ignored): no copy, and
                             * no data demanded of TFLite (the kernel node's input becomes -1) */
    int nignored;
    uint64_t *output_bytes;
    struct teflon_runner *runner;
    teflon_devref *devref;
} teflon_partition;

/* Compile the partition described by `params` (as PreviewDelegatePartitioning returns it) and load
 * it into a runner on the delegate's device. NULL with a message in err on failure. Must run on the
 * thread that runs the delegate's Prepare (it calls Python). */
teflon_partition *teflon_partition_compile(teflon_delegate *d, tfl_context *context, const teflon_graph *g,
                                           const tfl_delegate_params *params, char *err, size_t errlen);
void teflon_partition_free(teflon_partition *p);

/* 1 when the partition covers exactly `nodes` (any order). */
int teflon_partition_matches(const teflon_partition *p, const tfl_int_array *nodes);

/* The registration for ReplaceNodeSubsetsWithDelegateKernels (newest layout, zero-filled). */
tfl_registration teflon_kernel_registration(void);

#endif
