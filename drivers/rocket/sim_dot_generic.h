/* The portable kernels of sim_dot.h, written for the vectorizer: compiled once per instruction set
 * (sim_dot_c.c for the baseline, sim_dot_avx2.c with AVX2) as static functions named with RKT_DOT_SFX. A unit
 * with its own direct kernel or requantization defines RKT_DOT_OWN_DIRECT / RKT_DOT_OWN_REQUANT (its
 * requantization may still call the portable one, requant_generic<sfx>). */
#include <string.h>

#include "sim_dot.h"

#define RKT_DOT_CAT2(a, b) a##b
#define RKT_DOT_CAT(a, b) RKT_DOT_CAT2(a, b)
#define RKT_DOT_FN(name) RKT_DOT_CAT(name, RKT_DOT_SFX)

#ifndef RKT_DOT_OWN_DIRECT
static void RKT_DOT_FN(direct_)(const uint8_t *x, size_t xstep, size_t xrow, const int8_t *wb, int kh, int kw,
                                int ic, int icl, int32_t *acc, size_t astride, int npix, int nk)
{
    (void)npix, (void)nk; /* the whole block */
    int32_t a[RKT_DOT_P][RKT_DOT_KB];
    memset(a, 0, sizeof(a));
    for (int ky = 0; ky < kh; ky++)
        for (int kx = 0; kx < kw; kx++) {
            const uint8_t *xp = x + (size_t)ky * xrow + (size_t)kx * ic;
            const int8_t *w = wb + ((size_t)ky * kw + kx) * ic * RKT_DOT_KB;
            for (int c = 0; c < icl; c += 4, w += 4 * RKT_DOT_KB)
                for (int p = 0; p < RKT_DOT_P; p++) {
                    const uint8_t *xq = xp + (size_t)p * xstep + c;
                    const int32_t x0 = xq[0], x1 = xq[1], x2 = xq[2], x3 = xq[3];
                    for (int k = 0; k < RKT_DOT_KB; k++)
                        a[p][k] += x0 * w[4 * k] + x1 * w[4 * k + 1] + x2 * w[4 * k + 2] + x3 * w[4 * k + 3];
                }
        }
    for (int p = 0; p < RKT_DOT_P; p++)
        memcpy(acc + (size_t)p * astride, a[p], sizeof(a[p]));
}
#endif

static void RKT_DOT_FN(depthwise_)(const uint8_t *x, size_t xstep, size_t xrow, const int16_t *w, int kh, int kw,
                                   int ic, int npix, int32_t *acc)
{
    for (int p = 0; p < npix; p++) {
        int32_t *restrict a = acc + (size_t)p * ic;
        memset(a, 0, (size_t)ic * sizeof(*a));
        for (int ky = 0; ky < kh; ky++)
            for (int kx = 0; kx < kw; kx++) {
                const uint8_t *restrict xp = x + (size_t)ky * xrow + (size_t)p * xstep + (size_t)kx * ic;
                const int16_t *restrict wp = w + ((size_t)ky * kw + kx) * ic;
                for (int c = 0; c < ic; c++)
                    a[c] += (int32_t)xp[c] * wp[c];
            }
    }
}

#ifdef RKT_DOT_OWN_REQUANT
#define RKT_DOT_REQUANT_NAME RKT_DOT_FN(requant_generic_)
#else
#define RKT_DOT_REQUANT_NAME RKT_DOT_FN(requant_)
#endif
static void RKT_DOT_REQUANT_NAME(const struct rkt_requant *q, const int32_t *acc, size_t astride, const int32_t *s,
                                 int npix, int nsurf, uint8_t *const *dst)
{
    const int has_mul = q->mul != NULL;
    for (int p = 0; p < npix; p++) {
        const int32_t *a = acc + (size_t)p * astride;
        const int64_t sum = s ? s[p] : 0;
        for (int sf = 0; sf < nsurf; sf++) {
            int8_t o[16];
            for (int j = 0; j < 16; j++) {
                const int k = sf * 16 + j;
                o[j] = k >= q->n ? 0
                     : rkt_requantize(q->trunc, q->tround, q->bias[k], has_mul, has_mul ? q->mul[k] : 0,
                                      q->mul_shift_pos, q->mul_shift_neg, q->lo, q->hi, q->scale, q->pre, q->shift,
                                      q->post, a[k] + q->corr[k] + q->ow[k] * sum, rkt_ew_term(q, p, k), q->ew_mul,
                                      q->ew_trunc, q->lut);
            }
            memcpy(dst[sf] + (size_t)p * 16, o, 16);
        }
    }
}

static void RKT_DOT_FN(pixsum_)(const uint8_t *x, int ic, size_t npix, int32_t *sum)
{
    for (size_t i = 0; i < npix; i++) {
        const uint8_t *px = x + i * (size_t)ic;
        int32_t v = 0;
        for (int ch = 0; ch < ic; ch++)
            v += px[ch];
        sum[i] = v;
    }
}

static void RKT_DOT_FN(pack_)(const int8_t *src, int nk, int wi, int8_t *dst, int32_t *wsum)
{
    for (int k = 0; k < nk; k++, src += wi) {
        int32_t sum = 0;
        for (int i = 0; i < wi; i++)
            sum += src[i];
        wsum[k] += sum;
        for (int i = 0; i < wi; i += 4)
            memcpy(dst + (size_t)i * RKT_DOT_KB + 4 * k, src + i, 4);
    }
}
