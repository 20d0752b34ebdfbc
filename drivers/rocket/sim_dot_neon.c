/* The kernels of sim_dot.h with the Armv8.2 dot product instructions (SDOT; only called when the CPU has them,
 * rkt_dot_select): its own direct kernel; depthwise, weight pack, window sums and requantization are the portable
 * kernels (sim_dot_generic.h) compiled for it. */
#include "sim_dot.h"
#if RKT_DOT_ARM
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("dotprod"))), apply_to = function)
#else
#pragma GCC target("arch=armv8.2-a+dotprod")
#endif
#include <arm_neon.h>
#include <string.h>

#define RKT_DOT_SFX neondot
#define RKT_DOT_OWN_DIRECT
#include "sim_dot_generic.h"

/* SDOT multiplies signed bytes: a pixel's channel quad of x + 128 (uint8) goes in as (x + 128) ^ 0x80 = x (int8),
 * and the 128 x w the products then miss is added back from each kernel's weight sum (SDOT of the weights against
 * ones). Each 32-bit lane of a weight vector is one kernel's quad, so one SDOT with the pixel's quad in every lane
 * adds 4 kernels' quad products. 4 pixels x 16 kernels at a time: 16 accumulators. */
static void direct_neondot(const uint8_t *x, size_t xstep, size_t xrow, const int8_t *wb, int kh, int kw, int ic,
                           int icl, int32_t *acc, size_t astride, int npix, int nk)
{
    (void)npix, (void)nk; /* the whole block */
    const int8x16_t ones = vdupq_n_s8(1);
    for (int p = 0; p < RKT_DOT_P; p += 4)
        for (int h = 0; h < RKT_DOT_KB / 16; h++) {
            int32x4_t a[4][4], ws[4];
            for (int j = 0; j < 4; j++) {
                ws[j] = vdupq_n_s32(0);
                for (int q = 0; q < 4; q++)
                    a[q][j] = vdupq_n_s32(0);
            }
            for (int ky = 0; ky < kh; ky++)
                for (int kx = 0; kx < kw; kx++) {
                    const uint8_t *xp = x + (size_t)ky * xrow + (size_t)p * xstep + (size_t)kx * ic;
                    const int8_t *w = wb + ((size_t)ky * kw + kx) * ic * RKT_DOT_KB + 64 * h;
                    for (int c = 0; c < icl; c += 4, w += 4 * RKT_DOT_KB) {
                        int8x16_t wj[4];
                        for (int j = 0; j < 4; j++) {
                            wj[j] = vld1q_s8(w + 16 * j);
                            ws[j] = vdotq_s32(ws[j], wj[j], ones);
                        }
                        for (int q = 0; q < 4; q++) {
                            uint32_t v;
                            memcpy(&v, xp + (size_t)q * xstep + c, 4);
                            const int8x16_t xq = vreinterpretq_s8_u32(vdupq_n_u32(v ^ 0x80808080u));
                            for (int j = 0; j < 4; j++)
                                a[q][j] = vdotq_s32(a[q][j], wj[j], xq);
                        }
                    }
                }
            for (int q = 0; q < 4; q++)
                for (int j = 0; j < 4; j++)
                    vst1q_s32(acc + (size_t)(p + q) * astride + 16 * h + 4 * j, vaddq_s32(a[q][j], vshlq_n_s32(ws[j], 7)));
        }
}

const struct rkt_dot_ops rkt_dot_neondot = {"neondot", direct_neondot, depthwise_neondot, pack_neondot,
                                            pixsum_neondot, requant_neondot};

#if defined(__clang__)
#pragma clang attribute pop
#endif
#endif
