/* NPU_OP_POOL: MAX, AVERAGE and REDUCE_SUM over the kernel window (docs/hardware/ethosu-sim.md, "Pooling").
 * Padding positions take no part (TFLite's pooling ignores them), the IFM zero point is removed before the
 * reduction and the OFM zero point added after scaling. */
#include <errno.h>

#include "ethosu_npu_priv.h"

enum { ETHOSU_POOL_MAX = 0, ETHOSU_POOL_AVERAGE = 1, ETHOSU_POOL_REDUCE_SUM = 2 };

/* round(sum / n), ties away from zero: TFLite's average pooling division. [Inference] An AVERAGE pool whose
 * IFM is padded divides by the number of non-padding elements before the OFM scaling (Vela's Regor core then
 * sets OFM_SCALE 1, shift 0; its legacy core the per-channel mode without a scale stream); without padding
 * the OFM scale alone divides (Vela: scaling.quantise_pooling_scale, 1/kernel size in the multiplier). */
static inline int64_t ethosu_npu_div_round(int64_t sum, int64_t n)
{
    return sum >= 0 ? (sum + n / 2) / n : (sum - n / 2) / n;
}

int ethosu_npu_pool(struct ethosu_npu *npu, unsigned mode)
{
    struct ethosu_npu_kgeom g;
    struct ethosu_npu_fm ifm, ofm;
    struct ethosu_npu_out out;
    int rc;
    if (mode > ETHOSU_POOL_REDUCE_SUM)
        return ethosu_npu_fail(npu, -EINVAL, "POOL mode %u undefined", mode);
    if ((rc = ethosu_npu_kernel_geometry(npu, &g)))
        return rc;
    /* REDUCE_SUM sums the IFM channels into one OFM channel (Vela: ReduceSum block type); the others keep
     * the depth. */
    int ic = g.ic;
    if (mode != ETHOSU_POOL_REDUCE_SUM && g.ic != g.oc)
        return ethosu_npu_fail(npu, -EINVAL, "POOL: IFM depth %d != OFM depth %d", g.ic, g.oc);
    if ((rc = ethosu_npu_fm_load(npu, 0, g.ih, g.iw, ic, &ifm)) || (rc = ethosu_npu_fm_load(npu, 2, g.oh, g.ow, g.oc, &ofm)) ||
        (rc = ethosu_npu_out_setup(npu, &ofm, false, &out)) || (rc = ethosu_npu_check_blocks(npu)))
        return rc;
    if (mode == ETHOSU_POOL_REDUCE_SUM && !out.global_scale)
        return ethosu_npu_fail(npu, -EINVAL, "REDUCE_SUM without a global OFM scale not simulated");
    bool padded = g.pt || g.pl || g.pb || g.pr;
    for (int oy = 0; oy < g.oh; oy++)
        for (int ox = 0; ox < g.ow; ox++)
            for (int c = 0; c < g.oc; c++) {
                int64_t acc = mode == ETHOSU_POOL_MAX ? INT64_MIN : 0, n = 0;
                for (int ky = 0; ky < g.kh; ky++)
                    for (int kx = 0; kx < g.kw; kx++) {
                        int py = oy * g.sy + ky * g.dy, px = ox * g.sx + kx * g.dx;
                        if (ethosu_npu_is_pad(&g, py, px))
                            continue;
                        n++;
                        if (mode == ETHOSU_POOL_REDUCE_SUM) {
                            for (int i = 0; i < ic; i++)
                                acc += ethosu_npu_ifm_at(&ifm, &g, py, px, i);
                            continue;
                        }
                        int32_t v = ethosu_npu_ifm_at(&ifm, &g, py, px, c);
                        if (mode == ETHOSU_POOL_MAX)
                            acc = v > acc ? v : acc;
                        else
                            acc += v;
                    }
                if (n == 0)
                    return ethosu_npu_fail(npu, -EINVAL, "pooling window at (%d,%d) lies entirely in the padding", oy, ox);
                int64_t v = acc;
                if (mode == ETHOSU_POOL_AVERAGE && (padded || !out.global_scale))
                    v = ethosu_npu_div_round(acc, n);
                if (out.global_scale)
                    v = ethosu_npu_scale(v, out.g_mult, out.g_shift, out.round_mode);
                ethosu_npu_fm_write(&ofm, oy, ox, c, ethosu_npu_out_finish(&out, v));
            }
    if (npu->stats) {
        npu->stats->feature_rd += (uint64_t)g.ih * (uint64_t)g.iw * (uint64_t)ic * (uint64_t)ifm.bytes;
        npu->stats->data_wr += (uint64_t)g.oh * (uint64_t)g.ow * (uint64_t)g.oc * (uint64_t)ofm.bytes;
    }
    return 0;
}
