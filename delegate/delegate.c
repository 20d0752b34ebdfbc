/* The external-delegate entry points: options, device selection, and Prepare (which nodes go to the NPU).
 *
 * Prepare runs entirely on the caller's thread (a Python host holds the GIL there):
 *   1. graph_export.c turns the interpreter's tensors and execution plan into a teflon_graph;
 *   2. one call into Python decides, node by node, what the NPU can run;
 *   3. PreviewDelegatePartitioning tells how TFLite will group those nodes; every partition is
 *      compiled (Python) and loaded (runner) right here, and a partition that fails is dropped, its
 *      nodes left to the CPU, and the rest re-partitioned, until every partition has a program;
 *   4. ReplaceNodeSubsetsWithDelegateKernels; kernel Init adopts the loaded partitions (kernel.c).
 * Any failure before step 4 leaves the whole graph on the CPU with a message; nothing here aborts.
 */
#define _GNU_SOURCE /* dladdr, RTLD_NOLOAD */

#include "delegate.h"

#include <errno.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph_export.h"
#include "kernel.h"
#include "pybridge.h"
#include "targets.h"

#define TEFLON_EXPORT __attribute__((visibility("default")))

/* ---------------------------------------------------------------------------------------------- */
/* Small shared helpers                                                                          */

double teflon_now_ms(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

tfl_int_array *tfl_int_array_new(int size)
{
    tfl_int_array *a = malloc(sizeof(tfl_int_array) + sizeof(int) * (size_t)(size > 0 ? size : 0));
    if (a)
        a->size = size;
    return a;
}

teflon_devref *teflon_devref_get(teflon_devref *ref)
{
    atomic_fetch_add(&ref->refs, 1);
    return ref;
}

void teflon_devref_put(teflon_devref *ref)
{
    if (atomic_fetch_sub(&ref->refs, 1) != 1)
        return;
    teflon_dev_close(ref->dev);
    pthread_mutex_destroy(&ref->lock);
    free(ref);
}

const char *teflon_library_path(void)
{
    Dl_info info;
    if (dladdr((const void *)&teflon_library_path, &info) && info.dli_fname)
        return info.dli_fname;
    return "";
}

#ifdef TEFLON_LIBPYTHON_SONAME
/* Non-Python hosts (benchmark_model, C tests) dlopen us with RTLD_LOCAL, which keeps our libpython
 * dependency out of the global scope; the extension modules Python imports later (_cffi_backend,
 * numpy) then cannot resolve its symbols. Promote the already-mapped libpython to RTLD_GLOBAL. In a
 * Python host this is a no-op. The reference is kept for the life of the process, like libpython. */
__attribute__((constructor)) static void promote_libpython(void)
{
    (void)dlopen(TEFLON_LIBPYTHON_SONAME, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
}
#endif

/* ---------------------------------------------------------------------------------------------- */
/* Options and device selection                                                                  */

typedef void (*report_fn)(const char *);

static void report(report_fn report_error, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void report(report_fn report_error, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(msg, sizeof(msg), "teflon: ");
    vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", msg);
    if (report_error)
        report_error(msg);
}

/* The target this machine's NPU is (a registry row), or NULL when there is none (drivers/driver.h:
 * teflon_detect_soc asks each driver family). `unknown` receives an NPU no target row names. */
static const teflon_target *detect_device(char *unknown, size_t len)
{
    char soc[64];
    const int rc = teflon_detect_soc(soc, sizeof(soc));
    if (rc == 0)
        return teflon_target_named(soc);
    if (rc == -ENOTSUP)
        snprintf(unknown, len, "%s", soc);
    return NULL;
}

typedef struct options {
    char device[16];
    int sim;
    int debug;
} options;

static int parse_options(char **keys, char **values, size_t n, report_fn report_error, options *o)
{
    char list[128];
    snprintf(o->device, sizeof(o->device), "auto");
    o->sim = -1;
    o->debug = 0;
    for (size_t i = 0; i < n; i++) {
        const char *k = keys ? keys[i] : NULL, *v = values ? values[i] : NULL;
        if (!k || !v) {
            report(report_error, "option %zu has no %s", i, k ? "value" : "key");
            return -1;
        }
        if (strcmp(k, "device") == 0) {
            if (strcmp(v, "auto") != 0 && !teflon_target_named(v)) {
                teflon_target_list(list, sizeof(list), 0);
                report(report_error, "invalid value '%s' for option 'device' (expected auto, %s)", v, list);
                return -1;
            }
            snprintf(o->device, sizeof(o->device), "%s", v);
        } else if (strcmp(k, "sim") == 0) {
            if (strcmp(v, "auto") == 0)
                o->sim = -1;
            else if (strcmp(v, "0") == 0 || strcmp(v, "1") == 0)
                o->sim = v[0] - '0';
            else {
                report(report_error, "invalid value '%s' for option 'sim' (expected auto, 0 or 1)", v);
                return -1;
            }
        } else if (strcmp(k, "debug") == 0) {
            if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0) {
                report(report_error, "invalid value '%s' for option 'debug' (expected 0 or 1)", v);
                return -1;
            }
            o->debug = v[0] - '0';
        } else {
            report(report_error, "unknown option '%s' (known options: device, sim, debug)", k);
            return -1;
        }
    }
    const char *env = getenv("TEFLON_DEBUG");
    if (env && strstr(env, "verbose"))
        o->debug = 1;
    return 0;
}

/* device=auto: the NPU found here, or the first drivable target (its simulator) when there is none. */
static int resolve_auto(options *o, report_fn report_error, const char *drivable)
{
    const teflon_target *fallback = teflon_target_default();
    if (!fallback) {
        report(report_error, "this build cannot drive any device (no drivable row in the target registry)");
        return -1;
    }
    char unknown[64] = "";
    const teflon_target *found = detect_device(unknown, sizeof(unknown));
    if (unknown[0]) {
        report(report_error, "device=auto found an NPU this build does not know (%s); pass the device explicitly "
               "(drivable: %s)", unknown, drivable);
        return -1;
    }
    if (found && !found->drivable) {
        report(report_error, "device=auto found an %s NPU (%s family), which this build cannot drive yet (drivable: "
               "%s); pass device=%s sim=1 to use the simulator instead", found->name, found->family, drivable,
               fallback->name);
        return -1;
    }
    if (!found && o->debug)
        fprintf(stderr, "teflon: no NPU device node found; device=auto uses %s\n", fallback->name);
    snprintf(o->device, sizeof(o->device), "%s", found ? found->name : fallback->name);
    return 0;
}

/* Turns device=auto into a target name and checks this build can drive it. */
static int resolve_device(options *o, report_fn report_error)
{
    char list[128];
    teflon_target_list(list, sizeof(list), 1);
    if (strcmp(o->device, "auto") == 0)
        return resolve_auto(o, report_error, list);
    const teflon_target *t = teflon_target_named(o->device);
    if (!t->drivable) {
        report(report_error, "device=%s (%s family) is not supported by this build yet (drivable devices: %s)",
               o->device, t->family, list);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* Prepare                                                                                       */

/* Node indices Python claimed, minus those C must refuse. Returns NULL when nothing is claimed. */
static tfl_int_array *claimed_nodes(teflon_delegate *d, tfl_context *context, const teflon_graph *g)
{
    int32_t *supported = malloc(sizeof(int32_t) * (size_t)(g->nnodes + 1));
    tfl_int_array *list = tfl_int_array_new(g->nnodes);
    if (!supported || !list) {
        fprintf(stderr, "teflon: out of memory; running the whole graph on the CPU\n");
        goto none;
    }
    for (int i = 0; i < g->nnodes; i++)
        supported[i] = -1;
    /* cffi returns 0 without running anything when the Python side failed to start: the -1s tell. */
    int rc = teflon_py_support(g, d->device, d->debug, supported);
    list->size = 0;
    for (int i = 0; i < g->nnodes; i++) {
        if (rc != 0 || (supported[i] != 0 && supported[i] != 1)) {
            fprintf(stderr, "teflon: the Python compiler could not decide which nodes to run (see the messages "
                    "above); running the whole graph on the CPU\n");
            goto none;
        }
        if (!supported[i])
            continue;
        if (teflon_node_has_dynamic_tensor(context, &g->nodes[i])) {
            if (d->debug)
                fprintf(stderr, "teflon: node %d: has a dynamically sized tensor, stays on the CPU\n",
                        g->nodes[i].index);
            continue;
        }
        list->data[list->size++] = g->nodes[i].index;
    }
    free(supported);
    if (list->size == 0) {
        free(list);
        return NULL;
    }
    return list;
none:
    free(supported);
    free(list);
    return NULL;
}

static void remove_nodes(tfl_int_array *list, const tfl_int_array *drop)
{
    int n = 0;
    for (int i = 0; i < list->size; i++) {
        int keep = 1;
        for (int j = 0; j < drop->size && keep; j++)
            keep = list->data[i] != drop->data[j];
        if (keep)
            list->data[n++] = list->data[i];
    }
    list->size = n;
}

static void free_partitions(teflon_partition *p)
{
    while (p) {
        teflon_partition *next = p->next;
        teflon_partition_free(p);
        p = next;
    }
}

/* Compiles every partition TFLite would form from `list`, dropping the nodes of partitions that fail
 * and repartitioning, until all compile. On return `list` holds the nodes to delegate and d->ready
 * their loaded partitions. */
static void compile_partitions(teflon_delegate *d, tfl_context *context, const teflon_graph *g, tfl_int_array *list)
{
    teflon_partition *compiled = NULL;
    tfl_delegate_params *params = NULL;
    int nparts = 0;
    char err[1024];

    if (!context->PreviewDelegatePartitioning) {
        fprintf(stderr, "teflon: this runtime cannot preview partitions; running the whole graph on the CPU\n");
        list->size = 0;
    }
    for (int changed = 1; changed && list->size > 0;) {
        changed = 0;
        if (context->PreviewDelegatePartitioning(context, list, &params, &nparts) != TFL_OK || !params) {
            fprintf(stderr, "teflon: partitioning failed; running the whole graph on the CPU\n");
            list->size = 0;
            break;
        }
        for (int i = 0; i < nparts; i++) {
            const tfl_int_array *nodes = params[i].nodes_to_replace;
            int known = 0;
            for (teflon_partition *p = compiled; p && !known; p = p->next)
                known = teflon_partition_matches(p, nodes);
            if (known)
                continue;
            teflon_partition *p = teflon_partition_compile(d, context, g, &params[i], err, sizeof(err));
            if (p) {
                p->next = compiled;
                compiled = p;
                continue;
            }
            fprintf(stderr, "teflon: a partition of %d node(s) starting at node %d could not be compiled or loaded: %s; "
                    "its nodes run on the CPU\n", nodes->size, nodes->size ? nodes->data[0] : -1, err);
            remove_nodes(list, nodes);
            changed = 1;
        }
    }
    /* Keep exactly the partitions of the last (unchanged) preview. */
    d->ready = NULL;
    while (compiled) {
        teflon_partition *p = compiled;
        compiled = p->next;
        int wanted = 0;
        for (int i = 0; i < nparts && list->size > 0 && !wanted; i++)
            wanted = teflon_partition_matches(p, params[i].nodes_to_replace);
        if (wanted) {
            p->next = d->ready;
            d->ready = p;
        } else {
            teflon_partition_free(p);
        }
    }
    if (d->debug && list->size > 0)
        fprintf(stderr, "teflon: delegating %d of %d nodes in %d partition(s)\n", list->size, g->nnodes, nparts);
}

static tfl_status delegate_prepare(tfl_context *context, tfl_delegate *base)
{
    teflon_delegate *d = (teflon_delegate *)base;
    teflon_export ex;
    char err[512];
    tfl_status status = TFL_OK;

    if (teflon_python_ready(err, sizeof(err))) {
        fprintf(stderr, "teflon: %s; running the whole graph on the CPU\n", err);
        return TFL_OK;
    }
    if (teflon_graph_export(context, &ex, err, sizeof(err))) {
        fprintf(stderr, "teflon: %s; running the whole graph on the CPU\n", err);
        return TFL_OK;
    }
    tfl_int_array *list = claimed_nodes(d, context, &ex.graph);
    if (list)
        compile_partitions(d, context, &ex.graph, list);
    if (list && list->size > 0) {
        status = context->ReplaceNodeSubsetsWithDelegateKernels(context, teflon_kernel_registration(), list, base);
        if (status != TFL_OK)
            fprintf(stderr, "teflon: the runtime refused to replace the delegated nodes\n");
    }
    free_partitions(d->ready);  /* Init adopted every partition it was given; anything left is unused */
    d->ready = NULL;
    free(list);
    teflon_graph_export_free(&ex);
    return status;
}

/* ---------------------------------------------------------------------------------------------- */
/* Entry points                                                                                  */

TEFLON_EXPORT tfl_delegate *tflite_plugin_create_delegate(char **keys, char **values, size_t n,
                                                          void (*report_error)(const char *))
{
    options o;
    char err[512] = "";
    teflon_dev *dev = NULL;

    if (parse_options(keys, values, n, report_error, &o) || resolve_device(&o, report_error))
        return NULL;
    int rc = teflon_dev_open(o.device, o.sim, &dev, err, sizeof(err));
    if (rc != 0 || !dev) {
        report(report_error, "cannot open the %s NPU (sim=%s): %s", o.device,
               o.sim < 0 ? "auto" : o.sim ? "1" : "0", err[0] ? err : "unknown error");
        return NULL;
    }
    teflon_delegate *d = calloc(1, sizeof(*d));
    teflon_devref *ref = calloc(1, sizeof(*ref));
    if (!d || !ref) {
        free(d);
        free(ref);
        teflon_dev_close(dev);
        report(report_error, "out of memory");
        return NULL;
    }
    atomic_init(&ref->refs, 1);
    ref->dev = dev;
    pthread_mutex_init(&ref->lock, NULL);
    d->devref = ref;
    snprintf(d->device, sizeof(d->device), "%s", o.device);
    d->sim = o.sim;
    d->debug = o.debug;
    d->base.data_ = d;
    d->base.Prepare = delegate_prepare;
    d->base.flags = TFL_DELEGATE_REQUIRE_PROPAGATED_SHAPES;
    if (d->debug)
        fprintf(stderr, "teflon: delegate created for %s (%s)\n", d->device,
                teflon_dev_is_sim(dev) ? "simulated NPU" : "NPU device node");
    return &d->base;
}

TEFLON_EXPORT void tflite_plugin_destroy_delegate(tfl_delegate *base)
{
    teflon_delegate *d = (teflon_delegate *)base;
    if (!d)
        return;
    free_partitions(d->ready);
    teflon_devref_put(d->devref);
    free(d);
}
