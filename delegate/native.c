/* Exported runner API (native.h): thin wrappers over driver.h and runner.h. */
#include "native.h"

#include <string.h>

#include "driver.h"
#include "runner.h"

void *teflon_native_open(const char *soc, int sim, char *err, size_t errlen)
{
    teflon_dev *dev = NULL;
    return teflon_dev_open(soc, sim, &dev, err, errlen) ? NULL : dev;
}

void *teflon_native_open_cores(const char *soc, int sim, unsigned cores, char *err, size_t errlen)
{
    teflon_dev *dev = NULL;
    return teflon_dev_open_cores(soc, sim, cores, &dev, err, errlen) ? NULL : dev;
}

void teflon_native_close(void *dev)
{
    teflon_dev_close(dev);
}

int teflon_native_is_sim(void *dev)
{
    return teflon_dev_is_sim(dev);
}

void *teflon_native_load(void *dev, const uint8_t *blob, uint64_t len, char *err, size_t errlen)
{
    return teflon_runner_load(dev, blob, len, err, errlen);
}

void teflon_native_unload(void *runner)
{
    teflon_runner_free(runner);
}

int teflon_native_set_input(void *runner, int32_t tensor, const void *host, uint64_t bytes)
{
    return teflon_runner_set_input(runner, tensor, host, bytes);
}

int teflon_native_run(void *runner, char *err, size_t errlen)
{
    return teflon_runner_run(runner, err, errlen);
}

int teflon_native_get_output(void *runner, int32_t tensor, void *host, uint64_t bytes)
{
    return teflon_runner_get_output(runner, tensor, host, bytes);
}

int teflon_native_stats(void *runner, uint64_t *tasks, uint64_t *macs)
{
    teflon_runner_stats(runner, tasks, macs);
    return 0;
}

int teflon_native_task_counters(void *runner, uint64_t *out, uint32_t cap)
{
    uint32_t n = 0;
    const teflon_task_counters *c = teflon_runner_task_counters(runner, &n);
    for (uint32_t i = 0; i < n && i < cap; i++) {
        const uint64_t w[TEFLON_NATIVE_COUNTERS] = {c[i].feature_rd, c[i].weight_rd, c[i].bias_rd, c[i].data_wr,
                                                    c[i].macs, c[i].ns, c[i].core, c[i].start_ns,
                                                    c[i].macs_nz};
        memcpy(out + (size_t)i * TEFLON_NATIVE_COUNTERS, w, sizeof(w));
    }
    return (int)n;
}

int teflon_native_run_info(void *runner, uint64_t *npu_ns, uint32_t *lanes)
{
    *npu_ns = teflon_runner_npu_ns(runner);
    *lanes = teflon_runner_lanes(runner);
    return 0;
}
