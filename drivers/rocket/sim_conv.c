/* Simulated CNA -> CORE -> DPU datapath of one rocket task (see sim_conv.h).
 *
 * Speed: the task's input window is expanded once into a padded int16 pixel-major copy and the
 * weights into int16 [kernel][ky][kx][channel] (the "CBUF"), so every MAC loop is a dot product
 * over KW*IC contiguous elements. The inner loops run over fixed blocks of 16 elements so gcc
 * vectorizes them at -O2 (pmaddwd-style int16 dot products) without remainder loops.
 */
#define _GNU_SOURCE
#include "sim_conv.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../errmsg.h"
#include "sim_dot.h"

#define BLK 16      /* elements per vectorized block; IC is always a multiple of 16 */
#define KBLK 4      /* kernels computed together (register blocking) */
#define DW_TILE 8   /* depthwise output pixels whose accumulators stay in L1 */

/* The fast datapath's CBUF contents and scratch (layouts in sim_dot.h). */
struct rkt_fast {
    int direct_loaded;   /* the direct weights are in `w` (else in the reference form: the task runs there) */
    int8_t *w;           /* direct: blocks of RKT_DOT_KB kernels */
    size_t wcap;
    int32_t *wsum;       /* direct: sum of each kernel's weights */
    size_t wsumcap;
    int32_t *wsum_live;  /* the same over the channels a task reads (ic_real < ic) */
    size_t wsum_livecap;
    int16_t *dw;         /* depthwise: weights + OW factor */
    size_t dwcap;
    uint8_t *x;          /* input window, x + 128 */
    size_t xcap;
    int32_t *psum;       /* per input pixel: sum of x + 128 over the channels */
    size_t pcap;
    int32_t *acc;        /* one output row of accumulators, then its window sums */
    size_t acccap;
    int64_t *corr;       /* per-channel tables of struct rkt_requant */
    size_t corrcap;
    int32_t *tab;
    size_t tabcap;
    uint8_t **dst;       /* per output surface: the current row */
    size_t dstcap;
    size_t *surf_off;    /* per output surface: its offset from DST */
    size_t surf_offcap;
};

struct rkt_conv {
    /* the fast datapath's kernels, or NULL: the reference datapath only */
    const struct rkt_dot_ops *ops;
    struct rkt_fast fast;

    /* the simulated CBUF weight contents */
    struct rkt_conv_geom wg;
    int wloaded;
    int16_t *w;          /* direct: [kpad][kh][kw*ic]; depthwise: [kh][kw][ic] */
    size_t wcap;
    int kpad;            /* kernels rounded up to KBLK (extra kernels are zero) */
    /* weights with the OW factor folded in: sum x*w + ow*sum x == sum x*(w + ow), exactly; wf_ow
     * holds the factor folded into each kernel (direct) or channel (depthwise) */
    int16_t *wf;
    size_t wfcap;
    int16_t *wf_ow;
    size_t wf_owcap;
    int wf_valid;
    int wf_int16_safe;   /* every |folded weight| <= 255: depthwise int16 products x * w cannot overflow */

    /* task input, padded: [rows_p][cols_p][ic] */
    int16_t *x;
    size_t xcap;
    int32_t *psum;       /* direct: per padded pixel, sum over channels */
    size_t pcap;
    int16_t *padpix;     /* one padded pixel: pad value in real channels, 0 beyond */
    size_t padcap;
};

static int grow(void **p, size_t *cap, size_t bytes)
{
    if (*cap >= bytes)
        return 0;
    void *n = realloc(*p, bytes);
    if (!n)
        return -ENOMEM;
    *p = n;
    *cap = bytes;
    return 0;
}

rkt_conv *rkt_conv_create(const struct rkt_dot_ops *ops)
{
    rkt_conv *c = calloc(1, sizeof(rkt_conv));
    if (c)
        c->ops = ops;
    return c;
}

void rkt_conv_destroy(rkt_conv *c)
{
    if (!c)
        return;
    free(c->w);
    free(c->wf);
    free(c->wf_ow);
    free(c->x);
    free(c->psum);
    free(c->padpix);
    struct rkt_fast *f = &c->fast;
    free(f->w);
    free(f->wsum);
    free(f->wsum_live);
    free(f->dw);
    free(f->x);
    free(f->psum);
    free(f->acc);
    free(f->corr);
    free(f->tab);
    free(f->dst);
    free(f->surf_off);
    free(c);
}

/* Direct weights from the hardware layout (rkt_conv_load_weights) into blocks of RKT_DOT_KB kernels,
 * [ky][kx][channel / 4][kernel][channel % 4], kernels past the last zero, and each kernel's weight sum. */
static int fast_load_direct(rkt_conv *c, const struct rkt_conv_geom *g, const int8_t *src)
{
    struct rkt_fast *f = &c->fast;
    const int ic = g->ic, kw = g->kw, kh = g->kh, k = g->kernels;
    const int kpad = (k + RKT_DOT_KB - 1) / RKT_DOT_KB * RKT_DOT_KB;
    const size_t blk = (size_t)kh * kw * ic * RKT_DOT_KB;
    if (grow((void **)&f->w, &f->wcap, blk * (size_t)(kpad / RKT_DOT_KB)) ||
        grow((void **)&f->wsum, &f->wsumcap, (size_t)kpad * sizeof(int32_t)))
        return -ENOMEM;
    memset(f->wsum, 0, (size_t)kpad * sizeof(int32_t));
    if (kpad > k)
        memset(f->w + blk * (size_t)(k / RKT_DOT_KB), 0, blk);
    size_t pos = 0;
    for (int og = 0; og < k; og += 32) {
        const int nk = k - og < 32 ? k - og : 32;
        int8_t *b = f->w + blk * (size_t)(og / RKT_DOT_KB);
        for (int ig = 0; ig < ic; ig += 32) {
            const int wi = ic - ig < 32 ? ic - ig : 32;
            for (int tap = 0; tap < kh * kw; tap++) {
                int8_t *d = b + ((size_t)tap * ic + ig) * RKT_DOT_KB;
                c->ops->pack(src + pos, nk, wi, d, f->wsum + og);
                pos += (size_t)nk * wi;
            }
        }
    }
    return 0;
}

int rkt_conv_load_weights(rkt_conv *c, const struct rkt_conv_geom *g, const int8_t *src,
                          char *err, size_t errlen)
{
    const int ic = g->ic, kw = g->kw, kh = g->kh;
    size_t pos = 0;

    c->wloaded = 0;
    c->fast.direct_loaded = 0;
    /* the fast direct path, while its int32 sums of (x + 128) x w cannot overflow */
    if (c->ops && !g->depthwise && (uint64_t)g->kw * g->kh * g->ic * 255 * 128 <= INT32_MAX) {
        if (fast_load_direct(c, g, src))
            goto oom;
        c->fast.direct_loaded = 1;
    } else if (g->depthwise) {
        size_t n = (size_t)kh * kw * ic;
        if (grow((void **)&c->w, &c->wcap, n * sizeof(int16_t)))
            goto oom;
        /* channel groups of 64, tap-major inside a group */
        for (int cg = 0; cg < ic; cg += 64) {
            int wi = ic - cg < 64 ? ic - cg : 64;
            for (int ky = 0; ky < kh; ky++)
                for (int kx = 0; kx < kw; kx++) {
                    int16_t *d = c->w + ((size_t)ky * kw + kx) * ic + cg;
                    const int8_t *blk = src + pos;
                    /* RK3576: two bytes per channel, both live and added, channel i's at 4 (i / 2) + i % 2
                     * and two further on (a third party's one-byte-at-a-time hardware map; wi is a multiple
                     * of 16 there) */
                    for (int i = 0; i < wi; i++) {
                        const size_t b = 4 * (size_t)(i / 2) + (size_t)(i % 2);
                        d[i] = g->dw_byte_pairs ? (int16_t)(blk[b] + blk[b + 2]) : blk[i];
                    }
                    pos += (size_t)wi * (g->dw_byte_pairs ? 2 : 1);
                }
        }
        c->kpad = 1;
    } else {
        const int k = g->kernels;
        const int kpad = (k + KBLK - 1) / KBLK * KBLK;
        const size_t L = (size_t)kw * ic;
        size_t n = (size_t)kpad * kh * L;
        if (grow((void **)&c->w, &c->wcap, n * sizeof(int16_t)))
            goto oom;
        if (kpad > k)
            memset(c->w + (size_t)k * kh * L, 0, (size_t)(kpad - k) * kh * L * sizeof(int16_t));
        /* kernel groups of 32, input-channel groups of 32 (a trailing group of 16 stays 16
         * wide), then taps row-major, then kernel, then channel */
        for (int og = 0; og < k; og += 32) {
            int nk = k - og < 32 ? k - og : 32;
            for (int ig = 0; ig < ic; ig += 32) {
                int wi = ic - ig < 32 ? ic - ig : 32;
                for (int ky = 0; ky < kh; ky++)
                    for (int kx = 0; kx < kw; kx++)
                        for (int k2 = 0; k2 < nk; k2++) {
                            int16_t *d = c->w + ((size_t)(og + k2) * kh + ky) * L + (size_t)kx * ic + ig;
                            const int8_t *s = src + pos;
                            for (int i = 0; i < wi; i++)
                                d[i] = s[i];
                            pos += wi;
                        }
            }
        }
        c->kpad = kpad;
    }
    c->wg = *g;
    c->wloaded = 1;
    c->wf_valid = 0;
    return 0;
oom:
    teflon_errf(err, errlen, "simulator out of memory for the CBUF weights");
    return -ENOMEM;
}

static inline int8_t sat8(int64_t v)
{
    return (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
}

/* The stored pad value of channel ch's padded taps: on the depthwise path the odd channels among the first 32
 * of each 64-channel group take pad_value_lane1 (docs/hardware/rocket.md §7, "PAD_CON1 per byte lane"). */
static int rkt_channel_pad(const struct rkt_conv_task *t, int ch)
{
    return t->g.depthwise && (ch % 64) < 32 && (ch & 1) ? t->pad_value_lane1 : t->pad_value;
}

/* CNA: fetch the task input (plus padding) into c->x as int16 [rows_p][cols_p][ic]. */
static void build_input(rkt_conv *c, const struct rkt_conv_task *t, int rows_p, int cols_p)
{
    const int ic = t->g.ic, icr = t->ic_real;
    const size_t pix = (size_t)ic;
    int16_t *padvec = c->padpix;

    for (int ch = 0; ch < ic; ch++)
        padvec[ch] = ch < icr ? (int16_t)rkt_channel_pad(t, ch) : 0;

    for (int rp = 0; rp < rows_p; rp++) {
        const int r = rp - t->pad_top;
        int16_t *drow = c->x + (size_t)rp * cols_p * pix;
        const int inside_row = r >= 0 && r < t->in_h;
        for (int cp = 0; cp < cols_p; cp++) {
            const int xx = cp - t->pad_left;
            int16_t *d = drow + (size_t)cp * pix;
            if (!inside_row || xx < 0 || xx >= t->in_w) {
                memcpy(d, padvec, pix * sizeof(int16_t));
                continue;
            }
            if (t->argb) {
                if (xx >= t->dma_w) {
                    memcpy(d, padvec, pix * sizeof(int16_t));
                    continue;
                }
                const int64_t u = t->in[(size_t)r * t->in_row_pitch + (size_t)xx];
                int64_t v = (u + t->cvt_offset) * t->cvt_scale;
                if (t->cvt_shift > 0)
                    v = (v + ((int64_t)1 << (t->cvt_shift - 1))) >> t->cvt_shift;
                memset(d, 0, pix * sizeof(int16_t));
                d[0] = sat8(v);
                continue;
            }
            const uint8_t *s = t->in + (size_t)r * t->in_row_pitch + (size_t)xx * 16;
            for (int p = 0; p < ic / 16; p++) {
                const int8_t *sp = (const int8_t *)(s + (size_t)p * t->in_plane_pitch);
                for (int j = 0; j < 16; j++)
                    d[p * 16 + j] = sp[j];
            }
            for (int ch = icr; ch < ic; ch++)
                d[ch] = 0;
        }
    }
}

struct worker {
    rkt_conv *c;
    const struct rkt_conv_task *t;
    const int32_t *ow;     /* OW factor per output channel (oc_real) */
    const int16_t *w;      /* CBUF weights, OW factor folded in when `folded` */
    int folded;
    int rows_p, cols_p;
    int oy0, oy1;
    int32_t *acc;          /* direct: out_w x kpad; depthwise: out_w x ic */
    int32_t *sums;         /* direct: out_w; depthwise: out_w x ic */
    int8_t *orow;          /* out_w x ocw output bytes of one row */
};

/* 2 pixels x 4 kernels over L contiguous elements (L multiple of BLK). */
static inline void dot2x4(const int16_t *restrict x0, const int16_t *restrict x1, const int16_t *restrict w0,
                          const int16_t *restrict w1, const int16_t *restrict w2, const int16_t *restrict w3,
                          size_t L, int32_t r[8])
{
    int32_t a00 = 0, a01 = 0, a02 = 0, a03 = 0, a10 = 0, a11 = 0, a12 = 0, a13 = 0;
    for (size_t i = 0; i < L; i += BLK) {
        for (size_t j = i; j < i + BLK; j++) {
            const int32_t p = x0[j], q = x1[j];
            a00 += p * w0[j];
            a01 += p * w1[j];
            a02 += p * w2[j];
            a03 += p * w3[j];
            a10 += q * w0[j];
            a11 += q * w1[j];
            a12 += q * w2[j];
            a13 += q * w3[j];
        }
    }
    r[0] += a00;
    r[1] += a01;
    r[2] += a02;
    r[3] += a03;
    r[4] += a10;
    r[5] += a11;
    r[6] += a12;
    r[7] += a13;
}

/* The per-output constants of post_row (copied to locals: the int8 output stores may alias anything). */
struct post {
    int trunc, shift, mul_shift_pos, mul_shift_neg;
    int64_t tround;  /* CLIP_TRUNCATE rounding */
    int64_t pre;     /* OUT_CVT rounding (ties to even: rkt_requantize), plus OUT_CVT_OFFSET << shift when that fits
                      * (shift <= 31: exact) */
    int64_t post;    /* OUT_CVT_OFFSET when not folded into pre */
    int64_t lo, hi;  /* the DPU clamp after the multiplier (INT32_MIN, INT32_MAX when off) */
    int64_t scale;
    const int32_t *bias;
    const int16_t *mul;
    const struct rkt_lut_stage *lut;
    int ew_mul, ew_trunc; /* the EW multiply hypothesis (0: add) and EW_TRUNCATE */
};

static struct post post_of(const struct rkt_conv_task *t)
{
    struct post p = {.trunc = t->clip_truncate, .shift = t->out_shift, .scale = t->out_scale, .bias = t->bias,
                     .mul = t->bs_mul, .mul_shift_pos = t->bs_shift_pos, .mul_shift_neg = t->bs_shift_neg,
                     .lut = t->lut, .ew_mul = t->ew_mul, .ew_trunc = t->ew_trunc};
    p.tround = p.trunc ? (int64_t)1 << (p.trunc - 1) : 0;
    p.lo = t->clamp ? t->clamp_lo : INT32_MIN;
    p.hi = t->clamp ? t->clamp_hi : INT32_MAX;
    p.pre = p.shift ? ((int64_t)1 << (p.shift - 1)) - 1 : 0;
    if (p.shift <= 31)
        p.pre += (int64_t)t->out_offset * ((int64_t)1 << p.shift);
    else
        p.post = t->out_offset;
    return p;
}

static inline int8_t requantize(const struct post p, int64_t core, int k, int64_t ew)
{
    return rkt_requantize(p.trunc, p.tround, p.bias[k], p.mul != NULL, p.mul ? p.mul[k] : 0, p.mul_shift_pos,
                          p.mul_shift_neg, p.lo, p.hi, p.scale, p.pre, p.shift, p.post, core, ew, p.ew_mul,
                          p.ew_trunc, p.lut);
}

/* DPU EW: the element-wise operand of output (oy, ox, channel k) converted (rkt_ew_convert); 0 without one. */
static inline int64_t ew_term(const struct rkt_conv_task *t, int oy, int ox, int k)
{
    if (!t->ew)
        return 0;
    const int8_t e = (int8_t)t->ew[(size_t)(k / 16) * t->ew_surf_pitch + (size_t)oy * t->ew_row_pitch + (size_t)ox * 16 +
                                   (size_t)(k % 16)];
    return rkt_ew_convert(e, t->ew_offset, t->ew_scale, t->ew_shift, t->ew_tie_up);
}

/* CORE accumulator (MAC sum + OW term) -> requantize, for one output row: orow[ox][k] for k < oc_real, 0 up
 * to the end of the last written surface. The OW term (factor x input window sum) is part of what
 * CLIP_TRUNCATE shifts, and the shift rounds half up [INFERRED from Mesa's -trunc streams:
 * docs/hardware/rocket-sim.md]. With the OW term folded into the weights, the sums are not used. */
static void post_row(const struct worker *wk, int oy, size_t astride, int per_channel_sums, int ocw)
{
    const struct rkt_conv_task *t = wk->t;
    const int n = t->oc_real;
    const struct post p = post_of(t);
    const int32_t *restrict ow = wk->ow;
    for (int ox = 0; ox < t->out_w; ox++) {
        const int32_t *restrict a = wk->acc + (size_t)ox * astride;
        int8_t *restrict o = wk->orow + (size_t)ox * ocw;
        if (wk->folded) {
            for (int k = 0; k < n; k++)
                o[k] = requantize(p, a[k], k, ew_term(t, oy, ox, k));
        } else if (per_channel_sums) {
            const int32_t *restrict s = wk->sums + (size_t)ox * astride;
            for (int k = 0; k < n; k++)
                o[k] = requantize(p, (int64_t)a[k] + (int64_t)ow[k] * s[k], k, ew_term(t, oy, ox, k));
        } else {
            const int64_t sum = wk->sums[ox];
            for (int k = 0; k < n; k++)
                o[k] = requantize(p, (int64_t)a[k] + ow[k] * sum, k, ew_term(t, oy, ox, k));
        }
        memset(o + n, 0, (size_t)(ocw - n)); /* channels past the computed ones [INFERRED] */
    }
}

/* DPU WDMA: 16-channel surface s of output row oy at
 * DST + (16s / G) * SURFACE_ADD + (16s % G / 16) * DST_SURF_STRIDE + oy * W * 16. */
static void write_row(const struct worker *wk, int oy, int ocw)
{
    const struct rkt_conv_task *t = wk->t;
    const int spg = t->group_channels / 16;
    for (int s = 0; s < ocw / 16; s++) {
        uint8_t *d = t->out + (size_t)(s / spg) * t->out_group_pitch + (size_t)(s % spg) * t->out_surf_pitch +
                     (size_t)oy * t->out_w * 16;
        const int8_t *src = wk->orow + (size_t)s * 16;
        for (int ox = 0; ox < t->out_w; ox++)
            memcpy(d + (size_t)ox * 16, src + (size_t)ox * ocw, 16);
    }
}

static void run_direct(const struct worker *wk, int ocw)
{
    const rkt_conv *c = wk->c;
    const struct rkt_conv_task *t = wk->t;
    const int ic = t->g.ic, kw = t->g.kw, kh = t->g.kh, kpad = c->kpad;
    const size_t L = (size_t)kw * ic;
    const size_t rowlen = (size_t)wk->cols_p * ic;
    int32_t *acc = wk->acc;

    for (int oy = wk->oy0; oy < wk->oy1; oy++) {
        for (int k = 0; k < kpad; k += KBLK) {
            const int16_t *wb = wk->w + (size_t)k * kh * L;
            for (int ox = 0; ox < t->out_w; ox += 2) {
                const int ox1 = ox + 1 < t->out_w ? ox + 1 : ox;
                int32_t r[8] = {0};
                for (int ky = 0; ky < kh; ky++) {
                    const int16_t *xr = c->x + (size_t)(oy * t->sy + ky) * rowlen;
                    const int16_t *w0 = wb + (size_t)ky * L;
                    dot2x4(xr + (size_t)ox * t->sx * ic, xr + (size_t)ox1 * t->sx * ic, w0, w0 + kh * L,
                           w0 + 2 * kh * L, w0 + 3 * kh * L, L, r);
                }
                int32_t *a0 = acc + (size_t)ox * kpad + k, *a1 = acc + (size_t)ox1 * kpad + k;
                a0[0] = r[0], a0[1] = r[1], a0[2] = r[2], a0[3] = r[3];
                if (ox1 != ox)
                    a1[0] = r[4], a1[1] = r[5], a1[2] = r[6], a1[3] = r[7];
            }
        }
        for (int ox = 0; ox < t->out_w && !wk->folded; ox++) {
            int32_t s = 0;
            for (int ky = 0; ky < kh; ky++) {
                const int32_t *ps = c->psum + (size_t)(oy * t->sy + ky) * wk->cols_p + (size_t)ox * t->sx;
                for (int kx = 0; kx < kw; kx++)
                    s += ps[kx];
            }
            wk->sums[ox] = s;
        }
        post_row(wk, oy, (size_t)kpad, 0, ocw);
        write_row(wk, oy, ocw);
    }
}

static void run_depthwise(const struct worker *wk, int ocw)
{
    const rkt_conv *c = wk->c;
    const struct rkt_conv_task *t = wk->t;
    const int ic = t->g.ic, kw = t->g.kw, kh = t->g.kh;
    const size_t rowlen = (size_t)wk->cols_p * ic;
    int32_t *acc = wk->acc, *sum = wk->sums;

    for (int oy = wk->oy0; oy < wk->oy1; oy++) {
        memset(acc, 0, (size_t)t->out_w * ic * sizeof(int32_t));
        if (!wk->folded)
            memset(sum, 0, (size_t)t->out_w * ic * sizeof(int32_t));
        /* tiles of DW_TILE pixels keep their accumulators in L1 across the taps */
        for (int ox0 = 0; ox0 < t->out_w; ox0 += DW_TILE) {
            const int ox1 = ox0 + DW_TILE < t->out_w ? ox0 + DW_TILE : t->out_w;
            for (int ky = 0; ky < kh; ky++)
                for (int kx = 0; kx < kw; kx++) {
                    const int16_t *xrow = c->x + (size_t)(oy * t->sy + ky) * rowlen + (size_t)kx * ic;
                    const int16_t *restrict wp = wk->w + ((size_t)ky * kw + kx) * ic;
                    for (int ox = ox0; ox < ox1; ox++) {
                        const int16_t *restrict xp = xrow + (size_t)ox * t->sx * ic;
                        int32_t *restrict ap = acc + (size_t)ox * ic;
                        if (wk->folded) {
                            /* |x| <= 128, |w + ow| <= 255: the product is exact in int16 */
                            for (int b = 0; b < ic; b += BLK)
                                for (int j = b; j < b + BLK; j++)
                                    ap[j] += (int16_t)(xp[j] * wp[j]);
                        } else {
                            int32_t *restrict sp = sum + (size_t)ox * ic;
                            for (int b = 0; b < ic; b += BLK)
                                for (int j = b; j < b + BLK; j++) {
                                    ap[j] += (int32_t)xp[j] * wp[j];
                                    sp[j] += xp[j];
                                }
                        }
                    }
                }
        }
        post_row(wk, oy, (size_t)ic, 1, ocw);
        write_row(wk, oy, ocw);
    }
}

static void *worker_main(void *arg)
{
    const struct worker *wk = arg;
    const int ocw = (wk->t->oc_real + 15) / 16 * 16;
    if (wk->t->g.depthwise)
        run_depthwise(wk, ocw);
    else
        run_direct(wk, ocw);
    return NULL;
}

/* ---- the fast datapath (sim_dot.h) ------------------------------------------------------------- */

/* CNA: the task input plus padding into f->x as x + 128, [rows_p][cols][ic] (cols >= the columns the padded
 * output row reads; the extra ones hold the pad pixel). */
static void fast_input(struct rkt_fast *f, const struct rkt_conv_task *t, int rows_p, int cols)
{
    const int ic = t->g.ic, icr = t->ic_real;
    /* DATAIN_CHANNEL_M1 is 14 bits on RK3576 (rk3576/regs.py), RK3588 checks ic <= 4096: 16384 holds both */
    uint8_t pad[16384];
    for (int ch = 0; ch < ic; ch++)
        pad[ch] = (uint8_t)((ch < icr ? rkt_channel_pad(t, ch) : 0) + 128);
    /* the columns read from memory: a stride may leave trailing input columns unread */
    const int x0 = t->pad_left < cols ? t->pad_left : cols;
    const int x1 = t->pad_left + (t->argb ? t->dma_w : t->in_w) < cols ? t->pad_left + (t->argb ? t->dma_w : t->in_w) : cols;
    for (int rp = 0; rp < rows_p; rp++) {
        const int r = rp - t->pad_top;
        uint8_t *row = f->x + (size_t)rp * cols * ic;
        const int inside = r >= 0 && r < t->in_h;
        /* pad pixels: the whole row outside the input rows, else the columns left of x0 and from x1 on */
        for (int cp = 0; cp < (inside ? x0 : cols); cp++)
            memcpy(row + (size_t)cp * ic, pad, (size_t)ic);
        for (int cp = inside ? x1 : cols; cp < cols; cp++)
            memcpy(row + (size_t)cp * ic, pad, (size_t)ic);
        if (!inside)
            continue;
        if (t->argb) {
            for (int cp = x0; cp < x1; cp++) {
                const int64_t u = t->in[(size_t)r * t->in_row_pitch + (size_t)(cp - x0)];
                int64_t v = (u + t->cvt_offset) * t->cvt_scale;
                if (t->cvt_shift > 0)
                    v = (v + ((int64_t)1 << (t->cvt_shift - 1))) >> t->cvt_shift;
                uint8_t *d = row + (size_t)cp * ic;
                memset(d, 128, (size_t)ic);
                d[0] = (uint8_t)(sat8(v) + 128);
            }
            continue;
        }
        for (int p = 0; p < ic / 16; p++) {
            const uint8_t *sp = t->in + (size_t)r * t->in_row_pitch + (size_t)p * t->in_plane_pitch;
            uint8_t *d = row + (size_t)x0 * ic + (size_t)p * 16;
            if (p * 16 + 16 <= icr) {
                for (int xx = 0; xx < x1 - x0; xx++)
                    for (int j = 0; j < 16; j++)
                        d[(size_t)xx * ic + j] = sp[(size_t)xx * 16 + j] ^ 0x80;
                continue;
            }
            /* channels >= ic_real read as 0, x + 128 = 128 */
            uint8_t keep[16], fill[16];
            for (int j = 0; j < 16; j++) {
                keep[j] = p * 16 + j < icr ? 0xFF : 0;
                fill[j] = keep[j] ? 0 : 128;
            }
            for (int xx = 0; xx < x1 - x0; xx++)
                for (int j = 0; j < 16; j++)
                    d[(size_t)xx * ic + j] = (uint8_t)(((sp[(size_t)xx * 16 + j] ^ 0x80) & keep[j]) | fill[j]);
        }
    }
}

/* Runs the task on the fast datapath; 1: not covered (sums that could overflow), run the reference. */
static int fast_run(rkt_conv *c, const struct rkt_conv_task *t)
{
    struct rkt_fast *f = &c->fast;
    const struct rkt_conv_geom *g = &t->g;
    const int ic = g->ic, kw = g->kw, kh = g->kh, taps = kw * kh, dw = g->depthwise;
    if ((!dw && !f->direct_loaded) || (dw && (uint64_t)taps * 255 * 32767 > INT32_MAX))
        return 1;
    const int kpad = dw ? ic : (g->kernels + RKT_DOT_KB - 1) / RKT_DOT_KB * RKT_DOT_KB;
    const int opad = (t->out_w + RKT_DOT_P - 1) / RKT_DOT_P * RKT_DOT_P;
    const int rows_p = (t->out_h - 1) * t->sy + kh;
    const int cols = (opad - 1) * t->sx + kw;
    const size_t xrow = (size_t)cols * ic, xstep = (size_t)t->sx * ic;
    const int nsurf = (t->oc_real + 15) / 16, nq = nsurf * 16, spg = t->group_channels / 16;
    const int icl = (t->ic_real + 3) / 4 * 4; /* channels that can be non-zero */

    if (grow((void **)&f->x, &f->xcap, (size_t)rows_p * xrow) ||
        grow((void **)&f->acc, &f->acccap, ((size_t)opad * kpad + (size_t)opad) * sizeof(int32_t)) ||
        grow((void **)&f->corr, &f->corrcap, (size_t)nq * sizeof(int64_t)) ||
        grow((void **)&f->tab, &f->tabcap, (size_t)nq * 4 * sizeof(int32_t)) ||
        grow((void **)&f->dst, &f->dstcap, (size_t)nsurf * sizeof(uint8_t *)) ||
        grow((void **)&f->surf_off, &f->surf_offcap, (size_t)nsurf * sizeof(size_t)))
        return -ENOMEM;
    int32_t *ow = f->tab, *bias = f->tab + nq, *mul = f->tab + 2 * nq, *corr32 = f->tab + 3 * nq;
    int need_sums = 0;
    int64_t acc_max, mul_max = 0;
    /* a multiplier of 2^shift on every channel, one shift for both signs, is the identity: v * 2^s / 2^s
     * has no fraction to round and |v| < 2^31 nothing to saturate (the per-tensor RK3576 programs) */
    int mul_identity = t->bs_mul && t->bs_shift_pos == t->bs_shift_neg && t->bs_shift_pos <= 14;
    const int32_t unit = mul_identity ? (int32_t)1 << t->bs_shift_pos : 0;
    for (int k = 0; k < nq; k++) {
        const int live = k < t->oc_real;
        ow[k] = live ? (t->ow ? t->ow[k] : t->ow_op) : 0;
        bias[k] = live ? t->bias[k] : 0;
        mul[k] = live && t->bs_mul ? t->bs_mul[k] : 0;
        need_sums |= ow[k] != 0;
        mul_max = llabs(mul[k]) > mul_max ? llabs(mul[k]) : mul_max;
        mul_identity &= !live || mul[k] == unit;
    }
    if (dw) {
        /* fold the OW factor: sum x * w + ow * sum x == sum x * (w + ow); x + 128 in the kernels, so
         * corr = -128 * sum (w + ow) */
        const size_t n = (size_t)taps * ic;
        if (grow((void **)&f->dw, &f->dwcap, n * sizeof(int16_t)))
            return -ENOMEM;
        for (int k = 0; k < nq; k++)
            f->corr[k] = 0;
        /* branch-free loops (the vectorizer's): the range is checked once at the end */
        const int nf = nq < ic ? nq : ic;
        int32_t wlo = 0, whi = 0;
        for (size_t i = 0; i < n; i += (size_t)ic) {
            for (int ch = 0; ch < nf; ch++) {
                const int32_t w = c->w[i + ch] + ow[ch];
                wlo = w < wlo ? w : wlo;
                whi = w > whi ? w : whi;
                f->dw[i + ch] = (int16_t)w;
                f->corr[ch] -= 128 * (int64_t)w;
            }
            for (int ch = nf; ch < ic; ch++) {
                const int32_t w = c->w[i + ch];
                wlo = w < wlo ? w : wlo;
                whi = w > whi ? w : whi;
                f->dw[i + ch] = (int16_t)w;
            }
        }
        if (wlo < INT16_MIN || whi > INT16_MAX)
            return 1;
        const int32_t wmax = -wlo > whi ? -wlo : whi;
        for (int k = 0; k < nq; k++)
            ow[k] = 0;
        need_sums = 0;
        acc_max = 255 * (int64_t)wmax * taps;
    } else {
        /* sum x * w + ow * sum x with x = (x + 128) - 128 over N = taps x ic inputs */
        const int64_t n = (int64_t)taps * ic;
        const int32_t *wsum = f->wsum;
        if (icl < ic) {
            /* channels >= ic_real read as 0 whatever their weights: leave them out of the MACs and of
             * the weight sums (S and n still count them: x + 128 - 128 = 0 there) */
            if (grow((void **)&f->wsum_live, &f->wsum_livecap, (size_t)kpad * sizeof(int32_t)))
                return -ENOMEM;
            for (int k = 0; k < kpad; k++) {
                const int8_t *wk = f->w + (size_t)(k / RKT_DOT_KB) * taps * ic * RKT_DOT_KB + 4 * (k % RKT_DOT_KB);
                int32_t sum = 0;
                for (int tap = 0; tap < taps; tap++)
                    for (int ch = 0; ch < icl; ch++)
                        sum += wk[((size_t)tap * ic + ch / 4 * 4) * RKT_DOT_KB + ch % 4];
                f->wsum_live[k] = sum;
            }
            wsum = f->wsum_live;
        }
        for (int k = 0; k < nq; k++)
            f->corr[k] = k < t->oc_real ? -128 * (int64_t)wsum[k] - 128 * n * ow[k] : 0;
        acc_max = 255 * 128 * n;
    }
    /* int32 suffices for the stages up to the bias add when the largest possible CORE value, rounded,
     * truncated and biased, stays inside int32 (sums of x + 128 in [0, 255] times weights) */
    const struct post p = post_of(t);
    const int64_t sum_max = need_sums ? 255 * (int64_t)taps * ic : 0;
    int fits32 = 1;
    int64_t vmax = 0;
    for (int k = 0; k < nq; k++) {
        const int64_t b = acc_max + llabs(f->corr[k]) + llabs(ow[k]) * sum_max + p.tround;
        const int64_t v = (b >> p.trunc) + 1 + llabs(bias[k]);
        fits32 &= b <= INT32_MAX && v <= INT32_MAX;
        vmax = v > vmax ? v : vmax;
        corr32[k] = (int32_t)(f->corr[k] + p.tround);
    }
    fast_input(f, t, rows_p, cols);
    if (need_sums) {
        if (grow((void **)&f->psum, &f->pcap, (size_t)rows_p * cols * sizeof(int32_t)))
            return -ENOMEM;
        c->ops->pixsum(f->x, ic, (size_t)rows_p * cols, f->psum);
    }

    struct rkt_requant q = {.n = t->oc_real, .corr = f->corr, .corr32 = fits32 ? corr32 : NULL, .ow = ow, .bias = bias,
                            .mul = t->bs_mul && !mul_identity ? mul : NULL, .trunc = p.trunc, .shift = p.shift,
                            .mul_shift_pos = p.mul_shift_pos, .mul_shift_neg = p.mul_shift_neg,
                            .tround = p.tround, .pre = p.pre, .post = p.post, .scale = p.scale,
                            .offset = t->out_offset, .vmax = vmax, .mul_max = mul_max,
                            .lo = p.lo, .hi = p.hi, .ew_surf_pitch = t->ew_surf_pitch, .ew_offset = t->ew_offset,
                            .ew_scale = t->ew_scale, .ew_shift = t->ew_shift, .ew_tie_up = t->ew_tie_up,
                            .ew_mul = t->ew_mul, .ew_trunc = t->ew_trunc, .lut = t->lut};
    const size_t blk = (size_t)taps * ic * RKT_DOT_KB;
    int32_t *sums = f->acc + (size_t)opad * kpad;
    /* DPU WDMA: 16-channel surface s of row oy at
     * DST + (16s / G) * SURFACE_ADD + (16s % G / 16) * DST_SURF_STRIDE + oy * W * 16; the part without oy */
    for (int sf = 0; sf < nsurf; sf++)
        f->surf_off[sf] = (size_t)(sf / spg) * t->out_group_pitch + (size_t)(sf % spg) * t->out_surf_pitch;
    for (int oy = 0; oy < t->out_h; oy++) {
        const uint8_t *xr = f->x + (size_t)oy * t->sy * xrow;
        if (dw) {
            c->ops->depthwise(xr, xstep, xrow, f->dw, kh, kw, ic, t->out_w, f->acc);
        } else {
            /* the requantization reads nq channels of out_w pixels */
            for (int kb = 0; kb < kpad / RKT_DOT_KB && kb * RKT_DOT_KB < nq; kb++)
                for (int ox = 0; ox < opad; ox += RKT_DOT_P)
                    c->ops->direct(xr + (size_t)ox * xstep, xstep, xrow, f->w + (size_t)kb * blk, kh, kw, ic, icl,
                                   f->acc + (size_t)ox * kpad + (size_t)kb * RKT_DOT_KB, (size_t)kpad,
                                   t->out_w - ox, nq - kb * RKT_DOT_KB);
        }
        /* a 1x1 kernel's window sum is its pixel's: read in place at stride 1 */
        const int32_t *rsums = need_sums && taps == 1 && t->sx == 1 ? f->psum + (size_t)oy * t->sy * cols : sums;
        if (need_sums && taps == 1 && t->sx != 1)
            for (int ox = 0; ox < t->out_w; ox++)
                sums[ox] = f->psum[(size_t)oy * t->sy * cols + (size_t)ox * t->sx];
        for (int ox = 0; ox < t->out_w && need_sums && taps > 1; ox++) {
            int32_t sum = 0;
            for (int ky = 0; ky < kh; ky++) {
                const int32_t *ps = f->psum + (size_t)(oy * t->sy + ky) * cols + (size_t)ox * t->sx;
                for (int kx = 0; kx < kw; kx++)
                    sum += ps[kx];
            }
            sums[ox] = sum;
        }
        for (int sf = 0; sf < nsurf; sf++)
            f->dst[sf] = t->out + f->surf_off[sf] + (size_t)oy * t->out_w * 16;
        q.ew_row = t->ew ? t->ew + (size_t)oy * t->ew_row_pitch : NULL;
        c->ops->requant(&q, f->acc, (size_t)kpad, need_sums ? rsums : NULL, t->out_w, nsurf, f->dst);
    }
    return 0;
}

int rkt_conv_run(rkt_conv *c, const struct rkt_conv_task *t, char *err, size_t errlen)
{
    const struct rkt_conv_geom *g = &t->g;
    if (!c->wloaded || memcmp(&c->wg, g, sizeof(*g)) != 0) {
        teflon_errf(err, errlen, "CBUF weights do not match the task geometry");
        return -EINVAL;
    }
    if (c->ops) {
        const int rc = fast_run(c, t);
        if (rc < 0)
            teflon_errf(err, errlen, "simulator out of memory for the fast datapath");
        if (rc <= 0)
            return rc;
    }
    const int rows_p = (t->out_h - 1) * t->sy + g->kh;
    const int cols_p = (t->out_w - 1) * t->sx + g->kw;
    const size_t npix = (size_t)rows_p * cols_p;

    if (grow((void **)&c->x, &c->xcap, npix * g->ic * sizeof(int16_t)) ||
        grow((void **)&c->psum, &c->pcap, npix * sizeof(int32_t)) ||
        grow((void **)&c->padpix, &c->padcap, (size_t)g->ic * sizeof(int16_t))) {
        teflon_errf(err, errlen, "simulator out of memory for the task input");
        return -ENOMEM;
    }
    build_input(c, t, rows_p, cols_p);

    /* The OW factor of every kernel (direct) or channel (depthwise); 0 beyond the computed channels. */
    const int nf = g->depthwise ? g->ic : c->kpad;
    int32_t *owv = malloc((size_t)nf * sizeof(int32_t) + (size_t)nf * sizeof(int16_t));
    if (!owv) {
        teflon_errf(err, errlen, "simulator out of memory for the OW factors");
        return -ENOMEM;
    }
    int16_t *owf = (int16_t *)(owv + nf);
    int folded = 1;
    for (int k = 0; k < nf; k++) {
        owv[k] = k >= t->oc_real ? 0 : t->ow ? t->ow[k] : t->ow_op;
        owf[k] = (int16_t)owv[k];
        folded &= owv[k] >= -127 && owv[k] <= 128;
    }
    /* Fold the OW factors into the weights when every product and sum stays exact in the int16/int32
     * paths (-127 <= ow <= 128, i.e. any 8-bit weight zero point: the depthwise int16 product
     * x * (w + ow) reaches 32768 only at ow = -128); otherwise keep the window sums. */
    if (folded && (!c->wf_valid || memcmp(c->wf_ow, owf, (size_t)nf * sizeof(int16_t)) != 0)) {
        const size_t per = (size_t)g->kh * g->kw * (g->depthwise ? 1 : (size_t)g->ic);
        const size_t nw = per * (size_t)(g->depthwise ? g->ic : c->kpad);
        if (grow((void **)&c->wf, &c->wfcap, nw * sizeof(int16_t)) ||
            grow((void **)&c->wf_ow, &c->wf_owcap, (size_t)nf * sizeof(int16_t))) {
            free(owv);
            teflon_errf(err, errlen, "simulator out of memory for the folded weights");
            return -ENOMEM;
        }
        /* direct: [kernel][ky][kx*ic] (per elements per kernel); depthwise: [ky][kx][channel] */
        int safe = 1;
        const size_t run = g->depthwise ? (size_t)g->ic : per;
        for (size_t i0 = 0; i0 < nw; i0 += run)
            for (size_t j = 0; j < run; j++) {
                const int16_t w = (int16_t)(c->w[i0 + j] + owf[g->depthwise ? j : i0 / per]);
                c->wf[i0 + j] = w;
                safe &= w >= -255 && w <= 255;
            }
        memcpy(c->wf_ow, owf, (size_t)nf * sizeof(int16_t));
        c->wf_valid = 1;
        c->wf_int16_safe = safe;
    }
    /* the depthwise folded loop multiplies in int16: |x| <= 128 needs |w| <= 255 (RK3588 always; RK3576's
     * byte pairs reach -256) */
    if (folded && g->depthwise && !c->wf_int16_safe)
        folded = 0;
    if (!folded && !g->depthwise)
        for (size_t i = 0; i < npix; i++) {
            const int16_t *p = c->x + i * g->ic;
            int32_t s = 0;
            for (int ch = 0; ch < g->ic; ch++)
                s += p[ch];
            c->psum[i] = s;
        }

    /* per-worker scratch: accumulators, window sums, one output row */
    const int ocw = (t->oc_real + 15) / 16 * 16;
    const size_t acc_n = (size_t)t->out_w * (g->depthwise ? (size_t)g->ic : (size_t)c->kpad);
    const size_t sum_n = g->depthwise ? acc_n : (size_t)t->out_w;
    const size_t per = (acc_n + sum_n) * sizeof(int32_t) + (size_t)t->out_w * ocw;
    uint8_t *scratch = malloc(2 * per);
    if (!scratch) {
        free(owv);
        teflon_errf(err, errlen, "simulator out of memory for the accumulators");
        return -ENOMEM;
    }
    struct worker wk[2];
    for (int i = 0; i < 2; i++) {
        int32_t *base = (int32_t *)(scratch + (size_t)i * per);
        wk[i] = (struct worker){c, t, owv, folded ? c->wf : c->w, folded, rows_p, cols_p, 0, t->out_h, base,
                                base + acc_n, (int8_t *)(base + acc_n + sum_n)};
    }
    wk[1].oy0 = t->out_h;

    /* Split output rows over two threads when the task is big enough to pay for a thread. */
    const uint64_t macs = (uint64_t)t->out_w * t->out_h * g->kw * g->kh * g->ic * (g->depthwise ? 1 : g->kernels);
    pthread_t th;
    int threaded = 0;
    if (macs >= (1u << 21) && t->out_h >= 2) {
        wk[0].oy1 = wk[1].oy0 = t->out_h / 2;
        threaded = pthread_create(&th, NULL, worker_main, &wk[1]) == 0;
        if (!threaded)
            wk[0].oy1 = t->out_h;
    }
    worker_main(&wk[0]);
    if (threaded)
        pthread_join(th, NULL);
    free(scratch);
    free(owv);
    return 0;
}
