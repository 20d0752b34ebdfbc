/* The kernels of sim_dot.h with AVX2 (only called when the CPU has AVX2, rkt_dot_select): its own direct
 * kernel and requantization; depthwise, weight pack and window sums are the portable kernels
 * (sim_dot_generic.h) compiled for AVX2. */
#include "sim_dot.h"
#if RKT_DOT_X86
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC target("avx2,fma")
#endif
#include <immintrin.h>
#include <string.h>

#define RKT_DOT_SFX avx2
#define RKT_DOT_OWN_DIRECT
#define RKT_DOT_OWN_REQUANT
#include "sim_dot_generic.h"

/* Without VNNI: the 4 bytes x + 128 of a pixel's channel quad widened to int16 and repeated, against 4 kernels'
 * quads widened to int16 (vpmaddwd: exact, |sum of 2 products| <= 2 x 255 x 128); each int32 lane holds one
 * half of a kernel's quad, the halves are added at the end. 2 pixels x 16 kernels at a time. */
static void direct_avx2(const uint8_t *x, size_t xstep, size_t xrow, const int8_t *wb, int kh, int kw, int ic, int icl,
                        int32_t *acc, size_t astride, int npix, int nk)
{
    (void)npix, (void)nk; /* the whole block */
    const __m256i spread = _mm256_setr_epi8(0, -1, 1, -1, 2, -1, 3, -1, 0, -1, 1, -1, 2, -1, 3, -1,
                                            0, -1, 1, -1, 2, -1, 3, -1, 0, -1, 1, -1, 2, -1, 3, -1);
    for (int p = 0; p < RKT_DOT_P; p += 2)
        for (int h = 0; h < RKT_DOT_KB / 16; h++) {
            __m256i a[2][4];
            for (int j = 0; j < 4; j++)
                a[0][j] = a[1][j] = _mm256_setzero_si256();
            for (int ky = 0; ky < kh; ky++)
                for (int kx = 0; kx < kw; kx++) {
                    const uint8_t *x0 = x + (size_t)ky * xrow + (size_t)p * xstep + (size_t)kx * ic, *x1 = x0 + xstep;
                    const int8_t *w = wb + ((size_t)ky * kw + kx) * ic * RKT_DOT_KB + 64 * h;
                    for (int c = 0; c < icl; c += 4, w += 4 * RKT_DOT_KB) {
                        int32_t v0, v1;
                        memcpy(&v0, x0 + c, 4);
                        memcpy(&v1, x1 + c, 4);
                        const __m256i b0 = _mm256_shuffle_epi8(_mm256_set1_epi32(v0), spread);
                        const __m256i b1 = _mm256_shuffle_epi8(_mm256_set1_epi32(v1), spread);
                        for (int j = 0; j < 4; j++) {
                            const __m256i wj = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(w + 16 * j)));
                            a[0][j] = _mm256_add_epi32(a[0][j], _mm256_madd_epi16(b0, wj));
                            a[1][j] = _mm256_add_epi32(a[1][j], _mm256_madd_epi16(b1, wj));
                        }
                    }
                }
            for (int q = 0; q < 2; q++) {
                int32_t *o = acc + (size_t)(p + q) * astride + 16 * h;
                /* hadd: [k0 k1 k4 k5 | k2 k3 k6 k7] -> kernel order */
                _mm256_storeu_si256((__m256i *)o, _mm256_permute4x64_epi64(_mm256_hadd_epi32(a[q][0], a[q][1]), 0xD8));
                _mm256_storeu_si256((__m256i *)(o + 8), _mm256_permute4x64_epi64(_mm256_hadd_epi32(a[q][2], a[q][3]), 0xD8));
            }
        }
}

/* Arithmetic right shift of int64 lanes by s <= 48 when |v| < 2^48 (AVX2 has no vpsraq): a logical shift of
 * v + 2^48 (>= 0), minus 2^(48 - s). */
static inline __m256i sra64(__m256i v, __m128i s, __m256i bias, __m256i unbias)
{
    return _mm256_sub_epi64(_mm256_srl_epi64(_mm256_add_epi64(v, bias), s), unbias);
}

static inline __m256i clamp64(__m256i v, __m256i lo, __m256i hi)
{
    v = _mm256_blendv_epi8(v, hi, _mm256_cmpgt_epi64(v, hi));
    return _mm256_blendv_epi8(v, lo, _mm256_cmpgt_epi64(lo, v));
}

struct rq2 {
    __m256i scale, pre, post, lo8, hi8, lo32, hi32, mrnd, bias, unbias, mbias, munbias, par, mpar;
    __m128i trunc, shift, mshift;
};

/* rkt_round_shift of m by s on |m| < 2^47: floor((m + rnd + parity of floor(m / 2^s)) / 2^s), rnd = 2^(s-1) - 1
 * (plus any folded offset); `par` is 1 in every lane, or 0 for s = 0 (no rounding). */
static inline __m256i round_shift4(__m256i m, __m256i rnd, __m256i par, __m128i s, __m256i bias, __m256i unbias)
{
    const __m256i q0 = _mm256_and_si256(sra64(m, s, bias, unbias), par);
    return sra64(_mm256_add_epi64(m, _mm256_add_epi64(rnd, q0)), s, bias, unbias);
}

/* The stages after the bias on 4 int64 lanes holding int32 values (rkt_requantize lane by lane). */
static inline __m256i tail4(const struct rq2 *r, __m256i v, __m256i mul, int with_mul)
{
    if (with_mul) /* |v * mul| < 2^46 */
        v = clamp64(round_shift4(_mm256_mul_epi32(v, mul), r->mrnd, r->mpar, r->mshift, r->mbias, r->munbias),
                    r->lo32, r->hi32);
    /* |v * scale| < 2^47, |pre| < 2^47 (checked): the sum stays below 2^48 */
    const __m256i o = round_shift4(_mm256_mul_epi32(v, r->scale), r->pre, r->par, r->shift, r->bias, r->unbias);
    return clamp64(_mm256_add_epi64(o, r->post), r->lo8, r->hi8);
}

static void requant_avx2(const struct rkt_requant *q, const int32_t *acc, size_t astride, const int32_t *s, int npix,
                         int nsurf, uint8_t *const *dst)
{
    const int has_mul = q->mul != NULL, sp = q->mul_shift_pos;
    /* the int32 stages need the task's bound (corr32), the shifts the conditions of sra64; the clamp, EW and LUT
     * stages are the portable requantization's */
    if (!q->corr32 || q->ew_row || q->lut || q->lo != INT32_MIN || q->hi != INT32_MAX || q->shift > 48 || q->pre >= ((int64_t)1 << 47) || q->pre <= -((int64_t)1 << 47) ||
        (has_mul && (sp != q->mul_shift_neg || sp > 48))) {
        requant_generic_avx2(q, acc, astride, s, npix, nsurf, dst);
        return;
    }
    const struct rq2 r = {
        .scale = _mm256_set1_epi64x(q->scale), .pre = _mm256_set1_epi64x(q->pre), .post = _mm256_set1_epi64x(q->post),
        .lo8 = _mm256_set1_epi64x(-128), .hi8 = _mm256_set1_epi64x(127), .lo32 = _mm256_set1_epi64x(INT32_MIN),
        .hi32 = _mm256_set1_epi64x(INT32_MAX), .mrnd = _mm256_set1_epi64x(sp ? ((int64_t)1 << (sp - 1)) - 1 : 0),
        .bias = _mm256_set1_epi64x((int64_t)1 << 48), .unbias = _mm256_set1_epi64x((int64_t)1 << (48 - q->shift)),
        .mbias = _mm256_set1_epi64x((int64_t)1 << 48), .munbias = _mm256_set1_epi64x((int64_t)1 << (48 - sp)),
        .par = _mm256_set1_epi64x(q->shift != 0), .mpar = _mm256_set1_epi64x(sp != 0),
        .trunc = _mm_cvtsi32_si128(q->trunc), .shift = _mm_cvtsi32_si128(q->shift), .mshift = _mm_cvtsi32_si128(sp)};
    for (int sf = 0; sf < nsurf; sf++) {
        const int k = sf * 16;
        uint8_t *d = dst[sf];
        for (int p = 0; p < npix; p++) {
            const int32_t *a = acc + (size_t)p * astride + k;
            const __m256i sum = _mm256_set1_epi32(s ? s[p] : 0);
            __m256i o32[2];
            for (int hh = 0; hh < 2; hh++) {
                __m256i v = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(a + 8 * hh)),
                                             _mm256_loadu_si256((const __m256i *)(q->corr32 + k + 8 * hh)));
                if (s)
                    v = _mm256_add_epi32(v, _mm256_mullo_epi32(_mm256_loadu_si256((const __m256i *)(q->ow + k + 8 * hh)), sum));
                v = _mm256_add_epi32(_mm256_sra_epi32(v, r.trunc), _mm256_loadu_si256((const __m256i *)(q->bias + k + 8 * hh)));
                /* int64 lanes of channels 0..3 and 4..7 of the half */
                const __m256i c03 = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(v));
                const __m256i c47 = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(v, 1));
                __m256i m03 = c03, m47 = c47;
                if (has_mul) {
                    const __m256i mv = _mm256_loadu_si256((const __m256i *)(q->mul + k + 8 * hh));
                    m03 = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(mv));
                    m47 = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(mv, 1));
                }
                const __m256i r03 = has_mul ? tail4(&r, c03, m03, 1) : tail4(&r, c03, m03, 0);
                const __m256i r47 = has_mul ? tail4(&r, c47, m47, 1) : tail4(&r, c47, m47, 0);
                /* the low int32 of each int64 lane, back in channel order */
                const __m256i low = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
                o32[hh] = _mm256_permute2x128_si256(_mm256_permutevar8x32_epi32(r03, low),
                                                    _mm256_permutevar8x32_epi32(r47, low), 0x20);
            }
            /* values in [-128, 127]: the saturating packs keep them; int16 in channel order, then bytes */
            const __m256i w16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(o32[0], o32[1]), 0xD8);
            const __m256i b8 = _mm256_packs_epi16(w16, w16);
            const __m128i o = _mm_unpacklo_epi64(_mm256_castsi256_si128(b8), _mm256_extracti128_si256(b8, 1));
            int8_t b[16];
            _mm_storeu_si128((__m128i *)b, o);
            if (k + 16 > q->n) /* channels past the computed ones are 0 [INFERRED] */
                memset(b + (q->n - k), 0, (size_t)(k + 16 - q->n));
            memcpy(d + (size_t)p * 16, b, 16);
        }
    }
}

const struct rkt_dot_ops rkt_dot_avx2 = {"avx2", direct_avx2, depthwise_avx2, pack_avx2, pixsum_avx2, requant_avx2};

#if defined(__clang__)
#pragma clang attribute pop
#endif
#endif
