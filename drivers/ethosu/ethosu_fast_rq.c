/* The fast datapath's requantization (ethosu_fast.h, ethosu_fast_rq_fn): portable C, AVX2 and AVX-512 (x86 with
 * GCC or clang: each function enables its own instruction set). The etnaviv requantization kernels of
 * etna_sim_dot.c do not fit: they round once (etna_round_shift) to uint8, while the Ethos-U's TFL mode rounds
 * twice (TFLite's MultiplyByQuantizedMultiplier) and stores int8, uint8 or int16. All sets compute the bytes of
 * ethosu_npu_scale + ethosu_npu_out_finish (tests/ethos_u/test_sim_fast.py). */
#include <string.h>

#include "ethosu_fast.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define ETHOSU_RQ_X86 1
#include <immintrin.h>
#endif

/* One element: ethosu_npu_scale_tfl64 capped (ethosu_fast.h), plus the zero point, clamped. */
static inline int32_t ethosu_fast_rq_one(int32_t v, uint32_t mult, unsigned right, int32_t zp, int32_t lo, int32_t hi)
{
    int64_t q = ethosu_npu_scale_tfl64(v, mult, right);
    q = q > ETHOSU_FAST_RQ_CAP ? ETHOSU_FAST_RQ_CAP : q < -ETHOSU_FAST_RQ_CAP ? -ETHOSU_FAST_RQ_CAP : q;
    const int32_t r = (int32_t)q + zp;
    return r < lo ? lo : r > hi ? hi : r;
}

void ethosu_fast_rq_c(const int32_t *acc, int64_t n, uint32_t mult, unsigned right, int32_t zp, int32_t lo,
                      int32_t hi, int32_t *res)
{
    for (int64_t x = 0; x < n; x++)
        res[x] = ethosu_fast_rq_one(acc[x], mult, right, zp, lo, hi);
}

#if ETHOSU_RQ_X86
/* 8 elements: the even and the odd int32 lanes as 64-bit magnitudes. */
__attribute__((target("avx2"))) static void ethosu_fast_rq_avx2(const int32_t *acc, int64_t n, uint32_t mult,
                                                                unsigned right, int32_t zp, int32_t lo, int32_t hi,
                                                                int32_t *res)
{
    const uint64_t half = right ? (uint64_t)1 << (right - 1) : 0;
    const __m256i m = _mm256_set1_epi64x((int64_t)mult), nudge = _mm256_set1_epi64x((int64_t)1 << 30);
    const __m256i hv = _mm256_set1_epi64x((int64_t)half), cap = _mm256_set1_epi64x(ETHOSU_FAST_RQ_CAP);
    const __m256i one = _mm256_set1_epi64x(1), zpv = _mm256_set1_epi32(zp);
    const __m256i lov = _mm256_set1_epi32(lo), hiv = _mm256_set1_epi32(hi);
    const __m128i sh = _mm_cvtsi32_si128((int)right);
    int64_t x = 0;
    for (; x + 8 <= n; x += 8) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(acc + x));
        const __m256i negm = _mm256_srai_epi32(v, 31), mag = _mm256_abs_epi32(v);
        const __m256i ne = _mm256_and_si256(negm, one), no = _mm256_and_si256(_mm256_srli_epi64(negm, 32), one);
        __m256i qe = _mm256_mul_epu32(mag, m), qo = _mm256_mul_epu32(_mm256_srli_epi64(mag, 32), m);
        qe = _mm256_srli_epi64(_mm256_sub_epi64(_mm256_add_epi64(qe, nudge), ne), 31);
        qo = _mm256_srli_epi64(_mm256_sub_epi64(_mm256_add_epi64(qo, nudge), no), 31);
        qe = _mm256_srl_epi64(_mm256_add_epi64(qe, hv), sh);
        qo = _mm256_srl_epi64(_mm256_add_epi64(qo, hv), sh);
        qe = _mm256_blendv_epi8(qe, cap, _mm256_cmpgt_epi64(qe, cap));
        qo = _mm256_blendv_epi8(qo, cap, _mm256_cmpgt_epi64(qo, cap));
        __m256i q = _mm256_or_si256(qe, _mm256_slli_epi64(qo, 32));
        q = _mm256_add_epi32(_mm256_sub_epi32(_mm256_xor_si256(q, negm), negm), zpv);
        q = _mm256_min_epi32(_mm256_max_epi32(q, lov), hiv);
        _mm256_storeu_si256((__m256i *)(res + x), q);
    }
    ethosu_fast_rq_c(acc + x, n - x, mult, right, zp, lo, hi, res + x);
}

/* 16 elements, the last n mod 16 under a mask. */
__attribute__((target("avx512f"))) static void ethosu_fast_rq_avx512(const int32_t *acc, int64_t n, uint32_t mult,
                                                                     unsigned right, int32_t zp, int32_t lo,
                                                                     int32_t hi, int32_t *res)
{
    const uint64_t half = right ? (uint64_t)1 << (right - 1) : 0;
    const __m512i m = _mm512_set1_epi64((int64_t)mult), nudge = _mm512_set1_epi64((int64_t)1 << 30);
    const __m512i hv = _mm512_set1_epi64((int64_t)half), cap = _mm512_set1_epi64(ETHOSU_FAST_RQ_CAP);
    const __m512i one = _mm512_set1_epi64(1), zpv = _mm512_set1_epi32(zp);
    const __m512i lov = _mm512_set1_epi32(lo), hiv = _mm512_set1_epi32(hi);
    const __m128i sh = _mm_cvtsi32_si128((int)right);
    for (int64_t x = 0; x < n; x += 16) {
        const int64_t left = n - x;
        const __mmask16 k = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
        const __m512i v = _mm512_maskz_loadu_epi32(k, acc + x);
        const __m512i negm = _mm512_srai_epi32(v, 31), mag = _mm512_abs_epi32(v);
        const __m512i ne = _mm512_and_si512(negm, one), no = _mm512_and_si512(_mm512_srli_epi64(negm, 32), one);
        __m512i qe = _mm512_mul_epu32(mag, m), qo = _mm512_mul_epu32(_mm512_srli_epi64(mag, 32), m);
        qe = _mm512_srli_epi64(_mm512_sub_epi64(_mm512_add_epi64(qe, nudge), ne), 31);
        qo = _mm512_srli_epi64(_mm512_sub_epi64(_mm512_add_epi64(qo, nudge), no), 31);
        qe = _mm512_min_epu64(_mm512_srl_epi64(_mm512_add_epi64(qe, hv), sh), cap);
        qo = _mm512_min_epu64(_mm512_srl_epi64(_mm512_add_epi64(qo, hv), sh), cap);
        __m512i q = _mm512_or_si512(qe, _mm512_slli_epi64(qo, 32));
        q = _mm512_add_epi32(_mm512_sub_epi32(_mm512_xor_si512(q, negm), negm), zpv);
        q = _mm512_min_epi32(_mm512_max_epi32(q, lov), hiv);
        _mm512_mask_storeu_epi32(res + x, k, q);
    }
}
#endif

ethosu_fast_rq_fn *ethosu_fast_rq_select(const char *name)
{
#if ETHOSU_RQ_X86
    if (strcmp(name, "avx512vnni") == 0 || strcmp(name, "avx512") == 0)
        return ethosu_fast_rq_avx512;
    if (strcmp(name, "avx2") == 0)
        return ethosu_fast_rq_avx2;
#endif
    (void)name; /* neon: the portable loop, which the compiler vectorizes */
    return ethosu_fast_rq_c;
}
