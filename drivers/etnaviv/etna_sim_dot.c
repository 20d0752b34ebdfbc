/* The fast NN path's multiply-accumulate kernels (struct etna_dot_ops in etna_sim_priv.h): portable C, AVX2 and
 * AVX-512 (x86 with GCC or clang: each function enables its own instruction set, so no build flags are needed),
 * chosen when the simulator is created. All compute the same integer sums (docs/hardware/etnaviv-sim.md
 * "Fast NN path").
 *
 * Register blocking: a block of up to ETNA_DOT_KB kernels shares its tap pairs, so each pair's two input runs are
 * loaded once for all of them, and the accumulators of ETNA_DOT_PX positions x the block's kernels stay in
 * registers over every tap. The x86 kernels interleave the two runs of a pair (int16) and multiply them by the
 * pair's two weights with one vpmaddwd per 8 (16) positions: exact, as |x| <= 255 and |w| <= 255 give pair sums
 * below 2^17. The interleave puts positions 0-3, 8-11 in one register and 4-7, 12-15 in the other (per
 * 128-bit lane); the stores put them back in order.
 *
 * The rocket kernels (drivers/rocket/sim_dot.h) do not fit: they take int8 weights and channel-interleaved
 * pixels, while an etnaviv weight relative to its zero point spans -255..255 and the features are planar. */
#include <stdlib.h>
#include <string.h>

#include "etna_sim_priv.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define ETNA_DOT_X86 1
#include <immintrin.h>
#endif
#if defined(__aarch64__) && defined(__GNUC__)
#define ETNA_DOT_ARM 1 /* Advanced SIMD is part of every aarch64 CPU: no run-time check */
#include <arm_neon.h>
#endif

/* Portable: the same blocking written for the vectorizer, ETNA_DOT_C_PX positions at a time (the accumulators of
 * ETNA_DOT_KB kernels fill 8 of the 16 registers of a 128-bit vector unit: SSE2, NEON). */
#define ETNA_DOT_C_PX 8
static inline __attribute__((always_inline)) void etna_dot_mac_c_kb(unsigned kb, const int16_t *pad,
                                                                    const int64_t *off, const int16_t *w,
                                                                    uint64_t npairs, const int32_t *bias,
                                                                    int64_t run, int32_t *acc, int64_t astride)
{
    for (int64_t i = 0; i < run; i += ETNA_DOT_C_PX) {
        int32_t a[ETNA_DOT_KB][ETNA_DOT_C_PX];
        for (unsigned k = 0; k < kb; k++)
            for (int x = 0; x < ETNA_DOT_C_PX; x++)
                a[k][x] = bias[k];
        for (uint64_t p = 0; p < npairs; p++) {
            const int16_t *s0 = pad + off[2 * p] + i, *s1 = pad + off[2 * p + 1] + i;
            const int16_t *wp = w + 2 * p * kb;
            for (unsigned k = 0; k < kb; k++) {
                const int32_t w0 = wp[2 * k], w1 = wp[2 * k + 1];
                for (int x = 0; x < ETNA_DOT_C_PX; x++)
                    a[k][x] += w0 * s0[x] + w1 * s1[x];
            }
        }
        for (unsigned k = 0; k < kb; k++)
            for (int x = 0; x < ETNA_DOT_C_PX; x++)
                acc[k * astride + i + x] = a[k][x];
    }
}

static void etna_dot_mac_c(unsigned kb, const int16_t *pad, const int64_t *off, const int16_t *w, uint64_t npairs,
                           const int32_t *bias, int64_t run, int32_t *acc, int64_t astride)
{
    if (kb == 1)
        etna_dot_mac_c_kb(1, pad, off, w, npairs, bias, run, acc, astride);
    else
        etna_dot_mac_c_kb(ETNA_DOT_KB, pad, off, w, npairs, bias, run, acc, astride);
}

void etna_dot_requant_c(const int32_t *acc, int64_t step, int64_t n, int64_t mult, unsigned shift, int32_t ozp,
                        int32_t lo, uint8_t *row)
{
    for (int64_t x = 0; x < n; x++) {
        int64_t v = etna_round_shift((int64_t)acc[x * step] * mult, shift) + ozp;
        v = v < lo ? lo : v > 255 ? 255 : v;
        row[x] = (uint8_t)v;
    }
}

/* The vector requantizations take the magnitude |acc| < 2^32 times mult < 2^25 (every v7 and v8 multiplier:
 * 2^15 or 2^23 plus the post multiplier field) as an unsigned 64-bit product, round it as etna_round_shift
 * does, and cap it at 511 before the sign goes back: any larger magnitude clamps to the same 0 or 255 with a
 * zero point in 0..255. Other multipliers take the portable loop. */
#define ETNA_DOT_RQ_CAP 511

#if ETNA_DOT_X86
static int32_t etna_dot_w32(const int16_t *w)
{
    int32_t v;
    memcpy(&v, w, sizeof(v));
    return v;
}

/* 16 positions of one kernel: lo holds positions 0-3, 8-11, hi 4-7, 12-15. */
__attribute__((target("avx2"))) static inline void etna_dot_store_avx2(int32_t *o, __m256i lo, __m256i hi)
{
    _mm256_storeu_si256((__m256i *)o, _mm256_permute2x128_si256(lo, hi, 0x20));
    _mm256_storeu_si256((__m256i *)(o + 8), _mm256_permute2x128_si256(lo, hi, 0x31));
}

/* ETNA_DOT_KB kernels x 16 positions (8 accumulators), or one kernel x 32 positions (4). */
__attribute__((target("avx2"))) static void etna_dot_mac_avx2(unsigned kb, const int16_t *pad, const int64_t *off,
                                                              const int16_t *w, uint64_t npairs, const int32_t *bias,
                                                              int64_t run, int32_t *acc, int64_t astride)
{
    if (kb == 1) {
        const __m256i b = _mm256_set1_epi32(bias[0]);
        for (int64_t i = 0; i < run; i += 32) {
            __m256i a0 = b, a1 = b, a2 = b, a3 = b;
            for (uint64_t p = 0; p < npairs; p++) {
                const int16_t *s0 = pad + off[2 * p] + i, *s1 = pad + off[2 * p + 1] + i;
                const __m256i wv = _mm256_set1_epi32(etna_dot_w32(w + 2 * p));
                const __m256i x0 = _mm256_loadu_si256((const __m256i *)s0);
                const __m256i y0 = _mm256_loadu_si256((const __m256i *)s1);
                const __m256i x1 = _mm256_loadu_si256((const __m256i *)(s0 + 16));
                const __m256i y1 = _mm256_loadu_si256((const __m256i *)(s1 + 16));
                a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_unpacklo_epi16(x0, y0), wv));
                a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_unpackhi_epi16(x0, y0), wv));
                a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(_mm256_unpacklo_epi16(x1, y1), wv));
                a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(_mm256_unpackhi_epi16(x1, y1), wv));
            }
            etna_dot_store_avx2(acc + i, a0, a1);
            etna_dot_store_avx2(acc + i + 16, a2, a3);
        }
        return;
    }
    for (int64_t i = 0; i < run; i += 16) {
        __m256i a[ETNA_DOT_KB][2];
        for (unsigned k = 0; k < ETNA_DOT_KB; k++)
            a[k][0] = a[k][1] = _mm256_set1_epi32(bias[k]);
        for (uint64_t p = 0; p < npairs; p++) {
            const __m256i x = _mm256_loadu_si256((const __m256i *)(pad + off[2 * p] + i));
            const __m256i y = _mm256_loadu_si256((const __m256i *)(pad + off[2 * p + 1] + i));
            const __m256i lo = _mm256_unpacklo_epi16(x, y), hi = _mm256_unpackhi_epi16(x, y);
            const int16_t *wp = w + 2 * p * ETNA_DOT_KB;
            for (unsigned k = 0; k < ETNA_DOT_KB; k++) {
                const __m256i wv = _mm256_set1_epi32(etna_dot_w32(wp + 2 * k));
                a[k][0] = _mm256_add_epi32(a[k][0], _mm256_madd_epi16(lo, wv));
                a[k][1] = _mm256_add_epi32(a[k][1], _mm256_madd_epi16(hi, wv));
            }
        }
        for (unsigned k = 0; k < ETNA_DOT_KB; k++)
            etna_dot_store_avx2(acc + k * astride + i, a[k][0], a[k][1]);
    }
}

__attribute__((target("avx2"))) static void etna_dot_requant_avx2(const int32_t *acc, int64_t step, int64_t n,
                                                                  int64_t mult, unsigned shift, int32_t ozp, int32_t lo,
                                                                  uint8_t *row)
{
    int64_t x = 0;
    if (mult >= 0 && mult < ((int64_t)1 << 25) && shift < 64) {
        const __m256i m = _mm256_set1_epi64x(mult), rnd = _mm256_set1_epi64x((int64_t)(((uint64_t)1 << shift) >> 1));
        const __m256i cap = _mm256_set1_epi64x(ETNA_DOT_RQ_CAP), even = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
        const __m128i sh = _mm_cvtsi32_si128((int)shift), zp = _mm_set1_epi32(ozp), lov = _mm_set1_epi32(lo);
        const __m128i hi = _mm_set1_epi32(255);
        for (; x + 4 <= n; x += 4) {
            const __m128i v = step == 1 ? _mm_loadu_si128((const __m128i *)(acc + x))
                            : _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(
                                  _mm256_loadu_si256((const __m256i *)(acc + 2 * x)), even));
            const __m128i neg = _mm_cmpgt_epi32(_mm_setzero_si128(), v);
            __m256i q = _mm256_mul_epu32(_mm256_cvtepu32_epi64(_mm_abs_epi32(v)), m);
            q = _mm256_srl_epi64(_mm256_add_epi64(q, rnd), sh);
            q = _mm256_blendv_epi8(q, cap, _mm256_cmpgt_epi64(q, cap));
            __m128i r = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(q, even));
            r = _mm_sub_epi32(_mm_xor_si128(r, neg), neg);
            r = _mm_min_epi32(_mm_max_epi32(_mm_add_epi32(r, zp), lov), hi);
            r = _mm_packus_epi16(_mm_packus_epi32(r, r), r);
            const int32_t out = _mm_cvtsi128_si32(r);
            memcpy(row + x, &out, 4);
        }
    }
    etna_dot_requant_c(acc + x * step, step, n - x, mult, shift, ozp, lo, row + x);
}

/* 16 elements at a time as int32 lanes, the last ones (n mod 16) under a mask: the magnitudes of the even and the
 * odd lanes multiplied as 64-bit products, rounded, capped and put back together as int32 lanes. */
__attribute__((target("avx512f,avx512vl"))) static void etna_dot_requant_avx512(const int32_t *acc, int64_t step,
                                                                               int64_t n, int64_t mult,
                                                                               unsigned shift, int32_t ozp,
                                                                               int32_t lo, uint8_t *row)
{
    if (!(mult >= 0 && mult < ((int64_t)1 << 25) && shift < 64)) {
        etna_dot_requant_c(acc, step, n, mult, shift, ozp, lo, row);
        return;
    }
    const __m512i m = _mm512_set1_epi64(mult), rnd = _mm512_set1_epi64((int64_t)(((uint64_t)1 << shift) >> 1));
    const __m512i cap = _mm512_set1_epi64(ETNA_DOT_RQ_CAP), zp = _mm512_set1_epi32(ozp);
    const __m512i lov = _mm512_set1_epi32(lo), hi = _mm512_set1_epi32(255);
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m128i sh = _mm_cvtsi32_si128((int)shift);
    for (int64_t x = 0; x < n; x += 16) {
        const int64_t left = n - x;
        const __mmask16 k = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
        __m512i v;
        if (step == 1) {
            v = _mm512_maskz_loadu_epi32(k, acc + x);
        } else { /* the even elements of 32, up to the last one needed (2 left - 1 elements) */
            const int64_t need = left >= 16 ? 32 : 2 * left - 1;
            const __mmask16 k0 = need >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << need) - 1);
            const __mmask16 k1 = need >= 32 ? (__mmask16)0xffff : need > 16 ? (__mmask16)((1u << (need - 16)) - 1) : 0;
            v = _mm512_permutex2var_epi32(_mm512_maskz_loadu_epi32(k0, acc + 2 * x), even,
                                          _mm512_maskz_loadu_epi32(k1, acc + 2 * x + 16));
        }
        const __m512i mag = _mm512_abs_epi32(v); /* |INT32_MIN| = 2^31 read as unsigned */
        __m512i qe = _mm512_mul_epu32(mag, m), qo = _mm512_mul_epu32(_mm512_srli_epi64(mag, 32), m);
        qe = _mm512_min_epu64(_mm512_srl_epi64(_mm512_add_epi64(qe, rnd), sh), cap);
        qo = _mm512_min_epu64(_mm512_srl_epi64(_mm512_add_epi64(qo, rnd), sh), cap);
        const __m512i neg = _mm512_srai_epi32(v, 31);
        __m512i q = _mm512_or_si512(qe, _mm512_slli_epi64(qo, 32));
        q = _mm512_add_epi32(_mm512_sub_epi32(_mm512_xor_si512(q, neg), neg), zp);
        q = _mm512_min_epi32(_mm512_max_epi32(q, lov), hi);
        if (k == 0xffff)
            _mm_storeu_si128((__m128i *)(row + x), _mm512_cvtepi32_epi8(q));
        else
            _mm512_mask_cvtepi32_storeu_epi8(row + x, k, q);
    }
}

/* 32 positions of one kernel: per 128-bit lane j, lo holds positions 8j..8j+3, hi 8j+4..8j+7. */
__attribute__((target("avx512f,avx512bw"))) static inline void etna_dot_store_avx512(int32_t *o, __m512i lo,
                                                                                     __m512i hi)
{
    const __m512i first = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
    const __m512i second = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
    _mm512_storeu_si512((void *)o, _mm512_permutex2var_epi64(lo, first, hi));
    _mm512_storeu_si512((void *)(o + 16), _mm512_permutex2var_epi64(lo, second, hi));
}

/* ETNA_DOT_KB kernels x 32 positions (8 accumulators), or one kernel x 64 positions (4); MADD_ADD(a, (x, w)) adds
 * the pair sums of x * w to a: vpmaddwd + vpaddd, or one vpdpwssd with AVX512-VNNI (the same wrapping int32 sum). */
#define ETNA_DOT_MAC_AVX512(NAME, TARGET, MADD_ADD) \
__attribute__((target(TARGET))) static void NAME(unsigned kb, const int16_t *pad, const int64_t *off, const int16_t *w,    \
    uint64_t npairs, const int32_t *bias, int64_t run, int32_t *acc, int64_t astride)                                 \
{                                                                                                                     \
    if (kb == 1) {                                                                                                    \
        const __m512i b = _mm512_set1_epi32(bias[0]);                                                                 \
        int64_t i = 0;                                                                                                \
        for (; i + 32 < run; i += 64) {                                                                               \
            __m512i a0 = b, a1 = b, a2 = b, a3 = b;                                                                   \
            for (uint64_t p = 0; p < npairs; p++) {                                                                   \
                const int16_t *s0 = pad + off[2 * p] + i, *s1 = pad + off[2 * p + 1] + i;                             \
                const __m512i wv = _mm512_set1_epi32(etna_dot_w32(w + 2 * p));                                        \
                const __m512i x0 = _mm512_loadu_si512((const void *)s0), y0 = _mm512_loadu_si512((const void *)s1);   \
                const __m512i x1 = _mm512_loadu_si512((const void *)(s0 + 32));                                       \
                const __m512i y1 = _mm512_loadu_si512((const void *)(s1 + 32));                                       \
                a0 = MADD_ADD(a0, (_mm512_unpacklo_epi16(x0, y0), wv));                                               \
                a1 = MADD_ADD(a1, (_mm512_unpackhi_epi16(x0, y0), wv));                                               \
                a2 = MADD_ADD(a2, (_mm512_unpacklo_epi16(x1, y1), wv));                                               \
                a3 = MADD_ADD(a3, (_mm512_unpackhi_epi16(x1, y1), wv));                                               \
            }                                                                                                         \
            etna_dot_store_avx512(acc + i, a0, a1);                                                                   \
            etna_dot_store_avx512(acc + i + 32, a2, a3);                                                              \
        }                                                                                                             \
        if (i < run) { /* the last 32 (the run is rounded up to ETNA_DOT_PX, not to 64) */                            \
            __m512i a0 = b, a1 = b;                                                                                   \
            for (uint64_t p = 0; p < npairs; p++) {                                                                   \
                const __m512i wv = _mm512_set1_epi32(etna_dot_w32(w + 2 * p));                                        \
                const __m512i x0 = _mm512_loadu_si512((const void *)(pad + off[2 * p] + i));                          \
                const __m512i y0 = _mm512_loadu_si512((const void *)(pad + off[2 * p + 1] + i));                      \
                a0 = MADD_ADD(a0, (_mm512_unpacklo_epi16(x0, y0), wv));                                               \
                a1 = MADD_ADD(a1, (_mm512_unpackhi_epi16(x0, y0), wv));                                               \
            }                                                                                                         \
            etna_dot_store_avx512(acc + i, a0, a1);                                                                   \
        }                                                                                                             \
        return;                                                                                                       \
    }                                                                                                                 \
    for (int64_t i = 0; i < run; i += 32) {                                                                           \
        __m512i a[ETNA_DOT_KB][2];                                                                                    \
        for (unsigned k = 0; k < ETNA_DOT_KB; k++)                                                                    \
            a[k][0] = a[k][1] = _mm512_set1_epi32(bias[k]);                                                           \
        for (uint64_t p = 0; p < npairs; p++) {                                                                       \
            const __m512i x = _mm512_loadu_si512((const void *)(pad + off[2 * p] + i));                               \
            const __m512i y = _mm512_loadu_si512((const void *)(pad + off[2 * p + 1] + i));                           \
            const __m512i lo = _mm512_unpacklo_epi16(x, y), hi = _mm512_unpackhi_epi16(x, y);                         \
            const int16_t *wp = w + 2 * p * ETNA_DOT_KB;                                                              \
            for (unsigned k = 0; k < ETNA_DOT_KB; k++) {                                                              \
                const __m512i wv = _mm512_set1_epi32(etna_dot_w32(wp + 2 * k));                                       \
                a[k][0] = MADD_ADD(a[k][0], (lo, wv));                                                                \
                a[k][1] = MADD_ADD(a[k][1], (hi, wv));                                                                \
            }                                                                                                         \
        }                                                                                                             \
        for (unsigned k = 0; k < ETNA_DOT_KB; k++)                                                                    \
            etna_dot_store_avx512(acc + k * astride + i, a[k][0], a[k][1]);                                           \
    }                                                                                                                 \
}
#define ETNA_DOT_MADD_ADD512(a, xw) _mm512_add_epi32(a, _mm512_madd_epi16 xw)
#define ETNA_DOT_DPWSSD512(a, xw) _mm512_dpwssd_epi32(a, ETNA_DOT_ARGS2 xw)
#define ETNA_DOT_ARGS2(x, w) x, w
ETNA_DOT_MAC_AVX512(etna_dot_mac_avx512, "avx512f,avx512bw", ETNA_DOT_MADD_ADD512)
ETNA_DOT_MAC_AVX512(etna_dot_mac_avx512vnni, "avx512f,avx512bw,avx512vnni", ETNA_DOT_DPWSSD512)
#endif

#if ETNA_DOT_ARM
/* ETNA_DOT_KB kernels x 8 positions (8 accumulators), or one kernel x 16 positions (4): each pair's two runs
 * multiplied by the block's weights as lanes of one vector (smlal by lane, exact int16 x int16 -> int32). */
#define ETNA_DOT_NEON_MLA(a, x, y, wv, l) vmlal_laneq_s16(vmlal_laneq_s16(a, x, wv, l), y, wv, (l) + 1)
static void etna_dot_mac_neon(unsigned kb, const int16_t *pad, const int64_t *off, const int16_t *w,
                              uint64_t npairs, const int32_t *bias, int64_t run, int32_t *acc, int64_t astride)
{
    if (kb == 1) {
        for (int64_t i = 0; i < run; i += 16) {
            int32x4_t a0 = vdupq_n_s32(bias[0]), a1 = a0, a2 = a0, a3 = a0;
            for (uint64_t p = 0; p < npairs; p++) {
                const int16_t *s0 = pad + off[2 * p] + i, *s1 = pad + off[2 * p + 1] + i;
                int32_t pair;
                memcpy(&pair, w + 2 * p, sizeof(pair));
                const int16x8_t wv = vcombine_s16(vreinterpret_s16_s32(vdup_n_s32(pair)), vdup_n_s16(0));
                const int16x8_t x0 = vld1q_s16(s0), y0 = vld1q_s16(s1), x1 = vld1q_s16(s0 + 8), y1 = vld1q_s16(s1 + 8);
                a0 = ETNA_DOT_NEON_MLA(a0, vget_low_s16(x0), vget_low_s16(y0), wv, 0);
                a1 = ETNA_DOT_NEON_MLA(a1, vget_high_s16(x0), vget_high_s16(y0), wv, 0);
                a2 = ETNA_DOT_NEON_MLA(a2, vget_low_s16(x1), vget_low_s16(y1), wv, 0);
                a3 = ETNA_DOT_NEON_MLA(a3, vget_high_s16(x1), vget_high_s16(y1), wv, 0);
            }
            vst1q_s32(acc + i, a0);
            vst1q_s32(acc + i + 4, a1);
            vst1q_s32(acc + i + 8, a2);
            vst1q_s32(acc + i + 12, a3);
        }
        return;
    }
    for (int64_t i = 0; i < run; i += 8) {
        int32x4_t a[ETNA_DOT_KB][2];
        for (unsigned k = 0; k < ETNA_DOT_KB; k++)
            a[k][0] = a[k][1] = vdupq_n_s32(bias[k]);
        for (uint64_t p = 0; p < npairs; p++) {
            const int16x8_t x = vld1q_s16(pad + off[2 * p] + i), y = vld1q_s16(pad + off[2 * p + 1] + i);
            const int16x4_t xl = vget_low_s16(x), xh = vget_high_s16(x), yl = vget_low_s16(y), yh = vget_high_s16(y);
            const int16x8_t wv = vld1q_s16(w + 2 * p * ETNA_DOT_KB); /* k0 w0 w1, k1 w0 w1, ... */
            a[0][0] = ETNA_DOT_NEON_MLA(a[0][0], xl, yl, wv, 0);
            a[0][1] = ETNA_DOT_NEON_MLA(a[0][1], xh, yh, wv, 0);
            a[1][0] = ETNA_DOT_NEON_MLA(a[1][0], xl, yl, wv, 2);
            a[1][1] = ETNA_DOT_NEON_MLA(a[1][1], xh, yh, wv, 2);
            a[2][0] = ETNA_DOT_NEON_MLA(a[2][0], xl, yl, wv, 4);
            a[2][1] = ETNA_DOT_NEON_MLA(a[2][1], xh, yh, wv, 4);
            a[3][0] = ETNA_DOT_NEON_MLA(a[3][0], xl, yl, wv, 6);
            a[3][1] = ETNA_DOT_NEON_MLA(a[3][1], xh, yh, wv, 6);
        }
        for (unsigned k = 0; k < ETNA_DOT_KB; k++) {
            vst1q_s32(acc + k * astride + i, a[k][0]);
            vst1q_s32(acc + k * astride + i + 4, a[k][1]);
        }
    }
}
#endif

static const struct etna_dot_ops etna_dot_c = { "c", etna_dot_mac_c, etna_dot_requant_c };
#if ETNA_DOT_ARM
static const struct etna_dot_ops etna_dot_neon = { "neon", etna_dot_mac_neon, etna_dot_requant_c };
#endif
#if ETNA_DOT_X86
static const struct etna_dot_ops etna_dot_avx2 = { "avx2", etna_dot_mac_avx2, etna_dot_requant_avx2 };
static const struct etna_dot_ops etna_dot_avx512 = { "avx512", etna_dot_mac_avx512, etna_dot_requant_avx512 };
static const struct etna_dot_ops etna_dot_avx512vnni = { "avx512vnni", etna_dot_mac_avx512vnni,
                                                          etna_dot_requant_avx512 };
#endif

static int etna_dot_runs(const struct etna_dot_ops *ops)
{
#if ETNA_DOT_X86
    if (ops == &etna_dot_avx512vnni)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
    if (ops == &etna_dot_avx512)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl");
    if (ops == &etna_dot_avx2)
        return __builtin_cpu_supports("avx2");
#endif
    (void)ops;
    return 1;
}

const struct etna_dot_ops *etna_dot_select(const char *force)
{
    static const struct etna_dot_ops *const all[] = {
#if ETNA_DOT_X86
        &etna_dot_avx512vnni, &etna_dot_avx512, &etna_dot_avx2,
#endif
#if ETNA_DOT_ARM
        &etna_dot_neon,
#endif
        &etna_dot_c,
    };
    const size_t n = sizeof(all) / sizeof(all[0]);
#if ETNA_DOT_X86
    __builtin_cpu_init();
#endif
    for (size_t i = 0; force && *force && i < n; i++)
        if (strcmp(force, all[i]->name) == 0 && etna_dot_runs(all[i]))
            return all[i];
    for (size_t i = 0; i < n; i++)
        if (etna_dot_runs(all[i]))
            return all[i];
    return &etna_dot_c;
}
