/* The fast datapath of NPU_OP_CONV / NPU_OP_DEPTHWISE (ethosu_fast.h; docs/hardware/ethosu-sim.md "Fast
 * datapath"). Same inputs, same bytes as the reference loop of ethosu_npu_conv.c:
 *
 * - The IFM window is gathered once into planar int16 (value minus zero point, cast to int16 as the reference
 *   gathers it), split by stride phase: channel c, phase (py mod sy, px mod sx), row py / sy, column px / sx. Output
 *   position i = oy * pwq + ox then reads tap (ky, kx) of channel c at one offset plus i, so a whole OFM plane is
 *   one run of etna_sim_dot.c's MAC kernels (the columns ox >= ow of each row are computed and dropped).
 *   Convolutions run blocks of ETNA_DOT_KB output channels over the taps (ky, kx, ic) in pairs; depthwise
 *   convolutions one channel at a time (kb 1) over its kh x kw taps.
 * - The kernels accumulate in wrapping int32, starting from the bias. With ACC_FORMAT 32 bits that is the
 *   reference's sum wrapped to 32 bits exactly (wrapping addition is associative). With 40 bits it is exact only
 *   when no partial sum leaves int32: the op is declined (reference loop) unless |bias| + taps x max|x| x max|w|
 *   < 2^31. Pair sums (vpmaddwd) are exact while 2 x max|x| x max|w| < 2^31, checked as well (else declined).
 * - Weight streams are decoded by the reference's decoder and kept, in the kernels' layout, per stream address
 *   and length and geometry; every use compares the stream's bytes with the copy it was decoded from, so a
 *   rewritten stream is decoded again.
 * - The output stage: ethosu_fast_rq_fn for its common case (ethosu_fast.h), else ethosu_npu_scale +
 *   ethosu_npu_out_finish per element, the reference's own functions. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../etnaviv/etna_sim_dot.h"
#include "ethosu_fast.h"

/* One decoded weight stream in the MAC kernels' layout. conv: per block b of ETNA_DOT_KB output channels, per tap
 * pair p, per channel k of the block, the pair's two weights (0 past the last channel or tap); depthwise: per
 * channel, per pair, two weights. */
struct ethosu_fast_w {
    struct ethosu_npu_wdesc key; /* the stream pointer and length included */
    uint8_t *copy;               /* the stream bytes it was decoded from */
    int16_t *w;
    size_t nw;
    int32_t maxw;                /* max |w| */
};

#define ETHOSU_FAST_WCACHE_BYTES ((size_t)512 << 20) /* beyond this, the kept streams are dropped */
#define ETHOSU_FAST_SLACK 64                          /* int16 readable past a plane run (ETNA_DOT_PX rounding) */
#define ETHOSU_FAST_CHUNK 256                        /* run positions per pass (a multiple of ETNA_DOT_PX) */

struct ethosu_fast {
    const struct etna_dot_ops *dot;
    ethosu_fast_rq_fn *rq;
    struct ethosu_fast_w *wc;
    size_t nwc, capwc, wc_bytes;
    /* scratch, grown as needed and kept */
    int16_t *pad;
    size_t padcap;
    int32_t *acc;
    size_t acccap;
    int64_t *off;
    size_t offcap;
    uint64_t *pix;
    size_t pixcap;
};

struct ethosu_fast *ethosu_fast_create(const char *kernels)
{
    struct ethosu_fast *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->dot = etna_dot_select(kernels);
    f->rq = ethosu_fast_rq_select(f->dot->name);
    return f;
}

static void ethosu_fast_wc_clear(struct ethosu_fast *f)
{
    for (size_t i = 0; i < f->nwc; i++) {
        free(f->wc[i].copy);
        free(f->wc[i].w);
    }
    f->nwc = 0;
    f->wc_bytes = 0;
}

void ethosu_fast_destroy(struct ethosu_fast *f)
{
    if (!f)
        return;
    ethosu_fast_wc_clear(f);
    free(f->wc);
    free(f->pad);
    free(f->acc);
    free(f->off);
    free(f->pix);
    free(f);
}

const char *ethosu_fast_kernels(const struct ethosu_fast *f)
{
    return f->dot->name;
}

/* Grows a scratch buffer to n elements of size sz (contents not kept). */
static int ethosu_fast_grow(void **buf, size_t *cap, size_t n, size_t sz)
{
    if (n <= *cap)
        return 0;
    void *p = malloc(n * sz);
    if (!p)
        return -ENOMEM;
    free(*buf);
    *buf = p;
    *cap = n;
    return 0;
}

static bool ethosu_fast_same_key(const struct ethosu_npu_wdesc *a, const struct ethosu_npu_wdesc *b)
{
    return a->stream == b->stream && a->len == b->len && a->ofm_depth == b->ofm_depth && a->kh == b->kh &&
           a->kw == b->kw && a->ifm_depth == b->ifm_depth && a->ofm_block_depth == b->ofm_block_depth &&
           a->ifm_bits == b->ifm_bits && a->depthwise == b->depthwise && a->part_kernel == b->part_kernel &&
           a->dilation_x == b->dilation_x && a->dilation_y == b->dilation_y && a->decomposition == b->decomposition;
}

/* Decodes the stream with the reference's decoder into e (key set by the caller). */
static int ethosu_fast_decode(struct ethosu_fast_w *e, const struct ethosu_npu_wdesc *d, char *err, size_t errlen)
{
    const size_t taps = (size_t)d->kh * (size_t)d->kw * (size_t)d->ifm_depth, oc = (size_t)d->ofm_depth;
    const size_t n = oc * taps, pairs = (taps + 1) / 2;
    int16_t *ohwi = calloc(n ? n : 1, sizeof(*ohwi));
    if (!ohwi)
        return -ENOMEM;
    int rc = ethosu_npu_decode_weights_builtin(NULL, d, ohwi, err, errlen);
    if (rc) {
        free(ohwi);
        return rc < 0 ? rc : -EINVAL;
    }
    const size_t kb = d->depthwise ? 1 : ETNA_DOT_KB, nblk = (oc + kb - 1) / kb;
    e->nw = nblk * pairs * kb * 2;
    e->w = calloc(e->nw ? e->nw : 1, sizeof(*e->w));
    e->copy = malloc(d->len ? d->len : 1);
    if (!e->w || !e->copy) {
        free(ohwi);
        return -ENOMEM;
    }
    memcpy(e->copy, d->stream, d->len);
    int32_t maxw = 0;
    for (size_t o = 0; o < oc; o++) {
        int16_t *blk = e->w + (o / kb) * pairs * kb * 2;
        for (size_t t = 0; t < taps; t++) {
            const int16_t v = ohwi[o * taps + t];
            blk[((t / 2) * kb + o % kb) * 2 + t % 2] = v;
            const int32_t a = v < 0 ? -(int32_t)v : v;
            maxw = a > maxw ? a : maxw;
        }
    }
    e->maxw = maxw;
    free(ohwi);
    return 0;
}

/* The kept weights of the op's stream, decoded now if its bytes changed or it is new. */
static int ethosu_fast_weights(struct ethosu_fast *f, const struct ethosu_npu_wdesc *d,
                               const struct ethosu_fast_w **out, char *err, size_t errlen)
{
    struct ethosu_fast_w *e = NULL;
    for (size_t i = 0; i < f->nwc && !e; i++)
        if (ethosu_fast_same_key(&f->wc[i].key, d))
            e = &f->wc[i];
    if (e && memcmp(e->copy, d->stream, d->len) == 0) {
        *out = e;
        return 0;
    }
    if (e) { /* rewritten: decode again in place */
        f->wc_bytes -= e->key.len + e->nw * sizeof(*e->w);
        free(e->copy);
        free(e->w);
        *e = f->wc[--f->nwc];
        e = NULL;
    }
    if (f->wc_bytes > ETHOSU_FAST_WCACHE_BYTES)
        ethosu_fast_wc_clear(f);
    if (f->nwc == f->capwc) {
        size_t cap = f->capwc ? 2 * f->capwc : 64;
        struct ethosu_fast_w *wc = realloc(f->wc, cap * sizeof(*wc));
        if (!wc)
            return -ENOMEM;
        f->wc = wc;
        f->capwc = cap;
    }
    e = &f->wc[f->nwc];
    *e = (struct ethosu_fast_w){.key = *d};
    int rc = ethosu_fast_decode(e, d, err, errlen);
    if (rc) {
        free(e->copy);
        free(e->w);
        return rc;
    }
    f->nwc++;
    f->wc_bytes += d->len + e->nw * sizeof(*e->w);
    *out = e;
    return 0;
}

/* Offset of padded position (py, px) in a channel's phase-split plane. */
struct ethosu_fast_planes {
    int sy, sx;
    int64_t phq, pwq, plane, chplane;
};

static inline int64_t ethosu_fast_at(const struct ethosu_fast_planes *pl, int py, int px)
{
    return ((int64_t)(py % pl->sy) * pl->sx + px % pl->sx) * pl->plane + (int64_t)(py / pl->sy) * pl->pwq +
           px / pl->sx;
}

/* The 16 x 16 byte transposes of the gather and the store: SSE2 (every x86-64) or Advanced SIMD (every aarch64),
 * through four helpers: a 16-byte vector, its 8-byte load, and the two byte interleaves. Four rounds of pairing
 * rows i and i + 8 byte by byte transpose a 16 x 16 block (the perfect shuffle, applied four times). */
#if defined(__SSE2__)
#include <emmintrin.h>
#define ETHOSU_FAST_T16 1
typedef __m128i ethosu_v16;
#define ethosu_v16_load(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
#define ethosu_v16_load8(p) _mm_loadl_epi64((const __m128i *)(const void *)(p))
#define ethosu_v16_store(p, v) _mm_storeu_si128((__m128i *)(void *)(p), v)
#define ethosu_v16_ziplo(a, b) _mm_unpacklo_epi8(a, b)
#define ethosu_v16_ziphi(a, b) _mm_unpackhi_epi8(a, b)
/* the 16 bytes of v as int16 (sign- or zero-extended) minus zp, wrapping, to d[0..15] */
static inline void ethosu_v16_widen_store(int16_t *d, ethosu_v16 v, bool sgn, int16_t zp)
{
    const __m128i z = _mm_set1_epi16(zp), zero = _mm_setzero_si128();
    const __m128i ext = sgn ? _mm_cmpgt_epi8(zero, v) : zero;
    _mm_storeu_si128((__m128i *)(void *)d, _mm_sub_epi16(_mm_unpacklo_epi8(v, ext), z));
    _mm_storeu_si128((__m128i *)(void *)(d + 8), _mm_sub_epi16(_mm_unpackhi_epi8(v, ext), z));
}
/* the low bytes of p[0..15] (values of an 8-bit map: packs_epi32 keeps them) */
static inline ethosu_v16 ethosu_v16_narrow(const int32_t *p)
{
    const __m128i low = _mm_set1_epi16(0xff);
    const __m128i a = _mm_packs_epi32(ethosu_v16_load(p), ethosu_v16_load(p + 4));
    const __m128i b = _mm_packs_epi32(ethosu_v16_load(p + 8), ethosu_v16_load(p + 12));
    return _mm_packus_epi16(_mm_and_si128(a, low), _mm_and_si128(b, low));
}
#elif defined(__aarch64__) && defined(__GNUC__)
#include <arm_neon.h>
#define ETHOSU_FAST_T16 1
typedef uint8x16_t ethosu_v16;
#define ethosu_v16_load(p) vld1q_u8((const uint8_t *)(p))
#define ethosu_v16_load8(p) vcombine_u8(vld1_u8((const uint8_t *)(p)), vdup_n_u8(0))
#define ethosu_v16_store(p, v) vst1q_u8((uint8_t *)(p), v)
#define ethosu_v16_ziplo(a, b) vzip1q_u8(a, b)
#define ethosu_v16_ziphi(a, b) vzip2q_u8(a, b)
static inline void ethosu_v16_widen_store(int16_t *d, ethosu_v16 v, bool sgn, int16_t zp)
{
    const int16x8_t z = vdupq_n_s16(zp);
    const int16x8_t lo = sgn ? vmovl_s8(vget_low_s8(vreinterpretq_s8_u8(v)))
                             : vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(v)));
    const int16x8_t hi = sgn ? vmovl_s8(vget_high_s8(vreinterpretq_s8_u8(v)))
                             : vreinterpretq_s16_u16(vmovl_u8(vget_high_u8(v)));
    vst1q_s16(d, vsubq_s16(lo, z));
    vst1q_s16(d + 8, vsubq_s16(hi, z));
}
static inline ethosu_v16 ethosu_v16_narrow(const int32_t *p)
{
    const int16x8_t a = vcombine_s16(vmovn_s32(vld1q_s32(p)), vmovn_s32(vld1q_s32(p + 4)));
    const int16x8_t b = vcombine_s16(vmovn_s32(vld1q_s32(p + 8)), vmovn_s32(vld1q_s32(p + 12)));
    return vreinterpretq_u8_s8(vcombine_s8(vmovn_s16(a), vmovn_s16(b)));
}
#endif

#if ETHOSU_FAST_T16
static inline void ethosu_v16_transpose(ethosu_v16 r[16])
{
    ethosu_v16 t[16];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 8; i++) {
            t[2 * i] = ethosu_v16_ziplo(r[i], r[i + 8]);
            t[2 * i + 1] = ethosu_v16_ziphi(r[i], r[i + 8]);
        }
        for (int i = 0; i < 8; i++) {
            r[2 * i] = ethosu_v16_ziplo(t[i], t[i + 8]);
            r[2 * i + 1] = ethosu_v16_ziphi(t[i], t[i + 8]);
        }
    }
}

/* 16 positions x nc (16 or 8) channels: the channel bytes of position i at s[i] go to d[c dstride + i] as int16
 * minus the zero point (wrapping int16 arithmetic: the reference's (int16_t) cast). */
static void ethosu_fast_t16(const uint8_t *const s[16], int nc, int16_t *d, int64_t dstride, int16_t zp, bool sgn)
{
    ethosu_v16 r[16];
    for (int i = 0; i < 16; i++) /* nc 8: 8 channel bytes (the next ones may lie past the map) */
        r[i] = nc == 16 ? ethosu_v16_load(s[i]) : ethosu_v16_load8(s[i]);
    ethosu_v16_transpose(r);
    for (int c = 0; c < nc; c++)
        ethosu_v16_widen_store(d + c * dstride, r[c], sgn, zp);
}

#endif

/* Channels c0 .. c1 - 1 of one position (source byte offset o, or -1 for a zero) into d[c chplane]. */
static inline void ethosu_fast_gather_px(const struct ethosu_npu_fm *ifm, int64_t o, int c0, int c1, int16_t *d,
                                         int64_t chplane)
{
    for (int c = c0; c < c1; c++)
        d[(int64_t)c * chplane] =
            o < 0 ? 0 : (int16_t)(ethosu_npu_fm_get(ifm, ifm->mem + o + ethosu_npu_fm_choff(ifm, c)) - ifm->zero_point);
}

/* The padded IFM window as planar int16 (ethosu_npu_ifm_at's values, cast as the reference's gather does), one
 * phase plane at a time: each plane position's source byte offset (or -1: padding, upscale zeros, the plane's
 * fill past the window), then 16 positions x 16 (or 8) channels at a time (8-bit channels c..c+15, c a multiple
 * of 16, are 16 adjacent bytes in NHWC and in NHCWB16); the plane's last positions and channel tails below 8 one
 * at a time. */
static int ethosu_fast_gather(const struct ethosu_npu_fm *ifm, const struct ethosu_npu_kgeom *g,
                              const struct ethosu_fast_planes *pl, int16_t *pad)
{
    const int uh = g->ph - g->pt - g->pb, uw = g->pw - g->pl - g->pr;
    /* zero positions read 16 bytes equal to the zero point when the IFM type holds it: they give 0 too */
    uint8_t zbytes[16];
    memset(zbytes, (uint8_t)ifm->zero_point, sizeof(zbytes));
    const bool zrep = ifm->is_signed ? ifm->zero_point >= -128 && ifm->zero_point <= 127
                                     : ifm->zero_point >= 0 && ifm->zero_point <= 255;
    (void)zrep;
    int64_t *src = malloc((size_t)pl->plane * sizeof(*src));
    if (!src)
        return -ENOMEM;
    for (int y0 = 0; y0 < pl->sy; y0++)
        for (int x0 = 0; x0 < pl->sx; x0++) {
            for (int64_t ry = 0; ry < pl->phq; ry++)
                for (int64_t rx = 0; rx < pl->pwq; rx++) {
                    const int py = (int)ry * pl->sy + y0, px = (int)rx * pl->sx + x0;
                    int y = py - g->pt, x = px - g->pl;
                    int64_t *o = &src[ry * pl->pwq + rx];
                    *o = -1;
                    if (py >= g->ph || px >= g->pw || y < 0 || x < 0 || y >= uh || x >= uw ||
                        (g->upscale == 2 && ((y | x) & 1)))
                        continue;
                    if (g->upscale)
                        y >>= 1, x >>= 1;
                    *o = (int64_t)ethosu_npu_fm_offset(ifm, y, x, 0);
                }
            int16_t *d = pad + ((int64_t)y0 * pl->sx + x0) * pl->plane;
            for (int c0 = 0; c0 < g->ic; c0 += 16) {
                const int c1 = g->ic - c0 < 16 ? g->ic : c0 + 16;
                for (int64_t k = 0; k < pl->plane;) {
#if ETHOSU_FAST_T16
                    const int nc = c1 - c0 >= 16 ? 16 : c1 - c0 >= 8 ? 8 : 0;
                    const uint8_t *ptr[16];
                    bool ok = nc && k + 16 <= pl->plane;
                    for (int i = 0; ok && i < 16; i++) {
                        ptr[i] = src[k + i] >= 0 ? ifm->mem + src[k + i] + ethosu_npu_fm_choff(ifm, c0) : zbytes;
                        ok = src[k + i] >= 0 || zrep;
                    }
                    if (ok) {
                        ethosu_fast_t16(ptr, nc, d + (int64_t)c0 * pl->chplane + k, pl->chplane,
                                        (int16_t)ifm->zero_point, ifm->is_signed);
                        for (int i = 0; i < 16; i++)
                            ethosu_fast_gather_px(ifm, src[k + i], c0 + nc, c1, d + k + i, pl->chplane);
                        k += 16;
                        continue;
                    }
#endif
                    ethosu_fast_gather_px(ifm, src[k], c0, c1, d + k, pl->chplane);
                    k++;
                }
            }
        }
    free(src);
    return 0;
}

/* Largest |(int16)(x - zp)| over the IFM type's values. */
static int32_t ethosu_fast_maxx(const struct ethosu_npu_fm *ifm)
{
    int32_t m = 0;
    for (int32_t x = ifm->is_signed ? -128 : 0; x <= (ifm->is_signed ? 127 : 255); x++) {
        const int16_t v = (int16_t)(x - ifm->zero_point);
        const int32_t a = v < 0 ? -(int32_t)v : v;
        m = a > m ? a : m;
    }
    return m;
}

/* One channel's output stage: the requantization kernel for its common case, else the reference's functions. */
struct ethosu_fast_chan {
    int64_t bias, mult;
    int shift;
};

static void ethosu_fast_out_row(const struct ethosu_fast *f, const struct ethosu_npu_out *out,
                                const struct ethosu_fast_chan *ch, const int32_t *acc, int64_t n, int32_t *res)
{
    const bool vec = out->activation == 0 && out->round_mode == 0 && ch->shift >= 31 && out->lo >= -32768 &&
                     out->hi <= 65535 && ch->mult >= 0 && ch->mult <= UINT32_MAX;
    if (!vec) {
        for (int64_t i = 0; i < n; i++)
            res[i] = ethosu_npu_out_finish(out, ethosu_npu_scale(acc[i], ch->mult, ch->shift, out->round_mode));
        return;
    }
    int32_t lo, hi;
    ethosu_npu_out_clamp(out, &lo, &hi);
    f->rq(acc, n, (uint32_t)ch->mult, (unsigned)(ch->shift - 31), out->ofm_zp, lo, hi, res);
}

#if ETHOSU_FAST_T16
/* 16 positions x 16 8-bit channels: the low bytes of res[c rstride + i] (c, i < 16) to o[i] + c. */
static void ethosu_fast_s16(const int32_t *res, int64_t rstride, uint8_t *const o[16])
{
    ethosu_v16 r[16];
    for (int c = 0; c < 16; c++)
        r[c] = ethosu_v16_narrow(res + c * rstride);
    ethosu_v16_transpose(r);
    for (int i = 0; i < 16; i++)
        ethosu_v16_store(o[i], r[i]);
}
#endif

/* Stores OFM channels o0 .. o0 + nk - 1 (nk <= ETHOSU_FAST_NK) of run positions 0..n-1 from res[k * rstride + i];
 * pix[i]: the position's OFM byte offset of channel 0, or ETHOSU_FAST_DROP for a dropped column. Sixteen 8-bit
 * channels from a multiple of 16 are 16 adjacent bytes in NHWC and in NHCWB16: one 16-byte store per position, 16
 * positions at a time (dropped ones into a sink). */
#define ETHOSU_FAST_NK 16
#define ETHOSU_FAST_DROP UINT64_MAX
static void ethosu_fast_store(const struct ethosu_npu_fm *ofm, const uint64_t *pix, int64_t n, int o0, int nk,
                              const int32_t *res, int64_t rstride)
{
    int64_t i = 0;
#if ETHOSU_FAST_T16
    if (ofm->bytes == 1 && nk == 16 && o0 % 16 == 0) {
        uint8_t *base = ofm->mem + ethosu_npu_fm_choff(ofm, o0), sink[16], *dst[16];
        for (; i + 16 <= n; i += 16) {
            for (int j = 0; j < 16; j++)
                dst[j] = pix[i + j] == ETHOSU_FAST_DROP ? sink : base + pix[i + j];
            ethosu_fast_s16(res + i, rstride, dst);
        }
    }
#endif
    for (int k = 0; k < nk; k++) {
        uint8_t *base = ofm->mem + ethosu_npu_fm_choff(ofm, o0 + k);
        for (int64_t x = i; x < n; x++)
            if (pix[x] != ETHOSU_FAST_DROP)
                ethosu_npu_fm_put(ofm, base + pix[x], res[k * rstride + x]);
    }
}

int ethosu_fast_conv(void *ctx, const struct ethosu_npu_conv_op *op, char *err, size_t errlen)
{
    struct ethosu_fast *f = ctx;
    const struct ethosu_npu_kgeom *g = op->g;
    const struct ethosu_npu_fm *ifm = op->ifm, *ofm = op->ofm;
    const struct ethosu_npu_out *out = op->out;
    const bool dw = op->depthwise;
    if (ifm->bytes != 1)
        return ETHOSU_NPU_DECLINED;
    const struct ethosu_fast_w *wt;
    int rc = ethosu_fast_weights(f, op->wd, &wt, err, errlen);
    if (rc)
        return rc;
    const int64_t taps = (int64_t)g->kh * g->kw * (dw ? 1 : g->ic), pairs = (taps + 1) / 2;
    const int64_t maxx = ethosu_fast_maxx(ifm);
    if (2 * maxx * wt->maxw >= ((int64_t)1 << 31))
        return ETHOSU_NPU_DECLINED;
    struct ethosu_fast_chan *ch = malloc((size_t)g->oc * sizeof(*ch));
    int32_t *bias = malloc((size_t)g->oc * sizeof(*bias));
    if (!ch || !bias) {
        free(ch);
        free(bias);
        return -ENOMEM;
    }
    bool exact = true;
    for (int o = 0; o < g->oc; o++) {
        ethosu_npu_out_channel(out, o, &ch[o].bias, &ch[o].mult, &ch[o].shift);
        /* 32 bits: the wrapped bias starts the wrapping sum; 40 bits: only a sum that never leaves int32 */
        bias[o] = (int32_t)(uint32_t)(uint64_t)ch[o].bias;
        if (out->acc_bits != 32) {
            const int64_t b = ch[o].bias < 0 ? -ch[o].bias : ch[o].bias;
            if (b + taps * maxx * wt->maxw >= ((int64_t)1 << 31))
                exact = false;
        }
    }
    struct ethosu_fast_planes pl = {.sy = g->sy, .sx = g->sx};
    pl.phq = (g->ph + g->sy - 1) / g->sy;
    pl.pwq = (g->pw + g->sx - 1) / g->sx;
    pl.plane = pl.phq * pl.pwq;
    pl.chplane = (int64_t)g->sy * g->sx * pl.plane;
    const int64_t run = (int64_t)(g->oh - 1) * pl.pwq + g->ow;
    if (!exact)
        rc = ETHOSU_NPU_DECLINED;
    else if (ethosu_fast_grow((void **)&f->pad, &f->padcap, (size_t)(g->ic * pl.chplane + ETHOSU_FAST_SLACK),
                              sizeof(*f->pad)) ||
             ethosu_fast_grow((void **)&f->acc, &f->acccap, (size_t)(ETHOSU_FAST_NK * ETHOSU_FAST_CHUNK), sizeof(*f->acc)) ||
             ethosu_fast_grow((void **)&f->off, &f->offcap, (size_t)(2 * pairs), sizeof(*f->off)) ||
             ethosu_fast_grow((void **)&f->pix, &f->pixcap, (size_t)run, sizeof(*f->pix)))
        rc = -ENOMEM;
    if (rc) {
        free(ch);
        free(bias);
        return rc;
    }
    if ((rc = ethosu_fast_gather(ifm, g, &pl, f->pad))) {
        free(ch);
        free(bias);
        return rc;
    }
    memset(f->pad + g->ic * pl.chplane, 0, ETHOSU_FAST_SLACK * sizeof(*f->pad));
    for (int oy = 0; oy < g->oh; oy++)
        for (int64_t ox = 0; ox < pl.pwq && oy * pl.pwq + ox < run; ox++)
            f->pix[oy * pl.pwq + ox] = ox < g->ow ? ethosu_npu_fm_offset(ofm, oy, (int)ox, 0) : ETHOSU_FAST_DROP;
    /* tap t = (ky * kw + kx) * I + ci (the decoder's OHWI order); an odd last pair repeats its tap with weight 0 */
    const int icn = dw ? 1 : g->ic;
    for (int64_t t = 0; t < 2 * pairs; t++) {
        const int64_t tt = t < taps ? t : taps - 1;
        const int ci = (int)(tt % icn), k = (int)(tt / icn);
        f->off[t] = (int64_t)ci * pl.chplane + ethosu_fast_at(&pl, (k / g->kw) * g->dy, (k % g->kw) * g->dx);
    }
    /* chunks of the run, so that a chunk's planes, accumulators and results stay in the cache across the output
     * channel blocks; a chunk starts at a multiple of ETNA_DOT_PX, so its rounded end is the run's rounded end at
     * most (read through ETHOSU_FAST_SLACK) */
    int32_t b4[ETNA_DOT_KB];
    for (int64_t i0 = 0; i0 < run; i0 += ETHOSU_FAST_CHUNK) {
        const int64_t n = run - i0 < ETHOSU_FAST_CHUNK ? run - i0 : ETHOSU_FAST_CHUNK;
        const int64_t nr = (n + ETNA_DOT_PX - 1) / ETNA_DOT_PX * ETNA_DOT_PX;
        for (int o0 = 0; o0 < g->oc; o0 += ETHOSU_FAST_NK) {
            const int nk = g->oc - o0 < ETHOSU_FAST_NK ? g->oc - o0 : ETHOSU_FAST_NK;
            if (dw) { /* one channel per MAC call, over its own plane */
                for (int k = 0; k < nk; k++)
                    f->dot->mac(1, f->pad + (int64_t)(o0 + k) * pl.chplane + i0, f->off,
                                wt->w + (size_t)(o0 + k) * (size_t)pairs * 2, (uint64_t)pairs, &bias[o0 + k], nr,
                                f->acc + k * nr, nr);
            } else {
                for (int k0 = 0; k0 < nk; k0 += ETNA_DOT_KB) {
                    for (int k = 0; k < ETNA_DOT_KB; k++)
                        b4[k] = k0 + k < nk ? bias[o0 + k0 + k] : 0;
                    f->dot->mac(ETNA_DOT_KB, f->pad + i0, f->off,
                                wt->w + (size_t)((o0 + k0) / ETNA_DOT_KB) * (size_t)pairs * ETNA_DOT_KB * 2,
                                (uint64_t)pairs, b4, nr, f->acc + k0 * nr, nr);
                }
            }
            for (int k = 0; k < nk; k++) /* in place: each element is read before it is written */
                ethosu_fast_out_row(f, out, &ch[o0 + k], f->acc + k * nr, n, f->acc + k * nr);
            ethosu_fast_store(ofm, f->pix + i0, n, o0, nk, f->acc, nr);
        }
    }
    free(ch);
    free(bias);
    return 0;
}
