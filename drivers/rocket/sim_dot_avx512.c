/* The kernels of sim_dot.h with AVX-512 VNNI (built with -mavx512f -mavx512bw -mavx512vl -mavx512dq
 * -mavx512vnni; only called when the CPU has all of them, rkt_dot_select). */
#include <immintrin.h>
#include <string.h>

#include "sim_dot.h"

/* vpdpbusd: each int32 lane accumulates four uint8 (x + 128) x int8 (weight) products, exactly (no
 * saturation). 8 pixels x 32 kernels = 16 accumulators. */
static void direct_avx512(const uint8_t *x, size_t xstep, size_t xrow, const int8_t *w, int kh, int kw, int ic,
                          int32_t *acc, size_t astride)
{
    __m512i a[RKT_DOT_P][2];
    for (int p = 0; p < RKT_DOT_P; p++)
        a[p][0] = a[p][1] = _mm512_setzero_si512();
    for (int ky = 0; ky < kh; ky++)
        for (int kx = 0; kx < kw; kx++) {
            const uint8_t *xp = x + (size_t)ky * xrow + (size_t)kx * ic;
            for (int c = 0; c < ic; c += 4, w += 4 * RKT_DOT_KB) {
                const __m512i w0 = _mm512_loadu_si512(w), w1 = _mm512_loadu_si512(w + 64);
                for (int p = 0; p < RKT_DOT_P; p++) {
                    int32_t v;
                    memcpy(&v, xp + (size_t)p * xstep + c, 4);
                    const __m512i b = _mm512_set1_epi32(v);
                    a[p][0] = _mm512_dpbusd_epi32(a[p][0], b, w0);
                    a[p][1] = _mm512_dpbusd_epi32(a[p][1], b, w1);
                }
            }
        }
    for (int p = 0; p < RKT_DOT_P; p++) {
        _mm512_storeu_si512(acc + (size_t)p * astride, a[p][0]);
        _mm512_storeu_si512(acc + (size_t)p * astride + 16, a[p][1]);
    }
}

/* vpmaddwd over pairs of taps: (x_t, x_t+1) . (w_t, w_t+1) per channel, 32 channels per step; the unpacks
 * leave the channels of each 128-bit lane split over lo (0..3) and hi (4..7), undone before the store. */
static void depthwise_avx512(const uint8_t *x, size_t xstep, size_t xrow, const int16_t *w, int kh, int kw, int ic,
                             int npix, int32_t *acc)
{
    const int taps = kh * kw;
    const __m512i first = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
    const __m512i second = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
    for (int p = 0; p < npix; p++)
        for (int cb = 0; cb < ic; cb += 32) {
            const __mmask32 m = ic - cb >= 32 ? 0xFFFFFFFFu : 0xFFFFu; /* ic is a multiple of 16 */
            __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
            for (int t = 0; t < taps; t += 2) {
                const size_t xa = (size_t)(t / kw) * xrow + (size_t)(t % kw) * ic + (size_t)p * xstep + cb;
                const __m512i x0 = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(m, x + xa));
                const __m512i w0 = _mm512_maskz_loadu_epi16(m, w + (size_t)t * ic + cb);
                __m512i x1 = _mm512_setzero_si512(), w1 = _mm512_setzero_si512();
                if (t + 1 < taps) {
                    const size_t xb = (size_t)((t + 1) / kw) * xrow + (size_t)((t + 1) % kw) * ic + (size_t)p * xstep + cb;
                    x1 = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(m, x + xb));
                    w1 = _mm512_maskz_loadu_epi16(m, w + (size_t)(t + 1) * ic + cb);
                }
                lo = _mm512_add_epi32(lo, _mm512_madd_epi16(_mm512_unpacklo_epi16(x0, x1), _mm512_unpacklo_epi16(w0, w1)));
                hi = _mm512_add_epi32(hi, _mm512_madd_epi16(_mm512_unpackhi_epi16(x0, x1), _mm512_unpackhi_epi16(w0, w1)));
            }
            int32_t *a = acc + (size_t)p * ic + cb;
            _mm512_storeu_si512(a, _mm512_permutex2var_epi32(lo, first, hi));
            if (m == 0xFFFFFFFFu)
                _mm512_storeu_si512(a + 16, _mm512_permutex2var_epi32(lo, second, hi));
        }
}

/* 8 channels in int64 lanes: rkt_requantize, lane by lane. */
static inline __m128i requant8(const struct rkt_requant *q, const int32_t *a, int k, __m512i sum)
{
    const __m512i lo32 = _mm512_set1_epi64(INT32_MIN), hi32 = _mm512_set1_epi64(INT32_MAX);
    __m512i core = _mm512_add_epi64(_mm512_cvtepi32_epi64(_mm256_loadu_si256((const __m256i *)(a + k))),
                                    _mm512_loadu_si512(q->corr + k));
    core = _mm512_add_epi64(core, _mm512_mul_epi32(_mm512_cvtepi32_epi64(_mm256_loadu_si256((const __m256i *)(q->ow + k))), sum));
    __m512i v = _mm512_sra_epi64(_mm512_add_epi64(core, _mm512_set1_epi64(q->tround)), _mm_cvtsi32_si128(q->trunc));
    v = _mm512_add_epi64(v, _mm512_cvtepi32_epi64(_mm256_loadu_si256((const __m256i *)(q->bias + k))));
    v = _mm512_max_epi64(_mm512_min_epi64(v, hi32), lo32);
    if (q->mul) {
        const __mmask8 neg = _mm512_cmplt_epi64_mask(v, _mm512_setzero_si512());
        const int sp = q->mul_shift_pos, sn = q->mul_shift_neg;
        const __m512i sh = _mm512_mask_blend_epi64(neg, _mm512_set1_epi64(sp), _mm512_set1_epi64(sn));
        const __m512i rnd = _mm512_mask_blend_epi64(neg, _mm512_set1_epi64(sp ? (int64_t)1 << (sp - 1) : 0),
                                                    _mm512_set1_epi64(sn ? (int64_t)1 << (sn - 1) : 0));
        const __m512i m = _mm512_mul_epi32(v, _mm512_cvtepi32_epi64(_mm256_loadu_si256((const __m256i *)(q->mul + k))));
        v = _mm512_srav_epi64(_mm512_add_epi64(m, rnd), sh);
        v = _mm512_max_epi64(_mm512_min_epi64(v, hi32), lo32);
    }
    /* |v| < 2^31 and scale < 2^16: the signed 32 x 32 -> 64 product is exact */
    __m512i o = _mm512_mul_epi32(v, _mm512_set1_epi64(q->scale));
    o = _mm512_sra_epi64(_mm512_add_epi64(o, _mm512_set1_epi64(q->pre)), _mm_cvtsi32_si128(q->shift));
    o = _mm512_add_epi64(o, _mm512_set1_epi64(q->post));
    o = _mm512_max_epi64(_mm512_min_epi64(o, _mm512_set1_epi64(127)), _mm512_set1_epi64(-128));
    return _mm512_cvtepi64_epi8(o);
}

static void requant_avx512(const struct rkt_requant *q, const int32_t *acc, size_t astride, const int32_t *s, int npix,
                           int nsurf, uint8_t *const *dst)
{
    for (int p = 0; p < npix; p++) {
        const int32_t *a = acc + (size_t)p * astride;
        const __m512i sum = _mm512_set1_epi64(s ? s[p] : 0);
        for (int sf = 0; sf < nsurf; sf++) {
            const int k = sf * 16;
            __m128i o = _mm_unpacklo_epi64(requant8(q, a, k, sum), requant8(q, a, k + 8, sum));
            if (k + 16 > q->n) /* channels past the computed ones are 0 [INFERRED] */
                o = _mm_maskz_mov_epi8((__mmask16)((1u << (q->n - k)) - 1), o);
            _mm_storeu_si128((__m128i *)(dst[sf] + (size_t)p * 16), o);
        }
    }
}

const struct rkt_dot_ops rkt_dot_avx512 = {"avx512", direct_avx512, depthwise_avx512, requant_avx512};
