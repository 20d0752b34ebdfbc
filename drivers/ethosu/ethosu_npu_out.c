/* The output stage every operation ends in: per-channel or global scaling with the stream's rounding mode,
 * the OFM zero point, the activation (clamp, LUT) and saturation to the OFM type
 * (docs/hardware/ethosu-sim.md, "Output stage"). */
#include <errno.h>

#include "ethosu_npu_priv.h"

/* SHRAM address of the LUT slots: the last two 1 KiB banks of the 48 KiB SHRAM, 256 bytes per slot (Vela
 * architecture_features.py: shram_lut_address = bank size x available banks, shram_lut_slot_size 256). */
#define ETHOSU_NPU_LUT_ADDR (46u * 1024u)
#define ETHOSU_NPU_LUT_SLOT 256u

/* round(x / 2^n) with ties away from zero (TFLite's RoundingDivideByPOT), n in 0..63. */
static inline __int128 ethosu_npu_rdbpot(__int128 x, int n)
{
    if (n <= 0)
        return x;
    __int128 mask = ((__int128)1 << n) - 1;
    __int128 rem = x & mask, thr = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> n) + (rem > thr ? 1 : 0);
}

/* x * mult / 2^shift in the three rounding modes of OFM_PRECISION.round_mode:
 *  0 (TFL, "DBL" in Vela's register printout): TensorFlow Lite's MultiplyByQuantizedMultiplier with exponent
 *    31 - shift: a left shift when shift < 31, the rounding doubling high multiply (ties up), then a rounding
 *    right shift by shift - 31 (ties away from zero): two roundings, as TFLite;
 *  1 (TRUNCATE): floor of the exact product [inference];
 *  2 (NATURAL): round half up, one rounding [inference; board-facts.md fact 7];
 *  ETHOSU_NPU_ROUND_NATURAL2 (NATURAL under TEFLON_SIM_RULES eu_natural=double): TFL's left shift, the doubling
 *    high multiply rounded half up ((p + 2^30) >> 31), then the right shift rounded half up: two roundings, ties
 *    toward +inf both times (the rule of TFLite's optimized x86 int8 CONV_2D / FC: ethosu-sim.md). */
int64_t ethosu_npu_scale(int64_t x, int64_t mult, int shift, int round_mode)
{
    __int128 p;
    switch (round_mode) {
    case 0: {
        if (shift >= 31 && shift <= 93 && mult >= 0 && mult <= (int64_t)UINT32_MAX && x >= -((int64_t)1 << 31) &&
            x <= ((int64_t)1 << 31))
            return ethosu_npu_scale_tfl64(x, (uint32_t)mult, (unsigned)(shift - 31));
        int left = shift < 31 ? 31 - shift : 0, right = shift > 31 ? shift - 31 : 0;
        p = (__int128)x * ((__int128)1 << left) * mult;
        __int128 nudge = p >= 0 ? ((__int128)1 << 30) : 1 - ((__int128)1 << 30);
        __int128 q = (p + nudge) / ((__int128)1 << 31); /* C division truncates, as TFLite's */
        return (int64_t)ethosu_npu_rdbpot(q, right);
    }
    case 1:
        p = (__int128)x * mult;
        return (int64_t)(p >> shift);
    case ETHOSU_NPU_ROUND_NATURAL2: {
        int left = shift < 31 ? 31 - shift : 0, right = shift > 31 ? shift - 31 : 0;
        __int128 q = ((__int128)x * ((__int128)1 << left) * mult + ((__int128)1 << 30)) >> 31;
        return right ? (int64_t)((q + ((__int128)1 << (right - 1))) >> right) : (int64_t)q;
    }
    default:
        p = (__int128)x * mult;
        return shift ? (int64_t)((p + ((__int128)1 << (shift - 1))) >> shift) : (int64_t)p;
    }
}

void ethosu_npu_out_channel(const struct ethosu_npu_out *out, int c, int64_t *bias, int64_t *mult, int *shift)
{
    if (!out->scales) {
        *bias = 0;
        *mult = out->g_mult;
        *shift = out->g_shift;
        return;
    }
    /* 10-byte record, little endian: bias bits 0..39 (signed), multiplier 40..71, shift 72..77 (Vela
     * weight_compressor.encode_bias; docs/hardware/ethosu-sim.md, "Scale stream"). */
    const uint8_t *r = out->scales + 10 * (size_t)c;
    uint64_t b = 0;
    for (int i = 0; i < 5; i++)
        b |= (uint64_t)r[i] << (8 * i);
    *bias = (int64_t)(b << 24) >> 24;
    *mult = (int64_t)((uint32_t)r[5] | (uint32_t)r[6] << 8 | (uint32_t)r[7] << 16 | (uint32_t)r[8] << 24);
    *shift = r[9] & 0x3f;
}

int32_t ethosu_npu_out_finish(const struct ethosu_npu_out *out, int64_t v)
{
    v += out->ofm_zp;
    if (out->activation >= 16) {
        /* LUT: the result, saturated to the 8-bit clip range, indexes 256 entries from that range's minimum,
         * each as wide as an OFM element (Vela DMAs 256 bytes for 8-bit OFMs, 1024 for softmax's 32-bit
         * exponentials) [inference, checked against TFLite on LOGISTIC, TANH, HARD_SWISH and SOFTMAX]. */
        int64_t i = (v < out->lo ? out->lo : v > out->hi ? out->hi : v) - out->lo;
        const uint8_t *e = out->lut + i * out->lut_bytes;
        if (out->lut_bytes == 4)
            return (int32_t)((uint32_t)e[0] | (uint32_t)e[1] << 8 | (uint32_t)e[2] << 16 | (uint32_t)e[3] << 24);
        v = out->ofm_lo < 0 ? (int8_t)e[0] : e[0];
    }
    if (out->lo >= -32768 || out->clip_range) { /* 32-bit OFMs are not clamped by ACTIVATION_MIN/MAX */
        if (v < out->act_min)
            v = out->act_min;
        if (v > out->act_max)
            v = out->act_max;
    }
    if (v < out->lo)
        v = out->lo;
    if (v > out->hi)
        v = out->hi;
    return (int32_t)v;
}

void ethosu_npu_out_clamp(const struct ethosu_npu_out *out, int32_t *lo, int32_t *hi)
{
    /* clamp(clamp(v, a, b), l, h) = clamp(v, clamp(a, l, h), clamp(b, l, h)) for a <= b; for a > b it is the
     * constant clamp(b, l, h) */
    const int32_t b = out->act_max < out->lo ? out->lo : out->act_max > out->hi ? out->hi : out->act_max;
    *hi = b;
    *lo = out->act_min > out->act_max ? b : out->act_min < out->lo ? out->lo : out->act_min > out->hi ? out->hi
                                                                                                   : out->act_min;
}

/* Reads OFM_PRECISION's scale/round fields, the scale stream or OFM_SCALE, ACTIVATION*, ACC_FORMAT. */
int ethosu_npu_out_setup(struct ethosu_npu *npu, const struct ethosu_npu_fm *ofm, bool per_channel_allowed,
                         struct ethosu_npu_out *out)
{
    uint16_t prec, act, amin, amax, accf;
    int rc;
    if ((rc = ethosu_npu_get0(npu, ETHOSU_OFM_PRECISION, &prec)) || (rc = ethosu_npu_get0(npu, ETHOSU_ACTIVATION, &act)) ||
        (rc = ethosu_npu_get0(npu, ETHOSU_ACTIVATION_MIN, &amin)) ||
        (rc = ethosu_npu_get0(npu, ETHOSU_ACTIVATION_MAX, &amax)) || (rc = ethosu_npu_get0(npu, ETHOSU_ACC_FORMAT, &accf)))
        return rc;
    *out = (struct ethosu_npu_out){0};
    out->round_mode = (int)ETHOSU_OFM_PREC_ROUND(prec);
    if (out->round_mode > 2)
        return ethosu_npu_fail(npu, -EINVAL, "OFM_PRECISION round mode 3 undefined");
    out->round_mode = ethosu_npu_round_mode(npu, out->round_mode);
    if (accf > 1)
        return ethosu_npu_fail(npu, -EINVAL, "ACC_FORMAT %u: only 32/40-bit integer accumulators simulated", accf);
    out->acc_bits = accf ? 40 : 32;
    out->global_scale = ETHOSU_OFM_PREC_GLOBAL(prec);
    out->ofm_zp = ofm->zero_point;
    int bits = 8 * ofm->bytes;
    if (bits == 32) {
        out->lo = ofm->is_signed ? INT32_MIN : 0;
        out->hi = INT32_MAX;
    } else {
        out->lo = ofm->is_signed ? -(1 << (bits - 1)) : 0;
        out->hi = ofm->is_signed ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
    }
    out->activation = (int)ETHOSU_ACT_FUNCTION(act);
    out->clip_range = (int)ETHOSU_ACT_CLIP(act);
    if (out->activation != 0 && !(out->activation >= 16 && out->activation <= 23))
        return ethosu_npu_fail(npu, -EINVAL, "ACTIVATION function %d not simulated (tanh/sigmoid hardware functions)",
                               out->activation);
    out->ofm_lo = out->lo;
    switch (out->clip_range) {
    case 0: break;
    case 2: out->lo = 0; out->hi = 255; break;
    case 3: out->lo = -128; out->hi = 127; break;
    case 5: out->lo = -32768; out->hi = 32767; break;
    default: return ethosu_npu_fail(npu, -EINVAL, "ACTIVATION clip range %d undefined", out->clip_range);
    }
    bool signed_clip = out->lo < 0;
    out->act_min = signed_clip ? (int16_t)amin : amin;
    out->act_max = signed_clip ? (int16_t)amax : amax;
    if (out->activation >= 16) {
        if (out->hi - out->lo != 255 || bits == 16)
            return ethosu_npu_fail(npu, -EINVAL, "LUT activation on a %d-bit result, clip range %d..%d not simulated",
                                   bits, out->lo, out->hi);
        out->lut_bytes = ofm->bytes;
        unsigned slot = (unsigned)(out->activation - 16), end = ETHOSU_NPU_LUT_ADDR + ETHOSU_NPU_LUT_SLOT * slot + 256u * (unsigned)ofm->bytes;
        if (end > ETHOSU_NPU_SHRAM_SIZE)
            return ethosu_npu_fail(npu, -EINVAL, "LUT slot %u (%d-byte entries) ends outside SHRAM", slot, ofm->bytes);
        out->lut = npu->shram + ETHOSU_NPU_LUT_ADDR + ETHOSU_NPU_LUT_SLOT * slot;
    }
    if (out->global_scale) {
        uint64_t s;
        if ((rc = ethosu_npu_get1(npu, ETHOSU_OFM_SCALE, &s)))
            return rc;
        out->g_mult = ETHOSU_F(s, NPU_SET_OFM_SCALE, scale);
        out->g_shift = (int)ETHOSU_F(s, NPU_SET_OFM_SCALE, shift);
        return 0;
    }
    if (!per_channel_allowed)
        return 0;
    uint16_t sreg;
    uint64_t sbase, slen;
    if ((rc = ethosu_npu_get0(npu, ETHOSU_SCALE_REGION, &sreg)) || (rc = ethosu_npu_get1(npu, ETHOSU_SCALE_BASE, &sbase)) ||
        (rc = ethosu_npu_get1(npu, ETHOSU_SCALE_LENGTH, &slen)))
        return rc;
    const struct ethosu_npu_region *r = &npu->regions[sreg];
    uint64_t need = 10ull * (uint64_t)ofm->c;
    if (slen < need)
        return ethosu_npu_fail(npu, -EINVAL, "SCALE_LENGTH %llu < 10 bytes x %d OFM channels", (unsigned long long)slen,
                               ofm->c);
    if (!r->base || sbase > r->size || need > r->size - sbase)
        return ethosu_npu_fail(npu, -EFAULT, "scale stream 0x%llx+%llu outside region %u", (unsigned long long)sbase,
                               (unsigned long long)need, sreg);
    out->scales = r->base + sbase;
    if (npu->stats)
        npu->stats->bias_rd += need;
    return 0;
}
