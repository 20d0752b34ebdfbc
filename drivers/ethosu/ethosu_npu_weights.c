/* Weight decoding for the simulated NPU: one call per convolution (docs/hardware/ethosu-sim.md, "Weights").
 * The weight stream decoder proper (drivers/ethosu/ethosu_mlw.[ch]) is built separately; until it is linked
 * in, the built-in path reports that it is missing and tests hand in a decoder through ethosu_npu_run_opts. */
#include <errno.h>
#include <stdio.h>

#include "ethosu_npu_priv.h"

int ethosu_npu_decode_weights_builtin(void *ctx, const struct ethosu_npu_wdesc *d, int16_t *ohwi, char *err,
                                      size_t errlen)
{
    (void)ctx;
    (void)d;
    (void)ohwi;
    if (err && errlen)
        snprintf(err, errlen, "no weight stream decoder built in");
    return -ENOSYS;
}
