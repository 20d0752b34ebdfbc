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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLK 16      /* elements per vectorized block; IC is always a multiple of 16 */
#define KBLK 4      /* kernels computed together (register blocking) */

struct sim_conv {
    /* the simulated CBUF weight contents */
    struct sim_conv_geom wg;
    int wloaded;
    int16_t *w;          /* direct: [kpad][kh][kw*ic]; depthwise: [kh][kw][ic] */
    size_t wcap;
    int kpad;            /* kernels rounded up to KBLK (extra kernels are zero) */

    /* task input, padded: [rows_p][cols_p][ic] */
    int16_t *x;
    size_t xcap;
    int32_t *psum;       /* direct: per padded pixel, sum over channels */
    size_t pcap;
    int16_t *padpix;     /* one padded pixel: pad value in real channels, 0 beyond */
    size_t padcap;
};

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

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

sim_conv *sim_conv_create(void)
{
    return calloc(1, sizeof(sim_conv));
}

void sim_conv_destroy(sim_conv *c)
{
    if (!c)
        return;
    free(c->w);
    free(c->x);
    free(c->psum);
    free(c->padpix);
    free(c);
}

int sim_conv_load_weights(sim_conv *c, const struct sim_conv_geom *g, const int8_t *src,
                          char *err, size_t errlen)
{
    const int ic = g->ic, kw = g->kw, kh = g->kh;
    size_t pos = 0;

    c->wloaded = 0;
    if (g->depthwise) {
        size_t n = (size_t)kh * kw * ic;
        if (grow((void **)&c->w, &c->wcap, n * sizeof(int16_t)))
            goto oom;
        /* channel groups of 64, tap-major inside a group */
        for (int cg = 0; cg < ic; cg += 64) {
            int wi = ic - cg < 64 ? ic - cg : 64;
            for (int ky = 0; ky < kh; ky++)
                for (int kx = 0; kx < kw; kx++) {
                    int16_t *d = c->w + ((size_t)ky * kw + kx) * ic + cg;
                    for (int i = 0; i < wi; i++)
                        d[i] = src[pos++];
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
    return 0;
oom:
    set_err(err, errlen, "simulator out of memory for the CBUF weights");
    return -ENOMEM;
}

static inline int8_t sat8(int64_t v)
{
    return (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
}

static inline int32_t sat32(int64_t v)
{
    return (int32_t)(v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v);
}

/* CNA: fetch the task input (plus padding) into c->x as int16 [rows_p][cols_p][ic]. */
static void build_input(sim_conv *c, const struct sim_conv_task *t, int rows_p, int cols_p)
{
    const int ic = t->g.ic, icr = t->ic_real;
    const size_t pix = (size_t)ic;
    int16_t *padvec = c->padpix;

    for (int ch = 0; ch < ic; ch++)
        padvec[ch] = ch < icr ? (int16_t)t->pad_value : 0;

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
    sim_conv *c;
    const struct sim_conv_task *t;
    int rows_p, cols_p;
    int oy0, oy1;
    int32_t *scratch;    /* direct: out_w * kpad accumulators; depthwise: 2 * ic */
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

static inline int32_t bias_at(const uint8_t *b, int k)
{
    const uint8_t *p = b + 4 * (size_t)k;
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

/* CORE accumulator -> DPU BS (bias) -> OUT_CVT for one value. */
static inline int8_t dpu_out(const struct sim_conv_task *t, int32_t acc, int32_t winsum, int32_t bias)
{
    /* The OW term (BS_OW_OP x input window sum) is part of what CLIP_TRUNCATE shifts, and the
     * shift rounds half up [INFERRED from Mesa's -trunc streams: docs/hardware/rocket-sim.md]. */
    int64_t a = (int64_t)acc + (int64_t)t->ow_op * winsum;
    if (t->clip_truncate > 0)
        a = (a + ((int64_t)1 << (t->clip_truncate - 1))) >> t->clip_truncate;
    const int64_t v = sat32(a + bias);
    int64_t o = v * (int64_t)t->out_scale;
    if (t->out_shift > 0)
        o = (o + ((int64_t)1 << (t->out_shift - 1))) >> t->out_shift;
    return sat8(o + t->out_offset);
}

static inline uint8_t *out_pixel(const struct sim_conv_task *t, int k, int oy, int ox)
{
    const int G = t->group_channels;
    return t->out + (size_t)(k / G) * t->out_group_pitch + (size_t)((k % G) / 16) * t->out_surf_pitch +
           ((size_t)oy * t->out_w + ox) * 16 + (size_t)(k % 16);
}

static void finish_pixel(const struct sim_conv_task *t, int oy, int ox, const int32_t *acc, const int32_t *sums,
                         int per_channel_sums)
{
    const int ocr = t->oc_real;
    const int written = (ocr + 15) / 16 * 16;
    for (int k0 = 0; k0 < written; k0 += 16) {
        int8_t *o = (int8_t *)out_pixel(t, k0, oy, ox);
        for (int j = 0; j < 16; j++) {
            const int k = k0 + j;
            if (k >= ocr) {
                o[j] = 0; /* channels past ORIG_CHANNEL in the last surface [INFERRED] */
                continue;
            }
            o[j] = dpu_out(t, acc[k], per_channel_sums ? sums[k] : sums[0], bias_at(t->bias, k));
        }
    }
}

static void run_direct(const struct worker *wk)
{
    const sim_conv *c = wk->c;
    const struct sim_conv_task *t = wk->t;
    const int ic = t->g.ic, kw = t->g.kw, kh = t->g.kh, kpad = c->kpad;
    const size_t L = (size_t)kw * ic;
    const size_t rowlen = (size_t)wk->cols_p * ic;
    int32_t *acc = wk->scratch;

    for (int oy = wk->oy0; oy < wk->oy1; oy++) {
        memset(acc, 0, (size_t)t->out_w * kpad * sizeof(int32_t));
        for (int k = 0; k < kpad; k += KBLK) {
            const int16_t *wb = c->w + (size_t)k * kh * L;
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
        for (int ox = 0; ox < t->out_w; ox++) {
            int32_t s = 0;
            for (int ky = 0; ky < kh; ky++) {
                const int32_t *ps = c->psum + (size_t)(oy * t->sy + ky) * wk->cols_p + (size_t)ox * t->sx;
                for (int kx = 0; kx < kw; kx++)
                    s += ps[kx];
            }
            finish_pixel(t, oy, ox, acc + (size_t)ox * kpad, &s, 0);
        }
    }
}

static void run_depthwise(const struct worker *wk)
{
    const sim_conv *c = wk->c;
    const struct sim_conv_task *t = wk->t;
    const int ic = t->g.ic, kw = t->g.kw, kh = t->g.kh;
    const size_t rowlen = (size_t)wk->cols_p * ic;
    int32_t *acc = wk->scratch, *sum = acc + ic;

    for (int oy = wk->oy0; oy < wk->oy1; oy++)
        for (int ox = 0; ox < t->out_w; ox++) {
            memset(acc, 0, 2 * (size_t)ic * sizeof(int32_t));
            for (int ky = 0; ky < kh; ky++)
                for (int kx = 0; kx < kw; kx++) {
                    const int16_t *xp = c->x + (size_t)(oy * t->sy + ky) * rowlen + ((size_t)ox * t->sx + kx) * ic;
                    const int16_t *wp = c->w + ((size_t)ky * kw + kx) * ic;
                    for (int b = 0; b < ic; b += BLK)
                        for (int j = b; j < b + BLK; j++) {
                            acc[j] += (int32_t)xp[j] * wp[j];
                            sum[j] += xp[j];
                        }
                }
            finish_pixel(t, oy, ox, acc, sum, 1);
        }
}

static void *worker_main(void *arg)
{
    const struct worker *wk = arg;
    if (wk->t->g.depthwise)
        run_depthwise(wk);
    else
        run_direct(wk);
    return NULL;
}

int sim_conv_run(sim_conv *c, const struct sim_conv_task *t, char *err, size_t errlen)
{
    const struct sim_conv_geom *g = &t->g;
    if (!c->wloaded || memcmp(&c->wg, g, sizeof(*g)) != 0) {
        set_err(err, errlen, "CBUF weights do not match the task geometry");
        return -EINVAL;
    }
    const int rows_p = (t->out_h - 1) * t->sy + g->kh;
    const int cols_p = (t->out_w - 1) * t->sx + g->kw;
    const size_t npix = (size_t)rows_p * cols_p;

    if (grow((void **)&c->x, &c->xcap, npix * g->ic * sizeof(int16_t)) ||
        grow((void **)&c->psum, &c->pcap, npix * sizeof(int32_t)) ||
        grow((void **)&c->padpix, &c->padcap, (size_t)g->ic * sizeof(int16_t))) {
        set_err(err, errlen, "simulator out of memory for the task input");
        return -ENOMEM;
    }
    build_input(c, t, rows_p, cols_p);
    if (!g->depthwise)
        for (size_t i = 0; i < npix; i++) {
            const int16_t *p = c->x + i * g->ic;
            int32_t s = 0;
            for (int ch = 0; ch < g->ic; ch++)
                s += p[ch];
            c->psum[i] = s;
        }

    /* Split output rows over two threads when the task is big enough to pay for a thread. */
    const uint64_t macs = (uint64_t)t->out_w * t->out_h * g->kw * g->kh * g->ic * (g->depthwise ? 1 : g->kernels);
    const size_t per = g->depthwise ? 2 * (size_t)g->ic : (size_t)t->out_w * c->kpad;
    int32_t *scratch = malloc(2 * per * sizeof(int32_t));
    if (!scratch) {
        set_err(err, errlen, "simulator out of memory for the accumulators");
        return -ENOMEM;
    }
    struct worker wk[2] = {
        {c, t, rows_p, cols_p, 0, t->out_h, scratch},
        {c, t, rows_p, cols_p, t->out_h, t->out_h, scratch + per},
    };
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
    return 0;
}
