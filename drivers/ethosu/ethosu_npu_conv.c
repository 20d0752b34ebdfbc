/* NPU_OP_CONV and NPU_OP_DEPTHWISE (docs/hardware/ethosu-sim.md, "Convolution"): the IFM window the kernel
 * registers describe, padded with the IFM zero point, times the decoded weight stream, plus the scale
 * stream's bias, through the output stage. The IFM is gathered once into a dense zero-point-free int16 (8-bit
 * IFMs) or int32 array so that the MAC loops below are plain dot products the compiler vectorizes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ethosu_npu_priv.h"

static int ethosu_npu_dim(struct ethosu_npu *npu, unsigned reg, int *v)
{
    uint16_t p;
    int rc = ethosu_npu_get0(npu, reg, &p);
    *v = (int)p + 1;
    return rc;
}

int ethosu_npu_kernel_geometry(struct ethosu_npu *npu, struct ethosu_npu_kgeom *g)
{
    uint16_t ks, pt, pl, pb, pr, up;
    int ekh, ekw, rc;
    memset(g, 0, sizeof(*g));
    if ((rc = ethosu_npu_dim(npu, ETHOSU_OFM_HEIGHT_M1, &g->oh)) || (rc = ethosu_npu_dim(npu, ETHOSU_OFM_WIDTH_M1, &g->ow)) ||
        (rc = ethosu_npu_dim(npu, ETHOSU_OFM_DEPTH_M1, &g->oc)) || (rc = ethosu_npu_dim(npu, ETHOSU_IFM_DEPTH_M1, &g->ic)) ||
        (rc = ethosu_npu_dim(npu, ETHOSU_KERNEL_HEIGHT_M1, &ekh)) || (rc = ethosu_npu_dim(npu, ETHOSU_KERNEL_WIDTH_M1, &ekw)) ||
        (rc = ethosu_npu_get0(npu, ETHOSU_KERNEL_STRIDE, &ks)) || (rc = ethosu_npu_get0(npu, ETHOSU_IFM_PAD_TOP, &pt)) ||
        (rc = ethosu_npu_get0(npu, ETHOSU_IFM_PAD_LEFT, &pl)) || (rc = ethosu_npu_get0(npu, ETHOSU_IFM_PAD_BOTTOM, &pb)) ||
        (rc = ethosu_npu_get0(npu, ETHOSU_IFM_PAD_RIGHT, &pr)) || (rc = ethosu_npu_get0(npu, ETHOSU_IFM_UPSCALE, &up)))
        return rc;
    g->sx = (int)ETHOSU_KS_STRIDE_X(ks);
    g->sy = (int)ETHOSU_KS_STRIDE_Y(ks);
    g->dx = (int)ETHOSU_KS_DILATION_X(ks);
    g->dy = (int)ETHOSU_KS_DILATION_Y(ks);
    g->part_kernel = ETHOSU_KS_PART_KERNEL(ks);
    /* KERNEL_STRIDE bit 5 (decomposition) is not a U65 field (the generated table); the weight encoder splits
     * kernels into 8x8 sub-kernels (Vela architecture_features.SubKernelMax). */
    g->decomposition = 8;
    /* KERNEL_*_M1 hold the dilated extent minus one (Vela generate_kernel: dilation x (size - 1)). */
    if ((ekh - 1) % g->dy || (ekw - 1) % g->dx)
        return ethosu_npu_fail(npu, -EINVAL, "kernel extent %dx%d not a multiple of dilation %dx%d", ekh, ekw, g->dy, g->dx);
    g->kh = (ekh - 1) / g->dy + 1;
    g->kw = (ekw - 1) / g->dx + 1;
    g->pt = pt, g->pl = pl, g->pb = pb, g->pr = pr;
    g->upscale = up;
    if (up == 3)
        return ethosu_npu_fail(npu, -EINVAL, "IFM_UPSCALE mode 3 undefined");
    g->ph = (g->oh - 1) * g->sy + ekh;
    g->pw = (g->ow - 1) * g->sx + ekw;
    int uh = g->ph - g->pt - g->pb, uw = g->pw - g->pl - g->pr;
    if (uh < 1 || uw < 1)
        return ethosu_npu_fail(npu, -EINVAL, "padding %d+%d / %d+%d leaves no IFM for a %dx%d window", g->pt, g->pb,
                               g->pl, g->pr, g->ph, g->pw);
    g->ih = up ? (uh + 1) / 2 : uh;
    g->iw = up ? (uw + 1) / 2 : uw;
    return 0;
}

/* The weight stream of the op (WEIGHT_REGION / BASE / LENGTH, inside its region) and the geometry its decoder
 * needs. */
static int ethosu_npu_weight_desc(struct ethosu_npu *npu, const struct ethosu_npu_kgeom *g, bool dw, int ifm_bits,
                                  struct ethosu_npu_wdesc *d)
{
    uint16_t wreg, blk;
    uint64_t wbase, wlen;
    int rc;
    if ((rc = ethosu_npu_get0(npu, ETHOSU_WEIGHT_REGION, &wreg)) || (rc = ethosu_npu_get1(npu, ETHOSU_WEIGHT_BASE, &wbase)) ||
        (rc = ethosu_npu_get1(npu, ETHOSU_WEIGHT_LENGTH, &wlen)) || (rc = ethosu_npu_get0(npu, ETHOSU_OFM_BLK_DEPTH_M1, &blk)))
        return rc;
    const struct ethosu_npu_region *r = &npu->regions[wreg];
    if (!r->base || wbase > r->size || wlen > r->size - wbase)
        return ethosu_npu_fail(npu, -EFAULT, "weight stream 0x%llx+%llu outside region %u", (unsigned long long)wbase,
                               (unsigned long long)wlen, wreg);
    *d = (struct ethosu_npu_wdesc){
        .stream = r->base + wbase, .len = (size_t)wlen, .ofm_depth = g->oc, .kh = g->kh, .kw = g->kw,
        .ifm_depth = dw ? 1 : g->ic, .ofm_block_depth = blk + 1, .ifm_bits = ifm_bits, .depthwise = dw,
        .part_kernel = g->part_kernel, .dilation_x = g->dx, .dilation_y = g->dy,
        .decomposition = g->decomposition,
    };
    return 0;
}

static int ethosu_npu_load_weights(struct ethosu_npu *npu, const struct ethosu_npu_wdesc *d, int16_t **out)
{
    size_t n = (size_t)d->ofm_depth * (size_t)d->kh * (size_t)d->kw * (size_t)d->ifm_depth;
    int16_t *w = calloc(n ? n : 1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    ethosu_npu_wdecode_fn fn = npu->opts->decode_weights ? npu->opts->decode_weights : ethosu_npu_decode_weights_builtin;
    int rc = fn(npu->opts->decode_ctx, d, w, npu->err, npu->errlen);
    if (rc) {
        free(w);
        return rc < 0 ? rc : -EINVAL;
    }
    *out = w;
    return 0;
}

static inline int32_t ethosu_npu_dot16(const int16_t *restrict a, const int16_t *restrict b, int n)
{
    int32_t s = 0;
    for (int i = 0; i < n; i++)
        s += (int32_t)a[i] * b[i];
    return s;
}

/* Convolution MACs: acc[o] for one output pixel over the padded IFM P (ph x pw x ic). */
static void ethosu_npu_conv_pixel(const struct ethosu_npu_kgeom *g, const int16_t *P, const int16_t *W, int oy, int ox,
                                  int64_t *acc)
{
    int rowlen = g->kw * g->ic;
    for (int o = 0; o < g->oc; o++) {
        int64_t a = 0;
        for (int ky = 0; ky < g->kh; ky++) {
            const int16_t *prow = P + ((size_t)(oy * g->sy + ky * g->dy) * (size_t)g->pw + (size_t)(ox * g->sx)) * (size_t)g->ic;
            const int16_t *wrow = W + ((size_t)o * (size_t)g->kh + (size_t)ky) * (size_t)rowlen;
            if (g->dx == 1) {
                for (int s = 0; s < rowlen; s += 16384)
                    a += ethosu_npu_dot16(prow + s, wrow + s, rowlen - s < 16384 ? rowlen - s : 16384);
            } else {
                for (int kx = 0; kx < g->kw; kx++)
                    a += ethosu_npu_dot16(prow + (size_t)(kx * g->dx) * (size_t)g->ic, wrow + (size_t)kx * (size_t)g->ic, g->ic);
            }
        }
        acc[o] = a;
    }
}

/* Depthwise MACs: acc[c] for one output pixel; Wt is [kh][kw][c]. */
static void ethosu_npu_dw_pixel(const struct ethosu_npu_kgeom *g, const int16_t *P, const int16_t *Wt, int oy, int ox,
                                int32_t *restrict acc)
{
    int C = g->oc;
    for (int c = 0; c < C; c++)
        acc[c] = 0;
    for (int ky = 0; ky < g->kh; ky++)
        for (int kx = 0; kx < g->kw; kx++) {
            const int16_t *restrict p =
                P + ((size_t)(oy * g->sy + ky * g->dy) * (size_t)g->pw + (size_t)(ox * g->sx + kx * g->dx)) * (size_t)g->ic;
            const int16_t *restrict w = Wt + ((size_t)ky * (size_t)g->kw + (size_t)kx) * (size_t)C;
            for (int c = 0; c < C; c++)
                acc[c] += (int32_t)p[c] * w[c];
        }
}

/* The padded, zero-point-free IFM as int16: 8-bit IFMs only (16-bit values minus a zero point need 17 bits). */
static int16_t *ethosu_npu_gather_ifm(const struct ethosu_npu_fm *ifm, const struct ethosu_npu_kgeom *g)
{
    size_t n = (size_t)g->ph * (size_t)g->pw * (size_t)g->ic;
    int16_t *P = malloc(n * sizeof(*P));
    if (!P)
        return NULL;
    for (int py = 0; py < g->ph; py++)
        for (int px = 0; px < g->pw; px++) {
            int16_t *d = P + ((size_t)py * (size_t)g->pw + (size_t)px) * (size_t)g->ic;
            for (int c = 0; c < g->ic; c++)
                d[c] = (int16_t)ethosu_npu_ifm_at(ifm, g, py, px, c);
        }
    return P;
}

/* Wraps an accumulator to the ACC_FORMAT width (two's complement) [inference: no overflow in TFLite models]. */
static inline int64_t ethosu_npu_wrap(int64_t v, int bits)
{
    return (int64_t)((uint64_t)v << (64 - bits)) >> (64 - bits);
}

static int ethosu_npu_conv_run(bool dw, const struct ethosu_npu_kgeom *g,
                               const struct ethosu_npu_fm *ifm, const struct ethosu_npu_fm *ofm,
                               const struct ethosu_npu_out *out, const int16_t *W)
{
    int16_t *P = ethosu_npu_gather_ifm(ifm, g);
    int64_t *acc = malloc((size_t)g->oc * sizeof(*acc));
    int32_t *acc32 = malloc((size_t)g->oc * sizeof(*acc32));
    int16_t *Wt = dw ? malloc((size_t)g->oc * (size_t)g->kh * (size_t)g->kw * sizeof(*Wt)) : NULL;
    int rc = (!P || !acc || !acc32 || (dw && !Wt)) ? -ENOMEM : 0;
    if (!rc && dw)
        for (int c = 0; c < g->oc; c++)
            for (int k = 0; k < g->kh * g->kw; k++)
                Wt[(size_t)k * (size_t)g->oc + (size_t)c] = W[(size_t)c * (size_t)(g->kh * g->kw) + (size_t)k];
    for (int oy = 0; !rc && oy < g->oh; oy++)
        for (int ox = 0; ox < g->ow; ox++) {
            if (dw) {
                ethosu_npu_dw_pixel(g, P, Wt, oy, ox, acc32);
                for (int c = 0; c < g->oc; c++)
                    acc[c] = acc32[c];
            } else {
                ethosu_npu_conv_pixel(g, P, W, oy, ox, acc);
            }
            for (int o = 0; o < g->oc; o++) {
                int64_t bias;
                int64_t m;
                int s;
                ethosu_npu_out_channel(out, o, &bias, &m, &s);
                int64_t v = ethosu_npu_wrap(acc[o] + bias, out->acc_bits);
                ethosu_npu_fm_write(ofm, oy, ox, o, ethosu_npu_out_finish(out, ethosu_npu_scale(v, m, s, out->round_mode)));
            }
        }
    free(P);
    free(acc);
    free(acc32);
    free(Wt);
    return rc;
}

int ethosu_npu_conv(struct ethosu_npu *npu, bool dw)
{
    struct ethosu_npu_kgeom g;
    struct ethosu_npu_fm ifm, ofm;
    struct ethosu_npu_out out;
    int16_t *W = NULL;
    int rc;
    if ((rc = ethosu_npu_kernel_geometry(npu, &g)))
        return rc;
    /* Depthwise: one IFM channel per OFM channel (Vela emits no channel multiplier; [inference] other depths
     * are a command error). */
    if (dw && g.ic != g.oc)
        return ethosu_npu_fail(npu, -EINVAL, "depthwise: IFM depth %d != OFM depth %d", g.ic, g.oc);
    if (dw && g.part_kernel)
        return ethosu_npu_fail(npu, -EINVAL, "depthwise with part-kernel-first weight order is undefined");
    if ((rc = ethosu_npu_fm_load(npu, 0, g.ih, g.iw, g.ic, &ifm)) || (rc = ethosu_npu_fm_load(npu, 2, g.oh, g.ow, g.oc, &ofm)) ||
        (rc = ethosu_npu_out_setup(npu, &ofm, true, &out)))
        return rc;
    if (ifm.bytes != 1)
        return ethosu_npu_fail(npu, -EINVAL, "convolution on %d-bit IFM not simulated", 8 * ifm.bytes);
    struct ethosu_npu_wdesc wd;
    if ((rc = ethosu_npu_check_blocks(npu)) || (rc = ethosu_npu_weight_desc(npu, &g, dw, 8 * ifm.bytes, &wd)))
        return rc;
    rc = ETHOSU_NPU_DECLINED;
    if (npu->opts->conv) {
        const struct ethosu_npu_conv_op op = {dw, &g, &ifm, &ofm, &out, &wd};
        rc = npu->opts->conv(npu->opts->conv_ctx, &op, npu->err, npu->errlen);
    }
    if (rc == ETHOSU_NPU_DECLINED) {
        if ((rc = ethosu_npu_load_weights(npu, &wd, &W)))
            return rc;
        rc = ethosu_npu_conv_run(dw, &g, &ifm, &ofm, &out, W);
        free(W);
    }
    if (!rc && npu->stats)
        npu->stats->weight_rd += wd.len;
    if (!rc && npu->stats) {
        uint64_t px = (uint64_t)g.oh * (uint64_t)g.ow * (uint64_t)g.oc;
        npu->stats->macs += px * (uint64_t)(g.kh * g.kw) * (uint64_t)(dw ? 1 : g.ic);
        npu->stats->feature_rd += (uint64_t)g.ih * (uint64_t)g.iw * (uint64_t)g.ic * (uint64_t)ifm.bytes;
        npu->stats->data_wr += px * (uint64_t)ofm.bytes;
    }
    return rc;
}
