/* The kernels of sim_dot.h with AVX-512 F/BW/VL/DQ and VNNI (only called when the CPU has all of them,
 * rkt_dot_select). */
#include "sim_dot.h"
#if RKT_DOT_X86
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"))), apply_to = function)
#else
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
#endif
#include <immintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>


/* vpdpbusd: each int32 lane accumulates four uint8 (x + 128) x int8 (weight) products, exactly (no
 * saturation). Up to 8 pixels x 32 kernels = 16 accumulators; NP pixels and NH halves of 16 kernels are
 * compile-time constants of each copy, so a row tail (7 x 7 outputs, the 1 x 1 logits) or a block of at most 16
 * live kernels computes no padding. */
static inline __attribute__((always_inline)) void direct_blk(const uint8_t *x, size_t xstep, size_t xrow,
                                                             const int8_t *wb, int kh, int kw, int ic, int icl,
                                                             int32_t *acc, size_t astride, const int NP, const int NH)
{
    __m512i a[RKT_DOT_P][2];
    for (int p = 0; p < NP; p++)
        a[p][0] = a[p][1] = _mm512_setzero_si512();
    for (int ky = 0; ky < kh; ky++)
        for (int kx = 0; kx < kw; kx++) {
            const uint8_t *xp = x + (size_t)ky * xrow + (size_t)kx * ic;
            const int8_t *w = wb + ((size_t)ky * kw + kx) * ic * RKT_DOT_KB;
            for (int c = 0; c < icl; c += 4, w += 4 * RKT_DOT_KB) {
                const __m512i w0 = _mm512_loadu_si512(w), w1 = NH > 1 ? _mm512_loadu_si512(w + 64) : w0;
                for (int p = 0; p < NP; p++) {
                    int32_t v;
                    memcpy(&v, xp + (size_t)p * xstep + c, 4);
                    const __m512i b = _mm512_set1_epi32(v);
                    a[p][0] = _mm512_dpbusd_epi32(a[p][0], b, w0);
                    if (NH > 1)
                        a[p][1] = _mm512_dpbusd_epi32(a[p][1], b, w1);
                }
            }
        }
    for (int p = 0; p < NP; p++) {
        _mm512_storeu_si512(acc + (size_t)p * astride, a[p][0]);
        if (NH > 1)
            _mm512_storeu_si512(acc + (size_t)p * astride + 16, a[p][1]);
    }
}

#define DIRECT_NP(np)                                                                                              \
    case np:                                                                                                       \
        if (nk > 16)                                                                                               \
            direct_blk(x, xstep, xrow, wb, kh, kw, ic, icl, acc, astride, np, 2);                                  \
        else                                                                                                       \
            direct_blk(x, xstep, xrow, wb, kh, kw, ic, icl, acc, astride, np, 1);                                  \
        break;

static void direct_avx512(const uint8_t *x, size_t xstep, size_t xrow, const int8_t *wb, int kh, int kw, int ic,
                          int icl, int32_t *acc, size_t astride, int npix, int nk)
{
    switch (npix < RKT_DOT_P ? npix : RKT_DOT_P) {
    DIRECT_NP(1)
    DIRECT_NP(2)
    DIRECT_NP(3)
    DIRECT_NP(4)
    DIRECT_NP(5)
    DIRECT_NP(6)
    DIRECT_NP(7)
    default:
        DIRECT_NP(8)
    }
}

/* A full block (32 kernels x 32 channels, 16 kernels per half): the 16 x 8 dword matrix of a half, 2 kernels per
 * register, transposed to 8 registers of one channel quad each. Element (kernel k, quad c) sits in register
 * k / 2 at position (k % 2) * 8 + c; three stages each swap a register-number bit with a position bit
 * (k1 <-> c0, k2 <-> c1, k3 <-> c2), leaving quad c in register c at position (k % 2) * 8 + k / 2, which a last
 * in-register permutation puts at position k. */
static void pack_full_avx512(const int8_t *src, int8_t *dst, int32_t *wsum)
{
    const __m512i ones = _mm512_set1_epi8(1), lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int h = 0; h < 2; h++) {
        __m512i r[8];
        for (int i = 0; i < 8; i++)
            r[i] = _mm512_loadu_si512(src + (size_t)(16 * h + 2 * i) * 32);
        for (int j = 0; j < 3; j++) {
            const __m512i bit = _mm512_set1_epi32(1 << j), from_b = _mm512_set1_epi32(16);
            /* new register with bit j clear: position p from (p's bit j ? b : a)[p without bit j]; set: [p with it] */
            const __mmask16 take_b = _mm512_test_epi32_mask(lane, bit);
            const __m512i lo = _mm512_mask_add_epi32(_mm512_andnot_si512(bit, lane), take_b, _mm512_andnot_si512(bit, lane), from_b);
            const __m512i hi = _mm512_mask_add_epi32(_mm512_or_si512(bit, lane), take_b, _mm512_or_si512(bit, lane), from_b);
            for (int a = 0; a < 8; a++) {
                if (a & (1 << j))
                    continue;
                const int b = a | 1 << j;
                const __m512i na = _mm512_permutex2var_epi32(r[a], lo, r[b]);
                const __m512i nb = _mm512_permutex2var_epi32(r[a], hi, r[b]);
                r[a] = na;
                r[b] = nb;
            }
        }
        const __m512i order = _mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
        __m512i sum = _mm512_setzero_si512();
        for (int c = 0; c < 8; c++) {
            const __m512i v = _mm512_permutexvar_epi32(order, r[c]);
            sum = _mm512_dpbusd_epi32(sum, ones, v);
            _mm512_storeu_si512(dst + (size_t)c * 4 * RKT_DOT_KB + 64 * h, v);
        }
        _mm512_storeu_si512(wsum + 16 * h, _mm512_add_epi32(_mm512_loadu_si512(wsum + 16 * h), sum));
    }
}

/* The block is nk rows of wi / 4 dwords: full blocks are transposed in registers, others gather one dword
 * column (16 kernels) per step; the weight sums come from vpdpbusd with ones. */
static void pack_avx512(const int8_t *src, int nk, int wi, int8_t *dst, int32_t *wsum)
{
    if (nk == 32 && wi == 32) {
        pack_full_avx512(src, dst, wsum);
        return;
    }
    const __m512i ones = _mm512_set1_epi8(1), lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int h = 0; h < 2 && 16 * h < nk; h++) {
        const int n = nk - 16 * h < 16 ? nk - 16 * h : 16;
        const __mmask16 m = (__mmask16)((1u << n) - 1);
        const __m512i idx = _mm512_mullo_epi32(lane, _mm512_set1_epi32(wi / 4));
        const int8_t *s = src + (size_t)16 * h * wi;
        __m512i sum = _mm512_setzero_si512();
        for (int c = 0; c < wi / 4; c++) {
            const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, idx, s + 4 * c, 4);
            sum = _mm512_dpbusd_epi32(sum, ones, v);
            _mm512_mask_storeu_epi32(dst + (size_t)c * 4 * RKT_DOT_KB + 64 * h, m, v);
        }
        _mm512_mask_storeu_epi32(wsum + 16 * h, m, _mm512_add_epi32(_mm512_maskz_loadu_epi32(m, wsum + 16 * h), sum));
    }
}

/* vpsadbw against 0: eight 64-bit sums of 8 bytes each, 16 channels (one plane) at a time. */
static void pixsum_avx512(const uint8_t *x, int ic, size_t npix, int32_t *sum)
{
    for (size_t i = 0; i < npix; i++, x += ic) {
        __m128i v = _mm_setzero_si128();
        for (int ch = 0; ch < ic; ch += 16)
            v = _mm_add_epi64(v, _mm_sad_epu8(_mm_loadu_si128((const __m128i *)(x + ch)), _mm_setzero_si128()));
        sum[i] = (int32_t)(_mm_cvtsi128_si64(v) + _mm_extract_epi64(v, 1));
    }
}

/* vpmaddwd over pairs of taps: (x_t, x_t+1) . (w_t, w_t+1) per channel, 32 channels per step; the unpacks
 * leave the channels of each 128-bit lane split over lo (0..3) and hi (4..7), undone before the store. The
 * interleaved weight pairs of a channel block are built once for all pixels (up to DW_PAIRS pairs at a time). */
#define DW_PAIRS 16
static void depthwise_avx512(const uint8_t *x, size_t xstep, size_t xrow, const int16_t *w, int kh, int kw, int ic,
                             int npix, int32_t *acc)
{
    const int taps = kh * kw;
    const __m512i first = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
    const __m512i second = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
    for (int cb = 0; cb < ic; cb += 32) {
        const __mmask32 m = ic - cb >= 32 ? 0xFFFFFFFFu : 0xFFFFu; /* ic is a multiple of 16 */
        for (int t0 = 0; t0 < taps; t0 += 2 * DW_PAIRS) {
            const int t1 = t0 + 2 * DW_PAIRS < taps ? t0 + 2 * DW_PAIRS : taps;
            __m512i wlo[DW_PAIRS], whi[DW_PAIRS];
            size_t off[2 * DW_PAIRS];
            for (int t = t0; t < t1; t += 2) {
                const __m512i w0 = _mm512_maskz_loadu_epi16(m, w + (size_t)t * ic + cb);
                const __m512i w1 = t + 1 < t1 ? _mm512_maskz_loadu_epi16(m, w + (size_t)(t + 1) * ic + cb) : _mm512_setzero_si512();
                wlo[(t - t0) / 2] = _mm512_unpacklo_epi16(w0, w1);
                whi[(t - t0) / 2] = _mm512_unpackhi_epi16(w0, w1);
            }
            for (int t = t0; t < t1 + (t1 - t0) % 2; t++) /* an odd last tap pairs with tap t0 times weight 0 */
                off[t - t0] = t < t1 ? (size_t)(t / kw) * xrow + (size_t)(t % kw) * ic + cb : off[0];
            for (int p = 0; p < npix; p++) {
                const uint8_t *xp = x + (size_t)p * xstep;
                int32_t *a = acc + (size_t)p * ic + cb;
                __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
                if (t0) {
                    const __m512i s0 = _mm512_loadu_si512(a);
                    const __m512i s1 = m == 0xFFFFFFFFu ? _mm512_loadu_si512(a + 16) : _mm512_setzero_si512();
                    /* back to the lo/hi lane order */
                    lo = _mm512_permutex2var_epi32(s0, _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27), s1);
                    hi = _mm512_permutex2var_epi32(s0, _mm512_setr_epi32(4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31), s1);
                }
                for (int j = 0; j < (t1 - t0 + 1) / 2; j++) {
                    const __m512i x0 = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(m, xp + off[2 * j]));
                    const __m512i x1 = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(m, xp + off[2 * j + 1]));
                    /* vpdpwssd: the pair's two products summed into the int32 lane (x + 128 <= 255 is a
                     * signed int16) */
                    lo = _mm512_dpwssd_epi32(lo, _mm512_unpacklo_epi16(x0, x1), wlo[j]);
                    hi = _mm512_dpwssd_epi32(hi, _mm512_unpackhi_epi16(x0, x1), whi[j]);
                }
                _mm512_storeu_si512(a, _mm512_permutex2var_epi32(lo, first, hi));
                if (m == 0xFFFFFFFFu)
                    _mm512_storeu_si512(a + 16, _mm512_permutex2var_epi32(lo, second, hi));
            }
        }
    }
}

/* The task's constants of rkt_requantize as vectors, loaded once: the output stores may alias anything, so
 * nothing would stay in registers if read through `q` inside the loops. */
struct rq {
    __m512i tround, scale, pre, post, lo32, hi32, lo8, hi8, shp, shn, rndp, rndn, par, parp, parn;
    __m128i trunc, shift, mshift;
    int one_shift;
};

/* rkt_round_shift of m by the shift s (one for every lane): floor((m + rnd + parity of floor(m / 2^s)) / 2^s);
 * `par` is 1 in every lane, or 0 for s = 0 (no rounding, rnd 0 then). */
static inline __m512i round_shift8(__m512i m, __m512i rnd, __m512i par, __m128i s)
{
    const __m512i q0 = _mm512_and_si512(_mm512_sra_epi64(m, s), par);
    return _mm512_sra_epi64(_mm512_add_epi64(m, _mm512_add_epi64(rnd, q0)), s);
}

/* The stages after the bias (RK3576 multiplier, OUT_CVT, saturation) on 8 int64 lanes holding int32 values:
 * rkt_requantize, lane by lane; 8 bytes out. */
static inline __m128i requant_tail(const struct rq *r, __m512i v, __m512i mul, int with_mul)
{
    if (with_mul) {
        const __m512i m = _mm512_mul_epi32(v, mul);
        /* rkt_shift_even: floor((m + 2^(s-1) - 1 + parity of floor(m / 2^s)) / 2^s) */
        if (r->one_shift) { /* one shift for both signs: the encoders' case */
            v = round_shift8(m, r->rndp, r->parp, r->mshift);
        } else {
            const __mmask8 neg = _mm512_cmplt_epi64_mask(m, _mm512_setzero_si512()); /* the product's sign */
            const __m512i sh = _mm512_mask_blend_epi64(neg, r->shp, r->shn);
            const __m512i q0 = _mm512_and_si512(_mm512_srav_epi64(m, sh), _mm512_mask_blend_epi64(neg, r->parp, r->parn));
            v = _mm512_srav_epi64(_mm512_add_epi64(m, _mm512_add_epi64(_mm512_mask_blend_epi64(neg, r->rndp, r->rndn), q0)),
                                  sh);
        }
        v = _mm512_max_epi64(_mm512_min_epi64(v, r->hi32), r->lo32);
    }
    /* |v| < 2^31 and scale < 2^16: the signed 32 x 32 -> 64 product is exact */
    const __m512i o = _mm512_add_epi64(round_shift8(_mm512_mul_epi32(v, r->scale), r->pre, r->par, r->shift), r->post);
    return _mm512_cvtepi64_epi8(_mm512_max_epi64(_mm512_min_epi64(o, r->hi8), r->lo8));
}

static inline __m512i load8_64(const int32_t *p)
{
    return _mm512_cvtepi32_epi64(_mm256_loadu_si256((const __m256i *)p));
}

/* 16 channels from k, the general case: the CORE value and the bias in int64 lanes with saturation. */
static inline __m128i requant16_64(const struct rq *r, const struct rkt_requant *q, const int32_t *a, int k, __m512i sum,
                                   int with_sum, int with_mul)
{
    __m128i out[2];
    for (int h = 0; h < 2; h++) {
        const int j = k + 8 * h;
        __m512i core = _mm512_add_epi64(load8_64(a + j), _mm512_loadu_si512(q->corr + j));
        if (with_sum) /* |ow| <= 2^16, 0 <= sum < 2^31: the 32 x 32 -> 64 product is exact */
            core = _mm512_add_epi64(core, _mm512_mul_epi32(load8_64(q->ow + j), sum));
        __m512i v = _mm512_sra_epi64(_mm512_add_epi64(core, r->tround), r->trunc);
        v = _mm512_add_epi64(v, load8_64(q->bias + j));
        v = _mm512_max_epi64(_mm512_min_epi64(v, r->hi32), r->lo32);
        out[h] = requant_tail(r, v, with_mul ? load8_64(q->mul + j) : v, with_mul);
    }
    return _mm_unpacklo_epi64(out[0], out[1]);
}

/* The fast requantization (fits32 tasks): the value after the bias add v in 16 int32 lanes, the stages after
 * it in double lanes, 8 at a time. Doubles hold every intermediate exactly: |v| < 2^31 times a multiplier or
 * OUT_CVT scale below 2^21 stays under 2^52 significant bits, and a multiplication by 2^-s only moves the
 * exponent. So y = v * (mul * 2^-shift) is the exact quotient and rounding it to the nearest integer, ties to even
 * (roundscale / the embedded rounding of the conversion), is rkt_shift_even; the BS multiplier's shift by the
 * product's sign multiplies the negative lanes by 2^(sp - sn); sums of two int32 values and the saturations
 * (min / max against the int32 bounds) are exact too. OUT_CVT: z = w * (scale * 2^-shift) rounded to an int32
 * (z clamped to +-2^24 first unless the task's bound keeps it inside), the offset added in int32 and the byte
 * saturation of vpmovsdb: |offset| < 2^23 keeps a clamped z saturated whatever the offset.
 * `fold` (the rows of the plain loops): without CLIP_TRUNCATE the bias joins corr32 (every partial sum inside the
 * task's int32 bound). The offset stays out of the rounding: z + offset rounded ties to even is not z rounded plus
 * the offset when the offset is odd and z a tie (-59.5 + 65 rounds to 6, -60 + 65 is 5). */
struct rqd {
    __m512d scalef, zlo, zhi, i32lo, i32hi, lo, hi, negf, eoff, escalef;
    __m512i post;
    int zclamp, wsat, clamp, two_shifts, ew, fold;
    size_t ew_pitch;
};

/* The per-channel tables of 16 channels, loaded once per surface (the stores may alias them). */
struct rq16 {
    __m512i corr32, ow, bias, cb; /* cb: corr32 + bias (fold) */
    __m512d mulf[2]; /* mul * 2^-sp */
};

/* Whether the double tail computes what rkt_requantize does for this task (the conditions above), and its
 * constants. */
static int rqd_init(struct rqd *d, const struct rkt_requant *q)
{
    const int64_t lim = (int64_t)1 << 21;
    if (!q->corr32 || q->lut || (q->ew_row && (q->ew_mul || q->ew_tie_up)) || q->scale >= lim || q->scale <= -lim ||
        q->offset >= ((int64_t)1 << 23) || q->offset <= -((int64_t)1 << 23) || q->shift > 62 ||
        q->mul_shift_pos > 62 || q->mul_shift_neg > 62 || q->ew_shift > 62)
        return 0;
    const int64_t mmax = q->mul ? q->mul_max : 0;
    if (mmax >= lim)
        return 0;
    /* the EW operand (e + offset) * scale for |e| <= 128 stays below 2^52 */
    if (q->ew_row && (llabs(q->ew_offset) + 128 >= ((int64_t)1 << 30) || llabs(q->ew_scale) >= lim))
        return 0;
    const int sp = q->mul_shift_pos, sn = q->mul_shift_neg;
    /* |w| bound: v's, the multiplier's result (saturated to int32 unless the bound keeps it inside), the EW sum
     * saturated */
    double wmax = (double)q->vmax;
    d->wsat = 0;
    if (q->mul) {
        wmax = wmax * (double)mmax / ldexp(1.0, sp < sn ? sp : sn) + 1;
        d->wsat = wmax >= 2147483647.0;
        wmax = d->wsat ? 2147483648.0 : wmax;
    }
    d->ew = q->ew_row != NULL;
    if (d->ew)
        wmax = 2147483648.0;
    d->zclamp = wmax * (double)llabs(q->scale) / ldexp(1.0, q->shift) + 1 >= 16777216.0;
    d->fold = q->trunc == 0;
    d->clamp = q->lo != INT32_MIN || q->hi != INT32_MAX;
    d->two_shifts = q->mul && sp != sn;
    d->scalef = _mm512_set1_pd(ldexp((double)q->scale, -q->shift));
    d->zlo = _mm512_set1_pd(-16777216.0);
    d->zhi = _mm512_set1_pd(16777216.0);
    d->i32lo = _mm512_set1_pd((double)INT32_MIN);
    d->i32hi = _mm512_set1_pd((double)INT32_MAX);
    d->lo = _mm512_set1_pd((double)q->lo);
    d->hi = _mm512_set1_pd((double)q->hi);
    d->negf = _mm512_set1_pd(ldexp(1.0, sp - sn));
    d->eoff = _mm512_set1_pd((double)q->ew_offset);
    d->escalef = _mm512_set1_pd(ldexp((double)q->ew_scale, -q->ew_shift));
    d->post = _mm512_set1_epi32((int32_t)q->offset);
    d->ew_pitch = q->ew_surf_pitch;
    return 1;
}

#define RQD_RNE (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
/* each stage combination of requant_avx512 gets its own copy of the loops (GCC would otherwise share one clone
 * that tests the flags per pixel) */
#define RKT_ALWAYS_INLINE inline __attribute__((always_inline))

/* The stages after the bias of 8 lanes (v as doubles) to 8 int32, before the offset; `general` 0: the task needs
 * none of the optional stages and folds the bias (d->fold), and the optional stages are left out of the loop. */
static RKT_ALWAYS_INLINE __m256i rqd_tail(const struct rqd *d, __m512d v, __m512d mulf, const uint8_t *ew, int with_mul,
                               int general)
{
    if (with_mul) {
        __m512d y = _mm512_mul_pd(v, mulf);
        if (general && d->two_shifts)
            y = _mm512_mask_mul_pd(y, _mm512_cmp_pd_mask(y, _mm512_setzero_pd(), _CMP_LT_OQ), y, d->negf);
        v = _mm512_roundscale_pd(y, RQD_RNE);
        if (general && d->wsat)
            v = _mm512_max_pd(_mm512_min_pd(v, d->i32hi), d->i32lo);
    }
    if (general && d->clamp)
        v = _mm512_max_pd(_mm512_min_pd(v, d->hi), d->lo);
    if (general && d->ew) {
        const __m512d e = _mm512_add_pd(_mm512_cvtepi32_pd(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)ew))),
                                        d->eoff);
        v = _mm512_add_pd(v, _mm512_roundscale_pd(_mm512_mul_pd(e, d->escalef), RQD_RNE));
        v = _mm512_max_pd(_mm512_min_pd(v, d->i32hi), d->i32lo);
    }
    __m512d z = _mm512_mul_pd(v, d->scalef);
    if (d->zclamp)
        z = _mm512_max_pd(_mm512_min_pd(z, d->zhi), d->zlo);
    return _mm512_cvt_roundpd_epi32(z, RQD_RNE);
}

/* 16 channels of a fits32 task: the int32 stages up to the bias, then the double tail. */
static RKT_ALWAYS_INLINE __m128i requant16_d(const struct rqd *d, const struct rq16 *c, const __m128i trunc, const int32_t *a,
                                  __m512i sum, const uint8_t *ew, int with_sum, int with_mul, int general)
{
    __m512i v = _mm512_add_epi32(_mm512_loadu_si512(a), general ? c->corr32 : c->cb);
    if (with_sum)
        v = _mm512_add_epi32(v, _mm512_mullo_epi32(c->ow, sum));
    if (general)
        v = _mm512_add_epi32(_mm512_sra_epi32(v, trunc), c->bias);
    const __m256i lo = rqd_tail(d, _mm512_cvtepi32_pd(_mm512_castsi512_si256(v)), c->mulf[0], ew, with_mul, general);
    const __m256i hi = rqd_tail(d, _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(v, 1)), c->mulf[1], ew + 8, with_mul,
                                general);
    const __m512i r = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    return _mm512_cvtsepi32_epi8(_mm512_add_epi32(r, d->post));
}

/* dbl: d holds the double tail's constants (rqd_init), else the int64 lanes run; general: see rqd_tail. */
static RKT_ALWAYS_INLINE void requant_rows(const struct rkt_requant *q, const struct rqd *dp, int dbl, const int32_t *acc,
                                size_t astride, const int32_t *s, int npix, int nsurf, uint8_t *const *dst,
                                int with_sum, int with_mul, int general)
{
    const int sp = q->mul_shift_pos, sn = q->mul_shift_neg, n = q->n;
    const struct rqd d = *dp;
    const struct rq r = {
        .tround = _mm512_set1_epi64(q->tround), .scale = _mm512_set1_epi64(q->scale), .pre = _mm512_set1_epi64(q->pre),
        .post = _mm512_set1_epi64(q->post), .lo32 = _mm512_set1_epi64(INT32_MIN), .hi32 = _mm512_set1_epi64(INT32_MAX),
        .lo8 = _mm512_set1_epi64(-128), .hi8 = _mm512_set1_epi64(127), .shp = _mm512_set1_epi64(sp),
        .shn = _mm512_set1_epi64(sn), .rndp = _mm512_set1_epi64(sp ? ((int64_t)1 << (sp - 1)) - 1 : 0),
        .rndn = _mm512_set1_epi64(sn ? ((int64_t)1 << (sn - 1)) - 1 : 0), .par = _mm512_set1_epi64(q->shift != 0),
        .parp = _mm512_set1_epi64(sp != 0), .parn = _mm512_set1_epi64(sn != 0), .trunc = _mm_cvtsi32_si128(q->trunc),
        .shift = _mm_cvtsi32_si128(q->shift), .mshift = _mm_cvtsi32_si128(sp), .one_shift = sp == sn};
    /* channels past the computed ones are 0 [INFERRED] */
    const __mmask16 last = (__mmask16)(n % 16 ? (1u << (n % 16)) - 1 : 0xFFFFu);
    for (int sf = 0; sf < nsurf; sf++) {
        const int k = sf * 16;
        const __mmask16 m = sf == nsurf - 1 ? last : 0xFFFFu;
        uint8_t *out = dst[sf];
        struct rq16 c;
        memset(&c, 0, sizeof(c));
        if (!general || dbl) {
            c.corr32 = _mm512_loadu_si512(q->corr32 + k);
            c.ow = _mm512_loadu_si512(q->ow + k);
            c.bias = _mm512_loadu_si512(q->bias + k);
            c.cb = _mm512_add_epi32(c.corr32, c.bias);
            if (with_mul) {
                const __m512i mv = _mm512_loadu_si512(q->mul + k);
                const __m512d f = _mm512_set1_pd(ldexp(1.0, -sp));
                c.mulf[0] = _mm512_mul_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(mv)), f);
                c.mulf[1] = _mm512_mul_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(mv, 1)), f);
            }
        }
        const uint8_t *ew = general && d.ew ? q->ew_row + (size_t)sf * d.ew_pitch : NULL;
        for (int p = 0; p < npix; p++) {
            const int32_t *a = acc + (size_t)p * astride;
            __m128i o;
            if (!general || dbl)
                o = requant16_d(&d, &c, r.trunc, a + k, _mm512_set1_epi32(with_sum ? s[p] : 0),
                                ew ? ew + (size_t)p * 16 : NULL, with_sum, with_mul, general);
            else
                o = requant16_64(&r, q, a, k, _mm512_set1_epi64(with_sum ? s[p] : 0), with_sum, with_mul);
            _mm_storeu_si128((__m128i *)(out + (size_t)p * 16), _mm_maskz_mov_epi8(m, o));
        }
    }
}

static void requant_avx512(const struct rkt_requant *q, const int32_t *acc, size_t astride, const int32_t *s, int npix,
                           int nsurf, uint8_t *const *dst)
{
    struct rqd d;
    memset(&d, 0, sizeof(d));
    const int dbl = rqd_init(&d, q);
    /* the int64 lanes have no clamp, EW or LUT stage: without the double tail such rows take the portable code */
    if (!dbl && (q->ew_row || q->lut || q->lo != INT32_MIN || q->hi != INT32_MAX)) {
        rkt_dot_c.requant(q, acc, astride, s, npix, nsurf, dst);
        return;
    }
    /* one specialized loop per stage combination: window sums, multiplier, the optional stages */
    const int g = !dbl || d.two_shifts || d.wsat || d.clamp || d.ew || d.zclamp || !d.fold;
    if (s && q->mul)
        g ? requant_rows(q, &d, dbl, acc, astride, s, npix, nsurf, dst, 1, 1, 1)
          : requant_rows(q, &d, dbl, acc, astride, s, npix, nsurf, dst, 1, 1, 0);
    else if (s)
        g ? requant_rows(q, &d, dbl, acc, astride, s, npix, nsurf, dst, 1, 0, 1)
          : requant_rows(q, &d, dbl, acc, astride, s, npix, nsurf, dst, 1, 0, 0);
    else if (q->mul)
        g ? requant_rows(q, &d, dbl, acc, astride, s, npix, nsurf, dst, 0, 1, 1)
          : requant_rows(q, &d, dbl, acc, astride, s, npix, nsurf, dst, 0, 1, 0);
    else
        g ? requant_rows(q, &d, dbl, acc, astride, s, npix, nsurf, dst, 0, 0, 1)
          : requant_rows(q, &d, dbl, acc, astride, s, npix, nsurf, dst, 0, 0, 0);
}

const struct rkt_dot_ops rkt_dot_avx512 = {"avx512", direct_avx512, depthwise_avx512, pack_avx512, pixsum_avx512, requant_avx512};

#if defined(__clang__)
#pragma clang attribute pop
#endif
#endif
