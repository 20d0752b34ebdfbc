/* Weight decoding for the simulated NPU: one call per convolution (docs/hardware/ethosu-sim.md, "Weights"):
 * the weight stream through the project's decoder (ethosu_mlw.c: mlw decode, then the brick order undone into
 * OHWI), geometry from the kick-off's registers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "ethosu_mlw.h"
#include "ethosu_npu_priv.h"

int ethosu_npu_decode_weights_builtin(void *ctx, const struct ethosu_npu_wdesc *d, int16_t *ohwi, char *err,
                                      size_t errlen)
{
    (void)ctx;
    struct ethosu_brick_geom g = {
        .depthwise = d->depthwise, .part_kernel = d->part_kernel, .ofm_depth = (uint32_t)d->ofm_depth,
        .ifm_depth = (uint32_t)d->ifm_depth, .kernel_h = (uint32_t)d->kh, .kernel_w = (uint32_t)d->kw,
        .ofm_block_depth = (uint32_t)d->ofm_block_depth, .dilation_x = (uint32_t)d->dilation_x,
        .dilation_y = (uint32_t)d->dilation_y, .ifm_bits = (uint32_t)d->ifm_bits,
    };
    size_t n = ethosu_brick_count(&g), got = 0;
    if (n == 0) { /* ethosu_brick_index says why the geometry has no brick order */
        int r = ethosu_brick_index(&g, NULL, 0, err, errlen);
        return r ? r : -EINVAL;
    }
    int16_t *values = malloc(n * sizeof(*values));
    if (!values)
        return -ENOMEM;
    int rc = ethosu_mlw_decode(d->stream, d->len, values, n, &got, err, errlen);
    if (!rc && got != n) {
        if (err && errlen)
            snprintf(err, errlen, "weight stream decodes to %zu values, the brick order of the op needs %zu", got, n);
        rc = -EINVAL;
    }
    if (!rc) {
        size_t len = (size_t)d->ofm_depth * (size_t)d->kh * (size_t)d->kw * (size_t)d->ifm_depth;
        rc = ethosu_brick_unorder(&g, values, n, ohwi, len, err, errlen);
    }
    free(values);
    return rc;
}
