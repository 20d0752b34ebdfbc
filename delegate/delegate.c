/* The external-delegate entry points: options, device selection, and Prepare (which nodes go to the NPU).
 *
 * Prepare runs entirely on the caller's thread (a Python host holds the GIL there):
 *   1. graph_export.c turns the interpreter's tensors and execution plan into a teflon_graph;
 *   2. one call into Python decides, node by node, what the NPU can run;
 *   3. PreviewDelegatePartitioning tells how TFLite will group those nodes; every partition is
 *      compiled (Python) and loaded (runner) right here, and a partition that fails is dropped, its
 *      nodes left to the CPU, and the rest re-partitioned, until every partition has a program;
 *      with the program cache on (cache.h), steps 2 and 3 first look for their result on disk, and
 *      Python is started only for what is not there;
 *   4. ReplaceNodeSubsetsWithDelegateKernels; kernel Init adopts the loaded partitions (kernel.c).
 * Any failure before step 4 leaves the whole graph on the CPU with a message; nothing here aborts.
 */
#define _GNU_SOURCE /* dladdr, RTLD_NOLOAD */

#include "delegate.h"

#include <ctype.h>
#include <errno.h>
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
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

/* Messages about refused options go to the host exactly once: through its report_error callback when it
 * gave one (a Python host puts the text in the ValueError it raises), else on stderr. */
static void report_once(void (*report_error)(const char *), const char *err)
{
    char msg[768];
    snprintf(msg, sizeof(msg), "teflon: %s", err);
    if (report_error)
        report_error(msg);
    else
        fprintf(stderr, "%s\n", msg);
}

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
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

#define CACHE_MAX_MB_DEFAULT 256.0
#define CACHE_MAX_MB_LIMIT 1048576.0    /* 1 TiB: anything above is a typo */

typedef struct options {
    char device[16];
    int sim;
    int debug;
    int perf;                   /* TEFLON_DEBUG=perf */
    char cache_dir[PATH_MAX];   /* "" = no program cache */
    double cache_max_mb;
    unsigned cores;             /* NPU cores the device's jobs may be spread over (1 .. the target's) */
    char cores_text[16];        /* as given, for the range message once the device is known */
} options;

/* TEFLON_DEBUG flags. A comma-separated list of words, case-insensitive; -1 when a word is not understood. */
enum { DEBUG_ON = 1, DEBUG_PERF = 2 };

static int word_is(const char *word, size_t len, const char *const *list)
{
    for (; *list; list++)
        if (strlen(*list) == len && strncasecmp(word, *list, len) == 0)
            return 1;
    return 0;
}

static int debug_flags(const char *value)
{
    static const char *const on[] = {"1", "true", "yes", "on", "verbose", "debug", NULL};
    static const char *const off[] = {"0", "false", "no", "off", "", NULL};
    int flags = 0;
    for (const char *w = value;;) {
        while (isspace((unsigned char)*w))
            w++;
        size_t len = strcspn(w, ",");
        while (len > 0 && isspace((unsigned char)w[len - 1]))
            len--;
        if (word_is(w, len, on))
            flags |= DEBUG_ON;
        else if (len == 4 && strncasecmp(w, "perf", 4) == 0)
            flags |= DEBUG_PERF; /* counters and time of every job at invoke, without the rest of the debug output */
        else if (!word_is(w, len, off))
            return -1;
        w += strcspn(w, ",");
        if (!*w)
            return flags;
        w++;
    }
}

static int parse_cache_max_mb(const char *v, double *mb)
{
    char *end = NULL;
    errno = 0;
    const double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x) || x <= 0 || x > CACHE_MAX_MB_LIMIT)
        return -1;
    *mb = x;
    return 0;
}

/* One option into o. -1 with a one-line message naming the option in err. */
static int parse_option(const char *k, const char *v, options *o, char *err, size_t errlen)
{
    char list[128];
    if (strcmp(k, "device") == 0) {
        if (strcmp(v, "auto") != 0 && !teflon_target_named(v)) {
            teflon_target_list(list, sizeof(list), 0);
            return fail(err, errlen, "invalid value '%s' for option 'device' (expected auto, %s)", v, list);
        }
        snprintf(o->device, sizeof(o->device), "%s", v);
    } else if (strcmp(k, "sim") == 0) {
        if (strcmp(v, "auto") == 0)
            o->sim = -1;
        else if (strcmp(v, "0") == 0 || strcmp(v, "1") == 0)
            o->sim = v[0] - '0';
        else
            return fail(err, errlen, "invalid value '%s' for option 'sim' (expected auto, 0 or 1)", v);
    } else if (strcmp(k, "debug") == 0) {
        if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
            return fail(err, errlen, "invalid value '%s' for option 'debug' (expected 0 or 1)", v);
        o->debug = v[0] - '0';
    } else if (strcmp(k, "cache_dir") == 0) {
        if (strlen(v) >= sizeof(o->cache_dir) - 80)
            return fail(err, errlen, "option 'cache_dir' is too long (%zu characters)", strlen(v));
        snprintf(o->cache_dir, sizeof(o->cache_dir), "%s", v);
    } else if (strcmp(k, "cache_max_mb") == 0) {
        if (parse_cache_max_mb(v, &o->cache_max_mb))
            return fail(err, errlen, "invalid value '%s' for option 'cache_max_mb' (expected a positive number "
                        "of MiB, at most %.0f)", v, CACHE_MAX_MB_LIMIT);
    } else if (strcmp(k, "cores") == 0) {
        char *end = NULL;
        errno = 0;
        const long c = strtol(v, &end, 10);
        if (!isdigit((unsigned char)v[0]) || errno || *end || c < 1 || c > 64)
            return fail(err, errlen, "invalid value '%s' for option 'cores' (expected a whole number of NPU "
                        "cores, from 1 to the device's: the README's options table lists them)", v);
        o->cores = (unsigned)c;
        snprintf(o->cores_text, sizeof(o->cores_text), "%s", v);
    } else {
        return fail(err, errlen, "unknown option '%s' (known options: device, sim, debug, cache_dir, "
                    "cache_max_mb, cores)", k);
    }
    return 0;
}

/* Options a host that passes none (Frigate's teflon_tfl detector: load_delegate(path)) can still set, from the
 * environment; an option given by the host wins over its variable. */
static const struct {
    const char *var, *key;
} ENV_OPTIONS[] = {
    {"TEFLON_DEVICE", "device"}, {"TEFLON_SIM", "sim"}, {"TEFLON_CORES", "cores"},
    {"TEFLON_CACHE_MAX_MB", "cache_max_mb"},
};

static int given(const char *const *keys, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(keys[i], key) == 0)
            return 1;
    return 0;
}

static int env_options(const char *const *keys, size_t n, options *o, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof(ENV_OPTIONS) / sizeof(ENV_OPTIONS[0]); i++) {
        const char *v = getenv(ENV_OPTIONS[i].var);
        if (!v || !v[0] || given(keys, n, ENV_OPTIONS[i].key))
            continue;
        char why[400];
        if (parse_option(ENV_OPTIONS[i].key, v, o, why, sizeof(why)))
            return fail(err, errlen, "%s=%s: %s", ENV_OPTIONS[i].var, v, why);
    }
    return 0;
}

/* The program cache of a host that passed no options: /var/cache/teflon when this process may write there (the
 * Debian package creates it for root), else the user's cache directory ($XDG_CACHE_HOME or ~/.cache), else none. */
static void default_cache_dir(options *o)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char base[PATH_MAX] = "";
    if (access("/var/cache/teflon", W_OK) == 0)
        snprintf(base, sizeof(base), "/var/cache/teflon");
    else if (xdg && xdg[0] == '/' && strlen(xdg) < sizeof(o->cache_dir) - 100)
        snprintf(base, sizeof(base), "%s/teflon", xdg);
    else if (home && home[0] == '/' && strlen(home) < sizeof(o->cache_dir) - 100)
        snprintf(base, sizeof(base), "%s/.cache/teflon", home);
    if (base[0])
        snprintf(o->cache_dir, sizeof(o->cache_dir), "%s/programs", base);
}

/* The options as given, plus what the environment adds (TEFLON_DEBUG, TEFLON_CACHE_DIR, and ENV_OPTIONS for
 * options the host did not give). -1 with a one-line message naming the option in err. `warn`: print a warning
 * for a TEFLON_DEBUG value that is not understood (off when only checking options, so the later real load prints
 * it once). With no options at all the program cache is on unless TEFLON_CACHE_DIR is set and empty. */
static int parse_options(const char *const *keys, const char *const *values, size_t n, options *o, int warn,
                         char *err, size_t errlen)
{
    memset(o, 0, sizeof(*o));
    snprintf(o->device, sizeof(o->device), "auto");
    o->sim = -1;
    o->cache_max_mb = CACHE_MAX_MB_DEFAULT;
    o->cores = 1;
    for (size_t i = 0; i < n; i++) {
        const char *k = keys ? keys[i] : NULL, *v = values ? values[i] : NULL;
        if (!k || !v)
            return fail(err, errlen, "option %zu has no %s", i, k ? "value" : "key");
        if (parse_option(k, v, o, err, errlen))
            return -1;
    }
    if (env_options(keys, n, o, err, errlen))
        return -1;
    const char *env = getenv("TEFLON_DEBUG");
    const int flags = env ? debug_flags(env) : 0;
    if (flags < 0 && warn)
        fprintf(stderr, "teflon: TEFLON_DEBUG=%s is not understood (1, true, yes, on, verbose or debug turn debug "
                "output on; perf prints each job's counters at invoke; 0, false, no or off leave it off); debug "
                "stays off\n", env);
    if (flags > 0 && (flags & DEBUG_ON))
        o->debug = 1;
    if (flags > 0 && (flags & DEBUG_PERF))
        o->perf = 1;
    const char *cache_env = getenv("TEFLON_CACHE_DIR");
    if (!given(keys, n, "cache_dir") && cache_env && cache_env[0]) {
        if (strlen(cache_env) >= sizeof(o->cache_dir) - 80)
            return fail(err, errlen, "TEFLON_CACHE_DIR is too long (%zu characters)", strlen(cache_env));
        snprintf(o->cache_dir, sizeof(o->cache_dir), "%s/programs", cache_env);
    } else if (n == 0 && !cache_env) {
        default_cache_dir(o);
    }
    return 0;
}

/* device=auto: the NPU found here, or the first drivable target (its simulator) when there is none. */
static int resolve_auto(options *o, const char *drivable, char *err, size_t errlen)
{
    const teflon_target *fallback = teflon_target_default();
    if (!fallback)
        return fail(err, errlen, "this build cannot drive any device (no drivable row in the target registry)");
    char unknown[64] = "";
    const teflon_target *found = detect_device(unknown, sizeof(unknown));
    if (unknown[0])
        return fail(err, errlen, "device=auto found an NPU this build does not know (%s); pass the device explicitly "
                    "(drivable: %s)", unknown, drivable);
    if (found && !found->drivable)
        return fail(err, errlen, "device=auto found an %s NPU (%s family), which this build cannot drive yet "
                    "(drivable: %s); pass device=%s sim=1 to use the simulator instead", found->name, found->family,
                    drivable, fallback->name);
    if (!found && o->debug)
        fprintf(stderr, "teflon: no NPU device node found; device=auto uses %s\n", fallback->name);
    snprintf(o->device, sizeof(o->device), "%s", found ? found->name : fallback->name);
    return 0;
}

/* Turns device=auto into a target name and checks this build can drive it, with the cores asked for. */
static int resolve_device(options *o, char *err, size_t errlen)
{
    char list[128];
    teflon_target_list(list, sizeof(list), 1);
    if (strcmp(o->device, "auto") == 0 && resolve_auto(o, list, err, errlen))
        return -1;
    const teflon_target *t = teflon_target_named(o->device);
    if (!t->drivable)
        return fail(err, errlen, "device=%s (%s family) is not supported by this build yet (drivable devices: %s)",
                    o->device, t->family, list);
    if (o->cores > t->cores)
        return fail(err, errlen,
                    "invalid value '%s' for option 'cores' (%s runs jobs on %u NPU core%s at once: expected 1..%u)",
                    o->cores_text, t->name, t->cores, t->cores == 1 ? "" : "s", t->cores);
    return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* Prepare                                                                                       */

/* Python starts (or attaches) only when something is not in the program cache. */
static int python_ready(char *err, size_t errlen)
{
    char why[512];
    if (teflon_python_ready(why, sizeof(why)) == 0)
        return 0;
    snprintf(err, errlen, "%s", why);
    return -1;
}

/* Support payload: i32 nnodes, i32 supported[nnodes], then the debug table's text. */
static int support_from_cache(teflon_delegate *d, const teflon_graph *g, const uint8_t key[TEFLON_SHA256_BYTES],
                              int32_t *supported)
{
    uint8_t *payload;
    size_t len;
    int32_t n;
    if (teflon_cache_load(&d->cache, TEFLON_CACHE_SUPPORT, key, &payload, &len))
        return -1;
    const size_t table_at = sizeof(int32_t) * ((size_t)g->nnodes + 1);
    if (len >= table_at)
        memcpy(&n, payload, sizeof(n));
    if (len < table_at || n != g->nnodes) {
        /* Only a key collision could get here: the checksum held. Decide afresh. */
        free(payload);
        return -1;
    }
    memcpy(supported, payload + sizeof(int32_t), sizeof(int32_t) * (size_t)n);
    if (d->debug)
        fprintf(stderr, "teflon: support decisions from cache\n%s", (const char *)payload + table_at);
    free(payload);
    return 0;
}

static void support_to_cache(teflon_delegate *d, const teflon_graph *g, const uint8_t key[TEFLON_SHA256_BYTES],
                             const int32_t *supported, const char *table)
{
    const size_t table_at = sizeof(int32_t) * ((size_t)g->nnodes + 1), tlen = table ? strlen(table) : 0;
    uint8_t *payload = malloc(table_at + tlen + 1);
    if (!payload)
        return;
    memcpy(payload, &g->nnodes, sizeof(int32_t));
    memcpy(payload + sizeof(int32_t), supported, sizeof(int32_t) * (size_t)g->nnodes);
    memcpy(payload + table_at, table ? table : "", tlen + 1);
    (void)teflon_cache_store(&d->cache, TEFLON_CACHE_SUPPORT, key, payload, table_at + tlen);
    free(payload);
}

/* supported[] from the cache, else from Python (then stored). -1 when nothing could decide. */
static int decide_support(teflon_delegate *d, const teflon_graph *g, int32_t *supported)
{
    uint8_t key[TEFLON_SHA256_BYTES];
    char err[512];
    char *table = NULL;
    const double t0 = teflon_now_ms();
    if (d->keys) {
        teflon_key_graph(d->keys, key);
        if (support_from_cache(d, g, key, supported) == 0) {
            if (d->debug)
                fprintf(stderr, "teflon: support decisions read from the cache in %.1f ms\n", teflon_now_ms() - t0);
            return 0;
        }
    }
    if (python_ready(err, sizeof(err))) {
        fprintf(stderr, "teflon: %s; running the whole graph on the CPU\n", err);
        return -1;
    }
    /* cffi returns 0 without running anything when the Python side failed to start: the -1s tell. */
    int rc = teflon_py_support(g, d->device, d->debug, supported, &table);
    d->py_has_graph = 1;
    for (int i = 0; i < g->nnodes && rc == 0; i++)
        rc = supported[i] == 0 || supported[i] == 1 ? 0 : -1;
    if (rc != 0)
        fprintf(stderr, "teflon: the Python compiler could not decide which nodes to run (see the messages above); "
                "running the whole graph on the CPU\n");
    else if (d->debug && table)
        fprintf(stderr, "%s", table);
    if (rc == 0 && d->debug)
        fprintf(stderr, "teflon: support decisions made in %.1f ms\n", teflon_now_ms() - t0);
    if (rc == 0 && d->keys)
        support_to_cache(d, g, key, supported, table);
    free(table);
    return rc;
}

/* Node indices Python claimed, minus those C must refuse. Returns NULL when nothing is claimed. */
static tfl_int_array *claimed_nodes(teflon_delegate *d, tfl_context *context, const teflon_graph *g)
{
    int32_t *supported = malloc(sizeof(int32_t) * (size_t)(g->nnodes + 1));
    tfl_int_array *list = tfl_int_array_new(g->nnodes);
    uint8_t *dynamic = teflon_dynamic_tensors(context, g);
    if (!supported || !list || !dynamic) {
        fprintf(stderr, "teflon: out of memory; running the whole graph on the CPU\n");
        goto none;
    }
    for (int i = 0; i < g->nnodes; i++)
        supported[i] = -1;
    if (decide_support(d, g, supported))
        goto none;
    list->size = 0;
    for (int i = 0; i < g->nnodes; i++) {
        if (!supported[i])
            continue;
        if (teflon_node_has_dynamic_tensor(dynamic, &g->nodes[i])) {
            if (d->debug)
                fprintf(stderr, "teflon: node %d: reads or writes a tensor whose size can change at invoke (a "
                        "dynamic tensor, or one computed from a RESHAPE with a non-constant shape), stays on the "
                        "CPU\n", g->nodes[i].index);
            continue;
        }
        list->data[list->size++] = g->nodes[i].index;
    }
    free(supported);
    free(dynamic);
    if (list->size == 0) {
        free(list);
        return NULL;
    }
    return list;
none:
    free(supported);
    free(list);
    free(dynamic);
    return NULL;
}

int teflon_program_for(teflon_delegate *d, const teflon_graph *g, const int32_t *nodes, int nnodes,
                       const int32_t *inputs, int ninputs, const int32_t *outputs, int noutputs, uint8_t **blob,
                       uint64_t *blob_len, const char **source, char *err, size_t errlen)
{
    uint8_t key[TEFLON_SHA256_BYTES];
    *blob = NULL;
    *blob_len = 0;
    *source = "compiled";
    if (d->keys) {
        size_t len;
        teflon_key_partition(d->keys, nodes, nnodes, inputs, ninputs, outputs, noutputs, key);
        if (teflon_cache_load(&d->cache, TEFLON_CACHE_PROGRAM, key, blob, &len) == 0 && len > 0) {
            *blob_len = len;
            *source = "read from the cache";
            return 0;
        }
        free(*blob);
        *blob = NULL;
    }
    if (python_ready(err, errlen))
        return -1;
    int rc = teflon_py_compile(g, !d->py_has_graph, d->device, d->debug, nodes, nnodes, inputs, ninputs, outputs,
                               noutputs, blob, blob_len, err, (int32_t)errlen);
    err[errlen - 1] = '\0';
    d->py_has_graph = 1;
    if (rc != 0 || *blob == NULL || *blob_len == 0) {
        if (!err[0])
            snprintf(err, errlen, "the Python compiler returned no program (see the messages above)");
        free(*blob);
        *blob = NULL;
        return -1;
    }
    if (d->keys && teflon_cache_store(&d->cache, TEFLON_CACHE_PROGRAM, key, *blob, (size_t)*blob_len) == 0)
        *source = "compiled and stored in the cache";
    return 0;
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
    teflon_keyer keys;
    char err[512];
    tfl_status status = TFL_OK;

    if (teflon_graph_export(context, &ex, err, sizeof(err))) {
        fprintf(stderr, "teflon: %s; running the whole graph on the CPU\n", err);
        return TFL_OK;
    }
    d->keys = NULL;
    d->py_has_graph = 0;
    if (d->cache.dir) {
        if (teflon_keyer_init(&keys, &ex.graph, d->settings) == 0)
            d->keys = &keys;
        else if (d->debug)
            fprintf(stderr, "teflon: out of memory for the program cache's keys; compiling without it\n");
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
    if (d->keys)
        teflon_keyer_free(d->keys);
    d->keys = NULL;
    teflon_graph_export_free(&ex);
    return status;
}

/* ---------------------------------------------------------------------------------------------- */
/* Entry points                                                                                  */

/* The options as they are checked in tflite_plugin_create_delegate, without opening the device. */
static int check_options(const char *const *keys, const char *const *values, size_t n, options *o, int warn,
                         char *err, size_t errlen)
{
    err[0] = '\0';
    return parse_options(keys, values, n, o, warn, err, errlen) || resolve_device(o, err, errlen) ? -1 : 0;
}

TEFLON_EXPORT int teflon_check_options(const char *const *keys, const char *const *values, size_t n, char *err,
                                       size_t errlen)
{
    options o;
    char msg[512];
    if (check_options(keys, values, n, &o, 0, msg, sizeof(msg)) == 0) {
        if (err && errlen)
            err[0] = '\0';
        return 0;
    }
    if (err && errlen)
        snprintf(err, errlen, "teflon: %s", msg);
    return -1;
}

TEFLON_EXPORT tfl_delegate *tflite_plugin_create_delegate(char **keys, char **values, size_t n,
                                                          void (*report_error)(const char *))
{
    options o;
    char err[512] = "";
    teflon_dev *dev = NULL;

    if (check_options((const char *const *)keys, (const char *const *)values, n, &o, 1, err, sizeof(err))) {
        report_once(report_error, err);
        return NULL;
    }
    int rc = teflon_dev_open_cores(o.device, o.sim, o.cores, &dev, err, sizeof(err));
    if (rc != 0 || !dev) {
        char msg[640];
        snprintf(msg, sizeof(msg), "cannot open the %s NPU (sim=%s): %s", o.device,
                 o.sim < 0 ? "auto" : o.sim ? "1" : "0", err[0] ? err : "unknown error");
        report_once(report_error, msg);
        return NULL;
    }
    teflon_delegate *d = calloc(1, sizeof(*d));
    teflon_devref *ref = calloc(1, sizeof(*ref));
    char *cache_dir = o.cache_dir[0] ? strdup(o.cache_dir) : NULL;
    if (!d || !ref || (o.cache_dir[0] && !cache_dir)) {
        free(d);
        free(ref);
        free(cache_dir);
        teflon_dev_close(dev);
        report_once(report_error, "out of memory");
        return NULL;
    }
    atomic_init(&ref->refs, 1);
    ref->dev = dev;
    pthread_mutex_init(&ref->lock, NULL);
    d->devref = ref;
    snprintf(d->device, sizeof(d->device), "%s", o.device);
    d->sim = o.sim;
    d->debug = o.debug;
    d->perf = o.perf;
    /* Everything of the options that changes a compiled program (sim and debug do not). */
    snprintf(d->settings, sizeof(d->settings), "device=%s", o.device);
    d->cache.dir = cache_dir;
    d->cache.max_bytes = (uint64_t)(o.cache_max_mb * 1024.0 * 1024.0);
    d->cache.debug = o.debug;
    d->base.data_ = d;
    d->base.Prepare = delegate_prepare;
    /* Shapes propagated before Prepare: TFLite prepares every node first. A Vela model's `ethos-u` custom op has no
     * CPU kernel, so that preparation fails before the delegate can claim the op: for the ethosu family TFLite is
     * told to leave the nodes unprepared. Every family takes graphs with dynamic tensors (without the flag TFLite
     * refuses the delegate outright, and a Keras model with a dynamic batch fails to load): the delegate refuses the
     * nodes that touch a tensor whose size can change itself (claimed_nodes, teflon_dynamic_tensors). */
    d->base.flags = strcmp(teflon_dev_target(dev)->family, "ethosu") == 0
                        ? TFL_DELEGATE_ALLOW_DYNAMIC_TENSORS
                        : TFL_DELEGATE_ALLOW_DYNAMIC_TENSORS | TFL_DELEGATE_REQUIRE_PROPAGATED_SHAPES;
    if (d->debug) {
        fprintf(stderr, "teflon: delegate created for %s (%s%s%s)\n", d->device,
                teflon_dev_is_sim(dev) ? "simulated NPU" : "NPU device node", o.cores > 1 ? ", cores=" : "",
                o.cores > 1 ? o.cores_text : "");
        if (cache_dir)
            fprintf(stderr, "teflon: program cache in %s (limit %g MiB, build %s)\n", cache_dir, o.cache_max_mb,
                    teflon_cache_build_id());
    }
    return &d->base;
}

TEFLON_EXPORT void tflite_plugin_destroy_delegate(tfl_delegate *base)
{
    teflon_delegate *d = (teflon_delegate *)base;
    if (!d)
        return;
    free_partitions(d->ready);
    teflon_devref_put(d->devref);
    free(d->cache.dir);
    free(d);
}
