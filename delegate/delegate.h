/* The delegate instance: options, the open device, and the partitions compiled during Prepare. */
#ifndef TEFLON_DELEGATE_H
#define TEFLON_DELEGATE_H

#include <pthread.h>
#include <stdatomic.h>

#include "driver.h"
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
    int debug;                      /* option debug=1 or TEFLON_DEBUG=verbose */
    teflon_devref *devref;
    struct teflon_partition *ready; /* compiled in Prepare, adopted by kernel Init */
    int partitions_compiled;        /* running count, numbers the debug messages */
} teflon_delegate;

#endif
