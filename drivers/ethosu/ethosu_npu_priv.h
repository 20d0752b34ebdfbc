/* The simulated Ethos-U65 NPU, internals shared by its source files (docs/hardware/ethosu-sim.md).
 *
 * The run keeps the register file exactly as the command stream wrote it (cmd0: the 16-bit param, cmd1: the
 * 40-bit value param[7:0]:payload) and decodes the fields an operation needs when it is kicked off, the way the
 * hardware latches its registers at NPU_OP_*.
 */
#ifndef ETHOSU_NPU_PRIV_H
#define ETHOSU_NPU_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ethosu_npu.h"
#include "ethosu_npu_cmds.h"

/* SHRAM of the U65-256: CONFIG.shram_size = 0x30 (48 KiB) in the CONFIG image Vela writes for ethos-u65-256
 * (docs/hardware/ethosu-sim.md, "SHRAM"). DMA may write it; the LUT activations read it. */
#define ETHOSU_NPU_SHRAM_SIZE (48u * 1024u)

/* Weight decoding: one call per convolution, returning the op's weights as int16 in OHWI order (depthwise:
 * O = channels, I = 1). The default is the built-in decoder of the weight stream (ethosu_npu_weights.c);
 * tests may hand in another one. */
struct ethosu_npu_wdesc {
    const uint8_t *stream; /* the bytes WEIGHT_BASE..+WEIGHT_LENGTH of WEIGHT_REGION */
    size_t len;
    int ofm_depth, kh, kw, ifm_depth; /* kernel taps (dilation removed) */
    int ofm_block_depth;              /* OFM_BLK_DEPTH_M1 + 1: the encoder's OFM block */
    int ifm_bits;                     /* 8 or 16 */
    bool depthwise, part_kernel;      /* weight order: KERNEL_STRIDE.weight_order */
    int dilation_x, dilation_y;       /* 1 or 2 */
    int decomposition;                /* sub-kernel size the encoder split the kernel into: 8 (D8X8) or 4 */
};
typedef int (*ethosu_npu_wdecode_fn)(void *ctx, const struct ethosu_npu_wdesc *d, int16_t *ohwi, char *err,
                                     size_t errlen);

/* A convolution or depthwise operation as kicked off, for a replacement datapath (ethosu_npu_opts.conv). */
struct ethosu_npu_fm;
struct ethosu_npu_out;
struct ethosu_npu_kgeom;
struct ethosu_npu_conv_op {
    bool depthwise;
    const struct ethosu_npu_kgeom *g;
    const struct ethosu_npu_fm *ifm, *ofm;
    const struct ethosu_npu_out *out;
    const struct ethosu_npu_wdesc *wd; /* the weight stream and the geometry its decoder needs */
};
/* Returned by a conv hook that leaves the operation to the reference datapath. */
#define ETHOSU_NPU_DECLINED 1
struct ethosu_npu;
/* Runs the operation: 0, a negative errno with the message in err, or ETHOSU_NPU_DECLINED. */
typedef int (*ethosu_npu_conv_fn)(void *ctx, const struct ethosu_npu_conv_op *op, char *err, size_t errlen);

struct ethosu_npu_opts {
    ethosu_npu_wdecode_fn decode_weights; /* NULL: the built-in decoder */
    void *decode_ctx;
    const struct teflon_sim_rules *rules; /* NULL: every open fact's default hypothesis */
    /* NULL: every convolution through the reference MAC loop below (ethosu_npu_conv.c); otherwise tried first
     * (the simulated kernel's fast datapath, drivers/ethosu/ethosu_fast.c) */
    ethosu_npu_conv_fn conv;
    void *conv_ctx;
};

/* Runs like ethosu_npu_run, with the weight decoder of opts (NULL opts: defaults). */
int ethosu_npu_run_opts(const struct ethosu_npu_region regions[ETHOSU_NPU_REGIONS], const uint32_t *cmds,
                        size_t nwords, struct ethosu_npu_stats *stats, char *err, size_t errlen,
                        const struct ethosu_npu_opts *opts);

/* A feature map as its registers describe it (IFM, IFM2 or OFM). */
struct ethosu_npu_fm {
    int region;
    uint64_t base[4];      /* tile bases BASE0..3 */
    int height0, height1;  /* HEIGHT0_M1 + 1, HEIGHT1_M1 + 1 */
    int width0;            /* WIDTH0_M1 + 1 */
    uint64_t sx, sy, sc;   /* STRIDE_X / Y / C in bytes */
    int bytes;             /* element size: 1, 2 or 4 */
    bool is_signed;
    bool brick;            /* NHCWB16 */
    int32_t zero_point;
    int h, w, c;           /* the extent the operation addresses */
    uint8_t *mem;          /* region base */
    uint64_t memsize;
};

struct ethosu_npu {
    const struct ethosu_npu_region *regions;
    uint16_t p0[ETHOSU_NPU_OPCODES]; /* cmd0 params */
    uint64_t p1[ETHOSU_NPU_OPCODES]; /* cmd1 values */
    uint8_t set0[ETHOSU_NPU_OPCODES], set1[ETHOSU_NPU_OPCODES];
    uint8_t *shram;                  /* ETHOSU_NPU_SHRAM_SIZE bytes */
    struct ethosu_npu_stats *stats;
    const struct ethosu_npu_opts *opts;
    char *err;
    size_t errlen;
};

int ethosu_npu_fail(struct ethosu_npu *npu, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Register access at kick-off: fails (returns -EINVAL with the message) when the stream never set it. */
int ethosu_npu_get0(struct ethosu_npu *npu, unsigned op, uint16_t *v);
int ethosu_npu_get1(struct ethosu_npu *npu, unsigned op, uint64_t *v);

/* Feature maps (ethosu_npu_fm.c). which: 0 IFM, 1 IFM2, 2 OFM. Reads the geometry registers, checks the
 * formats, and checks that the whole h x w x c extent lies inside the region. */
int ethosu_npu_fm_load(struct ethosu_npu *npu, int which, int h, int w, int c, struct ethosu_npu_fm *fm);
int32_t ethosu_npu_fm_read(const struct ethosu_npu_fm *fm, int y, int x, int c);
void ethosu_npu_fm_write(const struct ethosu_npu_fm *fm, int y, int x, int c, int32_t v);
uint64_t ethosu_npu_fm_offset(const struct ethosu_npu_fm *fm, int y, int x, int c);
/* ethosu_npu_fm_offset(fm, y, x, c) - ethosu_npu_fm_offset(fm, y, x, 0): the tile depends on y and x only. */
static inline uint64_t ethosu_npu_fm_choff(const struct ethosu_npu_fm *fm, int c)
{
    if (fm->brick)
        return (uint64_t)(c / 16) * fm->sc + (uint64_t)(c % 16) * (unsigned)fm->bytes;
    return (uint64_t)c * (unsigned)fm->bytes;
}
/* The element at p (little endian, fm's size and sign) / stores v there. */
static inline int32_t ethosu_npu_fm_get(const struct ethosu_npu_fm *fm, const uint8_t *p)
{
    switch (fm->bytes) {
    case 1:
        return fm->is_signed ? (int32_t)(int8_t)p[0] : (int32_t)p[0];
    case 2: {
        uint16_t v = (uint16_t)(p[0] | p[1] << 8);
        return fm->is_signed ? (int32_t)(int16_t)v : (int32_t)v;
    }
    default:
        return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    }
}
static inline void ethosu_npu_fm_put(const struct ethosu_npu_fm *fm, uint8_t *p, int32_t v)
{
    uint32_t u = (uint32_t)v;
    for (int i = 0; i < fm->bytes; i++)
        p[i] = (uint8_t)(u >> (8 * i));
}

/* Output stage (ethosu_npu_out.c): scaling, zero point, activation, clamp and saturation to the OFM type. */
struct ethosu_npu_out {
    int round_mode;                     /* OFM_PRECISION.round_mode */
    bool global_scale;                  /* OFM_PRECISION.scale_mode */
    int64_t g_mult;                     /* OFM_SCALE (unsigned 32-bit) */
    int g_shift;
    const uint8_t *scales;              /* per-channel 10-byte records (NULL when global) */
    int activation;                     /* ACTIVATION.function */
    int clip_range;                     /* ACTIVATION.clip_range */
    int32_t act_min, act_max;           /* ACTIVATION_MIN / MAX, sign-extended as the OFM type says */
    int32_t ofm_zp;
    int32_t lo, hi;                     /* the OFM type's range */
    const uint8_t *lut;                 /* SHRAM LUT for the TABLE activations */
    int lut_bytes;                      /* LUT entry size: the OFM element size */
    int32_t ofm_lo;                     /* the OFM type's minimum (before any clip range) */
    int acc_bits;                       /* 32 or 40 */
};
int ethosu_npu_out_setup(struct ethosu_npu *npu, const struct ethosu_npu_fm *ofm, bool per_channel_allowed,
                         struct ethosu_npu_out *out);
/* round_mode: OFM/IFM_PRECISION.round_mode (0..2), or ETHOSU_NPU_ROUND_NATURAL2 (board-facts.md fact 7). */
#define ETHOSU_NPU_ROUND_NATURAL2 4
int64_t ethosu_npu_scale(int64_t x, int64_t mult, int shift, int round_mode);
/* ethosu_npu_scale's TFL mode (round_mode 0) for shift = 31 + right >= 31 in 64-bit arithmetic, on the magnitude:
 * exact for |x| <= 2^31, 0 <= mult < 2^32, right <= 62 (|x| mult < 2^63). The doubling high multiply rounds
 * half up, i.e. |p| + 2^30 - 1 for a negative product; the right shift rounds ties away from zero. */
static inline int64_t ethosu_npu_scale_tfl64(int64_t x, uint32_t mult, unsigned right)
{
    const uint64_t neg = x < 0;
    const uint64_t mag = neg ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;
    uint64_t q = (mag * mult + ((uint64_t)1 << 30) - neg) >> 31;
    if (right)
        q = (q + ((uint64_t)1 << (right - 1))) >> right;
    return neg ? -(int64_t)q : (int64_t)q;
}
/* The rounding a stream's round_mode field (0..2) selects under the simulator's rules: NATURAL rounds twice
 * (ETHOSU_NPU_ROUND_NATURAL2) when TEFLON_SIM_RULES says eu_natural=double. */
int ethosu_npu_round_mode(const struct ethosu_npu *npu, int field);
/* One channel's (bias, multiplier, shift): from its scale record, or the global scale with bias 0. */
void ethosu_npu_out_channel(const struct ethosu_npu_out *out, int c, int64_t *bias, int64_t *mult, int *shift);
/* Scaled value (already rescaled, zero point not yet added) -> stored OFM value. */
int32_t ethosu_npu_out_finish(const struct ethosu_npu_out *out, int64_t v);
/* For an output stage without LUT and an 8- or 16-bit OFM: the one clamp [*lo, *hi] equal to ethosu_npu_out_finish's
 * two (ACTIVATION_MIN/MAX, then the type's range), so that out_finish(v) = clamp(v + ofm_zp, *lo, *hi). */
void ethosu_npu_out_clamp(const struct ethosu_npu_out *out, int32_t *lo, int32_t *hi);

/* Kernel geometry of the op, from the KERNEL_* and IFM_PAD_* / IFM_UPSCALE registers. */
struct ethosu_npu_kgeom {
    int oh, ow, oc, ic;
    int kh, kw;          /* taps */
    int sy, sx, dy, dx;  /* stride, dilation */
    int pt, pl, pb, pr;
    int upscale;         /* 0 none, 1 nearest x2, 2 zeros x2 */
    int ph, pw;          /* padded (upscaled) IFM extent the kernel walks: (o - 1) * s + extent */
    int ih, iw;          /* IFM extent in memory */
    bool part_kernel;
    int decomposition;   /* sub-kernel size of the weight encoder: 8 (the U65 defines no decomposition field) */
};

/* Reads the kernel, stride, padding and upscale registers shared by convolution and pooling. */
int ethosu_npu_kernel_geometry(struct ethosu_npu *npu, struct ethosu_npu_kgeom *g);

/* Whether padded coordinates (py, px) fall in the padding. */
static inline bool ethosu_npu_is_pad(const struct ethosu_npu_kgeom *g, int py, int px)
{
    int y = py - g->pt, x = px - g->pl;
    return y < 0 || x < 0 || y >= g->ph - g->pt - g->pb || x >= g->pw - g->pl - g->pr;
}

/* IFM value at padded coordinates (py, px), zero point removed; padding and upscale zeros read as 0. */
static inline int32_t ethosu_npu_ifm_at(const struct ethosu_npu_fm *ifm, const struct ethosu_npu_kgeom *g, int py,
                                        int px, int c)
{
    int y = py - g->pt, x = px - g->pl;
    int uh = g->ph - g->pt - g->pb, uw = g->pw - g->pl - g->pr;
    if (y < 0 || x < 0 || y >= uh || x >= uw)
        return 0;
    if (g->upscale == 2 && ((y | x) & 1))
        return 0;
    if (g->upscale)
        y >>= 1, x >>= 1;
    return ethosu_npu_fm_read(ifm, y, x, c) - ifm->zero_point;
}

/* Checks the OFM block registers (OFM_BLK_*_M1): the micro-block raster of the U65-256. */
int ethosu_npu_check_blocks(struct ethosu_npu *npu);

/* Operations. */
int ethosu_npu_conv(struct ethosu_npu *npu, bool depthwise);
int ethosu_npu_pool(struct ethosu_npu *npu, unsigned mode);
int ethosu_npu_elementwise(struct ethosu_npu *npu, unsigned mode);

/* The built-in weight stream decoder (ethosu_npu_weights.c). */
int ethosu_npu_decode_weights_builtin(void *ctx, const struct ethosu_npu_wdesc *d, int16_t *ohwi, char *err,
                                      size_t errlen);

#endif
