/* RK3588 register semantics for the simulated rocket NPU: decodes and validates the executing register
 * groups of one conv task and runs it on the shared datapath (sim_conv.c). Every register and value is
 * documented with its source in docs/hardware/rocket-sim.md §3; what is not understood is an error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rocket_regs_rk3588.h"
#include "sim_dpu.h"
#include "sim_npu_priv.h"

#define FLD(v, REG, F) (((v) >> RK3588_##REG##__##F##__SHIFT) & RK3588_##REG##__##F##__MASK)
#define CBUF_BANKS 12
#define CBUF_BANK_BYTES 32768u

RKT_ASSERT_PC_LAYOUT(RK3588);
RKT_ASSERT_PPU_LAYOUT(RK3588);
_Static_assert(RK3588_DPU_LUT_ACCESS_CFG == RKT_DPU_LUT_ACCESS_CFG && RK3588_DPU_LUT_ACCESS_DATA == RKT_DPU_LUT_ACCESS_DATA,
               "the PC applies LUT access words at these offsets (sim_dpu.c)");

/* PAD_CON1: the stored int8 pad value. Mesa emits it sign-extended from 8 bits, or with the low
 * byte repeated in bits 8..15 and bits 16..31 the sign of bit 15 (0xFFFF8080, 0x0B0B). Byte 0 pads every
 * lane but, on the depthwise path, the odd channels among the first 32 of each 64-channel group, which read
 * byte 1 (third-party hardware sweep, docs/hardware/rocket.md §7): `lane1` gets that byte. */
static int decode_pad(rkt_npu *n, uint32_t v, int *lane1)
{
    const uint32_t lo = v & 0xFF, b1 = (v >> 8) & 0xFF, hi = v >> 16;
    const uint32_t sx8 = (lo & 0x80) ? 0xFF : 0x00, sx16 = (b1 & 0x80) ? 0xFFFF : 0x0000;
    rkt_check(n, (b1 == sx8 || b1 == lo) && hi == sx16, RK3588_CNA_PAD_CON1, v,
          "pad value must be an int8 sign-extended to 32 bits, or repeated in bits 8..15 and sign-extended");
    *lane1 = RKT_SXT(b1, 8);
    return RKT_SXT(lo, 8);
}

/* One task as the decode steps hand it on: the datapath task, and the registers the address, padding and
 * weight steps still need. Steps run in a fixed order (CNA, CORE, DPU, DPU_RDMA, then checks across units),
 * which is also the order of the first error a broken stream reports. */
struct rk3588_task {
    struct rkt_conv_task t;
    uint32_t ds2, pc0, cd0, cd1; /* CNA_DATA_SIZE2, CNA_PAD_CON0, CORE_DATAOUT_SIZE_0/1: named in messages */
    uint32_t ls, ss;             /* CNA_DMA_CON1 / CON2: input addressing */
    uint32_t ws0, cb0;           /* weight bytes, CBUF banks */
    int data_bank, weight_bank, weight_reuse;
    uint32_t in_iova, w_iova, out_iova, bias_iova;
    int bs_mul, bs_ow_stream;    /* BS MUL operand and OW operand from the BS stream (per-channel record) */
    uint32_t data_format;        /* DPU DATA_FORMAT (its BS_MUL_SHIFT_VALUE_NEG) */
    uint64_t in_len, out_len;    /* device bytes the input and output span */
    int ew_on;                   /* the EW stage adds the ERDMA operand (Mesa's fused ADD) */
    uint32_t ew_src, ew_base, ew_stride, ew_notch; /* DPU_RDMA SRC_BASE, EW_BASE, EW_SURF_STRIDE, SURF_NOTCH */
};

/* Mesa's fused-ADD words (rocket.md §2.2 #81, #118, #121): EW_CFG = ALU add (algo 2) of the converted 8-bit
 * operand from memory, ReLU and LUT bypassed; ERDMA_CFG = DATA_MODE 1, 8-bit data; FEATURE_MODE_CFG = burst
 * 15 with COMB_USE 5 (MRDMA on). */
#define EW_CFG_ADD 0x904202C0u
/* the same with EW_ALU_ALGO 0 and EW_OP_TYPE 1, the multiply of rocket.md "MUL of two tensors" [INFERRED word] */
#define EW_CFG_MUL 0x904002C4u
#define ERDMA_CFG_OPERAND 0x40000004u
#define RDMA_MODE_ADD 0x7D00u

/* CNA: conv mode and input format, strides, feature grains. */
static void cna_conv(rkt_npu *n, struct rk3588_task *st)
{
    struct rkt_conv_task *t = &st->t;
    struct rkt_conv_geom *g = &st->t.g;
    const uint32_t con1 = rkt_rd(n, RK3588_CNA_CONV_CON1);
    const uint32_t conv_mode = FLD(con1, CNA_CONV_CON1, CONV_MODE);
    rkt_check(n, conv_mode == 0 || conv_mode == 3, RK3588_CNA_CONV_CON1, con1, "CONV_MODE %u (only 0 direct, 3 depthwise)", conv_mode);
    g->depthwise = conv_mode == 3;
    rkt_check(n, FLD(con1, CNA_CONV_CON1, IN_PRECISION) == 0 && FLD(con1, CNA_CONV_CON1, PROC_PRECISION) == 0 &&
          FLD(con1, CNA_CONV_CON1, DECONV) == 0, RK3588_CNA_CONV_CON1, con1, "only int8, no deconvolution");
    const uint32_t argb_bits = con1 & ~RK3588_CNA_CONV_CON1__CONV_MODE__MASK;
    const uint32_t argb_form = (8u << RK3588_CNA_CONV_CON1__ARGB_IN__SHIFT) | (1u << RK3588_CNA_CONV_CON1__NONALIGN_DMA__SHIFT) |
                               (1u << RK3588_CNA_CONV_CON1__GROUP_LINE_OFF__SHIFT);
    t->argb = argb_bits == argb_form;
    rkt_check(n, argb_bits == 0 || (t->argb && !g->depthwise), RK3588_CNA_CONV_CON1, con1,
          "input format: only NC1HWC2 int8 (0) or the single-channel raw path ARGB_IN 8 + NONALIGN_DMA + GROUP_LINE_OFF");

    const uint32_t con3 = rkt_rd(n, RK3588_CNA_CONV_CON3);
    t->sx = (int)FLD(con3, CNA_CONV_CON3, CONV_X_STRIDE);
    t->sy = (int)FLD(con3, CNA_CONV_CON3, CONV_Y_STRIDE);
    rkt_check(n, t->sx >= 1 && t->sy >= 1 && con3 == (uint32_t)(t->sx | t->sy << 3), RK3588_CNA_CONV_CON3, con3,
          "strides must be >= 1; dilation, deconvolution strides and NN_MODE must be 0");

    const uint32_t con2 = rkt_rd(n, RK3588_CNA_CONV_CON2);
    rkt_check(n, con2 == (uint32_t)(51 + t->sy) << RK3588_CNA_CONV_CON2__FEATURE_GRAINS__SHIFT, RK3588_CNA_CONV_CON2, con2,
          "only FEATURE_GRAINS = 51 + stride (Mesa's silicon-proven value) and KERNEL_GROUP/CSC bits 0");
}

/* CNA: input and output cube sizes. */
static void cna_data_size(rkt_npu *n, struct rk3588_task *st)
{
    struct rkt_conv_task *t = &st->t;
    struct rkt_conv_geom *g = &st->t.g;
    const uint32_t ds0 = rkt_rd(n, RK3588_CNA_DATA_SIZE0);
    t->in_w = (int)FLD(ds0, CNA_DATA_SIZE0, DATAIN_WIDTH);
    t->in_h = (int)FLD(ds0, CNA_DATA_SIZE0, DATAIN_HEIGHT);
    rkt_check(n, t->in_w >= 1 && t->in_h >= 1, RK3588_CNA_DATA_SIZE0, ds0, "empty input");
    const uint32_t ds1 = rkt_rd(n, RK3588_CNA_DATA_SIZE1);
    g->ic = (int)FLD(ds1, CNA_DATA_SIZE1, DATAIN_CHANNEL);
    t->ic_real = (int)FLD(ds1, CNA_DATA_SIZE1, DATAIN_CHANNEL_REAL) + 1;
    rkt_check(n, g->ic >= 16 && g->ic % 16 == 0 && g->ic <= 4096 && t->ic_real <= g->ic && t->ic_real > g->ic - 16,
          RK3588_CNA_DATA_SIZE1, ds1, "DATAIN_CHANNEL must be a multiple of 16 (<= 4096) whose last 16-group holds real channels");
    rkt_check(n, !t->argb || (g->ic == 16 && t->ic_real == 1), RK3588_CNA_DATA_SIZE1, ds1, "the raw single-channel path needs 1 real of 16 channels");
    st->ds2 = rkt_rd(n, RK3588_CNA_DATA_SIZE2);
    t->out_w = (int)FLD(st->ds2, CNA_DATA_SIZE2, DATAOUT_WIDTH);
}

/* CNA: kernel geometry and weight byte counts. */
static void cna_weight_size(rkt_npu *n, struct rk3588_task *st)
{
    struct rkt_conv_geom *g = &st->t.g;
    st->ws0 = rkt_rd(n, RK3588_CNA_WEIGHT_SIZE0);
    const uint32_t ws1 = rkt_rd(n, RK3588_CNA_WEIGHT_SIZE1);
    const uint32_t ws2 = rkt_rd(n, RK3588_CNA_WEIGHT_SIZE2);
    g->kw = (int)FLD(ws2, CNA_WEIGHT_SIZE2, WEIGHT_WIDTH);
    g->kh = (int)FLD(ws2, CNA_WEIGHT_SIZE2, WEIGHT_HEIGHT);
    g->kernels = (int)FLD(ws2, CNA_WEIGHT_SIZE2, WEIGHT_KERNELS);
    rkt_check(n, g->kw >= 1 && g->kh >= 1 && g->kernels >= 1 && (!g->depthwise || g->kernels == 1), RK3588_CNA_WEIGHT_SIZE2, ws2,
          "kernel size and count must be >= 1 (depthwise: exactly 1 kernel)");
    const uint64_t bpk = (uint64_t)g->kw * g->kh * g->ic;
    rkt_check(n, ws1 == bpk, RK3588_CNA_WEIGHT_SIZE1, ws1, "WEIGHT_BYTES_PER_KERNEL must be KW*KH*DATAIN_CHANNEL = %llu", (unsigned long long)bpk);
    rkt_check(n, st->ws0 == bpk * g->kernels, RK3588_CNA_WEIGHT_SIZE0, st->ws0, "WEIGHT_BYTES must be bytes per kernel x kernels = %llu",
          (unsigned long long)(bpk * g->kernels));
}

/* CNA: CBUF bank split and the input rows it holds. */
static void cna_cbuf(rkt_npu *n, struct rk3588_task *st)
{
    struct rkt_conv_task *t = &st->t;
    struct rkt_conv_geom *g = &st->t.g;
    st->cb0 = rkt_rd(n, RK3588_CNA_CBUF_CON0);
    st->data_bank = (int)FLD(st->cb0, CNA_CBUF_CON0, DATA_BANK);
    st->weight_bank = (int)FLD(st->cb0, CNA_CBUF_CON0, WEIGHT_BANK);
    st->weight_reuse = (int)FLD(st->cb0, CNA_CBUF_CON0, WEIGHT_REUSE);
    rkt_check(n, FLD(st->cb0, CNA_CBUF_CON0, DATA_REUSE) == 0 && FLD(st->cb0, CNA_CBUF_CON0, FC_DATA_BANK) == 0, RK3588_CNA_CBUF_CON0, st->cb0,
          "DATA_REUSE and FC_DATA_BANK are not simulated (must be 0)");
    rkt_check(n, st->data_bank >= 1 && st->weight_bank >= 1 && st->data_bank + st->weight_bank <= CBUF_BANKS, RK3588_CNA_CBUF_CON0, st->cb0,
          "needs >= 1 data and weight bank and at most %d banks in total", CBUF_BANKS);

    const uint32_t cb1 = rkt_rd(n, RK3588_CNA_CBUF_CON1);
    const uint32_t entries = FLD(cb1, CNA_CBUF_CON1, DATA_ENTRIES);
    if (t->argb) {
        rkt_check(n, entries == (uint32_t)(t->in_w * t->in_h), RK3588_CNA_CBUF_CON1, cb1, "raw path: DATA_ENTRIES must be width x height = %d",
              t->in_w * t->in_h);
        rkt_check(n, (uint64_t)entries * 16 <= (uint64_t)st->data_bank * CBUF_BANK_BYTES, RK3588_CNA_CBUF_CON1, cb1,
              "converted input (16 B per pixel) does not fit in %d data banks", st->data_bank);
    } else {
        const int c1 = g->ic / 16;
        const uint32_t need = (uint32_t)(t->in_w * c1 + 3) / 4, alt = (uint32_t)(t->in_w * (c1 + 1) + 3) / 4;
        rkt_check(n, entries == need || (c1 % 4 == 3 && entries == alt), RK3588_CNA_CBUF_CON1, cb1,
              "DATA_ENTRIES must be ceil(width x 16-channel groups / 4) = %u (64-byte CBUF granules per row)", need);
        rkt_check(n, (uint64_t)entries * t->in_h <= (uint64_t)st->data_bank * (CBUF_BANK_BYTES / 64), RK3588_CNA_CBUF_CON1, cb1,
              "%d input rows of %u entries do not fit in %d data banks", t->in_h, entries, st->data_bank);
    }
}

/* CNA: input conversion (bypassed on NC1HWC2, the raw single-channel path's CVT) and FC. */
static void cna_cvt(rkt_npu *n, struct rk3588_task *st)
{
    struct rkt_conv_task *t = &st->t;
    const uint32_t cvt0 = rkt_rd(n, RK3588_CNA_CVT_CON0);
    const uint32_t cvt[4] = {rkt_rd(n, RK3588_CNA_CVT_CON1), rkt_rd(n, RK3588_CNA_CVT_CON2), rkt_rd(n, RK3588_CNA_CVT_CON3),
                             rkt_rd(n, RK3588_CNA_CVT_CON4)};
    const uint32_t cvt5 = rkt_rd(n, RK3588_CNA_CVT_CON5);
    if (!t->argb) {
        rkt_check(n, cvt0 == 0x0B, RK3588_CNA_CVT_CON0, cvt0, "NC1HWC2 int8 input: only CVT bypass (0x0B)");
        for (int i = 0; i < 4; i++)
            rkt_check(n, cvt[i] == 0x00010000, RK3588_CNA_CVT_CON1 + 4 * i, cvt[i], "with CVT bypassed only scale 1 offset 0 (0x00010000)");
        rkt_check(n, cvt5 == 0, RK3588_CNA_CVT_CON5, cvt5, "per-channel CVT is off on the NC1HWC2 path");
    } else {
        const uint32_t tr = FLD(cvt0, CNA_CVT_CON0, CVT_TRUNCATE_0);
        rkt_check(n, (cvt0 & 0xF) == 0 && FLD(cvt0, CNA_CVT_CON0, CVT_TRUNCATE_1) == tr && FLD(cvt0, CNA_CVT_CON0, CVT_TRUNCATE_2) == tr &&
              FLD(cvt0, CNA_CVT_CON0, CVT_TRUNCATE_3) == tr && tr <= 31, RK3588_CNA_CVT_CON0, cvt0,
              "raw path: CVT on (bypass/type/round/sign 0) with one truncate (<= 31) for all four lanes");
        for (int i = 1; i < 4; i++)
            rkt_check(n, cvt[i] == cvt[0], RK3588_CNA_CVT_CON1 + 4 * i, cvt[i], "raw path: all four CVT lanes must match lane 0 (0x%08x)", cvt[0]);
        rkt_check(n, cvt5 == 0xFFFF, RK3588_CNA_CVT_CON5, cvt5, "raw path: only PER_CHANNEL_CVT_EN = 0xFFFF");
        t->cvt_shift = (int)tr;
        t->cvt_scale = (int)FLD(cvt[0], CNA_CVT_CON1, CVT_SCALE0);
        t->cvt_offset = RKT_SXT(FLD(cvt[0], CNA_CVT_CON1, CVT_OFFSET0), 16);
    }
    rkt_want(n, RK3588_CNA_FC_CON0, 0, "no FC skipping");
    rkt_want(n, RK3588_CNA_FC_CON1, 0, "no FC data offset");
    rkt_want(n, RK3588_CNA_FC_CON2, 0, "no FC weight offset");
}

/* CNA: padding, input fetch (DMA) and weight fetch (no decompression). */
static void cna_fetch(rkt_npu *n, struct rk3588_task *st)
{
    struct rkt_conv_task *t = &st->t;
    struct rkt_conv_geom *g = &st->t.g;
    st->pc0 = rkt_rd(n, RK3588_CNA_PAD_CON0);
    t->pad_top = (int)FLD(st->pc0, CNA_PAD_CON0, PAD_TOP);
    t->pad_left = (int)FLD(st->pc0, CNA_PAD_CON0, PAD_LEFT);
    t->pad_value = decode_pad(n, rkt_rd(n, RK3588_CNA_PAD_CON1), &t->pad_value_lane1);

    st->in_iova = rkt_rd(n, RK3588_CNA_FEATURE_DATA_ADDR);
    rkt_want(n, RK3588_CNA_DMA_CON0, 0x000F000F, "burst lengths 15/15 (Mesa's value)");
    st->ls = rkt_rd(n, RK3588_CNA_DMA_CON1);
    st->ss = rkt_rd(n, RK3588_CNA_DMA_CON2);
    const uint32_t fds0 = rkt_rd(n, RK3588_CNA_FC_DATA_SIZE0);
    t->dma_w = (int)FLD(fds0, CNA_FC_DATA_SIZE0, DMA_WIDTH);
    if (t->argb)
        rkt_check(n, t->dma_w >= 1 && t->dma_w <= t->in_w && FLD(fds0, CNA_FC_DATA_SIZE0, DMA_HEIGHT) == (uint32_t)t->in_h,
              RK3588_CNA_FC_DATA_SIZE0, fds0, "raw path: DMA width must be 1..DATAIN_WIDTH (%d) and DMA height DATAIN_HEIGHT (%d)",
              t->in_w, t->in_h);
    else
        rkt_check(n, t->dma_w == t->in_w && FLD(fds0, CNA_FC_DATA_SIZE0, DMA_HEIGHT) == (uint32_t)t->in_h, RK3588_CNA_FC_DATA_SIZE0,
              fds0, "DMA width/height must equal DATAIN width/height (%dx%d)", t->in_w, t->in_h);
    const uint32_t fds1 = rkt_rd(n, RK3588_CNA_FC_DATA_SIZE1);
    rkt_check(n, fds1 == (uint32_t)g->ic, RK3588_CNA_FC_DATA_SIZE1, fds1, "DMA_CHANNEL must equal DATAIN_CHANNEL (%d)", g->ic);

    rkt_want(n, RK3588_CNA_DCOMP_CTRL, 0, "no weight decompression");
    rkt_want(n, RK3588_CNA_DCOMP_REGNUM, 0, "no weight decompression");
    for (uint32_t off = RK3588_CNA_DCOMP_AMOUNT0; off <= RK3588_CNA_DCOMP_AMOUNT15; off += 4)
        rkt_want(n, off, 0, "no weight decompression");
    st->w_iova = rkt_rd(n, RK3588_CNA_DCOMP_ADDR0);
}

/* CORE: MAC mode, output cube, truncation. */
static void core(rkt_npu *n, struct rk3588_task *st)
{
    struct rkt_conv_task *t = &st->t;
    struct rkt_conv_geom *g = &st->t.g;
    rkt_want(n, RK3588_CORE_MISC_CFG, 1u | (uint32_t)g->depthwise << RK3588_CORE_MISC_CFG__DW_EN__SHIFT,
         "QD_EN = 1 and DW_EN matching CNA CONV_MODE, int8");
    st->cd0 = rkt_rd(n, RK3588_CORE_DATAOUT_SIZE_0);
    t->out_h = (int)FLD(st->cd0, CORE_DATAOUT_SIZE_0, DATAOUT_HEIGHT) + 1;
    rkt_check(n, (int)FLD(st->cd0, CORE_DATAOUT_SIZE_0, DATAOUT_WIDTH) + 1 == t->out_w && t->out_w >= 1, RK3588_CORE_DATAOUT_SIZE_0, st->cd0,
          "DATAOUT_WIDTH + 1 must equal CNA DATAOUT_WIDTH (%d)", t->out_w);
    const uint32_t ds3 = rkt_rd(n, RK3588_CNA_DATA_SIZE3);
    rkt_check(n, ds3 == (uint32_t)(t->out_w * t->out_h), RK3588_CNA_DATA_SIZE3, ds3, "DATAOUT_ATOMICS must be width x height = %d (SURF_MODE 0)",
          t->out_w * t->out_h);
    st->cd1 = rkt_rd(n, RK3588_CORE_DATAOUT_SIZE_1);
    const uint32_t ctr = rkt_rd(n, RK3588_CORE_CLIP_TRUNCATE);
    t->clip_truncate = (int)FLD(ctr, CORE_CLIP_TRUNCATE, CLIP_TRUNCATE);
    rkt_check(n, FLD(ctr, CORE_CLIP_TRUNCATE, ROUND_TYPE) == 0 && t->clip_truncate <= RK3588_CORE_CLIP_TRUNCATE__CLIP_TRUNCATE__MAX,
          RK3588_CORE_CLIP_TRUNCATE, ctr, "ROUND_TYPE must be 0 and the truncation at most %d bits",
          RK3588_CORE_CLIP_TRUNCATE__CLIP_TRUNCATE__MAX);
    rkt_want(n, RK3588_CORE_UNDOC_3030, 0, "undocumented register, only 0");
}

/* DPU: mode, destination and output cube / channels. */
static void dpu_cube(rkt_npu *n, struct rk3588_task *st)
{
    struct rkt_conv_task *t = &st->t;
    struct rkt_conv_geom *g = &st->t.g;
    rkt_want(n, RK3588_DPU_FEATURE_MODE_CFG, 0x1E4u | (g->depthwise ? 3u << RK3588_DPU_FEATURE_MODE_CFG__CONV_MODE__SHIFT : 0),
         "burst 15, output to memory, CONV_MODE matching CNA");
    /* int8 in/out/processing (0); BS_MUL_SHIFT_VALUE_NEG is the BS multiplier's shift of negative products,
     * checked with the multiplier (dpu_bs) */
    st->data_format = rkt_rd(n, RK3588_DPU_DATA_FORMAT);
    rkt_check(n, (st->data_format & ~(RK3588_DPU_DATA_FORMAT__BS_MUL_SHIFT_VALUE_NEG__MASK
                                      << RK3588_DPU_DATA_FORMAT__BS_MUL_SHIFT_VALUE_NEG__SHIFT)) == 0,
              RK3588_DPU_DATA_FORMAT, st->data_format, "int8 in/out/processing: only BS_MUL_SHIFT_VALUE_NEG set");
    rkt_want(n, RK3588_DPU_OFFSET_PEND, 0, "no pending offset");
    st->out_iova = rkt_rd(n, RK3588_DPU_DST_BASE_ADDR);
    t->out_surf_pitch = rkt_rd(n, RK3588_DPU_DST_SURF_STRIDE);
    const uint32_t cw = rkt_rd(n, RK3588_DPU_DATA_CUBE_WIDTH), chh = rkt_rd(n, RK3588_DPU_DATA_CUBE_HEIGHT);
    rkt_check(n, cw == (uint32_t)t->out_w - 1, RK3588_DPU_DATA_CUBE_WIDTH, cw, "must be output width - 1 = %d", t->out_w - 1);
    rkt_check(n, chh == (uint32_t)t->out_h - 1, RK3588_DPU_DATA_CUBE_HEIGHT, chh, "must be output height - 1 = %d (MINMAX_CTL 0)", t->out_h - 1);
    rkt_want(n, RK3588_DPU_DATA_CUBE_NOTCH_ADDR, 0, "no notch");
    const uint32_t cch = rkt_rd(n, RK3588_DPU_DATA_CUBE_CHANNEL);
    t->oc = (int)FLD(cch, DPU_DATA_CUBE_CHANNEL, CHANNEL) + 1;
    t->oc_real = (int)FLD(cch, DPU_DATA_CUBE_CHANNEL, ORIG_CHANNEL) + 1;
    t->group_channels = g->depthwise ? 64 : 32;
    rkt_check(n, t->oc == (t->oc_real + t->group_channels - 1) / t->group_channels * t->group_channels, RK3588_DPU_DATA_CUBE_CHANNEL, cch,
          "CHANNEL + 1 must be ORIG_CHANNEL + 1 rounded up to %d", t->group_channels);
    rkt_check(n, g->depthwise ? t->oc_real == t->ic_real : t->oc_real <= g->kernels, RK3588_DPU_DATA_CUBE_CHANNEL, cch,
          g->depthwise ? "depthwise output channels must equal the real input channels" : "more output channels than weight kernels");
    rkt_check(n, st->cd1 == (uint32_t)t->oc - 1, RK3588_CORE_DATAOUT_SIZE_1, st->cd1, "DATAOUT_CHANNEL must be DPU CHANNEL (%d)", t->oc - 1);
}

/* DPU BS (NVDLA SDP X1 order: ALU, MUL, ReLU; docs/hardware/rocket-sim.md "DPU BS stage"): the ALU adds the
 * bias from the BS stream; the MUL is bypassed (Mesa) or multiplies by a per-channel operand from the stream and
 * shifts right by BS_MUL_SHIFT_VALUE, rounding; the OW operand comes from BS_OW_OP or from the stream; the ReLU
 * is bypassed, max(v, 0), or with RELUX_EN min(max(v, 0), BS_RELUX_CMP_VALUE). */
static void dpu_bs(rkt_npu *n, struct rk3588_task *st)
{
    struct rkt_conv_task *t = &st->t;
    struct rkt_conv_geom *g = &st->t.g;
    const uint32_t cfg = rkt_rd(n, RK3588_DPU_BS_CFG);
    const uint32_t mul_bypass = FLD(cfg, DPU_BS_CFG, BS_MUL_BYPASS), relu_bypass = FLD(cfg, DPU_BS_CFG, BS_RELU_BYPASS);
    const uint32_t relux = FLD(cfg, DPU_BS_CFG, BS_RELUX_EN);
    const uint32_t fixed = cfg & ~(RK3588_DPU_BS_CFG__BS_MUL_BYPASS__MASK << RK3588_DPU_BS_CFG__BS_MUL_BYPASS__SHIFT |
                                   RK3588_DPU_BS_CFG__BS_RELU_BYPASS__MASK << RK3588_DPU_BS_CFG__BS_RELU_BYPASS__SHIFT |
                                   RK3588_DPU_BS_CFG__BS_RELUX_EN__MASK << RK3588_DPU_BS_CFG__BS_RELUX_EN__SHIFT);
    rkt_check(n, fixed == 0x00020100 && !(relu_bypass && relux), RK3588_DPU_BS_CFG, cfg,
          "BS: only ALU add (ALGO 2) with the operand from memory, BS/ALU not bypassed, no PReLU; MUL bypassed or on; "
          "ReLU bypassed, on, or on with RELUX_EN");
    rkt_want(n, RK3588_DPU_BS_ALU_CFG, 0, "ALU operand comes from memory");
    const uint32_t mc = rkt_rd(n, RK3588_DPU_BS_MUL_CFG);
    st->bs_mul = !mul_bypass;
    /* the product's shift: BS_MUL_SHIFT_VALUE for a product >= 0, DATA_FORMAT.BS_MUL_SHIFT_VALUE_NEG for one < 0
     * (third-party hardware sweep, docs/hardware/rocket.md "Per-channel weights") */
    const uint32_t sh_neg = FLD(st->data_format, DPU_DATA_FORMAT, BS_MUL_SHIFT_VALUE_NEG);
    if (mul_bypass) {
        rkt_check(n, mc == 0, RK3588_DPU_BS_MUL_CFG, mc, "BS MUL bypassed: only 0");
        rkt_check(n, sh_neg == 0, RK3588_DPU_DATA_FORMAT, st->data_format,
                  "BS MUL bypassed: BS_MUL_SHIFT_VALUE_NEG only 0");
    } else {
        const uint32_t sh = FLD(mc, DPU_BS_MUL_CFG, BS_MUL_SHIFT_VALUE);
        rkt_check(n, mc == (1u | sh << RK3588_DPU_BS_MUL_CFG__BS_MUL_SHIFT_VALUE__SHIFT) &&
                  sh <= RK3588_DPU_BS_MUL_CFG__BS_MUL_SHIFT_VALUE__MAX, RK3588_DPU_BS_MUL_CFG, mc,
              "BS MUL on: only the operand from memory (BS_MUL_SRC 1) with BS_MUL_SHIFT_VALUE <= %d from the register "
              "(BS_TRUNCATE_SRC 0, BS_MUL_OPERAND 0)", RK3588_DPU_BS_MUL_CFG__BS_MUL_SHIFT_VALUE__MAX);
        rkt_check(n, sh_neg <= RK3588_DPU_DATA_FORMAT__BS_MUL_SHIFT_VALUE_NEG__MAX, RK3588_DPU_DATA_FORMAT, st->data_format,
                  "BS_MUL_SHIFT_VALUE_NEG <= %d", RK3588_DPU_DATA_FORMAT__BS_MUL_SHIFT_VALUE_NEG__MAX);
        t->bs_shift_pos = (int)sh;
        t->bs_shift_neg = (int)sh_neg;
    }
    const uint32_t cmp = rkt_rd(n, RK3588_DPU_BS_RELUX_CMP_VALUE);
    t->clamp = !relu_bypass;
    t->clamp_lo = 0;
    t->clamp_hi = INT32_MAX;
    if (relux) {
        rkt_check(n, cmp <= RK3588_DPU_BS_RELUX_CMP_VALUE__BS_RELUX_CMP_DAT__MAX, RK3588_DPU_BS_RELUX_CMP_VALUE, cmp,
                  "ReLUX bound must be >= 0 (int32)");
        t->clamp_hi = (int32_t)cmp;
    } else {
        rkt_check(n, cmp == 0, RK3588_DPU_BS_RELUX_CMP_VALUE, cmp, "without RELUX_EN only 0");
    }
    const uint32_t owc = rkt_rd(n, RK3588_DPU_BS_OW_CFG);
    st->bs_ow_stream = (int)FLD(owc, DPU_BS_OW_CFG, OW_SRC);
    rkt_check(n, (owc & ~1u) == (g->depthwise ? 0x36Cu : 0x124u), RK3588_DPU_BS_OW_CFG, owc,
          "OW window from the conv mode (SIZE_E 3 depthwise, 1 direct), OD/TP/RGP 0; OW_SRC register or memory");
    const uint32_t owop = rkt_rd(n, RK3588_DPU_BS_OW_OP);
    rkt_check(n, !st->bs_ow_stream || owop == 0, RK3588_DPU_BS_OW_OP, owop, "OW operand from memory: only 0");
    t->ow_op = RKT_SXT(FLD(owop, DPU_BS_OW_OP, OW_OP), 16);
}

/* DPU: the BN, EW and OUT_CVT stages and the unused LUT (BS: dpu_bs). */
static void dpu_stages(rkt_npu *n, struct rk3588_task *st)
{
    struct rkt_conv_task *t = &st->t;
    rkt_want(n, RK3588_DPU_WDMA_SIZE_0, (uint32_t)t->oc - 1, "CHANNEL_WDMA must be DPU CHANNEL");
    rkt_want(n, RK3588_DPU_WDMA_SIZE_1, (uint32_t)(t->out_h - 1) << 16 | (uint32_t)(t->out_w - 1), "WDMA height/width must match the cube");
    rkt_want(n, RK3588_DPU_BN_CFG, 0x53, "BN stage bypassed");
    rkt_want(n, RK3588_DPU_BN_ALU_CFG, 0, "BN stage bypassed");
    rkt_want(n, RK3588_DPU_BN_MUL_CFG, 0, "BN stage bypassed");
    rkt_want(n, RK3588_DPU_BN_RELUX_CMP_VALUE, 0, "BN stage bypassed");
    const uint32_t ew = rkt_rd(n, RK3588_DPU_EW_CFG);
    const int mul_rule = n->rules.rule[TEFLON_RULE_EW_MUL];
    const int mul = ew == EW_CFG_MUL && mul_rule != TEFLON_EW_MUL_REFUSE;
    rkt_check(n, ew == 0x383 || ew == EW_CFG_ADD || mul, RK3588_DPU_EW_CFG, ew,
              "only the EW bypass (0x383) or Mesa's fused add of the converted ERDMA operand (0x%08x)%s", EW_CFG_ADD,
              ew == EW_CFG_MUL ? "; the multiply word's arithmetic is not known (docs/hardware/board-facts.md fact 1: "
                                 "TEFLON_SIM_RULES=ew_mul=<hypothesis> simulates one)" : "");
    st->ew_on = ew == EW_CFG_ADD || mul;
    if (st->ew_on) {
        /* operand converter: (e + OFFSET) * SCALE >> SHIFT, SCALE a signed 16-bit value [INFERRED sign: RK3576's
         * vendor SUB writes negative scales in the same field]; EW_TRUNCATE unused by the add */
        t->ew_offset = (int32_t)rkt_rd(n, RK3588_DPU_EW_CVT_OFFSET_VALUE);
        const uint32_t sc = rkt_rd(n, RK3588_DPU_EW_CVT_SCALE_VALUE);
        const uint32_t trunc = FLD(sc, DPU_EW_CVT_SCALE_VALUE, EW_TRUNCATE);
        rkt_check(n, mul ? trunc <= 31 : trunc == 0, RK3588_DPU_EW_CVT_SCALE_VALUE, sc,
                  mul ? "EW_TRUNCATE above 31 is not simulated" : "EW_TRUNCATE must be 0");
        t->ew_scale = RKT_SXT(FLD(sc, DPU_EW_CVT_SCALE_VALUE, EW_OP_CVT_SCALE), 16);
        t->ew_shift = (int)FLD(sc, DPU_EW_CVT_SCALE_VALUE, EW_OP_CVT_SHIFT);
        t->ew_tie_up = n->rules.rule[TEFLON_RULE_EW_TIE] == TEFLON_EW_TIE_HALF_UP;
        if (mul) { /* the hypothesis TEFLON_SIM_RULES names (sim_rules.h, board-facts.md fact 1) */
            t->ew_mul = mul_rule;
            t->ew_trunc = (int)trunc;
            if (mul_rule == TEFLON_EW_MUL_NO_OFFSET)
                t->ew_offset = 0;
            if (mul_rule == TEFLON_EW_MUL_TIMEOUT)
                n->hang = 1;
        }
    } else {
        rkt_want(n, RK3588_DPU_EW_CVT_OFFSET_VALUE, 0, "EW bypassed");
        rkt_want(n, RK3588_DPU_EW_CVT_SCALE_VALUE, 1, "EW bypassed");
    }
    rkt_want(n, RK3588_DPU_EW_RELUX_CMP_VALUE, 0, "EW ReLU bypassed");
    for (uint32_t off = RK3588_DPU_EW_OP_VALUE_0; off <= RK3588_DPU_EW_OP_VALUE_7; off += 4)
        rkt_want(n, off, 0, "EW operand from memory, not from registers");
    t->out_offset = (int32_t)rkt_rd(n, RK3588_DPU_OUT_CVT_OFFSET);
    const uint32_t osc = rkt_rd(n, RK3588_DPU_OUT_CVT_SCALE);
    rkt_check(n, FLD(osc, DPU_OUT_CVT_SCALE, FP32TOFP16_EN) == 0, RK3588_DPU_OUT_CVT_SCALE, osc, "no fp16 output");
    t->out_scale = FLD(osc, DPU_OUT_CVT_SCALE, OUT_CVT_SCALE);
    const uint32_t osh = rkt_rd(n, RK3588_DPU_OUT_CVT_SHIFT);
    t->out_shift = (int)FLD(osh, DPU_OUT_CVT_SHIFT, OUT_CVT_SHIFT);
    rkt_check(n, osh == (uint32_t)t->out_shift && t->out_shift <= RK3588_DPU_OUT_CVT_SHIFT__OUT_CVT_SHIFT__MAX,
              RK3588_DPU_OUT_CVT_SHIFT, osh, "only OUT_CVT_SHIFT <= %d with MINUS_EXP, CVT_ROUND (0: ties to even) and "
              "CVT_TYPE 0", RK3588_DPU_OUT_CVT_SHIFT__OUT_CVT_SHIFT__MAX);
    t->out_group_pitch = rkt_rd(n, RK3588_DPU_SURFACE_ADD);
    rkt_want(n, RK3588_DPU_UNDOC_40C4, 0, "undocumented register, only 0");
    for (uint32_t off = RK3588_DPU_LUT_ACCESS_CFG; off <= RK3588_DPU_LUT_LO_SLOPE_SHIFT; off += 4)
        rkt_want(n, off, 0, "LUT unused (EW bypassed)");
}

/* DPU_RDMA: only the bias stream is read. */
static void dpu_rdma(rkt_npu *n, struct rk3588_task *st)
{
    struct rkt_conv_task *t = &st->t;
    struct rkt_conv_geom *g = &st->t.g;
    rkt_want(n, RK3588_DPU_RDMA_DATA_CUBE_WIDTH, (uint32_t)t->out_w - 1, "must match the DPU cube width");
    rkt_want(n, RK3588_DPU_RDMA_DATA_CUBE_HEIGHT, (uint32_t)t->out_h - 1, "must match the DPU cube height (EW_LINE_NOTCH_ADDR 0)");
    rkt_want(n, RK3588_DPU_RDMA_DATA_CUBE_CHANNEL, (uint32_t)t->oc - 1, "must match the DPU CHANNEL");
    const uint32_t dw_mode = g->depthwise ? 3u << RK3588_DPU_RDMA_FEATURE_MODE_CFG__CONV_MODE__SHIFT : 0;
    /* BRDMA_DATA_USE: 1 a dense int32 bias per channel [MESA]; 7 ALU, OW and MUL operands in 64-byte groups of 8
     * channels (map_memory; third-party hardware sweep, docs/hardware/rocket.md "Per-channel weights") */
    const uint32_t use = st->bs_mul && st->bs_ow_stream ? 7 : !st->bs_mul && !st->bs_ow_stream ? 1 : 0;
    const uint32_t brdma = rkt_rd(n, RK3588_DPU_RDMA_BRDMA_CFG);
    rkt_check(n, use && brdma == use << RK3588_DPU_RDMA_BRDMA_CFG__BRDMA_DATA_USE__SHIFT, RK3588_DPU_RDMA_BRDMA_CFG, brdma,
          "BS stream: BRDMA_DATA_USE 1 (bias only: BS MUL bypassed, OW from BS_OW_OP) or 7 (bias, OW and MUL: BS MUL "
          "on and OW_SRC 1)");
    st->bias_iova = rkt_rd(n, RK3588_DPU_RDMA_BS_BASE_ADDR);
    rkt_want(n, RK3588_DPU_RDMA_NRDMA_CFG, 0, "BN stream unused");
    rkt_want(n, RK3588_DPU_RDMA_BN_BASE_ADDR, 0, "BN stream unused");
    rkt_want(n, RK3588_DPU_RDMA_SRC_DMA_CFG, 0, "no pooling");
    rkt_want(n, RK3588_DPU_RDMA_PAD_CFG, 0, "no RDMA padding");
    rkt_want(n, RK3588_DPU_RDMA_WEIGHT, 0x01010101, "equal arbitration weights (Mesa's value)");
    if (!st->ew_on) {
        rkt_want(n, RK3588_DPU_RDMA_SRC_BASE_ADDR, 0, "MRDMA disabled");
        rkt_want(n, RK3588_DPU_RDMA_ERDMA_CFG, 0x1, "EW stream disabled");
        rkt_want(n, RK3588_DPU_RDMA_EW_BASE_ADDR, 0, "EW stream disabled");
        rkt_want(n, RK3588_DPU_RDMA_EW_SURF_STRIDE, 0, "EW stream disabled");
        rkt_want(n, RK3588_DPU_RDMA_FEATURE_MODE_CFG, 0x7810u | dw_mode, "burst 15, MRDMA disabled, CONV_MODE matching CNA");
        rkt_want(n, RK3588_DPU_RDMA_SURF_NOTCH, 0, "EW stream disabled");
        rkt_want(n, RK3588_DPU_RDMA_EW_SURF_NOTCH, 0, "EW stream disabled");
        return;
    }
    /* The operand streams [INFERRED from Mesa's fused-ADD words, docs/hardware/rocket-sim.md §3]: the MRDMA
     * (COMB_USE 5) reads the even 16-channel surfaces from SRC_BASE_ADDR and the ERDMA the odd ones from
     * EW_BASE_ADDR = SRC_BASE_ADDR + one surface; each reader's next surface is two surfaces on, so the jump
     * from the end of its task cube (SURF_NOTCH / EW_SURF_NOTCH) is 2 x EW_SURF_STRIDE - the cube. */
    rkt_want(n, RK3588_DPU_RDMA_ERDMA_CFG, ERDMA_CFG_OPERAND, "EW stream: ERDMA_DATA_MODE 1, 8-bit operand (Mesa's fused add)");
    rkt_want(n, RK3588_DPU_RDMA_FEATURE_MODE_CFG, RDMA_MODE_ADD | dw_mode, "burst 15, COMB_USE 5 (MRDMA reads), CONV_MODE matching CNA");
    st->ew_src = rkt_rd(n, RK3588_DPU_RDMA_SRC_BASE_ADDR);
    st->ew_base = rkt_rd(n, RK3588_DPU_RDMA_EW_BASE_ADDR);
    st->ew_stride = rkt_rd(n, RK3588_DPU_RDMA_EW_SURF_STRIDE);
    st->ew_notch = rkt_rd(n, RK3588_DPU_RDMA_SURF_NOTCH);
    const uint32_t ewn = rkt_rd(n, RK3588_DPU_RDMA_EW_SURF_NOTCH);
    rkt_check(n, ewn == st->ew_notch, RK3588_DPU_RDMA_EW_SURF_NOTCH, ewn, "must equal SURF_NOTCH (0x%08x): both readers step alike",
              st->ew_notch);
}

/* The EW operand: surfaces EW_SURF_STRIDE bytes apart, rows of the task width, as the output cube. */
static int map_operand(rkt_npu *n, struct rk3588_task *st)
{
    struct rkt_conv_task *t = &st->t;
    if (!st->ew_on)
        return 0;
    const uint64_t cube = (uint64_t)t->out_w * t->out_h * 16;
    const int nsurf = (t->oc_real + 15) / 16;
    if (st->ew_stride < cube)
        return rkt_fail(n, "DPU_RDMA_EW_SURF_STRIDE = 0x%08x: operand surfaces of %dx%d atoms (%llu bytes) overlap", st->ew_stride,
                        t->out_w, t->out_h, (unsigned long long)cube);
    if (st->ew_base != st->ew_src + st->ew_stride)
        return rkt_fail(n, "DPU_RDMA_EW_BASE_ADDR = 0x%08x: the ERDMA starts one operand surface after SRC_BASE_ADDR (0x%08x)",
                        st->ew_base, st->ew_src + st->ew_stride);
    if ((uint64_t)st->ew_notch != 2 * (uint64_t)st->ew_stride - cube)
        return rkt_fail(n, "DPU_RDMA_SURF_NOTCH = 0x%08x: each reader jumps from the end of its cube two surfaces on: 0x%08llx",
                        st->ew_notch, (unsigned long long)(2 * (uint64_t)st->ew_stride - cube));
    t->ew_row_pitch = (size_t)t->out_w * 16;
    t->ew_surf_pitch = st->ew_stride;
    t->ew = rkt_mem(n, RKT_DMA_EXTENT, "EW operand (DPU_RDMA_SRC_BASE_ADDR)", st->ew_src,
                    (uint64_t)(nsurf - 1) * st->ew_stride + cube);
    /* the operand is feature traffic: one burst per 16-channel surface */
    for (int s = 0; s < nsurf && t->ew; s++)
        rkt_mem(n, RKT_DMA_FEATURE, "EW operand surface (DPU_RDMA_SRC_BASE_ADDR / EW_BASE_ADDR)",
                st->ew_src + (uint32_t)((uint64_t)s * st->ew_stride), cube);
    return t->ew ? 0 : -EINVAL;
}

/* Across units: no output window may lie entirely in padding. */
static int check_padding(rkt_npu *n, struct rk3588_task *st)
{
    struct rkt_conv_task *t = &st->t;
    struct rkt_conv_geom *g = &st->t.g;
    const int right = (t->out_w - 1) * t->sx + g->kw - t->pad_left - t->in_w;
    const int bottom = (t->out_h - 1) * t->sy + g->kh - t->pad_top - t->in_h;
    if (t->pad_left >= g->kw || right >= g->kw)
        return rkt_fail(n, "CNA_PAD_CON0 = 0x%08x / CNA_DATA_SIZE2 = 0x%08x: left pad %d, implied right pad %d: a window lies "
                    "entirely in padding (kernel width %d)", st->pc0, st->ds2, t->pad_left, right, g->kw);
    if (t->pad_top >= g->kh || bottom >= g->kh)
        return rkt_fail(n, "CNA_PAD_CON0 = 0x%08x / CORE_DATAOUT_SIZE_0 = 0x%08x: top pad %d, implied bottom pad %d: a window lies "
                    "entirely in padding (kernel height %d)", st->pc0, st->cd0, t->pad_top, bottom, g->kh);
    return 0;
}

/* Input addressing [INFERRED]: row pitch = 4 x LINE_STRIDE bytes, plane pitch = 16 x (SURF_STRIDE +
 * LINE_STRIDE) bytes; raw path: row pitch = LINE_STRIDE bytes. */
static int input_extent(rkt_npu *n, struct rk3588_task *st)
{
    struct rkt_conv_task *t = &st->t;
    struct rkt_conv_geom *g = &st->t.g;
    const int planes = g->ic / 16;
    if (t->argb) {
        t->in_row_pitch = FLD(st->ls, CNA_DMA_CON1, LINE_STRIDE);
        if (t->in_row_pitch < (size_t)t->dma_w)
            return rkt_fail(n, "CNA_DMA_CON1 = 0x%08x: raw rows of %d bytes overlap", st->ls, t->dma_w);
        st->in_len = (uint64_t)(t->in_h - 1) * t->in_row_pitch + t->dma_w;
    } else {
        t->in_row_pitch = 4 * (size_t)FLD(st->ls, CNA_DMA_CON1, LINE_STRIDE);
        /* the sum wraps at the 28-bit field width: Mesa's W*(H-4) is negative below four rows and
         * still addresses whole planes on silicon [INFERRED] */
        t->in_plane_pitch = 16 * (((size_t)FLD(st->ss, CNA_DMA_CON2, SURF_STRIDE) + FLD(st->ls, CNA_DMA_CON1, LINE_STRIDE)) &
                                 RK3588_CNA_DMA_CON2__SURF_STRIDE__MASK);
        if (t->in_row_pitch < (size_t)t->in_w * 16)
            return rkt_fail(n, "CNA_DMA_CON1 = 0x%08x: rows of %d pixels x 16 bytes overlap (line stride counts 4-byte units)", st->ls, t->in_w);
        if (planes > 1 && t->in_plane_pitch < (size_t)t->in_h * t->in_row_pitch)
            return rkt_fail(n, "CNA_DMA_CON2 = 0x%08x: 16-channel planes of %d rows overlap (plane pitch 16 x (SURF_STRIDE + LINE_STRIDE) = %zu bytes)",
                        st->ss, t->in_h, t->in_plane_pitch);
        st->in_len = (uint64_t)(planes - 1) * t->in_plane_pitch + (uint64_t)(t->in_h - 1) * t->in_row_pitch + (uint64_t)t->in_w * 16;
    }
    return 0;
}

/* Output addressing: surface s (16 channels) of group s / (G/16). */
static int output_extent(rkt_npu *n, struct rk3588_task *st)
{
    struct rkt_conv_task *t = &st->t;
    const int spg = t->group_channels / 16, nsurf = (t->oc_real + 15) / 16;
    const size_t cube = (size_t)t->out_w * t->out_h * 16;
    if (t->out_surf_pitch < cube)
        return rkt_fail(n, "DPU_DST_SURF_STRIDE = 0x%08x: surfaces of %dx%d atoms (%zu bytes) overlap", (uint32_t)t->out_surf_pitch,
                    t->out_w, t->out_h, cube);
    if (nsurf > spg && t->out_group_pitch < (size_t)spg * t->out_surf_pitch)
        return rkt_fail(n, "DPU_SURFACE_ADD = 0x%08x: groups of %d surfaces (%zu bytes) overlap", (uint32_t)t->out_group_pitch, spg,
                    (size_t)spg * t->out_surf_pitch);
    const int last = nsurf - 1;
    st->out_len = (uint64_t)(last / spg) * t->out_group_pitch + (uint64_t)(last % spg) * t->out_surf_pitch + cube;
    return 0;
}

/* CBUF weight residency: reuse what an earlier task of the job left, or load. */
static int load_weights(rkt_npu *n, struct rk3588_task *st)
{
    struct rkt_conv_geom *g = &st->t.g;
    const uint64_t wbytes = st->ws0;
    if (st->weight_reuse) {
        const struct rkt_resident_weights *r = &n->cbuf;
        if (!r->valid || r->iova != st->w_iova || r->bytes != st->ws0 || r->data_bank != st->data_bank || r->weight_bank != st->weight_bank ||
            memcmp(&r->g, g, sizeof(*g)) != 0)
            return rkt_fail(n, "CNA_CBUF_CON0 = 0x%08x: WEIGHT_REUSE set but the CBUF does not hold these weights (%s)", st->cb0,
                        !r->valid ? "nothing resident in this job" : "different weights, geometry or bank split");
    } else {
        const int8_t *wp = (const int8_t *)rkt_mem(n, RKT_DMA_WEIGHT, "weights (CNA_DCOMP_ADDR0)", st->w_iova, wbytes);
        if (!wp)
            return -EINVAL;
        if (rkt_conv_load_weights(n->conv, g, wp, n->err, sizeof(n->err)))
            return n->bad = 1, -ENOMEM;
        n->cbuf.valid = wbytes <= (uint64_t)st->weight_bank * CBUF_BANK_BYTES;
        n->cbuf.iova = st->w_iova;
        n->cbuf.bytes = st->ws0;
        n->cbuf.data_bank = st->data_bank;
        n->cbuf.weight_bank = st->weight_bank;
        n->cbuf.g = *g;
    }
    return 0;
}

/* The CNA feature DMA: one burst per row of each 16-channel plane (raw path: per row of DMA_WIDTH bytes); the
 * gaps a longer line or surface stride leaves are not read. */
static void fetch_input(rkt_npu *n, const struct rk3588_task *st)
{
    const struct rkt_conv_task *t = &st->t;
    const int planes = t->argb ? 1 : t->g.ic / 16;
    const uint64_t row = t->argb ? (uint64_t)t->dma_w : (uint64_t)t->in_w * 16;
    for (int p = 0; p < planes; p++)
        for (int r = 0; r < t->in_h; r++)
            rkt_mem(n, RKT_DMA_FEATURE, "input row (CNA_FEATURE_DATA_ADDR)",
                    st->in_iova + (uint32_t)(p * t->in_plane_pitch + r * t->in_row_pitch), row);
}

/* The DPU WDMA: one burst per 16-channel output surface the task computes. */
static void write_output(rkt_npu *n, const struct rk3588_task *st)
{
    const struct rkt_conv_task *t = &st->t;
    const int spg = t->group_channels / 16, nsurf = (t->oc_real + 15) / 16;
    for (int s = 0; s < nsurf; s++)
        rkt_mem(n, RKT_DMA_WRITE, "output surface (DPU_DST_BASE_ADDR)",
                st->out_iova + (uint32_t)((s / spg) * t->out_group_pitch + (s % spg) * t->out_surf_pitch),
                (uint64_t)t->out_w * t->out_h * 16);
}

/* Device memory of the input, bias table and output; the bias table into host order. */
static int map_memory(rkt_npu *n, struct rk3588_task *st)
{
    struct rkt_conv_task *t = &st->t;
    t->in = rkt_mem(n, RKT_DMA_EXTENT, "input (CNA_FEATURE_DATA_ADDR)", st->in_iova, st->in_len);
    /* the BS stream: int32 biases, or with the multiplier 64-byte groups of 8 channels, int32 A[8] at 0, int16 OW[8]
     * at 32, int16 MUL[8] at 48 */
    const int grouped = st->bs_mul;
    const uint64_t len = grouped ? 64 * (((uint64_t)t->oc_real + 7) / 8) : 4 * (uint64_t)t->oc_real;
    const uint8_t *bias = rkt_mem(n, RKT_DMA_BIAS, "bias table (DPU_RDMA_BS_BASE_ADDR)", st->bias_iova, len);
    t->out = rkt_mem(n, RKT_DMA_EXTENT, "output (DPU_DST_BASE_ADDR)", st->out_iova, st->out_len);
    if (n->bad)
        return -EINVAL;
    fetch_input(n, st);
    write_output(n, st);
    if (rkt_tables_reserve(n, (size_t)t->oc_real))
        return -ENOMEM;
    for (int k = 0; k < t->oc_real; k++) {
        const uint8_t *g = grouped ? bias + 64 * (size_t)(k / 8) : NULL;
        const uint8_t *b = grouped ? g + 4 * (size_t)(k % 8) : bias + 4 * (size_t)k;
        n->bias[k] = (int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24);
        if (grouped) {
            const uint8_t *o = g + 32 + 2 * (size_t)(k % 8), *m = g + 48 + 2 * (size_t)(k % 8);
            n->ow[k] = (int16_t)(o[0] | o[1] << 8);
            n->mul[k] = (int16_t)(m[0] | m[1] << 8);
        }
    }
    t->bias = n->bias;
    t->ow = grouped ? n->ow : NULL;
    t->bs_mul = grouped ? n->mul : NULL;
    return 0;
}

/* ---- DPU-only tasks (op-enable DPU + DPU_RDMA): the flying-mode element-wise program with the EW LUT ------ */

/* the shifts the simulator models for INDEX_SELECT: the register table's range, alike for both tables */
#define LUT_SELECT_MAX RK3588_DPU_LUT_INFO__LUT_LE_INDEX_SELECT__MAX
_Static_assert(RK3588_DPU_LUT_INFO__LUT_LE_INDEX_SELECT__MAX == RK3588_DPU_LUT_INFO__LUT_LO_INDEX_SELECT__MAX,
               "both LUT index selects share one range");

static void lut_range(rkt_npu *n, struct rkt_dpu_task *t, int tb, uint32_t start_reg, uint32_t end_reg, int select)
{
    t->range[tb].start = (int32_t)rkt_rd(n, start_reg);
    t->range[tb].end = (int32_t)rkt_rd(n, end_reg);
    t->range[tb].select = select;
    rkt_check(n, t->range[tb].start <= t->range[tb].end, end_reg, (uint32_t)t->range[tb].end,
              "END below START (%d): an empty table is not understood", t->range[tb].start);
    rkt_check(n, (((int64_t)t->range[tb].end - t->range[tb].start) >> (select <= LUT_SELECT_MAX ? select : 0)) < RKT_LUT_ENTRIES, end_reg,
              (uint32_t)t->range[tb].end, "START %d .. END with INDEX_SELECT %d spans more than the %d table entries",
              t->range[tb].start, select, RKT_LUT_ENTRIES);
}

static int rk3588_dpu_only(rkt_npu *n)
{
    struct rkt_dpu_task t;
    memset(&t, 0, sizeof(t));
    rkt_want(n, RK3588_DPU_FEATURE_MODE_CFG, 0x1E5,
             "flying mode (FLYING_MODE 1: input from DPU_RDMA), OUTPUT_MODE 2, BURST_LEN 15, no conv mode");
    rkt_want(n, RK3588_DPU_DATA_FORMAT, 0, "int8 in/out/processing");
    rkt_want(n, RK3588_DPU_OFFSET_PEND, 0, "no pending offset");
    t.out_iova = rkt_rd(n, RK3588_DPU_DST_BASE_ADDR);
    t.surf_pitch = rkt_rd(n, RK3588_DPU_DST_SURF_STRIDE);
    t.w = (int)FLD(rkt_rd(n, RK3588_DPU_DATA_CUBE_WIDTH), DPU_DATA_CUBE_WIDTH, WIDTH) + 1;
    const uint32_t chh = rkt_rd(n, RK3588_DPU_DATA_CUBE_HEIGHT);
    t.h = (int)FLD(chh, DPU_DATA_CUBE_HEIGHT, HEIGHT) + 1;
    rkt_check(n, FLD(chh, DPU_DATA_CUBE_HEIGHT, MINMAX_CTL) == 0, RK3588_DPU_DATA_CUBE_HEIGHT, chh, "MINMAX_CTL must be 0");
    rkt_want(n, RK3588_DPU_DATA_CUBE_NOTCH_ADDR, 0, "no notch");
    const uint32_t cch = rkt_rd(n, RK3588_DPU_DATA_CUBE_CHANNEL);
    t.c = (int)FLD(cch, DPU_DATA_CUBE_CHANNEL, CHANNEL) + 1;
    rkt_check(n, (int)FLD(cch, DPU_DATA_CUBE_CHANNEL, ORIG_CHANNEL) + 1 == t.c, RK3588_DPU_DATA_CUBE_CHANNEL, cch,
              "ORIG_CHANNEL must equal CHANNEL (no channel padding in an element-wise program)");
    rkt_want(n, RK3588_DPU_BS_CFG, 0x53, "BS stage bypassed");
    rkt_want(n, RK3588_DPU_BS_ALU_CFG, 0, "BS stage bypassed");
    rkt_want(n, RK3588_DPU_BS_MUL_CFG, 0, "BS stage bypassed");
    rkt_want(n, RK3588_DPU_BS_RELUX_CMP_VALUE, 0, "BS stage bypassed");
    rkt_want(n, RK3588_DPU_BS_OW_CFG, 0, "no window sums without the conv pipe");
    rkt_want(n, RK3588_DPU_BS_OW_OP, 0, "no window sums without the conv pipe");
    rkt_want(n, RK3588_DPU_WDMA_SIZE_0, (uint32_t)t.c - 1, "CHANNEL_WDMA must be DPU CHANNEL");
    rkt_want(n, RK3588_DPU_WDMA_SIZE_1, (uint32_t)(t.h - 1) << 16 | (uint32_t)(t.w - 1), "WDMA height/width must match the cube");
    rkt_want(n, RK3588_DPU_BN_CFG, 0x53, "BN stage bypassed");
    rkt_want(n, RK3588_DPU_BN_ALU_CFG, 0, "BN stage bypassed");
    rkt_want(n, RK3588_DPU_BN_MUL_CFG, 0, "BN stage bypassed");
    rkt_want(n, RK3588_DPU_BN_RELUX_CMP_VALUE, 0, "BN stage bypassed");
    const uint32_t ew = rkt_rd(n, RK3588_DPU_EW_CFG);
    rkt_check(n, ew == 0x302 || ew == 0x383, RK3588_DPU_EW_CFG, ew,
              "only the LUT alone (0x302: operand, converter and ReLU bypassed) or the whole EW stage bypassed (0x383)");
    t.lut = ew == 0x302;
    rkt_want(n, RK3588_DPU_EW_CVT_OFFSET_VALUE, 0, "EW operand bypassed");
    rkt_want(n, RK3588_DPU_EW_CVT_SCALE_VALUE, 1, "EW operand bypassed");
    rkt_want(n, RK3588_DPU_EW_RELUX_CMP_VALUE, 0, "EW ReLU bypassed");
    for (uint32_t off = RK3588_DPU_EW_OP_VALUE_0; off <= RK3588_DPU_EW_OP_VALUE_7; off += 4)
        rkt_want(n, off, 0, "EW operand bypassed");
    t.out_offset = (int32_t)rkt_rd(n, RK3588_DPU_OUT_CVT_OFFSET);
    const uint32_t osc = rkt_rd(n, RK3588_DPU_OUT_CVT_SCALE);
    rkt_check(n, FLD(osc, DPU_OUT_CVT_SCALE, FP32TOFP16_EN) == 0, RK3588_DPU_OUT_CVT_SCALE, osc, "no fp16 output");
    t.out_scale = FLD(osc, DPU_OUT_CVT_SCALE, OUT_CVT_SCALE);
    const uint32_t osh = rkt_rd(n, RK3588_DPU_OUT_CVT_SHIFT);
    t.out_shift = (int)FLD(osh, DPU_OUT_CVT_SHIFT, OUT_CVT_SHIFT);
    rkt_check(n, osh == (uint32_t)t.out_shift && t.out_shift <= RK3588_DPU_OUT_CVT_SHIFT__OUT_CVT_SHIFT__MAX,
              RK3588_DPU_OUT_CVT_SHIFT, osh, "only OUT_CVT_SHIFT <= %d with MINUS_EXP, CVT_ROUND 0 and CVT_TYPE 0",
              RK3588_DPU_OUT_CVT_SHIFT__OUT_CVT_SHIFT__MAX);
    /* output surfaces in groups of two, as in conv mode [INFERRED]: the cube is written densely when
     * SURFACE_ADD is two surfaces */
    rkt_want(n, RK3588_DPU_SURFACE_ADD, (uint32_t)(2 * t.surf_pitch), "two output surfaces per group (dense NC1HWC2)");
    rkt_check(n, t.surf_pitch == (uint64_t)t.w * t.h * 16, RK3588_DPU_DST_SURF_STRIDE, (uint32_t)t.surf_pitch,
              "the surface pitch must be the plane (W*H*16 = %d): the input is read with the same pitch", t.w * t.h * 16);
    rkt_want(n, RK3588_DPU_UNDOC_40C4, 0, "undocumented register, only 0");
    (void)rkt_rd(n, RK3588_DPU_LUT_ACCESS_CFG); /* applied as fetched (sim_dpu.c) */
    (void)rkt_rd(n, RK3588_DPU_LUT_ACCESS_DATA);
    if (t.lut) {
        const uint32_t cfg = rkt_rd(n, RK3588_DPU_LUT_CFG);
        rkt_check(n, FLD(cfg, DPU_LUT_CFG, LUT_ROAD_SEL) == 1 && FLD(cfg, DPU_LUT_CFG, LUT_EXPAND_EN) == 0 &&
                  FLD(cfg, DPU_LUT_CFG, LUT_LO_LE_MUX) == 0 && FLD(cfg, DPU_LUT_CFG, LUT_CAL_SEL) == 0,
                  RK3588_DPU_LUT_CFG, cfg, "only the linear LE table (ROAD_SEL 1) without expand/mux/cal modes");
        t.hybrid_lo = (int)FLD(cfg, DPU_LUT_CFG, LUT_HYBRID_PRIORITY);
        const uint32_t info = rkt_rd(n, RK3588_DPU_LUT_INFO);
        rkt_check(n, FLD(info, DPU_LUT_INFO, LUT_LE_INDEX_SELECT) <= LUT_SELECT_MAX &&
                  FLD(info, DPU_LUT_INFO, LUT_LO_INDEX_SELECT) <= LUT_SELECT_MAX, RK3588_DPU_LUT_INFO, info,
                  "INDEX_SELECT: shifts beyond %d not simulated", LUT_SELECT_MAX);
        lut_range(n, &t, 0, RK3588_DPU_LUT_LE_START, RK3588_DPU_LUT_LE_END, (int)FLD(info, DPU_LUT_INFO, LUT_LE_INDEX_SELECT));
        lut_range(n, &t, 1, RK3588_DPU_LUT_LO_START, RK3588_DPU_LUT_LO_END, (int)FLD(info, DPU_LUT_INFO, LUT_LO_INDEX_SELECT));
        for (uint32_t off = RK3588_DPU_LUT_LE_SLOPE_SCALE; off <= RK3588_DPU_LUT_LO_SLOPE_SHIFT; off += 4)
            rkt_want(n, off, 0, "under/overflow slopes are not simulated (no input may leave both tables)");
    } else {
        for (uint32_t off = RK3588_DPU_LUT_CFG; off <= RK3588_DPU_LUT_LO_SLOPE_SHIFT; off += 4)
            rkt_want(n, off, 0, "LUT bypassed");
    }

    rkt_want(n, RK3588_DPU_RDMA_DATA_CUBE_WIDTH, (uint32_t)t.w - 1, "must match the DPU cube width");
    rkt_want(n, RK3588_DPU_RDMA_DATA_CUBE_HEIGHT, (uint32_t)t.h - 1, "must match the DPU cube height (EW_LINE_NOTCH_ADDR 0)");
    rkt_want(n, RK3588_DPU_RDMA_DATA_CUBE_CHANNEL, (uint32_t)t.c - 1, "must match the DPU CHANNEL");
    t.in_iova = rkt_rd(n, RK3588_DPU_RDMA_SRC_BASE_ADDR);
    rkt_want(n, RK3588_DPU_RDMA_BRDMA_CFG, 0, "no BS stream");
    rkt_want(n, RK3588_DPU_RDMA_BS_BASE_ADDR, 0, "no BS stream");
    rkt_want(n, RK3588_DPU_RDMA_NRDMA_CFG, 0, "no BN stream");
    rkt_want(n, RK3588_DPU_RDMA_BN_BASE_ADDR, 0, "no BN stream");
    rkt_want(n, RK3588_DPU_RDMA_ERDMA_CFG, 0x1, "EW stream disabled");
    rkt_want(n, RK3588_DPU_RDMA_EW_BASE_ADDR, 0, "EW stream disabled");
    rkt_want(n, RK3588_DPU_RDMA_EW_SURF_STRIDE, 0, "EW stream disabled");
    rkt_want(n, RK3588_DPU_RDMA_FEATURE_MODE_CFG, 0x7801, "flying mode: the main read DMA on (MRDMA_DISABLE 0), BURST_LEN 15, int8");
    rkt_want(n, RK3588_DPU_RDMA_SRC_DMA_CFG, 0, "no pooling");
    rkt_want(n, RK3588_DPU_RDMA_SURF_NOTCH, 0, "no notch");
    rkt_want(n, RK3588_DPU_RDMA_PAD_CFG, 0, "no RDMA padding");
    rkt_want(n, RK3588_DPU_RDMA_WEIGHT, 0x01010101, "equal arbitration weights (Mesa's value)");
    rkt_want(n, RK3588_DPU_RDMA_EW_SURF_NOTCH, 0, "EW stream disabled");
    if (n->bad || rkt_check_all_consumed(n))
        return -EINVAL;
    return rkt_dpu_run(n, &t);
}

static int rk3588_execute(rkt_npu *n)
{
    if (n->op_enable == RKT_OPEN_DPU_BITMAP)
        return rk3588_dpu_only(n);
    struct rk3588_task st;
    memset(&st, 0, sizeof(st));
    cna_conv(n, &st);
    cna_data_size(n, &st);
    cna_weight_size(n, &st);
    cna_cbuf(n, &st);
    cna_cvt(n, &st);
    cna_fetch(n, &st);
    core(n, &st);
    dpu_cube(n, &st);
    dpu_bs(n, &st);
    dpu_stages(n, &st);
    dpu_rdma(n, &st);
    if (n->bad)
        return -EINVAL;
    int rc;
    if ((rc = check_padding(n, &st)) || (rc = input_extent(n, &st)) || (rc = output_extent(n, &st)) ||
        (rc = load_weights(n, &st)) || (rc = map_memory(n, &st)) || (rc = map_operand(n, &st)))
        return rc;
    /* everything written since this group last executed must have been consumed */
    if (rkt_check_all_consumed(n))
        return -EINVAL;
    /* TEFLON_SIM_RULES partial_groups=timeout (board-facts.md fact 5): a channel count ending part way through a
     * DPU group (32 direct, 64 depthwise) never completes and leaves its output unwritten */
    if (n->rules.rule[TEFLON_RULE_PARTIAL_GROUPS] == TEFLON_PARTIAL_GROUPS_TIMEOUT && st.t.oc_real % st.t.group_channels)
        n->hang = 1;
    return rkt_run_conv(n, &st.t);
}

/* The PPU padding value [TRM]: one 35-bit two's-complement value, bits 31..0 in PADDING_VALUE_1_CFG and 34..32
 * in PADDING_VALUE_2_CFG. Max pooling: only -128 (never wins a max, so padding is ignored as in TFLite); an
 * average is only run without padding and then only 0 is accepted. */
static int32_t rk3588_ppu_pad_value(rkt_npu *n, int average)
{
    const uint32_t lo = rkt_rd(n, RK3588_PPU_PADDING_VALUE_1_CFG), hi = rkt_rd(n, RK3588_PPU_PADDING_VALUE_2_CFG);
    const int32_t want = average ? 0 : -128;
    rkt_check(n, lo == (uint32_t)want, RK3588_PPU_PADDING_VALUE_1_CFG, lo, "only %d (%s)", want,
              average ? "an average without padding" : "max pooling pads with -128");
    rkt_check(n, hi == (want < 0 ? 7u : 0u), RK3588_PPU_PADDING_VALUE_2_CFG, hi,
              "bits 34..32 of the padding value: its sign extension");
    return want;
}

const struct rkt_soc rkt_soc_rk3588 = {
    .regs = rk3588_regs,
    .nregs = RK3588_NUM_REGS,
    .task_number_mask = RK3588_PC_TASK_CON__TASK_NUMBER__MASK,
    .task_con_hint = "",
    .stream_core_spointers = 0,
    .execute = rk3588_execute,
    .ppu_pad_value = rk3588_ppu_pad_value,
    .ppu_pad_shift = {RK3588_PPU_POOLING_PADDING_CFG__PAD_LEFT__SHIFT,
                      RK3588_PPU_POOLING_PADDING_CFG__PAD_TOP__SHIFT,
                      RK3588_PPU_POOLING_PADDING_CFG__PAD_RIGHT__SHIFT,
                      RK3588_PPU_POOLING_PADDING_CFG__PAD_BOTTOM__SHIFT},
    .ppu_pad_pairs_equal = 0,
    .ppu_rdma_8bit = 1u << RK3588_PPU_RDMA_DATA_FORMAT__IN_PRECISION__SHIFT, /* TRM: 1 = 8-bit */
};
