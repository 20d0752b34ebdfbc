/* libteflon.so as a C/C++ host sees it: dlopen(RTLD_NOW | RTLD_LOCAL) like benchmark_model, create and
 * destroy delegates with good and bad options, and run the delegate's Prepare on a one-node fake
 * interpreter so the cffi embedding has to start Python inside a non-Python process.
 *
 * usage: test_dlopen LIBTEFLON.so      (exit 0 = pass; tests/test_dlopen.py builds and runs it)
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tflite_abi.h"

typedef tfl_delegate *(*create_fn)(char **keys, char **values, size_t n, void (*report)(const char *));
typedef void (*destroy_fn)(tfl_delegate *d);

static char last_error[1024];   /* report_error has no user pointer: a test-only global */
static int failures;

static void report(const char *msg)
{
    snprintf(last_error, sizeof(last_error), "%s", msg);
}

#define CHECK(cond, ...) do { if (!(cond)) { failures++; fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

static tfl_delegate *create(create_fn fn, const char *k0, const char *v0, const char *k1, const char *v1)
{
    char *keys[2] = {(char *)k0, (char *)k1}, *values[2] = {(char *)v0, (char *)v1};
    last_error[0] = '\0';
    return fn(keys, values, k1 ? 2 : (k0 ? 1 : 0), report);
}

/* ---- a one-node interpreter: ABS on a 1x4x4x1 uint8 tensor ---- */
static struct {
    tfl_int_array *plan, *dims, *inputs, *outputs;
    tfl_tensor tensors[2];
    tfl_node node;
    tfl_registration reg;
    int replaced;
} fake;

static tfl_int_array *ints(int n, const int *v)
{
    tfl_int_array *a = malloc(sizeof(*a) + sizeof(int) * (size_t)n);
    a->size = n;
    memcpy(a->data, v, sizeof(int) * (size_t)n);
    return a;
}

static tfl_status get_plan(tfl_context *c, tfl_int_array **plan)
{
    (void)c;
    *plan = fake.plan;
    return TFL_OK;
}

static tfl_status get_node(tfl_context *c, int index, tfl_node **node, tfl_registration **reg)
{
    (void)c;
    if (index != 0)
        return TFL_ERROR;
    *node = &fake.node;
    *reg = &fake.reg;
    return TFL_OK;
}

static tfl_status replace(tfl_context *c, tfl_registration r, const tfl_int_array *nodes, tfl_delegate *d)
{
    (void)c; (void)r; (void)nodes; (void)d;
    fake.replaced++;
    return TFL_OK;
}

static void build_fake(tfl_context *ctx)
{
    static unsigned char buf[2][16];
    fake.plan = ints(1, (int[]){0});
    fake.dims = ints(4, (int[]){1, 4, 4, 1});
    fake.inputs = ints(1, (int[]){0});
    fake.outputs = ints(1, (int[]){1});
    for (int i = 0; i < 2; i++) {
        tfl_tensor *t = &fake.tensors[i];
        memset(t, 0, sizeof(*t));
        t->type = TFL_UINT8;
        t->data.raw = buf[i];
        t->dims = fake.dims;
        t->allocation_type = TFL_ARENA_RW;
        t->bytes = 16;
        t->name = i ? "output" : "input";
    }
    memset(&fake.node, 0, sizeof(fake.node));
    fake.node.inputs = fake.inputs;
    fake.node.outputs = fake.outputs;
    memset(&fake.reg, 0, sizeof(fake.reg));
    fake.reg.builtin_code = 101; /* ABS: no NPU backend claims it */
    fake.reg.version = 1;
    memset(ctx, 0, sizeof(*ctx));
    ctx->tensors_size = 2;
    ctx->tensors = fake.tensors;
    ctx->GetExecutionPlan = get_plan;
    ctx->GetNodeAndRegistration = get_node;
    ctx->ReplaceNodeSubsetsWithDelegateKernels = replace;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s LIBTEFLON.so\n", argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "FAIL dlopen: %s\n", dlerror());
        return 1;
    }
    create_fn create_delegate = (create_fn)dlsym(lib, "tflite_plugin_create_delegate");
    destroy_fn destroy_delegate = (destroy_fn)dlsym(lib, "tflite_plugin_destroy_delegate");
    if (!create_delegate || !destroy_delegate) {
        fprintf(stderr, "FAIL: entry points not exported\n");
        return 1;
    }
    CHECK(dlsym(lib, "teflon_py_support") == NULL, "internal symbol teflon_py_support is exported");

    tfl_delegate *d = create(create_delegate, "device", "rk3588", "sim", "1");
    CHECK(d != NULL, "device=rk3588 sim=1 refused: %s", last_error);
    destroy_delegate(d);
    destroy_delegate(NULL);
    d = create(create_delegate, "device", "rk3576", "sim", "1");
    CHECK(d != NULL, "device=rk3576 sim=1 refused: %s", last_error);
    destroy_delegate(d);
    d = create(create_delegate, "device", "a311d", "sim", "1");
    CHECK(d != NULL, "device=a311d sim=1 refused: %s", last_error);
    destroy_delegate(d);
    d = create(create_delegate, "device", "imx8mp", "sim", "1");
    CHECK(d != NULL, "device=imx8mp sim=1 refused: %s", last_error);
    destroy_delegate(d);

    static const struct { const char *k, *v, *expect; } bad[] = {
        {"colour", "blue", "colour"},
        {"device", "foo", "foo"},
        {"sim", "2", "sim"},
        {"debug", "yes", "debug"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        d = create(create_delegate, bad[i].k, bad[i].v, NULL, NULL);
        CHECK(d == NULL, "%s=%s accepted", bad[i].k, bad[i].v);
        CHECK(strstr(last_error, bad[i].expect) != NULL, "%s=%s: message does not name '%s': '%s'", bad[i].k,
              bad[i].v, bad[i].expect, last_error);
        if (d)
            destroy_delegate(d);
    }
    if (access("/dev/accel", F_OK) != 0) {   /* no NPU here: a real device cannot be forced */
        d = create(create_delegate, "device", "rk3588", "sim", "0");
        CHECK(d == NULL, "sim=0 accepted without a device node");
        CHECK(strstr(last_error, "sim") != NULL, "sim=0: message does not name sim: '%s'", last_error);
    }

    /* Prepare from a C host: starts Python through cffi under RTLD_LOCAL. */
    tfl_context ctx;
    build_fake(&ctx);
    d = create(create_delegate, "device", "rk3588", "debug", "1");
    CHECK(d != NULL, "device=rk3588 debug=1 refused: %s", last_error);
    if (d) {
        CHECK(d->Prepare(&ctx, d) == TFL_OK, "Prepare failed");
        CHECK(fake.replaced == 0, "ABS was delegated");
        destroy_delegate(d);
    }
    free(fake.plan);
    free(fake.dims);
    free(fake.inputs);
    free(fake.outputs);
    /* libteflon.so stays loaded: Python, once started, cannot be unloaded with it. */
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    else
        printf("test_dlopen: all checks passed\n");
    return failures ? 1 : 0;
}
