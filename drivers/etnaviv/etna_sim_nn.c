/* NN jobs: one 34-word descriptor + one coefficient buffer (etnaviv.md §2, §3, §4, §6).
 *
 * The job is a stride-1 convolution of a planar uint8 input (x = columns, y = rows, z = planes) with a
 * constant border, an int32 accumulator per output element, a bias per kernel, requantization by the
 * post multiplier/shift, optional ReLU, and optional "first pixel" 2x2 pooling (how Mesa expresses
 * stride 2). Kernel weights and biases come only from the coefficient buffer (v7: zero-run-length bit
 * stream with raw bias/offset words; v8: pipelined prefix-code stream + bias table). Model details and
 * inferred choices: docs/hardware/etnaviv-sim.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etna_sim_priv.h"
#include "etna_nn_v7_desc.h"
#include "etna_nn_v8_desc.h"

#define ETNA_NN_WORDS 34

/* X(field, slices, signed) shared by v7 and v8 (post_multiplier differs in slice count: listed apart). */
#define ETNA_NN_FIELDS(X, P) \
    X(P, LAYER_TYPE, 1, 0) X(P, NO_Z_OFFSET, 1, 0) X(P, KERNEL_XY_SIZE, 1, 0) X(P, KERNEL_Z_SIZE, 2, 0) \
    X(P, KERNELS_PER_CORE, 1, 0) X(P, POOLING, 1, 0) X(P, POOLING_XY_SIZE, 1, 0) X(P, PRELU, 1, 0) \
    X(P, NN_LAYER_FLUSH, 1, 0) X(P, KERNEL_DATA_TYPE, 2, 0) X(P, IN_IMAGE_DATA_TYPE, 2, 0) \
    X(P, OUT_IMAGE_DATA_TYPE, 2, 0) X(P, IN_IMAGE_X_SIZE, 1, 0) X(P, IN_IMAGE_Y_SIZE, 1, 0) \
    X(P, IN_IMAGE_X_OFFSET, 2, 1) X(P, IN_IMAGE_Y_OFFSET, 2, 1) X(P, BRICK_MODE, 1, 0) X(P, BRICK_DISTANCE, 1, 0) \
    X(P, RELU, 1, 0) X(P, NO_FLUSH, 1, 0) X(P, OUT_IMAGE_X_SIZE, 1, 0) X(P, OUT_IMAGE_Y_SIZE, 1, 0) \
    X(P, OUT_IMAGE_Z_SIZE, 1, 0) X(P, ROUNDING_MODE, 1, 0) X(P, OUT_IMAGE_TILE_X_SIZE, 1, 0) \
    X(P, OUT_IMAGE_TILE_Y_SIZE, 1, 0) X(P, KERNEL_ADDRESS, 1, 0) X(P, IN_IMAGE_ADDRESS, 1, 0) \
    X(P, OUT_IMAGE_ADDRESS, 1, 0) X(P, IMAGE_CACHING_MODE, 1, 0) X(P, KERNEL_CACHING_MODE, 1, 0) \
    X(P, PARTIAL_CACHE_DATA_UNIT, 1, 0) X(P, KERNEL_PATTERN_MSB, 1, 0) X(P, KERNEL_Y_SIZE, 1, 0) \
    X(P, OUT_IMAGE_Y_STRIDE, 1, 0) X(P, KERNEL_PATTERN_LOW, 1, 0) X(P, KERNEL_PATTERN_HIGH, 1, 0) \
    X(P, KERNEL_CACHE_START_ADDRESS, 1, 0) X(P, KERNEL_CACHE_END_ADDRESS, 1, 0) \
    X(P, IMAGE_CACHE_START_ADDRESS, 1, 0) X(P, IMAGE_CACHE_END_ADDRESS, 1, 0) X(P, IN_IMAGE_BORDER_MODE, 1, 0) \
    X(P, IN_IMAGE_BORDER_CONST, 1, 0) X(P, IN_IMAGE_X_STRIDE, 1, 0) X(P, IN_IMAGE_Y_STRIDE, 1, 0) \
    X(P, OUT_IMAGE_X_STRIDE, 1, 0) X(P, OUT_IMAGE_CIRCULAR_BUF_SIZE, 1, 0) X(P, PER_CHANNEL_POST_MUL, 1, 0) \
    X(P, OUT_IMAGE_CIRCULAR_BUF_END_ADDR_PLUS_1, 1, 0) X(P, IN_IMAGE_CIRCULAR_BUF_SIZE, 1, 0) \
    X(P, IN_IMAGE_CIRCULAR_BUF_END_ADDR_PLUS_1, 1, 0) X(P, COEF_ZERO_POINT, 1, 0) X(P, OUT_ZERO_POINT, 1, 0) \
    X(P, KERNEL_DIRECT_STREAM_FROM_VIP_SRAM, 1, 0) X(P, FURTHER3, 1, 0) X(P, FURTHER4, 1, 0) \
    X(P, FURTHER5, 1, 0) X(P, POST_SHIFT, 2, 0)

/* Fields with a list of allowed values in the table (teflon.etnaviv.desc). */
#define ETNA_NN_ALLOWED(X, P) \
    X(P, PRELU) X(P, KERNEL_DATA_TYPE) X(P, IN_IMAGE_DATA_TYPE) X(P, OUT_IMAGE_DATA_TYPE) X(P, BRICK_MODE) \
    X(P, BRICK_DISTANCE) X(P, ROUNDING_MODE) X(P, PARTIAL_CACHE_DATA_UNIT) X(P, IN_IMAGE_BORDER_MODE) \
    X(P, OUT_IMAGE_CIRCULAR_BUF_SIZE) X(P, PER_CHANNEL_POST_MUL) X(P, OUT_IMAGE_CIRCULAR_BUF_END_ADDR_PLUS_1) \
    X(P, IN_IMAGE_CIRCULAR_BUF_SIZE) X(P, IN_IMAGE_CIRCULAR_BUF_END_ADDR_PLUS_1) \
    X(P, KERNEL_DIRECT_STREAM_FROM_VIP_SRAM) X(P, FURTHER3) X(P, FURTHER4) X(P, FURTHER5)

enum etna_nn_field {
#define ETNA_X(P, F, N, S) ETNA_NNF_##F,
    ETNA_NN_FIELDS(ETNA_X, _)
#undef ETNA_X
    ETNA_NNF_POST_MULTIPLIER,
    ETNA_NNF_DEPTHWISE,          /* v8 only */
    ETNA_NNF_NEG_OFFSET_FLAG_A,  /* v8 only */
    ETNA_NNF_NEG_OFFSET_FLAG_B,  /* v8 only */
    ETNA_NNF_COUNT
};

#define ETNA_X(P, F, N, S) ETNA_FIELD##N(P, F, S),
static const struct etna_field etna_nn_v7_table[ETNA_NNF_COUNT] = {
    ETNA_NN_FIELDS(ETNA_X, ETNA_NN_V7)
    ETNA_FIELD3(ETNA_NN_V7, POST_MULTIPLIER, 0),
    { "depthwise", 0, 1, 0, { { 0 } } }, { "neg_offset_flag_a", 0, 1, 0, { { 0 } } },
    { "neg_offset_flag_b", 0, 1, 0, { { 0 } } },
};
static const struct etna_field etna_nn_v8_table[ETNA_NNF_COUNT] = {
    ETNA_NN_FIELDS(ETNA_X, ETNA_NN_V8)
    ETNA_FIELD4(ETNA_NN_V8, POST_MULTIPLIER, 0),
    ETNA_FIELD1(ETNA_NN_V8, DEPTHWISE, 0), ETNA_FIELD1(ETNA_NN_V8, NEG_OFFSET_FLAG_A, 0),
    ETNA_FIELD1(ETNA_NN_V8, NEG_OFFSET_FLAG_B, 0),
};
#undef ETNA_X

#define ETNA_DEFMASKS(P) { \
    P##_WORD0__DEFINED_MASK, P##_WORD1__DEFINED_MASK, P##_WORD2__DEFINED_MASK, P##_WORD3__DEFINED_MASK, \
    P##_WORD4__DEFINED_MASK, P##_WORD5__DEFINED_MASK, P##_WORD6__DEFINED_MASK, P##_WORD7__DEFINED_MASK, \
    P##_WORD8__DEFINED_MASK, P##_WORD9__DEFINED_MASK, P##_WORD10__DEFINED_MASK, P##_WORD11__DEFINED_MASK, \
    P##_WORD12__DEFINED_MASK, P##_WORD13__DEFINED_MASK, P##_WORD14__DEFINED_MASK, P##_WORD15__DEFINED_MASK, \
    P##_WORD16__DEFINED_MASK, P##_WORD17__DEFINED_MASK, P##_WORD18__DEFINED_MASK, P##_WORD19__DEFINED_MASK, \
    P##_WORD20__DEFINED_MASK, P##_WORD21__DEFINED_MASK, P##_WORD22__DEFINED_MASK, P##_WORD23__DEFINED_MASK, \
    P##_WORD24__DEFINED_MASK, P##_WORD25__DEFINED_MASK, P##_WORD26__DEFINED_MASK, P##_WORD27__DEFINED_MASK, \
    P##_WORD28__DEFINED_MASK, P##_WORD29__DEFINED_MASK, P##_WORD30__DEFINED_MASK, P##_WORD31__DEFINED_MASK, \
    P##_WORD32__DEFINED_MASK, P##_WORD33__DEFINED_MASK }
static const uint32_t etna_nn_v7_defined[ETNA_NN_WORDS] = ETNA_DEFMASKS(ETNA_NN_V7);
static const uint32_t etna_nn_v8_defined[ETNA_NN_WORDS] = ETNA_DEFMASKS(ETNA_NN_V8);

static int etna_in_list(int64_t v, const uint32_t *list, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if ((int64_t)list[i] == v)
            return 1;
    return 0;
}

/* Returns the first field whose value is not in its allowed list, or -1. */
#define ETNA_CHK(P, F) { \
        static const uint32_t a_[] = P##_##F##__ALLOWED; \
        if (!etna_in_list(v[ETNA_NNF_##F], a_, P##_##F##__NUM_ALLOWED)) \
            return ETNA_NNF_##F; \
    }
static int etna_nn_v7_allowed(const int64_t *v) { ETNA_NN_ALLOWED(ETNA_CHK, ETNA_NN_V7) return -1; }
static int etna_nn_v8_allowed(const int64_t *v) { ETNA_NN_ALLOWED(ETNA_CHK, ETNA_NN_V8) return -1; }
#undef ETNA_CHK

/* The bounded fields' ranges (the table's `bounds`, which the compiler's program check applies too). */
#define ETNA_BND(P, F) [ETNA_NNF_##F] = { 1, P##_##F##__MIN, P##_##F##__MAX },
static const struct etna_bounds etna_nn_v7_bounds[ETNA_NNF_COUNT] = { ETNA_NN_V7__BOUNDED(ETNA_BND, ETNA_NN_V7) };
static const struct etna_bounds etna_nn_v8_bounds[ETNA_NNF_COUNT] = { ETNA_NN_V8__BOUNDED(ETNA_BND, ETNA_NN_V8) };
#undef ETNA_BND

/* ---------------------------------------------------------------------------------------------------- */
/* Bits: LSB-first, stream bit k = bit (k mod 8) of byte k / 8. */

struct etna_bits {
    const uint8_t *p;
    uint64_t nbits, pos;
    int overrun;
};

static uint32_t etna_bits_read(struct etna_bits *b, unsigned width)
{
    if (b->pos + width > b->nbits) {
        b->overrun = 1;
        return 0;
    }
    /* width <= 32 and the bit offset in the first byte <= 7: the value lies in the 8 bytes from pos / 8, read
     * as one little-endian word where the stream has them (a per-byte assembly near its end) */
    const uint64_t at = b->pos >> 3;
    const unsigned sh = (unsigned)(b->pos & 7);
    uint64_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (at + 8 <= (b->nbits + 7) >> 3) {
        memcpy(&v, b->p + at, 8);
    } else
#endif
    {
        const uint64_t nbytes = (b->nbits + 7) >> 3;
        for (unsigned i = 0; i < 8 && at + i < nbytes; i++)
            v |= (uint64_t)b->p[at + i] << (8 * i);
    }
    b->pos += width;
    return (uint32_t)((v >> sh) & (((uint64_t)1 << width) - 1));
}

/* Stream padding must be zero: the simulator refuses content it would not read. */
static int etna_bits_rest_zero(const struct etna_bits *b)
{
    for (uint64_t i = b->pos; i < b->nbits; i++)
        if ((b->p[i >> 3] >> (i & 7)) & 1)
            return 0;
    return 1;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Job geometry and kernels. */

struct etna_nn_job {
    int64_t f[ETNA_NNF_COUNT];
    unsigned version;
    int64_t kx, ky, kz;         /* kernel columns (kernel_xy_size), rows (kernel_y_size), planes */
    int64_t taps;               /* weights per kernel: kx*ky*kz, or kx*ky for v8 depthwise */
    int64_t oc;                 /* out_image_z_size */
    int depthwise, fc;
    unsigned cores;             /* cores used: min(oc, nn_core_count) */
    /* decoded kernels */
    unsigned nkernels;
    int16_t *w;                 /* [nkernels][taps], relative to the weight zero point */
    int32_t *bias;              /* [nkernels] */
    uint32_t *dest;             /* [nkernels]: v7 output byte offset (trailer word); v8 output channel */
    uint64_t coef_bytes;        /* bytes of the coefficient buffer the decoder read (header, streams, bias) */
};

/* v7 weight-token reader (etnaviv.md §3.2): a token is [run: z bits][literal: 8 bits] = run copies of the
 * weight zero point, then the literal; raw 32-bit words may only start at a token boundary. */
struct etna_v7_reader {
    struct etna_bits b;
    unsigned z, zp, run;
    int has_lit;
    unsigned lit;
    int bad;
};

static unsigned etna_v7_weight(struct etna_v7_reader *r)
{
    if (r->z == 0)
        return etna_bits_read(&r->b, 8);
    if (!r->run && !r->has_lit) {
        r->run = etna_bits_read(&r->b, r->z);
        r->lit = etna_bits_read(&r->b, 8);
        r->has_lit = 1;
    }
    if (r->run) {
        r->run--;
        return r->zp;
    }
    r->has_lit = 0;
    return r->lit;
}

static uint32_t etna_v7_raw(struct etna_v7_reader *r)
{
    if (r->run || r->has_lit)
        r->bad = 1;     /* a raw word inside a token: the encoder must flush first */
    return etna_bits_read(&r->b, 32);
}

enum etna_v7_order { ETNA_V7_INTERLEAVED, ETNA_V7_BLOCK6, ETNA_V7_SEQUENTIAL, ETNA_V7_FLAT };

/* Kernel tap order of one plane: row pairs; with `split`, columns 0..2 of both rows, then columns 3.. */
static int64_t *etna_tap_order(int64_t rows, int64_t cols, int split)
{
    int64_t *t = malloc(sizeof(*t) * (size_t)(rows * cols));
    if (!t)
        return NULL;
    int64_t n = 0;
    for (int64_t p = 0; p < (rows + 1) / 2; p++) {
        int64_t r1 = 2 * p + 1 < rows ? 2 * p + 1 : -1;
        int64_t first = split ? 3 : cols;
        for (int64_t r = 2 * p; r >= 0 && r <= (r1 >= 0 ? r1 : 2 * p); r++)
            for (int64_t c = 0; c < first && c < cols; c++)
                t[n++] = r * cols + c;
        if (split)
            for (int64_t r = 2 * p; r >= 0 && r <= (r1 >= 0 ? r1 : 2 * p); r++)
                for (int64_t c = 3; c < cols; c++)
                    t[n++] = r * cols + c;
    }
    return t;
}

static int etna_v7_decode(etna_sim *sim, struct etna_nn_job *j, const uint8_t *cb, uint64_t cb_len)
{
    const unsigned ncores = sim->chip.nn_core_count;
    const uint64_t hdr = (ncores * 4 + 63) / 64 * 64;
    if (cb_len < hdr)
        return etna_fail(sim, "v7 coefficients: buffer too small for the header");
    const uint32_t *sizes = (const uint32_t *)cb;
    for (uint64_t i = 4 * ncores; i < hdr; i++)
        if (cb[i])
            return etna_fail(sim, "v7 coefficients: header padding byte %llu is not zero", (unsigned long long)i);
    const int64_t kpc = (j->oc + j->cores - 1) / j->cores;
    const int64_t kpsb = j->f[ETNA_NNF_KERNELS_PER_CORE];
    if (kpsb > kpc)
        return etna_fail(sim, "v7: kernels_per_core %lld above the %lld kernels of a core", (long long)kpsb,
                         (long long)kpc);
    const int64_t nsb = (kpc + kpsb - 1) / kpsb;
    const int64_t plane_taps = j->kx * j->ky;
    enum etna_v7_order order;
    /* 1x1 kernels with more than 8 kernels are read in blocks of six input channels whatever the input size
     * (Mesa's writer for a pointwise convolution, also over a 1x1 map as MobileNet's classifier runs on A311D);
     * the compiler refuses fully-connected layers whose factorisation would give that same descriptor. */
    if (j->kx == 1 && j->ky == 1 && j->oc > 8)
        order = ETNA_V7_BLOCK6;
    /* TEFLON_SIM_RULES v7_fc_order=conv (board-facts.md fact 6): the hypothesis that this descriptor follows Mesa's
     * conv writers (below) rather than the FC writer's input memory order */
    else if (j->fc && sim->rules.rule[TEFLON_RULE_V7_FC_ORDER] == TEFLON_V7_FC_ORDER_FLAT)
        order = ETNA_V7_FLAT;
    else if (j->kz > 1)
        order = ETNA_V7_INTERLEAVED;
    else
        order = ETNA_V7_SEQUENTIAL;
    /* Column split of the row-pair order: always for planes > 1; for single planes only on wide inputs. */
    int split = j->kx > 3 && (order == ETNA_V7_INTERLEAVED || j->f[ETNA_NNF_IN_IMAGE_Y_SIZE] > 64);
    int64_t *taps = etna_tap_order(j->ky, j->kx, split);
    if (!taps)
        return etna_fail(sim, "out of memory");

    j->nkernels = (unsigned)(j->cores * kpc);
    j->w = calloc((size_t)j->nkernels * (size_t)j->taps, sizeof(*j->w));
    j->bias = calloc(j->nkernels, sizeof(*j->bias));
    j->dest = calloc(j->nkernels, sizeof(*j->dest));
    if (!j->w || !j->bias || !j->dest) {
        free(taps);
        return etna_fail(sim, "out of memory");
    }
    const unsigned zp = (unsigned)j->f[ETNA_NNF_COEF_ZERO_POINT];
    uint64_t off = hdr;
    int rc = 0;
    for (unsigned c = 0; c < ncores && !rc; c++) {
        if (c >= j->cores) {
            if (sizes[c])
                rc = etna_fail(sim, "v7 coefficients: core %u is not used but has a %u-byte stream", c, sizes[c]);
            continue;
        }
        if (sizes[c] == 0 || sizes[c] % 64 || off + sizes[c] > cb_len) {
            rc = etna_fail(sim, "v7 coefficients: core %u stream size %u invalid (must be a non-zero multiple of "
                           "64 inside the buffer)", c, sizes[c]);
            break;
        }
        struct etna_v7_reader r = { { cb + off, (uint64_t)sizes[c] * 8, 0, 0 }, 0, zp, 0, 0, 0, 0 };
        off += sizes[c];
        r.z = etna_bits_read(&r.b, 8);
        unsigned skpc = etna_bits_read(&r.b, 16);
        if (r.z > sim->chip.nn_zrl_bits) {
            rc = etna_fail(sim, "v7 coefficients: core %u zero-run width %u above the chip's %u", c, r.z,
                           sim->chip.nn_zrl_bits);
            break;
        }
        if (skpc != kpc) {
            rc = etna_fail(sim, "v7 coefficients: core %u stream holds %u kernels, the job needs %lld", c, skpc,
                           (long long)kpc);
            break;
        }
        int16_t *wc = j->w + (size_t)c * kpc * j->taps;
        for (int64_t s = 0; s < nsb; s++) {
            const int64_t k0 = s * kpsb, kn = kpc - k0 < kpsb ? kpc - k0 : kpsb;
            if (order == ETNA_V7_INTERLEAVED) {
                for (int64_t z = 0; z < j->kz; z++)
                    for (int64_t k = k0; k < k0 + kn; k++) {
                        int16_t *wk = wc + k * j->taps + z * plane_taps;
                        for (int64_t t = 0; t < plane_taps;) {
                            /* the rest of a zero-point run at once (not before the bias word after tap 0 of plane
                             * 0): weights 0, as calloc left them; the v7 dense depthwise form is mostly such runs */
                            if (r.run && (z || t)) {
                                const int64_t n = (int64_t)r.run < plane_taps - t ? (int64_t)r.run : plane_taps - t;
                                r.run -= (unsigned)n;
                                t += n;
                                continue;
                            }
                            wk[taps[t]] = (int16_t)((int)etna_v7_weight(&r) - (int)zp);
                            if (z == 0 && t == 0)
                                j->bias[c * kpc + k] = (int32_t)etna_v7_raw(&r);
                            t++;
                        }
                        if (z == j->kz - 1)
                            j->dest[c * kpc + k] = etna_v7_raw(&r);
                    }
            } else if (order == ETNA_V7_BLOCK6) {
                const int64_t st = j->kz < 6 ? j->kz : 6, nb = (j->kz + st - 1) / st;
                for (int64_t b = 0; b < nb; b++)
                    for (int64_t k = k0; k < k0 + kn; k++) {
                        int16_t *wk = wc + k * j->taps;
                        for (int64_t i = 0; i < st && b * st + i < j->kz; i++) {
                            wk[b * st + i] = (int16_t)((int)etna_v7_weight(&r) - (int)zp);
                            if (b == 0 && i == 0)
                                j->bias[c * kpc + k] = (int32_t)etna_v7_raw(&r);
                        }
                        if (b == nb - 1)
                            j->dest[c * kpc + k] = etna_v7_raw(&r);
                    }
            } else {
                for (int64_t k = k0; k < k0 + kn; k++) {
                    int16_t *wk = wc + k * j->taps;
                    for (int64_t t = 0; t < j->taps; t++) {
                        wk[order == ETNA_V7_FLAT ? t : taps[t]] = (int16_t)((int)etna_v7_weight(&r) - (int)zp);
                        if (t == 0)
                            j->bias[c * kpc + k] = (int32_t)etna_v7_raw(&r);
                    }
                    j->dest[c * kpc + k] = etna_v7_raw(&r);
                }
            }
        }
        if (r.b.overrun)
            rc = etna_fail(sim, "v7 coefficients: core %u stream ends before its %lld kernels", c, (long long)kpc);
        else if (r.bad || r.run || r.has_lit)
            rc = etna_fail(sim, "v7 coefficients: core %u has a raw bias/offset word inside a zero-run token", c);
        else if (!etna_bits_rest_zero(&r.b))
            rc = etna_fail(sim, "v7 coefficients: core %u has non-zero bits after its last kernel", c);
        else if ((r.b.pos + 511) / 512 * 64 != sizes[c])
            rc = etna_fail(sim, "v7 coefficients: core %u header size %u is not its %llu-bit stream rounded up to "
                           "64 bytes", c, sizes[c], (unsigned long long)r.b.pos);
    }
    free(taps);
    j->coef_bytes = off;
    return rc;
}

/* v8 prefix-code decoding (etnaviv.md §3.3). */
struct etna_v8_code {
    uint8_t part0, sym, free_bit;
};

static int etna_v8_decode_core(etna_sim *sim, struct etna_bits *b, const uint8_t *symmap, uint8_t *out,
                               uint64_t nvalues, unsigned core)
{
    const uint64_t ncodes = nvalues + (nvalues & 1), steps = ncodes / 2 + 2;
    struct etna_v8_code *c = calloc(ncodes + 4, sizeof(*c));
    if (!c)
        return etna_fail(sim, "out of memory");
    for (uint64_t t = 0; t < steps; t++) {
        for (uint64_t i = 2 * t; i < 2 * t + 2; i++)
            c[i].part0 = (uint8_t)etna_bits_read(b, 3);
        if (t >= 1) {
            for (uint64_t i = 2 * t - 2; i < 2 * t; i++) {
                unsigned p = c[i].part0;
                if (i >= ncodes && p != 0 && p != 4) {
                    free(c);
                    return etna_fail(sim, "v8 coefficients: core %u terminating code has part0 %u", core, p);
                }
                if ((p & 3) == 0 || (p & 3) == 1) {
                    c[i].sym = (uint8_t)(p & 1);
                    c[i].free_bit = (uint8_t)(p >> 2);
                } else if (p == 7) {
                    c[i].sym = 2;
                } else if (p == 3) {
                    c[i].sym = 3;
                } else if (p == 6) {
                    c[i].sym = 4;
                } else { /* p == 2: two more bits */
                    unsigned q = etna_bits_read(b, 2);
                    if (q & 1) {
                        c[i].sym = 5;
                        c[i].free_bit = (uint8_t)(q >> 1);
                    } else {
                        c[i].sym = q == 2 ? 6 : 7;
                    }
                }
            }
        }
        if (t >= 2) {
            for (uint64_t i = 2 * t - 4; i < 2 * t - 2; i++) {
                unsigned n = symmap[c[i].sym], len = n ? n : 1, v;
                if (c[i].sym == 0 || c[i].sym == 1 || c[i].sym == 5)
                    v = etna_bits_read(b, len - 1) << 1 | c[i].free_bit;
                else
                    v = etna_bits_read(b, len);
                unsigned s = v & 1, m = n ? (1u << (n - 1)) | (v >> 1) : 0;
                uint8_t byte = (uint8_t)(s ? (m ^ 0xFF) : m);
                if (i < nvalues)
                    out[i] = byte;
                else if (byte != 0) {
                    free(c);
                    return etna_fail(sim, "v8 coefficients: core %u padding code is not zero", core);
                }
            }
        }
    }
    free(c);
    if (b->overrun || b->pos != b->nbits)
        return etna_fail(sim, "v8 coefficients: core %u stream_size %llu bits does not match its content (%llu bits)",
                         core, (unsigned long long)b->nbits, (unsigned long long)b->pos);
    return 0;
}

/* v8 kernel -> output channel distribution (etnaviv.md §3.1): [core][superblock] counts and channels. */
static int etna_v8_channel(const struct etna_nn_job *j, unsigned ncores, int64_t F, int64_t s, unsigned c,
                           int64_t k, int64_t ptr_of_core)
{
    if (!j->depthwise)
        return (int)(ptr_of_core + k);
    int64_t ch = (int64_t)j->cores - c - 1 + (int64_t)j->cores * F * s + k * ncores;
    int64_t tail = j->oc % ncores;
    if (j->oc > 1 && ch >= j->oc - tail)
        ch -= ncores - tail;
    return (int)ch;
}

static int etna_v8_decode(etna_sim *sim, struct etna_nn_job *j, const uint8_t *cb, uint64_t cb_len)
{
    const unsigned ncores = sim->chip.nn_core_count;
    if (ncores > 9)
        return etna_fail(sim, "v8 coefficients: more than 9 NN cores do not fit the 64-byte header");
    if (cb_len < 64)
        return etna_fail(sim, "v8 coefficients: buffer too small for the header");
    if (cb[0] != 0x10)
        return etna_fail(sim, "v8 coefficients: header byte 0 = 0x%02x; only 0x10 (version 1, no precode/16-bit/fp16)"
                         " is modelled", cb[0]);
    for (unsigned i = 1; i < 20; i++)
        if (cb[i])
            return etna_fail(sim, "v8 coefficients: zero-run-length mode (header bytes 1..19) is not modelled");
    uint32_t map = (uint32_t)cb[20] | (uint32_t)cb[21] << 8 | (uint32_t)cb[22] << 16 | (uint32_t)cb[23] << 24;
    uint8_t symmap[8];
    unsigned seen = 0;
    for (unsigned i = 0; i < 8; i++) {
        symmap[i] = (map >> (4 * i)) & 0xF;
        if (symmap[i] > 7 || (seen & (1u << symmap[i])))
            return etna_fail(sim, "v8 coefficients: symbol map 0x%08x is not a permutation of 0..7", map);
        seen |= 1u << symmap[i];
    }
    if (cb[24] || cb[25] || cb[26] || cb[27])
        return etna_fail(sim, "v8 coefficients: avg_bias / reserved header bytes are not modelled (must be 0)");
    const uint32_t *ssize = (const uint32_t *)(cb + 28);
    for (unsigned c = j->cores; c < ncores; c++)
        if (ssize[c])
            return etna_fail(sim, "v8 coefficients: unused core %u has a stream", c);
    for (unsigned i = 28 + 4 * ncores; i < 64; i++)
        if (cb[i])
            return etna_fail(sim, "v8 coefficients: header byte %u is not zero", i);

    const int64_t F = j->f[ETNA_NNF_KERNELS_PER_CORE];
    if (F > (j->oc + j->cores - 1) / j->cores)
        return etna_fail(sim, "v8: kernels_per_core %lld above the largest per-core kernel count", (long long)F);
    const int64_t S = (j->oc + (int64_t)j->cores * F - 1) / ((int64_t)j->cores * F);
    const int64_t R = j->oc - (int64_t)j->cores * (S - 1) * F;
    const int64_t bs = j->depthwise ? (j->taps > 9 ? j->taps : 9) : 9;
    const int64_t dwpad = j->depthwise ? (9 - bs % 9) % 9 : 0;
    const int64_t nblocks = (j->taps + bs - 1) / bs;

    j->nkernels = (unsigned)j->oc;
    j->w = calloc((size_t)j->nkernels * (size_t)j->taps, sizeof(*j->w));
    j->bias = calloc(j->nkernels, sizeof(*j->bias));
    j->dest = calloc(j->nkernels, sizeof(*j->dest));
    uint8_t *covered = calloc((size_t)j->oc, 1);
    if (!j->w || !j->bias || !j->dest || !covered) {
        free(covered);
        return etna_fail(sim, "out of memory");
    }
    const unsigned zp = (unsigned)j->f[ETNA_NNF_COEF_ZERO_POINT];
    uint64_t off = 64;
    int rc = 0;
    unsigned kidx = 0;
    for (unsigned c = 0; c < j->cores && !rc; c++) {
        int64_t count[128], total = 0;
        if (S > 128) {
            rc = etna_fail(sim, "v8: %lld superblocks are not modelled", (long long)S);
            break;
        }
        for (int64_t s = 0; s < S; s++) {
            count[s] = s < S - 1 ? F : R / j->cores + ((int64_t)c < R % j->cores ? 1 : 0);
            total += count[s];
        }
        const uint64_t nvalues = 2 + (uint64_t)total * nblocks * (bs + dwpad);
        const uint64_t bytes = (ssize[c] + 7) / 8, padded = (bytes + 63) / 64 * 64;
        if (ssize[c] == 0 || off + padded > cb_len) {
            rc = etna_fail(sim, "v8 coefficients: core %u stream of %u bits is empty or outside the buffer", c,
                           ssize[c]);
            break;
        }
        uint8_t *vals = malloc(nvalues);
        if (!vals) {
            rc = etna_fail(sim, "out of memory");
            break;
        }
        struct etna_bits b = { cb + off, ssize[c], 0, 0 };
        const struct etna_bits tail = { cb + off, padded * 8, ssize[c], 0 };
        off += padded;
        rc = etna_v8_decode_core(sim, &b, symmap, vals, nvalues, c);
        if (!rc && !etna_bits_rest_zero(&tail))
            rc = etna_fail(sim, "v8 coefficients: core %u has non-zero bits after stream_size", c);
        if (!rc && (vals[0] | vals[1] << 8) != total)
            rc = etna_fail(sim, "v8 coefficients: core %u stream holds %u kernels, the job needs %lld", c,
                           vals[0] | vals[1] << 8, (long long)total);
        /* Superblocks, blocks of bs values, kernels of this core in the superblock. */
        uint64_t at = 2;
        for (int64_t s = 0; s < S && !rc; s++) {
            int64_t ptr = s * F * j->cores;
            for (unsigned cc = 0; cc < c; cc++)
                ptr += s < S - 1 ? F : R / j->cores + ((int64_t)cc < R % j->cores ? 1 : 0);
            for (int64_t blk = 0; blk < nblocks && !rc; blk++)
                for (int64_t k = 0; k < count[s] && !rc; k++) {
                    int ch = etna_v8_channel(j, sim->chip.nn_core_count, F, s, c, k, ptr);
                    if (ch < 0 || ch >= j->oc) {
                        rc = etna_fail(sim, "v8: core %u kernel %lld maps to channel %d outside 0..%lld", c,
                                       (long long)k, ch, (long long)j->oc - 1);
                        break;
                    }
                    for (int64_t i = 0; i < bs + dwpad; i++) {
                        int64_t t = blk * bs + i;
                        const uint8_t d = vals[at++];
                        /* The coded byte is (w - zp) mod 256; the uint8 weight is rebuilt with the
                         * descriptor's zero point and the MAC uses w - zp at full precision. [INFERRED:
                         * the only reading under which Mesa's uint8 weights further than 127 from the
                         * zero point survive; an int8 reading of the delta would wrap them.] */
                        if (t < j->taps && i < bs)
                            j->w[(size_t)ch * j->taps + t] = (int16_t)(((d + zp) & 0xFF) - (int)zp);
                        else if (d)
                            rc = etna_fail(sim, "v8 coefficients: core %u padding weight is not zero", c);
                    }
                    if (blk == 0) {
                        if (covered[ch]++)
                            rc = etna_fail(sim, "v8: output channel %d is computed by two kernels", ch);
                        j->dest[ch] = (uint32_t)ch;
                        kidx++;
                    }
                }
        }
        free(vals);
    }
    if (!rc && kidx != j->oc)
        rc = etna_fail(sim, "v8: the kernel distribution covers %u of %lld output channels", kidx, (long long)j->oc);
    free(covered);
    if (rc)
        return rc;
    /* Bias table after the last stream, in channel order. */
    if (off + 4 * (uint64_t)j->oc > cb_len)
        return etna_fail(sim, "v8 coefficients: bias table outside the buffer");
    for (int64_t ch = 0; ch < j->oc; ch++)
        memcpy(&j->bias[ch], cb + off + 4 * ch, 4);
    j->coef_bytes = off + 4 * (uint64_t)j->oc;
    return 0;
}

/* ---------------------------------------------------------------------------------------------------- */

static int etna_nn_validate(etna_sim *sim, struct etna_nn_job *j, uint32_t iova)
{
    const int64_t *f = j->f;
    const int v8 = j->version == 8;
    if (f[ETNA_NNF_LAYER_TYPE] != 0)
        return etna_fail(sim, "NN 0x%08x: layer_type %lld: only 0 is modelled", iova, (long long)f[ETNA_NNF_LAYER_TYPE]);
    if (f[ETNA_NNF_NN_LAYER_FLUSH] != 1)
        return etna_fail(sim, "NN 0x%08x: nn_layer_flush = 0 is not modelled", iova);
    if (f[ETNA_NNF_NO_Z_OFFSET] != v8 || f[ETNA_NNF_NO_FLUSH] != v8)
        return etna_fail(sim, "NN 0x%08x: no_z_offset %lld / no_flush %lld: only %d/%d is modelled on v%u", iova,
                         (long long)f[ETNA_NNF_NO_Z_OFFSET], (long long)f[ETNA_NNF_NO_FLUSH], v8, v8, j->version);
    const int64_t pool = f[ETNA_NNF_POOLING], pxy = f[ETNA_NNF_POOLING_XY_SIZE];
    if (!((pool == 0 && pxy == 1) || (pool == 3 && pxy == 0)))
        return etna_fail(sim, "NN 0x%08x: pooling %lld with pooling_xy_size %lld: only none (0, 1) and first pixel "
                         "(3, 0) are modelled", iova, (long long)pool, (long long)pxy);
    const int64_t sram = sim->chip.on_chip_sram_size;
    if (f[ETNA_NNF_KERNEL_CACHING_MODE] &&
        (f[ETNA_NNF_KERNEL_CACHE_START_ADDRESS] >= f[ETNA_NNF_KERNEL_CACHE_END_ADDRESS] ||
         f[ETNA_NNF_KERNEL_CACHE_END_ADDRESS] > sram))
        return etna_fail(sim, "NN 0x%08x: kernel cache 0x%llx..0x%llx is not a range inside the 0x%llx-byte SRAM", iova,
                         (long long)f[ETNA_NNF_KERNEL_CACHE_START_ADDRESS],
                         (long long)f[ETNA_NNF_KERNEL_CACHE_END_ADDRESS], (long long)sram);
    if (f[ETNA_NNF_IMAGE_CACHING_MODE] &&
        (f[ETNA_NNF_IMAGE_CACHE_START_ADDRESS] >= f[ETNA_NNF_IMAGE_CACHE_END_ADDRESS] ||
         f[ETNA_NNF_IMAGE_CACHE_END_ADDRESS] > sram))
        return etna_fail(sim, "NN 0x%08x: image cache range is not inside the SRAM", iova);
    if (!f[ETNA_NNF_IMAGE_CACHING_MODE] && f[ETNA_NNF_IMAGE_CACHE_START_ADDRESS] > f[ETNA_NNF_IMAGE_CACHE_END_ADDRESS])
        return etna_fail(sim, "NN 0x%08x: image cache start above its end", iova);
    if (v8) {
        int neg = f[ETNA_NNF_IN_IMAGE_X_OFFSET] != 0 || f[ETNA_NNF_IN_IMAGE_Y_OFFSET] != 0;
        if (f[ETNA_NNF_NEG_OFFSET_FLAG_A] != neg || f[ETNA_NNF_NEG_OFFSET_FLAG_B] != neg)
            return etna_fail(sim, "NN 0x%08x: word 18 bits 29/30 (%lld/%lld) with input offsets (%lld, %lld): only "
                             "'set exactly when an offset is programmed' is characterised", iova,
                             (long long)f[ETNA_NNF_NEG_OFFSET_FLAG_A], (long long)f[ETNA_NNF_NEG_OFFSET_FLAG_B],
                             (long long)f[ETNA_NNF_IN_IMAGE_X_OFFSET], (long long)f[ETNA_NNF_IN_IMAGE_Y_OFFSET]);
    }
    if (f[ETNA_NNF_IN_IMAGE_X_STRIDE] < f[ETNA_NNF_IN_IMAGE_X_SIZE] ||
        f[ETNA_NNF_IN_IMAGE_Y_STRIDE] < f[ETNA_NNF_IN_IMAGE_Y_SIZE])
        return etna_fail(sim, "NN 0x%08x: input strides %lldx%lld smaller than the image %lldx%lld", iova,
                         (long long)f[ETNA_NNF_IN_IMAGE_X_STRIDE], (long long)f[ETNA_NNF_IN_IMAGE_Y_STRIDE],
                         (long long)f[ETNA_NNF_IN_IMAGE_X_SIZE], (long long)f[ETNA_NNF_IN_IMAGE_Y_SIZE]);
    const int pooled = pool == 3;
    const int64_t ow = f[ETNA_NNF_OUT_IMAGE_X_SIZE], oh = f[ETNA_NNF_OUT_IMAGE_Y_SIZE];
    if (pooled && (ow % 2 || oh % 2))
        return etna_fail(sim, "NN 0x%08x: first-pixel pooling of an odd-sized output %lldx%lld", iova, (long long)ow,
                         (long long)oh);
    const int64_t wow = pooled ? ow / 2 : ow, woh = pooled ? oh / 2 : oh;
    if (f[ETNA_NNF_OUT_IMAGE_X_STRIDE] < wow || f[ETNA_NNF_OUT_IMAGE_Y_STRIDE] < woh)
        return etna_fail(sim, "NN 0x%08x: output strides %lldx%lld smaller than the written output %lldx%lld", iova,
                         (long long)f[ETNA_NNF_OUT_IMAGE_X_STRIDE], (long long)f[ETNA_NNF_OUT_IMAGE_Y_STRIDE],
                         (long long)wow, (long long)woh);
    if (j->depthwise && j->fc)
        return etna_fail(sim, "NN 0x%08x: depthwise fully-connected shape", iova);
    return 0;
}

/* The reference MAC loop of one kernel: every tap, zero weights included (the fast loop must match it). */
static void etna_mac_reference(const struct etna_nn_job *j, unsigned k, const int16_t *pad, int64_t pw, int64_t ph,
                               int64_t ow, int64_t oh, int32_t *acc /* row pitch pw */)
{
    const int16_t *wk = j->w + (size_t)k * j->taps;
    const int64_t plane_taps = j->kx * j->ky;
    /* v8 depthwise: kernel of channel c reads plane c only. */
    const int64_t z0 = j->depthwise ? j->dest[k] : 0, nz = j->depthwise ? 1 : j->kz;
    for (int64_t z = 0; z < nz; z++)
        for (int64_t a = 0; a < j->ky; a++)
            for (int64_t b = 0; b < j->kx; b++) {
                const int32_t wv = wk[z * plane_taps + a * j->kx + b];
                if (!wv)
                    continue;
                for (int64_t y = 0; y < oh; y++) {
                    const int16_t *src = pad + ((z0 + z) * ph + y + a) * pw + b;
                    int32_t *dst = acc + y * pw;
                    for (int64_t x = 0; x < ow; x++)
                        dst[x] += wv * src[x];
                }
            }
}

/* Growable arrays of the block builder. */
static int etna_grow(void **p, uint64_t *cap, uint64_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    uint64_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, (size_t)c * size);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* Appends one block: kernels k0 .. k0 + nk - 1 with block width kb, reading the taps t of `use` (ntaps of them,
 * in order) whose offsets are tap t of kernel k0's plane origin z0 (every kernel of a block shares it). */
static int etna_block_add(struct etna_nn_kernels *kn, uint64_t *cap_blk, uint64_t *cap_off, uint64_t *cap_w,
                          const struct etna_nn_job *j, unsigned k0, unsigned nk, unsigned kb, const int64_t *use,
                          uint64_t ntaps, int64_t pw, int64_t ph)
{
    const uint64_t np = (ntaps + 1) / 2;
    if (etna_grow((void **)&kn->blk, cap_blk, kn->nblk + 1u, sizeof(*kn->blk)) ||
        etna_grow((void **)&kn->off, cap_off, 2 * (kn->npairs + np), sizeof(*kn->off)) ||
        etna_grow((void **)&kn->w, cap_w, kn->nw + 2 * np * kb, sizeof(*kn->w)))
        return -1;
    kn->blk[kn->nblk++] = (struct etna_nn_block){ k0, nk, kb, kn->npairs, np, kn->nw };
    const int64_t plane_taps = j->kx * j->ky;
    const int64_t z0 = j->depthwise ? j->dest[k0] : 0;
    int64_t *off = kn->off + 2 * kn->npairs;
    int16_t *w = kn->w + kn->nw;
    for (uint64_t i = 0; i < 2 * np; i++) {
        /* an odd count's last pair repeats the last tap with weight 0 */
        const int64_t t = use[i < ntaps ? i : ntaps - 1];
        const int64_t z = t / plane_taps, a = t % plane_taps / j->kx, b = t % j->kx;
        off[i] = ((z0 + z) * ph + a) * pw + b;
        for (unsigned k = 0; k < kb; k++)
            w[(i / 2) * 2 * kb + 2 * k + i % 2] = i < ntaps && k < nk ? j->w[(size_t)(k0 + k) * j->taps + t] : 0;
    }
    kn->npairs += np;
    kn->nw += 2 * np * kb;
    return 0;
}

/* The decoded kernels of `j` as blocks for padded planes `pw` x `ph` (struct etna_dot_ops). ETNA_DOT_KB
 * consecutive kernels share one block, over the union of their non-zero taps, when that costs less than one
 * block per kernel over its own non-zero taps (a block of ETNA_DOT_KB kernels does their pairs at about 2.5 times
 * the cost of a one-kernel block's: the v7 dense depthwise form, one non-zero plane per kernel, and v8 depthwise
 * kernels, each on its own plane, go one kernel per block). */
static int etna_nn_kernels_build(etna_sim *sim, const struct etna_nn_job *j, int64_t pw, int64_t ph,
                                 struct etna_nn_kernels *kn)
{
    memset(kn, 0, sizeof(*kn));
    kn->n = j->nkernels;
    kn->bias = malloc(sizeof(*kn->bias) * (j->nkernels + 1u));
    kn->dest = malloc(sizeof(*kn->dest) * (j->nkernels + 1u));
    int64_t *use = malloc(sizeof(*use) * (size_t)(j->taps + 1));
    uint64_t cap_blk = 0, cap_off = 0, cap_w = 0;
    int rc = !kn->bias || !kn->dest || !use;
    if (!rc) {
        memcpy(kn->bias, j->bias, sizeof(*kn->bias) * j->nkernels);
        memcpy(kn->dest, j->dest, sizeof(*kn->dest) * j->nkernels);
    }
    for (unsigned k0 = 0; k0 < j->nkernels && !rc; k0 += ETNA_DOT_KB) {
        const unsigned nk = j->nkernels - k0 < ETNA_DOT_KB ? j->nkernels - k0 : ETNA_DOT_KB;
        uint64_t nuse = 0, nz = 0;
        for (int64_t t = 0; t < j->taps; t++) {
            int any = 0;
            for (unsigned k = 0; k < nk; k++) {
                const int v = j->w[(size_t)(k0 + k) * j->taps + t] != 0;
                nz += (uint64_t)v;
                any |= v;
            }
            if (any)
                use[nuse++] = t;
        }
        kn->nz += nz;
        if (!j->depthwise && nk > 1 && 5 * nuse <= 2 * nz) {
            rc = etna_block_add(kn, &cap_blk, &cap_off, &cap_w, j, k0, nk, ETNA_DOT_KB, use, nuse, pw, ph);
            continue;
        }
        for (unsigned k = k0; k < k0 + nk && !rc; k++) {
            const int16_t *wk = j->w + (size_t)k * j->taps;
            nuse = 0;
            for (int64_t t = 0; t < j->taps; t++)
                if (wk[t])
                    use[nuse++] = t;
            rc = etna_block_add(kn, &cap_blk, &cap_off, &cap_w, j, k, 1, 1, use, nuse, pw, ph);
        }
    }
    free(use);
    if (rc) {
        etna_nn_kernels_free(kn);
        return etna_fail(sim, "out of memory");
    }
    return 0;
}

/* Grows a scratch buffer to at least `need` bytes (contents not kept). */
static int etna_scratch(void **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    free(*buf);
    *buf = malloc(need);
    *cap = *buf ? need : 0;
    return *buf ? 0 : -1;
}

/* Requantizes kernel k's accumulators (row pitch out_x + kx - 1) into its output plane at `dest` (v7: byte offset
 * from the output address, v8: channel), with the output DMA counted. */
static int etna_nn_emit(etna_sim *sim, const struct etna_nn_job *j, uint32_t iova, unsigned k, uint32_t dest,
                        const int32_t *acc, etna_dot_requant_fn *requant)
{
    const int64_t *f = j->f;
    const int v8 = j->version == 8;
    const int64_t ow = f[ETNA_NNF_OUT_IMAGE_X_SIZE], oh = f[ETNA_NNF_OUT_IMAGE_Y_SIZE], pw = ow + j->kx - 1;
    const int pooled = f[ETNA_NNF_POOLING] == 3;
    const int64_t wow = pooled ? ow / 2 : ow, woh = pooled ? oh / 2 : oh;
    const int64_t oxs = f[ETNA_NNF_OUT_IMAGE_X_STRIDE], oplane = oxs * f[ETNA_NNF_OUT_IMAGE_Y_STRIDE];
    const uint32_t out_addr = (uint32_t)f[ETNA_NNF_OUT_IMAGE_ADDRESS];
    const int64_t mult = f[ETNA_NNF_POST_MULTIPLIER] + (v8 ? (1 << 23) : (1 << 15));
    const unsigned shift = (unsigned)(f[ETNA_NNF_POST_SHIFT] + (v8 ? 23 : 0));
    const int32_t ozp = (int32_t)f[ETNA_NNF_OUT_ZERO_POINT];
    const int32_t lo = f[ETNA_NNF_RELU] ? ozp : 0;
    uint64_t dest_off;
    if (v8) {
        dest_off = (uint64_t)dest * oplane;
    } else {
        dest_off = dest;
        if (dest_off % oplane)
            return etna_fail(sim, "NN 0x%08x: kernel %u output offset %u is not a multiple of the output plane %lld",
                             iova, k, dest, (long long)oplane);
    }
    const uint64_t out_len = (uint64_t)(woh - 1) * oxs + wow;
    uint8_t *out = etna_mem_span(sim, (uint64_t)out_addr + dest_off, out_len);
    if (!out)
        return etna_fail(sim, "NN 0x%08x: kernel %u output 0x%08llx+%llu is not inside one BO", iova, k,
                         (unsigned long long)out_addr + dest_off, (unsigned long long)out_len);
    sim->stats.macs += (uint64_t)(ow * oh) * (uint64_t)j->taps;
    /* The output DMA: one burst per written row of the kernel's plane (inside the extent checked above). Rows
     * that follow each other in both the accumulators and the plane (1-column kernels, unpooled, rows not
     * padded) are requantized in one call. */
    if (!pooled && pw == ow && oxs == ow && !sim->verifying) {
        etna_mem_count(sim, ETNA_DMA_WRITE, (uint64_t)(wow * woh));
        requant(acc, 1, wow * woh, mult, shift, ozp, lo, out);
        return 0;
    }
    /* TEFLON_SIM_REFERENCE=check's reference pass: each row into scratch, compared with what the fast path wrote
     * (the counters are restored by the caller) */
    uint8_t *row = sim->verifying ? malloc((size_t)wow) : NULL;
    if (sim->verifying && !row)
        return etna_fail(sim, "out of memory");
    int rc = 0;
    for (int64_t y = 0; y < woh && !rc; y++) {
        etna_mem_count(sim, ETNA_DMA_WRITE, (uint64_t)wow);
        uint8_t *dst = row ? row : out + y * oxs;
        requant(acc + (pooled ? 2 * y : y) * pw, pooled ? 2 : 1, wow, mult, shift, ozp, lo, dst);
        for (int64_t x = 0; row && x < wow && !rc; x++)
            if (row[x] != out[y * oxs + x])
                rc = etna_fail(sim, "NN 0x%08x: kernel %u, row %lld, column %lld: the fast path wrote %u, the "
                               "reference path computes %u", iova, k, (long long)y, (long long)x,
                               out[y * oxs + x], row[x]);
    }
    free(row);
    return rc;
}

/* Runs the job: `kn` NULL takes the reference loop over j's dense weights, else the fast loop over kn. */
static int etna_nn_compute(etna_sim *sim, const struct etna_nn_job *j, const struct etna_nn_kernels *kn,
                           uint32_t iova)
{
    const int64_t *f = j->f;
    const int v8 = j->version == 8;
    const int64_t ow = f[ETNA_NNF_OUT_IMAGE_X_SIZE], oh = f[ETNA_NNF_OUT_IMAGE_Y_SIZE];
    const int64_t ix = f[ETNA_NNF_IN_IMAGE_X_SIZE], iy = f[ETNA_NNF_IN_IMAGE_Y_SIZE];
    const int64_t xs = f[ETNA_NNF_IN_IMAGE_X_STRIDE], plane = xs * f[ETNA_NNF_IN_IMAGE_Y_STRIDE];
    const int64_t xo = f[ETNA_NNF_IN_IMAGE_X_OFFSET], yo = f[ETNA_NNF_IN_IMAGE_Y_OFFSET];
    const uint32_t in_addr = (uint32_t)f[ETNA_NNF_IN_IMAGE_ADDRESS];
    const uint64_t in_len = (uint64_t)(j->kz - 1) * plane + (uint64_t)(iy - 1) * xs + ix;
    const uint8_t *in = etna_mem_span(sim, in_addr, in_len);
    if (!in)
        return etna_fail(sim, "NN 0x%08x: input 0x%08x+%llu is not inside one BO", iova, in_addr,
                         (unsigned long long)in_len);

    /* Input planes with the border, relative to the MAC's input offset: v7 multiplies the raw uint8
     * activation, v8 the activation - 128 (etnaviv.md §3.3 bias correction). Held as int16 (-128..255). */
    const int32_t centre = v8 ? 128 : 0;
    const int16_t border = (int16_t)(f[ETNA_NNF_IN_IMAGE_BORDER_CONST] - centre);
    const int64_t pw = ow + j->kx - 1, ph = oh + j->ky - 1;
    /* accumulators: row pitch pw, so that each tap is one contiguous run over every output row (the kx - 1
     * columns past each row's end are accumulated too and never written out); one plane per kernel of a block,
     * rounded up to the MAC kernels' step, which also read up to ETNA_DOT_PX elements past the planes */
    const int64_t astride = (pw * oh + ETNA_DOT_PX - 1) / ETNA_DOT_PX * ETNA_DOT_PX;
    const size_t npad = (size_t)(j->kz * pw * ph);
    /* the simulator's scratch buffers, grown to the largest job (fresh pages on every job cost more than its
     * MACs for the small ones) */
    if (etna_scratch(&sim->scratch_pad, &sim->scratch_pad_cap, sizeof(int16_t) * (npad + ETNA_DOT_PX)) ||
        etna_scratch(&sim->scratch_acc, &sim->scratch_acc_cap, sizeof(int32_t) * (size_t)(ETNA_DOT_KB * astride)))
        return etna_fail(sim, "out of memory");
    int16_t *pad = sim->scratch_pad;
    int32_t *acc = sim->scratch_acc;
    /* The input DMA: one burst per plane row, of the columns the padded window covers (every row lies inside the
     * span checked above, so the bytes are counted without looking the BO up again). */
    const int64_t xa = xo > 0 ? xo : 0, xb = pw + xo < ix ? pw + xo : ix;
    const int64_t pa = xb > xa ? xa - xo : pw, pb = xb > xa ? xb - xo : pw; /* padded columns read from memory */
    memset(pad + npad, 0, sizeof(*pad) * ETNA_DOT_PX);
    /* planes that are whole input planes, one after the other (no border, no offset, rows and planes unpadded):
     * one conversion; the same bytes counted as the row bursts below would */
    const int whole = pa == 0 && pb == pw && xa == 0 && xs == pw && yo == 0 && ph <= iy && plane == pw * ph;
    if (whole) {
        for (size_t i = 0; i < npad; i++)
            pad[i] = (int16_t)((int32_t)in[i] - centre);
        etna_mem_count(sim, ETNA_DMA_FEATURE, (uint64_t)npad);
    }
    for (int64_t z = 0; !whole && z < j->kz; z++)
        for (int64_t py = 0; py < ph; py++) {
            const int64_t y = py + yo;
            int16_t *prow = pad + (z * ph + py) * pw;
            if (y < 0 || y >= iy || xb <= xa) {
                for (int64_t px = 0; px < pw; px++)
                    prow[px] = border;
                continue;
            }
            const uint8_t *row = in + z * plane + y * xs + xa;
            etna_mem_count(sim, ETNA_DMA_FEATURE, (uint64_t)(xb - xa));
            for (int64_t px = 0; px < pa; px++)
                prow[px] = border;
            for (int64_t px = pa; px < pb; px++)
                prow[px] = (int16_t)((int32_t)row[px - pa] - centre);
            for (int64_t px = pb; px < pw; px++)
                prow[px] = border;
        }

    const int64_t run = (oh - 1) * pw + ow;
    /* MACs with a non-zero weight: counted from the decoded kernels (kept with them on the fast path) */
    uint64_t nz = kn ? kn->nz : 0;
    for (size_t i = 0; !kn && i < (size_t)j->nkernels * (size_t)j->taps; i++)
        nz += j->w[i] != 0;
    sim->stats.macs_nz += (uint64_t)(ow * oh) * nz;
    int rc = 0;
    if (kn) {
        for (unsigned bi = 0; bi < kn->nblk && !rc; bi++) {
            const struct etna_nn_block *bl = kn->blk + bi;
            int32_t bias[ETNA_DOT_KB] = { 0 };
            memcpy(bias, kn->bias + bl->k0, sizeof(*bias) * bl->nk);
            sim->dot->mac(bl->kb, pad, kn->off + 2 * bl->pair0, kn->w + bl->wpos, bl->npairs, bias, run, acc, astride);
            for (unsigned k = 0; k < bl->nk && !rc; k++)
                rc = etna_nn_emit(sim, j, iova, bl->k0 + k, kn->dest[bl->k0 + k], acc + k * astride,
                                  sim->dot->requant);
        }
    } else {
        for (unsigned k = 0; k < j->nkernels && !rc; k++) {
            for (int64_t i = 0; i < pw * oh; i++)
                acc[i] = j->bias[k];
            etna_mac_reference(j, k, pad, pw, ph, ow, oh, acc);
            rc = etna_nn_emit(sim, j, iova, k, j->dest[k], acc, etna_dot_requant_c);
        }
    }
    return rc;
}

int etna_nn_run(etna_sim *sim, uint32_t desc_iova)
{
    const uint32_t *w = (const uint32_t *)etna_mem_span(sim, desc_iova, ETNA_NN_WORDS * 4);
    if (!w)
        return etna_fail(sim, "NN descriptor 0x%08x is not inside a BO", desc_iova);
    struct etna_nn_job j;
    memset(&j, 0, sizeof(j));
    j.version = sim->chip.version;
    const int v8 = j.version == 8;
    const uint32_t *defined = v8 ? etna_nn_v8_defined : etna_nn_v7_defined;
    const struct etna_field *table = v8 ? etna_nn_v8_table : etna_nn_v7_table;
    for (unsigned i = 0; i < ETNA_NN_WORDS; i++)
        if (w[i] & ~defined[i])
            return etna_fail(sim, "NN descriptor 0x%08x word %u = 0x%08x sets bits 0x%08x no v%u field defines",
                             desc_iova, i, w[i], w[i] & ~defined[i], j.version);
    for (unsigned i = 0; i < ETNA_NNF_COUNT; i++)
        j.f[i] = table[i].nparts ? etna_field_get(w, &table[i]) : 0;
    int bad = v8 ? etna_nn_v8_allowed(j.f) : etna_nn_v7_allowed(j.f);
    if (bad >= 0)
        return etna_fail(sim, "NN descriptor 0x%08x: %s = %lld is not a modelled value", desc_iova, table[bad].name,
                         (long long)j.f[bad]);
    bad = etna_out_of_bounds(j.f, v8 ? etna_nn_v8_bounds : etna_nn_v7_bounds, ETNA_NNF_COUNT);
    if (bad >= 0) {
        const struct etna_bounds *b = (v8 ? etna_nn_v8_bounds : etna_nn_v7_bounds) + bad;
        return etna_fail(sim, "NN descriptor 0x%08x: %s = %lld outside %lld..%lld", desc_iova, table[bad].name,
                         (long long)j.f[bad], (long long)b->min, (long long)b->max);
    }
    j.kx = j.f[ETNA_NNF_KERNEL_XY_SIZE];
    j.ky = j.f[ETNA_NNF_KERNEL_Y_SIZE];
    j.kz = j.f[ETNA_NNF_KERNEL_Z_SIZE];
    j.oc = j.f[ETNA_NNF_OUT_IMAGE_Z_SIZE];
    j.depthwise = (int)j.f[ETNA_NNF_DEPTHWISE];
    /* Fully connected: the kernel covers the whole unpadded input and the output is one pixel. Its weights
     * are stored in input memory order (etnaviv.md §1.3 FC, §3.2 sequential writer). [INFERRED] */
    j.fc = j.f[ETNA_NNF_OUT_IMAGE_X_SIZE] == 1 && j.f[ETNA_NNF_OUT_IMAGE_Y_SIZE] == 1 &&
           j.kx == j.f[ETNA_NNF_IN_IMAGE_X_SIZE] && j.ky == j.f[ETNA_NNF_IN_IMAGE_Y_SIZE] &&
           j.f[ETNA_NNF_IN_IMAGE_X_OFFSET] == 0 && j.f[ETNA_NNF_IN_IMAGE_Y_OFFSET] == 0 && !j.depthwise;
    j.taps = j.kx * j.ky * (j.depthwise ? 1 : j.kz);
    j.cores = (unsigned)(j.oc < sim->chip.nn_core_count ? j.oc : sim->chip.nn_core_count);
    if (etna_nn_validate(sim, &j, desc_iova))
        return -1;

    const uint32_t kaddr = (uint32_t)j.f[ETNA_NNF_KERNEL_ADDRESS] << 6;
    const struct etna_bo *cbo = etna_mem_bo(sim, kaddr);
    if (!cbo)
        return etna_fail(sim, "NN descriptor 0x%08x: coefficient address 0x%08x is not inside a BO", desc_iova, kaddr);
    const uint8_t *cb = cbo->map + (kaddr - cbo->iova);
    const uint64_t cb_len = (uint64_t)cbo->iova + cbo->size - kaddr;
    uint64_t coef_len = 0;
    const struct etna_nn_kernels *kn =
        sim->reference ? NULL : etna_nn_cache_find(sim, desc_iova, w, kaddr, cb, cb_len, &coef_len);
    if (kn && !sim->check) { /* the same descriptor and coefficient bytes as a run already decoded: the same fetch */
        etna_mem_access(sim, ETNA_DMA_WEIGHT, kaddr, coef_len);
        return etna_nn_compute(sim, &j, kn, desc_iova);
    }
    int rc = v8 ? etna_v8_decode(sim, &j, cb, cb_len) : etna_v7_decode(sim, &j, cb, cb_len);
    /* the coefficient fetch: the bytes the decoder consumed, one burst from the kernel address */
    if (!rc)
        etna_mem_access(sim, ETNA_DMA_WEIGHT, kaddr, j.coef_bytes);
    struct etna_nn_kernels built;
    memset(&built, 0, sizeof(built));
    if (!rc && !sim->reference && !kn) {
        const int64_t pw = j.f[ETNA_NNF_OUT_IMAGE_X_SIZE] + j.kx - 1, ph = j.f[ETNA_NNF_OUT_IMAGE_Y_SIZE] + j.ky - 1;
        rc = etna_nn_kernels_build(sim, &j, pw, ph, &built);
        if (!rc) {
            kn = etna_nn_cache_put(sim, desc_iova, w, kaddr, cb, j.coef_bytes, &built);
            if (!kn)
                kn = &built;
        }
    }
    if (!rc)
        rc = etna_nn_compute(sim, &j, kn, desc_iova);
    if (!rc && sim->check) { /* the reference loop over the same job, compared, not written or counted */
        const struct etna_sim_stats counted = sim->stats;
        sim->verifying = 1;
        rc = etna_nn_compute(sim, &j, NULL, desc_iova);
        sim->verifying = 0;
        sim->stats = counted;
    }
    etna_nn_kernels_free(&built);
    free(j.w);
    free(j.bias);
    free(j.dest);
    return rc;
}
