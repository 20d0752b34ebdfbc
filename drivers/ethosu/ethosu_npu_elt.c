/* NPU_OP_ELEMENTWISE (docs/hardware/ethosu-sim.md, "Element-wise"): operand A and B are the IFM and IFM2 (or
 * the other way round when IFM2_BROADCAST.operand_order says so), IFM2 broadcast along H/W/C or replaced by
 * the IFM2_SCALAR, zero points removed, the operands scaled as IFM_PRECISION.scale_mode says, combined, and
 * put through the output stage. */
#include <errno.h>

#include "ethosu_npu_priv.h"

enum {
    ETHOSU_ELT_MUL, ETHOSU_ELT_ADD, ETHOSU_ELT_SUB, ETHOSU_ELT_MIN, ETHOSU_ELT_MAX,
    ETHOSU_ELT_LRELU, ETHOSU_ELT_ABS, ETHOSU_ELT_CLZ, ETHOSU_ELT_SHR, ETHOSU_ELT_SHL,
};

struct ethosu_npu_elt {
    unsigned mode, scale_mode;
    int round_mode;          /* IFM_PRECISION.round_mode: the operand scaling's rounding */
    int64_t opa_mult, opb_mult;
    int opa_shift;
    int pre_shift;           /* 32-bit operand scaling: 20 (8-bit IFMs) or 15 (16-bit) [inference] */
    bool swap;               /* operand_order: IFM2 is operand A */
    bool scalar;
    int32_t scalar_value;
    bool bh, bw, bc;
    bool ifm32;
};

static bool ethosu_npu_elt_binary(unsigned mode)
{
    return mode != ETHOSU_ELT_LRELU && mode != ETHOSU_ELT_ABS && mode != ETHOSU_ELT_CLZ;
}

static int ethosu_npu_elt_regs(struct ethosu_npu *npu, const struct ethosu_npu_fm *ifm, struct ethosu_npu_elt *e)
{
    uint16_t prec, bc, sc;
    uint64_t opa, opb;
    int rc;
    if ((rc = ethosu_npu_get0(npu, ETHOSU_IFM_PRECISION, &prec)))
        return rc;
    e->scale_mode = ETHOSU_IFM_PREC_SCALE_MODE(prec);
    e->round_mode = (int)ETHOSU_IFM_PREC_ROUND(prec);
    if (e->scale_mode == 3 || e->round_mode == 3)
        return ethosu_npu_fail(npu, -EINVAL, "IFM_PRECISION scale mode %u / round mode %d undefined", e->scale_mode,
                               e->round_mode);
    e->round_mode = ethosu_npu_round_mode(npu, e->round_mode);
    e->pre_shift = ifm->bytes == 1 ? 20 : 15;
    e->ifm32 = ifm->bytes == 4;
    if (e->mode == ETHOSU_ELT_ADD || e->mode == ETHOSU_ELT_SUB) {
        if ((rc = ethosu_npu_get1(npu, ETHOSU_OPA_SCALE, &opa)) || (rc = ethosu_npu_get1(npu, ETHOSU_OPB_SCALE, &opb)))
            return rc;
        e->opa_mult = ETHOSU_F(opa, NPU_SET_OPA_SCALE, scale);
        e->opa_shift = (int)ETHOSU_F(opa, NPU_SET_OPA_SCALE, shift);
        e->opb_mult = ETHOSU_F(opb, NPU_SET_OPB_SCALE, scale);
        if (e->scale_mode && ifm->bytes == 4)
            return ethosu_npu_fail(npu, -EINVAL, "32-bit operand scaling of 32-bit IFMs not simulated");
    }
    if (!ethosu_npu_elt_binary(e->mode))
        return 0;
    if ((rc = ethosu_npu_get0(npu, ETHOSU_IFM2_BROADCAST, &bc)))
        return rc;
    e->swap = ETHOSU_BC_ORDER(bc);
    e->scalar = ETHOSU_BC_SCALAR(bc);
    e->bh = ETHOSU_BC_H(bc), e->bw = ETHOSU_BC_W(bc), e->bc = ETHOSU_BC_C(bc);
    if (e->scalar) {
        if ((rc = ethosu_npu_get0(npu, ETHOSU_IFM2_SCALAR, &sc)))
            return rc;
        e->scalar_value = (int32_t)(int16_t)sc; /* [inference: sign-extended 16-bit] */
    }
    return 0;
}

/* Operand scaling before ADD/SUB: scale_mode 0 multiplies both by their 16-bit OPA/OPB scales (OPA with its
 * shift); mode 1 (2) scales operand A (B) by the 32-bit OPA_SCALE with its shift after a left shift by
 * pre_shift, as TFLite's ADD does, and the other operand is multiplied by 2^(pre_shift - 1), TFLite's
 * exact half [inference from Vela scaling.advanced_elementwise_add_sub_scale]. */
static void ethosu_npu_elt_scale_ops(const struct ethosu_npu_elt *e, int64_t *a, int64_t *b)
{
    switch (e->scale_mode) {
    case 0:
        *a = ethosu_npu_scale(*a, e->opa_mult, e->opa_shift, e->round_mode);
        *b = *b * e->opb_mult;
        break;
    case 1:
        *a = ethosu_npu_scale(*a * ((int64_t)1 << e->pre_shift), e->opa_mult, e->opa_shift + e->pre_shift, e->round_mode);
        *b = *b * ((int64_t)1 << (e->pre_shift - 1));
        break;
    default:
        *b = ethosu_npu_scale(*b * ((int64_t)1 << e->pre_shift), e->opa_mult, e->opa_shift + e->pre_shift, e->round_mode);
        *a = *a * ((int64_t)1 << (e->pre_shift - 1));
        break;
    }
}

static int ethosu_npu_clz32(int64_t v)
{
    uint32_t u = (uint32_t)v;
    int n = 0;
    if (!u)
        return 32;
    while (!(u & 0x80000000u)) {
        u <<= 1;
        n++;
    }
    return n;
}

/* One element: a, b zero-point-free operands; returns the value for the output stage (before its zero
 * point). SHL/SHR/CLZ act on the raw 32-bit values [inference]. */
static int64_t ethosu_npu_elt_one(const struct ethosu_npu_elt *e, const struct ethosu_npu_out *out, int64_t a, int64_t b)
{
    int64_t r;
    switch (e->mode) {
    case ETHOSU_ELT_ADD:
    case ETHOSU_ELT_SUB:
        ethosu_npu_elt_scale_ops(e, &a, &b);
        r = e->mode == ETHOSU_ELT_ADD ? a + b : a - b;
        break;
    case ETHOSU_ELT_MUL: r = a * b; break;
    case ETHOSU_ELT_MIN: r = a < b ? a : b; break;
    case ETHOSU_ELT_MAX: r = a > b ? a : b; break;
    case ETHOSU_ELT_ABS: r = a < 0 ? -a : a; break;
    case ETHOSU_ELT_CLZ: return ethosu_npu_clz32(a);
    case ETHOSU_ELT_SHL: return (int64_t)(int32_t)((uint32_t)a << (b & 31));
    default: /* SHR: arithmetic shift with the OFM rounding [inference] */
        return ethosu_npu_scale(a, 1 << 30, 30 + (int)(b & 31), out->round_mode);
    }
    if (!out->global_scale)
        return r;
    if (e->mode == ETHOSU_ELT_MUL && e->ifm32)
        return ethosu_npu_scale(r, 1, out->g_shift, out->round_mode); /* the multiplier is not applied */
    return ethosu_npu_scale(r, out->g_mult, out->g_shift, out->round_mode);
}

/* The general element loop: tiles are per pixel, so each pixel's addresses once, then its channels. ifm2 NULL:
 * the scalar (binary) or no second operand. */
static void ethosu_npu_elt_loop(const struct ethosu_npu_elt *ep, const struct ethosu_npu_out *outp,
                                const struct ethosu_npu_fm *ifmp, const struct ethosu_npu_fm *ifm2p, bool binary,
                                const struct ethosu_npu_fm *ofmp, int oh, int ow, int oc)
{
    const struct ethosu_npu_elt e = *ep;
    const struct ethosu_npu_out out = *outp;
    const struct ethosu_npu_fm ifm = *ifmp, ofm = *ofmp;
    const struct ethosu_npu_fm ifm2 = ifm2p ? *ifm2p : ifm;
    const bool two = ifm2p != NULL;
    for (int y = 0; y < oh; y++)
        for (int x = 0; x < ow; x++) {
            const uint8_t *pa = ifm.mem + ethosu_npu_fm_offset(&ifm, y, x, 0);
            const uint8_t *pb = two ? ifm2.mem + ethosu_npu_fm_offset(&ifm2, e.bh ? 0 : y, e.bw ? 0 : x, 0) : NULL;
            uint8_t *po = ofm.mem + ethosu_npu_fm_offset(&ofm, y, x, 0);
            for (int c = 0; c < oc; c++) {
                int64_t a = ethosu_npu_fm_get(&ifm, pa + ethosu_npu_fm_choff(&ifm, c)) - (int64_t)ifm.zero_point, b = 0;
                if (binary)
                    b = e.scalar ? e.scalar_value
                                 : ethosu_npu_fm_get(&ifm2, pb + ethosu_npu_fm_choff(&ifm2, e.bc ? 0 : c)) -
                                       (int64_t)ifm2.zero_point;
                if (e.swap) {
                    int64_t t = a;
                    a = b, b = t;
                }
                ethosu_npu_fm_put(&ofm, po + ethosu_npu_fm_choff(&ofm, c),
                                  ethosu_npu_out_finish(&out, ethosu_npu_elt_one(&e, &out, a, b)));
            }
        }
}

/* ADD / SUB of 8-bit operands with a global OFM scale: the loop above with each operand's scaling tabled per byte
 * value (ethosu_npu_elt_scale_ops scales a and b independently). */
static void ethosu_npu_elt_addsub8(const struct ethosu_npu_elt *e, const struct ethosu_npu_out *out,
                                   const struct ethosu_npu_fm *ifm, const struct ethosu_npu_fm *ifm2,
                                   const struct ethosu_npu_fm *ofm, int oh, int ow, int oc)
{
    int64_t t1[256], t2[256], bscalar = 0;
    for (int v = 0; v < 256; v++) {
        /* IFM byte v as operand A (B when swapped), IFM2 byte v as the other */
        int64_t a = (ifm->is_signed ? (int8_t)v : v) - (int64_t)ifm->zero_point, z = 0;
        if (e->swap)
            ethosu_npu_elt_scale_ops(e, &z, &a);
        else
            ethosu_npu_elt_scale_ops(e, &a, &z);
        t1[v] = a;
        if (ifm2) {
            int64_t b = (ifm2->is_signed ? (int8_t)v : v) - (int64_t)ifm2->zero_point;
            z = 0;
            if (e->swap)
                ethosu_npu_elt_scale_ops(e, &b, &z);
            else
                ethosu_npu_elt_scale_ops(e, &z, &b);
            t2[v] = b;
        }
    }
    if (!ifm2) {
        int64_t b = e->scalar_value, z = 0;
        if (e->swap)
            ethosu_npu_elt_scale_ops(e, &b, &z);
        else
            ethosu_npu_elt_scale_ops(e, &z, &b);
        bscalar = b;
    }
    /* r = A - B for SUB: the IFM's term enters negated when it is operand B */
    const int64_t s1 = e->mode == ETHOSU_ELT_SUB && e->swap ? -1 : 1, s2 = e->mode == ETHOSU_ELT_SUB && !e->swap ? -1 : 1;
    /* ethosu_npu_scale's 64-bit TFL form inline when every sum is within its range (|r| <= 2^31) */
    int64_t m1 = 0, m2 = ifm2 ? 0 : (bscalar < 0 ? -bscalar : bscalar);
    for (int v = 0; v < 256; v++) {
        m1 = t1[v] < 0 ? (-t1[v] > m1 ? -t1[v] : m1) : (t1[v] > m1 ? t1[v] : m1);
        if (ifm2)
            m2 = t2[v] < 0 ? (-t2[v] > m2 ? -t2[v] : m2) : (t2[v] > m2 ? t2[v] : m2);
    }
    const bool tfl64 = out->round_mode == 0 && out->g_shift >= 31 && out->g_mult >= 0 &&
                       out->g_mult <= (int64_t)UINT32_MAX && m1 + m2 <= ((int64_t)1 << 31);
    /* NHWC maps, 8-bit OFM, no LUT: channels are adjacent bytes and the output stage one clamp */
    const bool plain = tfl64 && !ifm->brick && (!ifm2 || !ifm2->brick) && !ofm->brick && ofm->bytes == 1 &&
                       out->activation == 0;
    int32_t lo = 0, hi = 0;
    if (plain)
        ethosu_npu_out_clamp(out, &lo, &hi);
    const uint32_t mult = (uint32_t)out->g_mult;
    const unsigned right = (unsigned)(out->g_shift - 31);
    for (int y = 0; y < oh; y++)
        for (int x = 0; x < ow; x++) {
            const uint8_t *pa = ifm->mem + ethosu_npu_fm_offset(ifm, y, x, 0);
            const uint8_t *pb = ifm2 ? ifm2->mem + ethosu_npu_fm_offset(ifm2, e->bh ? 0 : y, e->bw ? 0 : x, 0) : NULL;
            uint8_t *po = ofm->mem + ethosu_npu_fm_offset(ofm, y, x, 0);
            if (plain) {
                for (int c = 0; c < oc; c++) {
                    const int64_t r = s1 * t1[pa[c]] + s2 * (pb ? t2[pb[e->bc ? 0 : c]] : bscalar);
                    const int64_t v = ethosu_npu_scale_tfl64(r, mult, right) + out->ofm_zp;
                    po[c] = (uint8_t)(v < lo ? lo : v > hi ? hi : v);
                }
                continue;
            }
            for (int c = 0; c < oc; c++) {
                const int64_t b = pb ? t2[pb[ethosu_npu_fm_choff(ifm2, e->bc ? 0 : c)]] : bscalar;
                const int64_t r = s1 * t1[pa[ethosu_npu_fm_choff(ifm, c)]] + s2 * b;
                const int64_t v = tfl64 ? ethosu_npu_scale_tfl64(r, (uint32_t)out->g_mult, (unsigned)(out->g_shift - 31))
                                        : ethosu_npu_scale(r, out->g_mult, out->g_shift, out->round_mode);
                ethosu_npu_fm_put(ofm, po + ethosu_npu_fm_choff(ofm, c), ethosu_npu_out_finish(out, v));
            }
        }
}

int ethosu_npu_elementwise(struct ethosu_npu *npu, unsigned mode)
{
    struct ethosu_npu_fm ifm, ifm2, ofm;
    struct ethosu_npu_out out;
    struct ethosu_npu_elt e = {.mode = mode};
    int oh, ow, oc, rc;
    uint16_t v;
    if (mode > ETHOSU_ELT_SHL)
        return ethosu_npu_fail(npu, -EINVAL, "ELEMENTWISE mode %u undefined", mode);
    if (mode == ETHOSU_ELT_LRELU)
        return ethosu_npu_fail(npu, -EINVAL, "ELEMENTWISE LRELU not simulated");
    if ((rc = ethosu_npu_get0(npu, ETHOSU_OFM_HEIGHT_M1, &v)))
        return rc;
    oh = v + 1;
    if ((rc = ethosu_npu_get0(npu, ETHOSU_OFM_WIDTH_M1, &v)))
        return rc;
    ow = v + 1;
    if ((rc = ethosu_npu_get0(npu, ETHOSU_OFM_DEPTH_M1, &v)))
        return rc;
    oc = v + 1;
    /* The IFM is never broadcast: it has the OFM's shape; nor is it upscaled ([inference]: Vela upscales only
     * through kernel operations). */
    uint16_t idepth, up;
    if ((rc = ethosu_npu_get0(npu, ETHOSU_IFM_DEPTH_M1, &idepth)) || (rc = ethosu_npu_get0(npu, ETHOSU_IFM_UPSCALE, &up)))
        return rc;
    if (idepth + 1 != oc || up != 0)
        return ethosu_npu_fail(npu, -EINVAL, "ELEMENTWISE: IFM depth %d (OFM %d), upscale %u", idepth + 1, oc, up);
    if ((rc = ethosu_npu_fm_load(npu, 0, oh, ow, oc, &ifm)) || (rc = ethosu_npu_fm_load(npu, 2, oh, ow, oc, &ofm)) ||
        (rc = ethosu_npu_elt_regs(npu, &ifm, &e)) || (rc = ethosu_npu_out_setup(npu, &ofm, false, &out)) || (rc = ethosu_npu_check_blocks(npu)))
        return rc;
    /* 32-bit MUL: the 64-bit product is rounded and shifted right by the OFM shift; the multiplier is not
     * applied. [Inference, measured] Vela writes (1, 0) for a plain product, (1, 35) for MEAN's division,
     * (2^30, 31) where TFLite needs its rounding doubling high multiply a.b / 2^31 and (2^30, 30) for twice that
     * (softmax): only this rule gives all four; other multipliers have no known meaning and are refused. */
    if (mode == ETHOSU_ELT_MUL && e.ifm32 && out.global_scale && out.g_mult != 1 && out.g_mult != (1 << 30))
        return ethosu_npu_fail(npu, -EINVAL, "32-bit MUL with OFM multiplier 0x%llx: scaling not known",
                               (unsigned long long)out.g_mult);
    bool binary = ethosu_npu_elt_binary(mode);
    if (binary && !e.scalar &&
        (rc = ethosu_npu_fm_load(npu, 1, e.bh ? 1 : oh, e.bw ? 1 : ow, e.bc ? 1 : oc, &ifm2)))
        return rc;
    if (binary && e.scalar) {
        uint16_t p2, zp2;
        if ((rc = ethosu_npu_get0(npu, ETHOSU_IFM2_PRECISION, &p2)) || (rc = ethosu_npu_get0(npu, ETHOSU_IFM2_ZERO_POINT, &zp2)))
            return rc;
        e.scalar_value -= ETHOSU_PREC_TYPE(p2) ? (int32_t)(int16_t)zp2 : (int32_t)zp2;
    }
    /* ADD / SUB of 8-bit maps: each operand's scaling depends on its own byte only, so it is done once per byte
     * value (tabled) and the per-element work is the sum and the output stage. */
    const bool two = binary && !e.scalar;
    if ((mode == ETHOSU_ELT_ADD || mode == ETHOSU_ELT_SUB) && ifm.bytes == 1 && (!two || ifm2.bytes == 1) &&
        out.global_scale) {
        ethosu_npu_elt_addsub8(&e, &out, &ifm, two ? &ifm2 : NULL, &ofm, oh, ow, oc);
    } else {
        ethosu_npu_elt_loop(&e, &out, &ifm, binary ? (two ? &ifm2 : NULL) : NULL, binary, &ofm, oh, ow, oc);
    }
    if (npu->stats) {
        uint64_t n = (uint64_t)oh * (uint64_t)ow * (uint64_t)oc;
        npu->stats->feature_rd += n * (uint64_t)ifm.bytes * (binary && !e.scalar ? 2u : 1u);
        npu->stats->data_wr += n * (uint64_t)ofm.bytes;
    }
    return 0;
}
