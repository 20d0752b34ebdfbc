/* An injected NPU fault from a C host, with no Python in the process, so LeakSanitizer can check that a failed
 * run frees everything: dlopen libteflon.so, open the simulated device ($TEFLON_SIM_FAULT set by the caller),
 * load a compiled program, run it (the fault: must fail with the fault's message), run it again (must succeed),
 * read the output, unload, close.
 *
 * usage: test_fault_leaks LIBTEFLON.so SOC PROGRAM.blob IN_TENSOR IN_BYTES OUT_TENSOR OUT_BYTES KIND [CORES]
 * (exit 0 = pass; tests/test_faults.py builds and runs it; with CORES > 1, tests/rocket/test_cores.py: the runner's
 * extra open files (lanes) and their buffers must be freed too)
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void *(*open_fn)(const char *soc, int sim, unsigned cores, char *err, size_t errlen);
typedef void (*close_fn)(void *dev);
typedef void *(*load_fn)(void *dev, const uint8_t *blob, uint64_t len, char *err, size_t errlen);
typedef void (*unload_fn)(void *runner);
typedef int (*set_input_fn)(void *runner, int32_t tensor, const void *host, uint64_t bytes);
typedef int (*run_fn)(void *runner, char *err, size_t errlen);
typedef int (*get_output_fn)(void *runner, int32_t tensor, void *host, uint64_t bytes);

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = n > 0 ? malloc((size_t)n) : NULL;
    *len = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    if (argc != 9 && argc != 10) {
        fprintf(stderr, "usage: %s LIBTEFLON.so SOC PROGRAM IN_TENSOR IN_BYTES OUT_TENSOR OUT_BYTES KIND [CORES]\n",
                argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    const open_fn dev_open = (open_fn)dlsym(lib, "teflon_native_open_cores");
    const close_fn dev_close = (close_fn)dlsym(lib, "teflon_native_close");
    const load_fn load = (load_fn)dlsym(lib, "teflon_native_load");
    const unload_fn unload = (unload_fn)dlsym(lib, "teflon_native_unload");
    const set_input_fn set_input = (set_input_fn)dlsym(lib, "teflon_native_set_input");
    const run_fn run = (run_fn)dlsym(lib, "teflon_native_run");
    const get_output_fn get_output = (get_output_fn)dlsym(lib, "teflon_native_get_output");
    if (!dev_open || !dev_close || !load || !unload || !set_input || !run || !get_output) {
        fprintf(stderr, "missing runner API symbols\n");
        return 1;
    }
    const int32_t in_t = atoi(argv[4]), out_t = atoi(argv[6]);
    const size_t in_bytes = strtoul(argv[5], NULL, 10), out_bytes = strtoul(argv[7], NULL, 10);
    size_t len = 0;
    uint8_t *blob = read_file(argv[3], &len);
    uint8_t *in = calloc(in_bytes ? in_bytes : 1, 1), *out = calloc(out_bytes ? out_bytes : 1, 1);
    char err[1024] = "", expect[64];
    snprintf(expect, sizeof(expect), "(simulated fault '%s')", argv[8]);
    int failures = 0;
    void *dev = blob && in && out ? dev_open(argv[2], 1, argc == 10 ? (unsigned)atoi(argv[9]) : 1u, err, sizeof(err)) : NULL;
    void *runner = dev ? load(dev, blob, len, err, sizeof(err)) : NULL;
    if (!runner) {
        fprintf(stderr, "FAIL open/load: %s\n", err);
        failures++;
    } else {
        if (set_input(runner, in_t, in, in_bytes) != 0) {
            fprintf(stderr, "FAIL set_input\n");
            failures++;
        }
        err[0] = '\0';
        if (run(runner, err, sizeof(err)) == 0 || !strstr(err, expect)) {
            fprintf(stderr, "FAIL the faulting run: \"%s\" should contain \"%s\"\n", err, expect);
            failures++;
        }
        printf("faulting run: %s\n", err);
        err[0] = '\0';
        if (run(runner, err, sizeof(err)) != 0 || get_output(runner, out_t, out, out_bytes) != 0) {
            fprintf(stderr, "FAIL the next run: %s\n", err);
            failures++;
        }
    }
    unload(runner);
    if (dev)
        dev_close(dev);
    free(blob);
    free(in);
    free(out);
    dlclose(lib);
    if (!failures)
        printf("all checks passed\n");
    return failures ? 1 : 0;
}
