/* The delegate instance: options, the open device, and the partitions compiled during Prepare. */
#ifndef TEFLON_DELEGATE_H
#define TEFLON_DELEGATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "driver.h"
#include "teflon_graph.h"
#include "tflite_abi.h"

struct teflon_partition;

/* The open device, shared by the delegate and every kernel compiled for it: a kernel may outlive
 * the delegate (hosts destroy them in either order), so the last holder closes it. */
typedef struct teflon_devref {
    atomic_int refs;
    teflon_dev *dev;
    pthread_mutex_t lock;   /* one partition submits and copies at a time on this device */
} teflon_devref;

teflon_devref *teflon_devref_get(teflon_devref *ref);
void teflon_devref_put(teflon_devref *ref);

/* Wall-clock milliseconds, for TEFLON_DEBUG timings only. */
double teflon_now_ms(void);

typedef struct teflon_delegate {
    tfl_delegate base;              /* first member: TFLite hands back &base */
    char device[16];                /* target name (a row of the registry, drivers/targets.h) */
    int sim;                        /* as asked: -1 auto, 0 real, 1 simulator */
    int debug;                      /* option debug=1 or TEFLON_DEBUG=1/verbose/... */
    int perf;                       /* TEFLON_DEBUG=perf: per-job counters at invoke */
    char settings[64];              /* the options that change a compiled program, as the cache keys them */
    teflon_cache cache;             /* program cache (cache.dir NULL: off) */
    teflon_keyer *keys;             /* during Prepare with the cache on: the graph's key derivation */
    int py_has_graph;               /* during Prepare: Python has converted this Prepare's graph */
    teflon_devref *devref;
    struct teflon_partition *ready; /* compiled in Prepare, adopted by kernel Init */
    int partitions_compiled;        /* running count, numbers the debug messages */
} teflon_delegate;

/* The program blob of one partition: from the program cache when it holds it, else compiled by Python (and
 * then stored). *blob is malloc'd (free() it); *source says which ("read from the cache", "compiled and
 * stored in the cache", "compiled") for debug output. -1 with a message in err. Prepare's thread only. */
int teflon_program_for(teflon_delegate *d, const teflon_graph *g, const int32_t *nodes, int nnodes,
                       const int32_t *inputs, int ninputs, const int32_t *outputs, int noutputs, uint8_t **blob,
                       uint64_t *blob_len, const char **source, char *err, size_t errlen);

/* Exported: the options checks of tflite_plugin_create_delegate without creating a delegate or opening the
 * device (Python's teflon.load_delegate raises ValueError with the message before the runtime loads us).
 * 0, or -1 with a one-line message naming the option in err ("teflon: ..."). */
int teflon_check_options(const char *const *keys, const char *const *values, size_t n, char *err, size_t errlen);

#endif
