/* RK3566/RK3568 register semantics for the simulated rocket NPU: decodes and validates the executing register
 * groups of one conv task (direct, depthwise, the packed-pixel first layer; full or delta task) or of the DPU-only
 * ADD, and runs the conv on the shared datapath (sim_conv.c).
 *
 * What differs from RK3588 is here and nowhere else: 8-channel feature atoms in device memory (the datapath takes
 * 16-channel rows, so the CNA fetch and the DPU write go through a host window), the weight layout (groups of 16
 * kernels, 32-channel slices; depthwise groups of 32: converted into the CBUF order the datapath loads), the
 * bias-only BS stream with its length register, the BN-stage ReLU, no CLIP_TRUNCATE, byte strides.
 *
 * Sources: ../shared/docs/rk356x.md (tags [IAV] iav/rk3568-npu RE-LOG "T<n>", [VEND], [GOLD]
 * ../shared/golden/rocket-rk3568) as restated in docs/hardware/rk3568.md; every register, the values understood and
 * the [INF] readings are listed there (section "Simulator"). Anything else is an error naming register and value.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rocket_regs_rk3568.h"
#include "sim_dot.h"
#include "sim_npu_priv.h"

#define F(v, REG, FIELD) (((v) >> RK3568_##REG##__##FIELD##__SHIFT) & RK3568_##REG##__##FIELD##__MASK)

#define ATOM 8u                   /* bytes (channels) per feature atom [IAV T44/T57] */
#define BANKS 8u                  /* CBUF banks of 32 KiB [IAV T44] */
#define BANK_ENTRIES 1024u        /* 32-byte entries per bank [IAV T44/T57] */
#define BANK_BYTES (32u * 1024u)
#define KGROUP 16                 /* regular weights: kernels per group [IAV T43/T56] */
#define ICSLICE 32                /* regular weights: input channels per slice [IAV T56] */
#define DWGROUP 32                /* depthwise weights: channels per group [IAV T47/T66] */
#define DMA_CON0 0x00171C07u      /* the one CNA_DMA_CON0 value [IAV T28/T38; GOLD] */
#define ARGB_BASE 8u              /* CONV_CON1.ARGB_IN = 8 + pixel bytes - 1 on the packed-pixel first layer: 8, 10, 11
                                   * for 1, 3, 4 bytes [IAV T30/T46; GOLD; TOOLKIT 2.5.0 rk3566 builds] */
#define CVT_LANES 4u              /* the CNA converter's lanes, one per byte of a packed pixel */
#define EW_CFG_BYPASS 0x383u
#define EW_CFG_ADD 0x900002D0u    /* [GOLD add-*; IAV T53] */
#define ERDMA_CFG_ADD 0x40000000u /* [GOLD add-*; IAV T53] */
#define OP_ENABLE_CONV 0x1Fu      /* CNA | CMAC | CORE | DPU | DPU_RDMA [IAV T33/T42; GOLD] */

RKT_ASSERT_PC_LAYOUT(RK3568);
RKT_ASSERT_PPU_LAYOUT(RK3568);
_Static_assert(RK3568_CMAC_S_POINTER == RKT_CMAC_S_POINTER, "the PC treats CMAC S_POINTER as a unit's");

struct rk3568_task {
    struct rkt_conv_task t;
    int packed;                /* packed-pixel input (pixel bytes 1, 3 or 4) converted by the CNA; 0 direct */
    int cin;                   /* DATAIN_CHANNEL: align8 of the real channels, whole atoms in memory */
    int cw;                    /* channels per kernel in the weights (8, a multiple of 16, depthwise of 32) */
    uint32_t in_iova, w_iova, bias_iova, out_iova;
    uint32_t line, surf;       /* input row and plane pitch, bytes */
    uint32_t dma_w;            /* input width the feature DMA and the CBUF take (packed: whole 8-pixel groups) */
    uint32_t dst_surf;         /* output plane pitch, bytes */
    uint32_t ws0;
    uint32_t cb0;
    int stream;                /* the per-channel BS stream: bias, OW and multiplier, 8 bytes per channel */
    int data_bank, weight_bank, weight_reuse;
};

/* Channels a depthwise layer's weights and CBUF rows take: whole groups of 32, a partial last group of 8, 16 or 32
 * [TOOLKIT 2.5.0 rk3566 builds of 8-72 channels; GOLD 24 -> 32]. */
static uint32_t dw_channels(uint32_t c)
{
    const uint32_t tail = c % DWGROUP;
    return c - tail + (tail == 0 ? 0 : tail <= 8 ? 8 : tail <= 16 ? 16 : DWGROUP);
}

static uint32_t align_up(uint32_t v, uint32_t a)
{
    return (v + a - 1) / a * a;
}

/* Registers the vendor writes with one value on the conv path whose meaning is not known or not used. */
static void want_conv_constants(rkt_npu *n, int dw)
{
    static const struct { uint32_t off, val; } fixed[] = {
        {RK3568_CNA_FC_CON0, 0}, {RK3568_CNA_FC_CON1, 0}, {RK3568_CNA_FC_CON2, 0},
        {RK3568_CNA_DMA_CON0, DMA_CON0}, {RK3568_CNA_DCOMP_CTRL, 0}, {RK3568_CNA_DCOMP_REGNUM, 0},
        {RK3568_CORE_UNDOC_302C, 0}, {RK3568_DPU_OFFSET_PEND, 0}, {RK3568_DPU_DATA_CUBE_NOTCH_ADDR, 0},
        {RK3568_DPU_BS_ALU_CFG, 0}, {RK3568_DPU_BS_RELUX_CMP_VALUE, 0},
        {RK3568_DPU_BN_ALU_CFG, 0}, {RK3568_DPU_BN_MUL_CFG, 0}, {RK3568_DPU_EW_CFG, EW_CFG_BYPASS},
        {RK3568_DPU_EW_CVT_OFFSET_VALUE, 0}, {RK3568_DPU_EW_CVT_SCALE_VALUE, 1}, {RK3568_DPU_EW_RELUX_CMP_VALUE, 0},
        {RK3568_DPU_UNDOC_40C4, 0}, {RK3568_DPU_RDMA_SRC_BASE_ADDR, 0}, {RK3568_DPU_RDMA_NRDMA_CFG, 1},
        {RK3568_DPU_RDMA_BN_BASE_ADDR, 0}, {RK3568_DPU_RDMA_UNDOC_5030, 0}, {RK3568_DPU_RDMA_ERDMA_CFG, 1},
        {RK3568_DPU_RDMA_EW_BASE_ADDR, 0}, {RK3568_DPU_RDMA_UNDOC_503C, 0}, {RK3568_DPU_RDMA_EW_SURF_STRIDE, 0},
        {RK3568_DPU_RDMA_SRC_DMA_CFG, 0}, {RK3568_DPU_RDMA_SURF_NOTCH, 0}, {RK3568_DPU_RDMA_PAD_CFG, 0},
        {RK3568_DPU_RDMA_WEIGHT, 0x01010101},
    };
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        rkt_want(n, fixed[i].off, fixed[i].val, "the vendor's only value on the conv path");
    for (uint32_t off = RK3568_CNA_DCOMP_ADDR1; off <= RK3568_CNA_DCOMP_ADDR7; off += 4)
        rkt_want(n, off, 0, "one weight stream: only DCOMP_ADDR0 holds an address");
    for (uint32_t off = RK3568_CNA_DCOMP_AMOUNT0; off <= RK3568_CNA_DCOMP_AMOUNT7; off += 4)
        rkt_want(n, off, 0, "no weight decompression");
    for (uint32_t off = 0x1210; off <= 0x1230; off += 4)
        rkt_want(n, off, 0, "undocumented, the vendor writes 0");
    for (uint32_t off = RK3568_DPU_EW_OP_VALUE_0; off <= RK3568_DPU_EW_OP_VALUE_7; off += 4)
        rkt_want(n, off, 0, "EW bypassed");
    for (uint32_t off = RK3568_DPU_LUT_ACCESS_CFG; off <= RK3568_DPU_LUT_LO_SLOPE_SHIFT; off += 4)
        rkt_want(n, off, 0, "LUT unused");
    rkt_want(n, RK3568_CMAC_CFG, dw ? 3 : 1, "1 regular, 3 depthwise [IAV T29/T30]");
    rkt_want(n, RK3568_CORE_MISC_CFG, dw ? 2 : 0, "DW_EN as the conv mode, QD_EN never set [IAV T29]");
    rkt_want(n, RK3568_DPU_FEATURE_MODE_CFG, dw ? 0x138 : 0x108, "output to memory, CONV_MODE as the CNA [GOLD]");
    rkt_want(n, RK3568_DPU_RDMA_FEATURE_MODE_CFG, dw ? 0x4006 : 0x4000,
             "BURST_LEN 8 (7 hangs the SoC [IAV T24/T27]), CONV_MODE as the CNA, MRDMA on");
}

/* CNA: conv mode, input cube, converter path, padding, fetch strides. */
static void cna(rkt_npu *n, struct rk3568_task *st)
{
    struct rkt_conv_task *t = &st->t;
    const uint32_t con1 = rkt_rd(n, RK3568_CNA_CONV_CON1);
    const uint32_t mode = F(con1, CNA_CONV_CON1, CONV_MODE), argb = F(con1, CNA_CONV_CON1, ARGB_IN);
    rkt_check(n, (mode == 0 || mode == 3) && F(con1, CNA_CONV_CON1, IN_PRECISION) == 0 &&
              F(con1, CNA_CONV_CON1, PROC_PRECISION) == 0 &&
              (argb == 0 || ((argb == ARGB_BASE || argb == ARGB_BASE + 2 || argb == ARGB_BASE + 3) && mode == 0)),
              RK3568_CNA_CONV_CON1, con1,
              "only int8 direct (0) or depthwise (3), ARGB_IN 0 or 8/10/11 (1/3/4-byte packed pixels, direct)");
    t->g.depthwise = mode == 3;
    st->packed = argb ? (int)(argb - ARGB_BASE + 1) : 0;
    const uint32_t con3 = rkt_rd(n, RK3568_CNA_CONV_CON3);
    t->sx = (int)F(con3, CNA_CONV_CON3, CONV_X_STRIDE);
    t->sy = (int)F(con3, CNA_CONV_CON3, CONV_Y_STRIDE);
    rkt_check(n, t->sx >= 1 && t->sy >= 1, RK3568_CNA_CONV_CON3, con3, "strides must be >= 1");
    const uint32_t ds0 = rkt_rd(n, RK3568_CNA_DATA_SIZE0), ds1 = rkt_rd(n, RK3568_CNA_DATA_SIZE1);
    t->in_h = (int)F(ds0, CNA_DATA_SIZE0, DATAIN_HEIGHT);
    t->in_w = (int)F(ds0, CNA_DATA_SIZE0, DATAIN_WIDTH);
    st->cin = (int)F(ds1, CNA_DATA_SIZE1, DATAIN_CHANNEL);
    t->ic_real = (int)F(ds1, CNA_DATA_SIZE1, DATAIN_CHANNEL_REAL_M1) + 1;
    rkt_check(n, t->in_w >= 1 && t->in_h >= 1, RK3568_CNA_DATA_SIZE0, ds0, "empty input");
    rkt_check(n, st->cin >= 8 && st->cin % 8 == 0 && st->cin == (int)align_up((uint32_t)t->ic_real, 8) &&
              (!st->packed || (st->cin == 8 && t->ic_real == st->packed)), RK3568_CNA_DATA_SIZE1, ds1,
              "DATAIN_CHANNEL must be the real channels rounded up to whole 8-channel atoms (packed pixels: 8 / the "
              "pixel bytes) [GOLD; TOOLKIT]");
    const uint32_t con2 = rkt_rd(n, RK3568_CNA_CONV_CON2);
    const uint32_t grains = F(con2, CNA_CONV_CON2, FEATURE_GRAINS);
    const uint32_t kh = F(rkt_rd(n, RK3568_CNA_WEIGHT_SIZE2), CNA_WEIGHT_SIZE2, WEIGHT_HEIGHT);
    const uint32_t sy = F(con3, CNA_CONV_CON3, CONV_Y_STRIDE);
    rkt_check(n, grains >= 1 && grains <= 3 * sy + kh, RK3568_CNA_CONV_CON2, con2,
              "FEATURE_GRAINS (input rows the CNA gathers ahead; no numeric effect known [INF]): 1 .. the vendor rule's "
              "largest, 3 x stride + kernel height [GOLD]");
    rkt_check(n, F(con2, CNA_CONV_CON2, KERNEL_GROUP) == 0, RK3568_CNA_CONV_CON2, con2,
              "KERNEL_GROUP must be 0 (every vendor task; its meaning on RK3568 is not known) [IAV T28; GOLD]");
    const uint32_t con4 = rkt_rd(n, RK3568_CNA_CONV_CON4);
    rkt_check(n, con4 == (st->packed == 3 ? (uint32_t)t->in_w * (uint32_t)t->in_h * 9u : 0u), RK3568_CNA_CONV_CON4,
              con4, "0, or on the 3-byte packed-pixel path width x rows x 9 [IAV T29/T46; TOOLKIT]");
    /* the converter: identity on the direct path (0xA, scales 1), u - 128 on the packed pixel's lanes [IAV T29/T46] */
    if (st->packed) {
        uint32_t con0 = 1; /* CVT_BYPASS, then truncation 14 on each converted lane (6-bit fields from bit 4) */
        for (int i = 0; i < st->packed; i++)
            con0 |= 14u << (4 + 6 * i);
        rkt_want(n, RK3568_CNA_CVT_CON0, con0, "packed pixels: truncation 14 on the pixel's lanes [IAV T46; TOOLKIT]");
        for (uint32_t i = 0; i < CVT_LANES; i++)
            rkt_want(n, RK3568_CNA_CVT_CON1 + 4 * i, i < (uint32_t)st->packed ? 0x4000FF80u : 0x10000u,
                     "packed pixels: (u - 128) x 2^14 >> 14 on the pixel's lanes, the others 1:1 [IAV T46; TOOLKIT]");
    } else {
        rkt_want(n, RK3568_CNA_CVT_CON0, 0xA, "the converter in the path with identity scales [IAV T29]");
        for (uint32_t off = RK3568_CNA_CVT_CON1; off <= RK3568_CNA_CVT_CON4; off += 4)
            rkt_want(n, off, 0x10000, "identity: scale 1, offset 0");
    }
    const uint32_t pad = rkt_rd(n, RK3568_CNA_PAD_CON0);
    t->pad_top = (int)F(pad, CNA_PAD_CON0, PAD_TOP);
    t->pad_left = (int)F(pad, CNA_PAD_CON0, PAD_LEFT);
    const int pv = RKT_SXT(F(pad, CNA_PAD_CON0, PAD_VALUE), 16);
    rkt_check(n, pv >= -128 && pv <= 127, RK3568_CNA_PAD_CON0, pad, "the pad value is a stored int8 [IAV T31]");
    t->pad_value = t->pad_value_lane1 = pv;
    st->in_iova = rkt_rd(n, RK3568_CNA_FEATURE_DATA_ADDR);
    st->line = 8u * F(rkt_rd(n, RK3568_CNA_DMA_CON1), CNA_DMA_CON1, LINE_STRIDE);
    st->surf = 8u * F(rkt_rd(n, RK3568_CNA_DMA_CON2), CNA_DMA_CON2, SURF_STRIDE);
    const uint32_t row = st->packed ? (uint32_t)t->in_w * (uint32_t)st->packed : (uint32_t)t->in_w * ATOM;
    /* a packed-pixel input is fetched and buffered in whole 8-pixel groups [TOOLKIT] */
    st->dma_w = st->packed ? align_up((uint32_t)t->in_w, ATOM) : (uint32_t)t->in_w;
    rkt_check(n, st->line >= row, RK3568_CNA_DMA_CON1, st->line / 8, "rows of %u bytes overlap", row);
    rkt_check(n, st->packed || st->cin == 8 || st->surf >= st->line * (uint32_t)t->in_h, RK3568_CNA_DMA_CON2,
              st->surf / 8, "8-channel planes of %d rows overlap", t->in_h);
    rkt_want(n, RK3568_CNA_FC_DATA_SIZE0, st->dma_w << 16 | (uint32_t)t->in_h,
             "the DMA cube is the input cube (packed pixels: the width in whole 8-pixel groups [TOOLKIT])");
    rkt_want(n, RK3568_CNA_FC_DATA_SIZE1, (uint32_t)st->cin, "the DMA channels are DATAIN_CHANNEL");
}

/* CNA weights and CBUF. */
static void cna_weights(rkt_npu *n, struct rk3568_task *st)
{
    struct rkt_conv_task *t = &st->t;
    struct rkt_conv_geom *g = &t->g;
    const uint32_t ws2 = rkt_rd(n, RK3568_CNA_WEIGHT_SIZE2), ws1 = rkt_rd(n, RK3568_CNA_WEIGHT_SIZE1);
    st->ws0 = rkt_rd(n, RK3568_CNA_WEIGHT_SIZE0);
    g->kw = (int)F(ws2, CNA_WEIGHT_SIZE2, WEIGHT_WIDTH);
    g->kh = (int)F(ws2, CNA_WEIGHT_SIZE2, WEIGHT_HEIGHT);
    const int kernels = (int)F(ws2, CNA_WEIGHT_SIZE2, WEIGHT_KERNELS);
    const int taps = g->kw * g->kh;
    rkt_check(n, taps >= 1 && kernels >= 1 && (!g->depthwise || kernels == 1), RK3568_CNA_WEIGHT_SIZE2, ws2,
              "kernel size >= 1, one packed kernel when depthwise");
    st->cw = taps ? (int)(ws1 / (uint32_t)taps) : 0;
    const int want_cw = g->depthwise ? (int)dw_channels((uint32_t)st->cin)
                                     : st->cin <= 8 ? 8 : (int)align_up((uint32_t)st->cin, 16);
    rkt_check(n, taps && ws1 == (uint32_t)(taps * want_cw), RK3568_CNA_WEIGHT_SIZE1, ws1,
              "bytes per kernel: taps x %d (8 channels up to 8, else whole 16-channel pairs; depthwise 32-channel "
              "groups, a last group of 8, 16 or 32) [GOLD; TOOLKIT]", want_cw);
    rkt_check(n, st->ws0 == ws1 * (uint32_t)kernels, RK3568_CNA_WEIGHT_SIZE0, st->ws0, "bytes per kernel x kernels");
    g->kernels = g->depthwise ? 1 : kernels;
    g->ic = (int)align_up((uint32_t)want_cw, g->depthwise ? DWGROUP : 16);
    st->w_iova = rkt_rd(n, RK3568_CNA_DCOMP_ADDR0);
    st->cb0 = rkt_rd(n, RK3568_CNA_CBUF_CON0);
    st->data_bank = (int)F(st->cb0, CNA_CBUF_CON0, DATA_BANK);
    st->weight_bank = (int)F(st->cb0, CNA_CBUF_CON0, WEIGHT_BANK);
    st->weight_reuse = (int)F(st->cb0, CNA_CBUF_CON0, WEIGHT_REUSE);
    rkt_check(n, st->data_bank + st->weight_bank == (int)BANKS, RK3568_CNA_CBUF_CON0, st->cb0,
              "the data and weight banks share the 8 banks [IAV T44; GOLD]");
    const uint32_t cb1 = rkt_rd(n, RK3568_CNA_CBUF_CON1);
    /* entries follow the channels the CNA reads: 8 up to 8, else whole 16-channel pairs; depthwise the weights'
     * channels [GOLD; TOOLKIT] */
    const uint32_t cread = g->depthwise ? (uint32_t)st->cw : st->cin <= 8 ? 8u : align_up((uint32_t)st->cin, 16);
    const uint32_t entries = align_up(st->dma_w * cread / ATOM, 4) / 4;
    rkt_check(n, cb1 == (st->dma_w << 16 | entries), RK3568_CNA_CBUF_CON1, cb1,
              "input width << 16 | DATA_ENTRIES = ceil(width x atoms / 4); packed pixels: the width in whole 8-pixel "
              "groups [IAV T29/T57; GOLD; TOOLKIT]");
    rkt_check(n, F(cb1, CNA_CBUF_CON1, DATA_ENTRIES) * (uint32_t)t->in_h <= (uint32_t)st->data_bank * BANK_ENTRIES,
              RK3568_CNA_CBUF_CON1, cb1, "the task's %d rows do not fit %d data banks", t->in_h, st->data_bank);
}

/* CORE and DPU: output cube, BS (bias-only stream), BN ReLU, OUT_CVT, strides. */
static void dpu(rkt_npu *n, struct rk3568_task *st)
{
    struct rkt_conv_task *t = &st->t;
    const int dw = t->g.depthwise;
    t->out_w = (int)F(rkt_rd(n, RK3568_DPU_DATA_CUBE_WIDTH), DPU_DATA_CUBE_WIDTH, WIDTH_M1) + 1;
    t->out_h = (int)F(rkt_rd(n, RK3568_DPU_DATA_CUBE_HEIGHT), DPU_DATA_CUBE_HEIGHT, HEIGHT_M1) + 1;
    const uint32_t ch = rkt_rd(n, RK3568_DPU_DATA_CUBE_CHANNEL);
    t->oc = (int)F(ch, DPU_DATA_CUBE_CHANNEL, CHANNEL_M1) + 1;
    t->oc_real = (int)F(ch, DPU_DATA_CUBE_CHANNEL, ORIG_CHANNEL_M1) + 1;
    rkt_check(n, t->oc_real <= t->oc && t->oc == (int)align_up((uint32_t)t->oc_real, dw ? 32 : 16) &&
              (!dw || (t->oc == t->g.ic && t->oc_real == t->ic_real)) && (dw || t->g.kernels >= t->oc_real),
              RK3568_DPU_DATA_CUBE_CHANNEL, ch, "CHANNEL: the real channels (ORIG_CHANNEL) rounded up to 16 (depthwise: "
              "32, and the input's) [GOLD]; direct: no more than the packed kernels");
    rkt_want(n, RK3568_CNA_DATA_SIZE2, (uint32_t)t->out_w, "DATAOUT_WIDTH is the DPU cube width");
    rkt_want(n, RK3568_CNA_DATA_SIZE3, (uint32_t)(t->out_w * t->out_h), "DATAOUT_ATOMICS = width x height");
    rkt_want(n, RK3568_CORE_DATAOUT_SIZE_0, (uint32_t)(t->out_h - 1) << 16 | (uint32_t)(t->out_w - 1),
             "the DPU cube [IAV T29]");
    rkt_want(n, RK3568_CORE_DATAOUT_SIZE_1, (uint32_t)t->oc - 1, "the DPU CHANNEL [IAV T29]");
    rkt_want(n, RK3568_DPU_RDMA_DATA_CUBE_WIDTH, (uint32_t)t->out_w - 1, "the DPU cube");
    rkt_want(n, RK3568_DPU_RDMA_DATA_CUBE_HEIGHT, (uint32_t)t->out_h - 1, "the DPU cube");
    rkt_want(n, RK3568_DPU_RDMA_DATA_CUBE_CHANNEL, (uint32_t)t->oc - 1, "the DPU CHANNEL");
    /* BS: the bias stream added and BS ReLU bypassed, bit 3 set as in every vendor conv; the multiplier bypassed
     * (0x158, per-tensor: bias-only stream, OW from BS_OW_OP) or read with the bias and OW from the per-channel
     * stream (0x148) [IAV T41/T43; GOLD] */
    const uint32_t bs = rkt_rd(n, RK3568_DPU_BS_CFG);
    rkt_check(n, bs == 0x158 || bs == 0x148, RK3568_DPU_BS_CFG, bs,
              "0x158 (bias-only stream, MUL bypassed) or 0x148 (bias, OW and MUL from the per-channel stream) [IAV T41/T43]");
    st->stream = bs == 0x148;
    rkt_want(n, RK3568_DPU_BS_OW_CFG, (dw ? 0x36Cu : 0x124u) | (uint32_t)st->stream,
             "the OW window of the conv mode (SIZE_E 3 dw, 1), OW_SRC = the stream's OW [IAV T41; GOLD]");
    if (st->stream) {
        const uint32_t mc = rkt_rd(n, RK3568_DPU_BS_MUL_CFG);
        const int sh = (int)F(mc, DPU_BS_MUL_CFG, BS_MUL_SHIFT_VALUE);
        rkt_check(n, mc == ((uint32_t)sh << RK3568_DPU_BS_MUL_CFG__BS_MUL_SHIFT_VALUE__SHIFT | 1u), RK3568_DPU_BS_MUL_CFG,
                  mc, "the multiplier from the stream (BS_MUL_SRC 1) with a shift, no register operand [IAV T41]");
        rkt_want(n, RK3568_DPU_DATA_FORMAT, (uint32_t)sh << RK3568_DPU_DATA_FORMAT__BS_MUL_SHIFT_VALUE_NEG__SHIFT,
                 "int8, BS_MUL_SHIFT_VALUE_NEG = BS_MUL_SHIFT_VALUE [IAV T41; GOLD]");
        rkt_want(n, RK3568_DPU_BS_OW_OP, 0, "the OW factors come from the stream");
        t->bs_shift_pos = t->bs_shift_neg = sh;
        t->ow_op = 0;
    } else {
        rkt_want(n, RK3568_DPU_BS_MUL_CFG, 0, "MUL bypassed");
        rkt_want(n, RK3568_DPU_DATA_FORMAT, 0, "int8, no BS multiplier shift (per-tensor)");
        t->ow_op = (int32_t)rkt_rd(n, RK3568_DPU_BS_OW_OP);
        rkt_check(n, t->ow_op >= -127 && t->ow_op <= 128, RK3568_DPU_BS_OW_OP, (uint32_t)t->ow_op,
                  "0x80 - an 8-bit weight zero point [IAV T43]");
    }
    /* BN: ReLU at 0 (0x12) and RELUX (0x92) in the accumulator domain, or bypassed (0x53) [IAV T57; GOLD] */
    const uint32_t bn = rkt_rd(n, RK3568_DPU_BN_CFG);
    const int32_t relux = (int32_t)rkt_rd(n, RK3568_DPU_BN_RELUX_CMP_VALUE);
    rkt_check(n, bn == 0x53 || bn == 0x12 || bn == 0x92, RK3568_DPU_BN_CFG, bn,
              "BN bypassed (0x53), ReLU (0x12) or ReLU + RELUX (0x92) [IAV T57]");
    rkt_check(n, bn == 0x92 ? relux >= 0 : relux == 0, RK3568_DPU_BN_RELUX_CMP_VALUE, (uint32_t)relux,
              "the RELUX bound (>= 0) with BN_CFG 0x92, else 0");
    t->clamp = bn != 0x53;
    t->clamp_lo = bn == 0x53 ? INT32_MIN : 0;
    t->clamp_hi = bn == 0x92 ? relux : INT32_MAX;
    t->out_offset = (int32_t)rkt_rd(n, RK3568_DPU_OUT_CVT_OFFSET);
    rkt_check(n, t->out_offset >= -128 && t->out_offset <= 127, RK3568_DPU_OUT_CVT_OFFSET, (uint32_t)t->out_offset,
              "a stored int8 zero point");
    t->out_scale = rkt_rd(n, RK3568_DPU_OUT_CVT_SCALE);
    t->out_shift = (int)rkt_rd(n, RK3568_DPU_OUT_CVT_SHIFT);
    rkt_check(n, t->out_shift <= RK3568_DPU_OUT_CVT_SHIFT__OUT_CVT_SHIFT__MAX, RK3568_DPU_OUT_CVT_SHIFT,
              (uint32_t)t->out_shift, "OUT_CVT_SHIFT <= %d", RK3568_DPU_OUT_CVT_SHIFT__OUT_CVT_SHIFT__MAX);
    st->out_iova = rkt_rd(n, RK3568_DPU_DST_BASE_ADDR);
    st->dst_surf = rkt_rd(n, RK3568_DPU_DST_SURF_STRIDE);
    rkt_check(n, st->dst_surf % ATOM == 0 && st->dst_surf >= (uint32_t)(t->out_w * t->out_h) * ATOM,
              RK3568_DPU_DST_SURF_STRIDE, st->dst_surf, "bytes between 8-channel planes: whole atoms, >= the task's "
              "%dx%d atoms [IAV T52]", t->out_w, t->out_h);
    rkt_want(n, RK3568_DPU_SURFACE_ADD, st->dst_surf * (dw ? 4u : 2u),
             "2 (depthwise 4) output planes: the only relation seen [IAV T32; GOLD]");
    /* DPU_RDMA: the bias-only stream, 4 bytes per declared channel, or the per-channel stream, 8; its length in
     * 8-byte words - 1 [IAV T28/T41/T43/T71] */
    rkt_want(n, RK3568_DPU_RDMA_BRDMA_CFG, st->stream ? 0xE : 2,
             "BRDMA_DATA_USE 1: the bias-only stream; 7: bias, OW and multiplier (as BS_CFG says) [IAV T41/T43]");
    st->bias_iova = rkt_rd(n, RK3568_DPU_RDMA_BS_BASE_ADDR);
    rkt_want(n, RK3568_DPU_RDMA_BS_LENGTH, (uint32_t)t->oc * (st->stream ? 8u : 4u) / 8u - 1u,
             "the stream's 8-byte words - 1 (4 or 8 bytes per declared channel) [IAV T71]");
    t->clip_truncate = 0; /* no CLIP_TRUNCATE on RK3568 [IAV T29] */
    t->group_channels = 32;
}

/* RK3568 weights (bytes at w) -> the datapath's CBUF order (sim_conv.h: direct kernel groups of 32, channel groups of
 * 32, taps, kernel, channel; depthwise channel groups of 64, taps, channel). Channels beyond st->cw are 0. */
static int8_t *convert_weights(const struct rk3568_task *st, const int8_t *w)
{
    const struct rkt_conv_geom *g = &st->t.g;
    const int taps = g->kw * g->kh, cw = st->cw, ic = g->ic, k = g->kernels;
    int8_t *out = calloc((size_t)taps * ic * k, 1), *canon = calloc((size_t)taps * ic * k, 1);
    if (!out || !canon) {
        free(out);
        free(canon);
        return NULL;
    }
    size_t pos = 0;
    if (g->depthwise) { /* [group of 32, the last compact][tap][channel] -> canon[tap][c] */
        for (int c0 = 0; c0 < cw; c0 += DWGROUP) {
            const int gw = cw - c0 < DWGROUP ? cw - c0 : DWGROUP;
            for (int tap = 0; tap < taps; tap++)
                for (int c = 0; c < gw; c++)
                    canon[(size_t)tap * ic + c0 + c] = w[pos++];
        }
        for (int c0 = 0; c0 < ic; c0 += 64) {
            const int wi = ic - c0 < 64 ? ic - c0 : 64;
            for (int tap = 0, o = c0 * taps; tap < taps; tap++, o += wi)
                memcpy(out + o, canon + (size_t)tap * ic + c0, (size_t)wi);
        }
    } else { /* [group of 16 kernels][slice of 32 channels][tap][kernel][channel], compact tails -> canon[k][tap][c] */
        for (int g0 = 0; g0 < k; g0 += KGROUP) {
            const int nk = k - g0 < KGROUP ? k - g0 : KGROUP;
            for (int s0 = 0; s0 < cw; s0 += ICSLICE) {
                const int sw = cw - s0 < ICSLICE ? cw - s0 : ICSLICE;
                for (int tap = 0; tap < taps; tap++)
                    for (int k2 = 0; k2 < nk; k2++, pos += (size_t)sw)
                        memcpy(canon + ((size_t)(g0 + k2) * taps + tap) * ic + s0, w + pos, (size_t)sw);
            }
        }
        pos = 0;
        for (int og = 0; og < k; og += 32) {
            const int nk = k - og < 32 ? k - og : 32;
            for (int ig = 0; ig < ic; ig += 32) {
                const int wi = ic - ig < 32 ? ic - ig : 32;
                for (int tap = 0; tap < taps; tap++)
                    for (int k2 = 0; k2 < nk; k2++, pos += (size_t)wi)
                        memcpy(out + pos, canon + ((size_t)(og + k2) * taps + tap) * ic + ig, (size_t)wi);
            }
        }
    }
    free(canon);
    return out;
}

/* CBUF weight residency: reuse what an earlier task of the job left (WEIGHT_REUSE), or load (the CNA fetches weights
 * larger than the weight banks as it goes [IAV T48; GOLD]: then nothing stays resident). */
static int load_weights(rkt_npu *n, struct rk3568_task *st)
{
    const struct rkt_conv_geom *g = &st->t.g;
    if (st->weight_reuse) {
        const struct rkt_resident_weights *r = &n->cbuf;
        if (!r->valid || r->iova != st->w_iova || r->bytes != st->ws0 || r->data_bank != st->data_bank ||
            r->weight_bank != st->weight_bank || memcmp(&r->g, g, sizeof(*g)) != 0)
            return rkt_fail(n, "CNA_CBUF_CON0 = 0x%08x: WEIGHT_REUSE set but the CBUF does not hold these weights (%s)",
                            st->cb0, !r->valid ? "nothing resident in this job" : "different weights, geometry or banks");
        return 0;
    }
    const int8_t *wp = (const int8_t *)rkt_mem(n, RKT_DMA_WEIGHT, "weights (CNA_DCOMP_ADDR0)", st->w_iova, st->ws0);
    if (!wp)
        return -EINVAL;
    int8_t *cbuf = convert_weights(st, wp);
    if (!cbuf)
        return rkt_fail(n, "simulator out of memory for the weights");
    const int rc = rkt_conv_load_weights(n->conv, g, cbuf, n->err, sizeof(n->err));
    free(cbuf);
    if (rc)
        return n->bad = 1, -ENOMEM;
    n->cbuf = (struct rkt_resident_weights){.valid = st->ws0 <= (uint32_t)st->weight_bank * BANK_BYTES,
                                            .iova = st->w_iova, .bytes = st->ws0, .data_bank = st->data_bank,
                                            .weight_bank = st->weight_bank, .g = *g};
    return 0;
}

/* The CNA feature DMA into the host window the datapath reads: [16-channel plane][row][x][16]; one burst per row of
 * each 8-channel plane (packed pixels: per row of width x pixel bytes, converted u - 128 [IAV T46]). */
static int fetch_window(rkt_npu *n, struct rk3568_task *st)
{
    struct rkt_conv_task *t = &st->t;
    const size_t row16 = (size_t)t->in_w * 16, plane16 = row16 * (size_t)t->in_h;
    const size_t bytes = plane16 * (size_t)(t->g.ic / 16);
    if (bytes > n->window_cap) {
        uint8_t *w = realloc(n->window, bytes);
        if (!w)
            return rkt_fail(n, "simulator out of memory for the input window");
        n->window = w;
        n->window_cap = bytes;
    }
    memset(n->window, 0, bytes);
    for (int r = 0; r < t->in_h; r++) {
        if (st->packed) {
            const uint8_t *s = rkt_mem(n, RKT_DMA_FEATURE, "input row (CNA_FEATURE_DATA_ADDR)",
                                       st->in_iova + (uint32_t)r * st->line, (uint64_t)t->in_w * (uint64_t)st->packed);
            if (!s)
                return -EINVAL;
            for (int x = 0; x < t->in_w; x++)
                for (int c = 0; c < st->packed; c++)
                    n->window[(size_t)r * row16 + (size_t)x * 16 + (size_t)c] =
                        (uint8_t)(s[st->packed * x + c] - 0x80);
            continue;
        }
        for (int p = 0; p < st->cin / (int)ATOM; p++) {
            const uint8_t *s = rkt_mem(n, RKT_DMA_FEATURE, "input row (CNA_FEATURE_DATA_ADDR)",
                                       st->in_iova + (uint32_t)p * st->surf + (uint32_t)r * st->line,
                                       (uint64_t)t->in_w * ATOM);
            if (!s)
                return -EINVAL;
            uint8_t *d = n->window + (size_t)(p / 2) * plane16 + (size_t)r * row16 + (size_t)(p % 2) * ATOM;
            for (int x = 0; x < t->in_w; x++)
                memcpy(d + (size_t)x * 16, s + (size_t)x * ATOM, ATOM);
        }
    }
    t->in = n->window;
    t->in_row_pitch = row16;
    t->in_plane_pitch = plane16;
    return 0;
}

static uint32_t le32(const uint8_t *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* The BS stream: int32 per declared channel (bias only), or per group of 4 channels their int32 bias terms, int16 OW
 * factors and uint16 multipliers [IAV T41/T71; MAP §3; GOLD avgpool]. */
static int read_bias(rkt_npu *n, struct rk3568_task *st)
{
    struct rkt_conv_task *t = &st->t;
    const uint64_t per = st->stream ? 8 : 4;
    const uint8_t *b = rkt_mem(n, RKT_DMA_BIAS, "bias stream (DPU_RDMA_BS_BASE_ADDR)", st->bias_iova, (uint64_t)t->oc * per);
    if (!b || rkt_tables_reserve(n, (size_t)t->oc))
        return -EINVAL;
    t->ow = t->bs_mul = NULL;
    for (int k = 0; k < t->oc_real; k++) {
        if (!st->stream) {
            n->bias[k] = (int32_t)le32(b + 4 * k);
            continue;
        }
        const uint8_t *g = b + 32 * (k / 4);
        const int j = k % 4;
        n->bias[k] = (int32_t)le32(g + 4 * j);
        n->ow[k] = (int16_t)(uint16_t)(g[16 + 2 * j] | g[17 + 2 * j] << 8);
        const unsigned mul = (unsigned)g[24 + 2 * j] | (unsigned)g[25 + 2 * j] << 8;
        if (mul > INT16_MAX)
            return rkt_fail(n, "BS stream: channel %d multiplier %u above 32767 (a 16-bit unsigned field [IAV T41]; "
                            "values that large are not simulated: none is known)", k, mul);
        n->mul[k] = (int16_t)mul;
    }
    t->bias = n->bias;
    if (st->stream) {
        t->ow = n->ow;
        t->bs_mul = n->mul;
    }
    return 0;
}

/* The DPU WDMA: 8-channel planes of the real channels [INF: ceil(ORIG_CHANNEL / 8) planes; the vendor's buffers hold
 * exactly those], each row width x 8 bytes, planes DST_SURF_STRIDE apart [IAV T44/T52]. */
static int write_output(rkt_npu *n, const struct rk3568_task *st, const uint8_t *cube)
{
    const struct rkt_conv_task *t = &st->t;
    const size_t surf16 = (size_t)t->out_w * t->out_h * 16, plane = (size_t)t->out_w * t->out_h * ATOM;
    for (int p = 0; p < (t->oc_real + 7) / 8; p++) {
        uint8_t *d = rkt_mem(n, RKT_DMA_WRITE, "output plane (DPU_DST_BASE_ADDR)", st->out_iova + (uint32_t)p * st->dst_surf,
                             plane);
        if (!d)
            return -EINVAL;
        const uint8_t *s = cube + (size_t)(p / 2) * surf16 + (size_t)(p % 2) * ATOM;
        for (size_t a = 0; a < (size_t)t->out_w * t->out_h; a++)
            memcpy(d + a * ATOM, s + a * 16, ATOM);
    }
    return 0;
}

static int conv_task(rkt_npu *n)
{
    struct rk3568_task st;
    memset(&st, 0, sizeof(st));
    struct rkt_conv_task *t = &st.t;
    cna(n, &st);
    cna_weights(n, &st);
    want_conv_constants(n, t->g.depthwise);
    dpu(n, &st);
    if (n->bad)
        return -EINVAL;
    /* the window a right / bottom edge implies must be covered by input or left padding (no uncovered window) */
    const int need_w = (t->out_w - 1) * t->sx + t->g.kw, need_h = (t->out_h - 1) * t->sy + t->g.kh;
    if (t->pad_left >= t->g.kw || t->pad_top >= t->g.kh || need_w - t->pad_left - t->in_w >= t->g.kw ||
        need_h - t->pad_top - t->in_h >= t->g.kh)
        return rkt_fail(n, "CNA_PAD_CON0: a %dx%d window lies entirely in padding", t->g.kh, t->g.kw);
    int rc;
    if ((rc = load_weights(n, &st)) || (rc = read_bias(n, &st)) || (rc = fetch_window(n, &st)))
        return rc;
    if (rkt_check_all_consumed(n))
        return -EINVAL;
    const size_t surf16 = (size_t)t->out_w * t->out_h * 16;
    uint8_t *cube = calloc(surf16, (size_t)(t->oc + 15) / 16);
    if (!cube)
        return rkt_fail(n, "simulator out of memory for the output cube");
    t->out = cube;
    t->out_surf_pitch = surf16;
    t->out_group_pitch = 2 * surf16;
    rc = rkt_run_conv(n, t);
    if (!rc)
        rc = write_output(n, &st, cube);
    free(cube);
    return rc;
}

/* ---- the DPU-only ADD (op-enable 0x18) [GOLD add-*; IAV T53/T55] --------------------------------------------- */

static int add_task(rkt_npu *n)
{
    rkt_want(n, RK3568_DPU_FEATURE_MODE_CFG, 0x109, "flying mode (input from DPU_RDMA), the vendor's ADD word [GOLD]");
    rkt_want(n, RK3568_DPU_OFFSET_PEND, 0, "no pending offset");
    const int w = (int)F(rkt_rd(n, RK3568_DPU_DATA_CUBE_WIDTH), DPU_DATA_CUBE_WIDTH, WIDTH_M1) + 1;
    const int h = (int)F(rkt_rd(n, RK3568_DPU_DATA_CUBE_HEIGHT), DPU_DATA_CUBE_HEIGHT, HEIGHT_M1) + 1;
    const uint32_t ch = rkt_rd(n, RK3568_DPU_DATA_CUBE_CHANNEL);
    const int c = (int)F(ch, DPU_DATA_CUBE_CHANNEL, CHANNEL_M1) + 1;
    rkt_check(n, (int)F(ch, DPU_DATA_CUBE_CHANNEL, ORIG_CHANNEL_M1) + 1 == c, RK3568_DPU_DATA_CUBE_CHANNEL, ch,
              "ORIG_CHANNEL must equal CHANNEL");
    rkt_want(n, RK3568_DPU_DATA_CUBE_NOTCH_ADDR, 0, "no notch");
    const uint32_t out_iova = rkt_rd(n, RK3568_DPU_DST_BASE_ADDR), surf = rkt_rd(n, RK3568_DPU_DST_SURF_STRIDE);
    const uint32_t plane = (uint32_t)(w * h == 1 ? 1 : align_up((uint32_t)(w * h), 4)) * ATOM;
    rkt_check(n, surf == plane, RK3568_DPU_DST_SURF_STRIDE, surf,
              "the align4(W x H)-atom plane (%u bytes): both inputs are read with it [IAV T57; GOLD]", plane);
    rkt_want(n, RK3568_DPU_SURFACE_ADD, surf, "one plane [GOLD]");
    /* BS: (a + ALU operand) x MUL >> shift, the shift also in DATA_FORMAT [GOLD; INF: NVDLA SDP ALU -> MUL -> shift] */
    rkt_want(n, RK3568_DPU_BS_CFG, 0x48, "ALU and MUL from registers, ReLU bypassed [GOLD]");
    const int32_t alu = (int32_t)rkt_rd(n, RK3568_DPU_BS_ALU_CFG);
    const uint32_t mc = rkt_rd(n, RK3568_DPU_BS_MUL_CFG);
    const int mul_a = (int)F(mc, DPU_BS_MUL_CFG, BS_MUL_OPERAND), sh_a = (int)F(mc, DPU_BS_MUL_CFG, BS_MUL_SHIFT_VALUE);
    rkt_check(n, F(mc, DPU_BS_MUL_CFG, BS_MUL_SRC) == 0 && mul_a < 0x8000, RK3568_DPU_BS_MUL_CFG, mc,
              "multiplier from the register, below 2^15");
    rkt_want(n, RK3568_DPU_DATA_FORMAT, (uint32_t)sh_a << 4, "BS_MUL_SHIFT_VALUE_NEG = BS_MUL_SHIFT_VALUE, int8");
    rkt_want(n, RK3568_DPU_BS_RELUX_CMP_VALUE, 0, "no ReLUX");
    rkt_want(n, RK3568_DPU_BS_OW_CFG, 2, "no window sums without the conv pipe (OD_BYPASS)");
    rkt_want(n, RK3568_DPU_BS_OW_OP, 0, "no window sums");
    rkt_want(n, RK3568_DPU_BN_CFG, 0x53, "BN bypassed");
    rkt_want(n, RK3568_DPU_BN_ALU_CFG, 0, "BN bypassed");
    rkt_want(n, RK3568_DPU_BN_MUL_CFG, 0, "BN bypassed");
    rkt_want(n, RK3568_DPU_BN_RELUX_CMP_VALUE, 0, "BN bypassed");
    rkt_want(n, RK3568_DPU_EW_CFG, EW_CFG_ADD, "the vendor's ADD of the converted EW operand [GOLD; IAV T53]");
    const int32_t ew_off = (int32_t)rkt_rd(n, RK3568_DPU_EW_CVT_OFFSET_VALUE);
    const uint32_t sc = rkt_rd(n, RK3568_DPU_EW_CVT_SCALE_VALUE);
    const int mul_b = RKT_SXT(F(sc, DPU_EW_CVT_SCALE_VALUE, EW_OP_CVT_SCALE), 16);
    const int sh_b = (int)F(sc, DPU_EW_CVT_SCALE_VALUE, EW_OP_CVT_SHIFT);
    rkt_want(n, RK3568_DPU_EW_RELUX_CMP_VALUE, 0, "EW ReLU bypassed");
    for (uint32_t off = RK3568_DPU_EW_OP_VALUE_0; off <= RK3568_DPU_EW_OP_VALUE_7; off += 4)
        rkt_want(n, off, 0, "EW operand from memory");
    const int32_t oo = (int32_t)rkt_rd(n, RK3568_DPU_OUT_CVT_OFFSET);
    const int64_t os = rkt_rd(n, RK3568_DPU_OUT_CVT_SCALE);
    const int osh = (int)rkt_rd(n, RK3568_DPU_OUT_CVT_SHIFT);
    rkt_check(n, osh <= RK3568_DPU_OUT_CVT_SHIFT__OUT_CVT_SHIFT__MAX, RK3568_DPU_OUT_CVT_SHIFT, (uint32_t)osh, "shift <= 47");
    rkt_want(n, RK3568_DPU_UNDOC_40C4, 0, "undocumented, only 0");
    for (uint32_t off = RK3568_DPU_LUT_ACCESS_CFG; off <= RK3568_DPU_LUT_LO_SLOPE_SHIFT; off += 4)
        rkt_want(n, off, 0, "LUT unused");
    rkt_want(n, RK3568_DPU_RDMA_DATA_CUBE_WIDTH, (uint32_t)w - 1, "the DPU cube");
    rkt_want(n, RK3568_DPU_RDMA_DATA_CUBE_HEIGHT, (uint32_t)h - 1, "the DPU cube");
    rkt_want(n, RK3568_DPU_RDMA_DATA_CUBE_CHANNEL, (uint32_t)c - 1, "the DPU cube");
    const uint32_t a_iova = rkt_rd(n, RK3568_DPU_RDMA_SRC_BASE_ADDR), b_iova = rkt_rd(n, RK3568_DPU_RDMA_EW_BASE_ADDR);
    rkt_want(n, RK3568_DPU_RDMA_BRDMA_CFG, 1, "no BS stream");
    rkt_want(n, RK3568_DPU_RDMA_BS_BASE_ADDR, 0, "no BS stream");
    rkt_want(n, RK3568_DPU_RDMA_BS_LENGTH, 0, "no BS stream");
    rkt_want(n, RK3568_DPU_RDMA_NRDMA_CFG, 1, "no BN stream");
    rkt_want(n, RK3568_DPU_RDMA_BN_BASE_ADDR, 0, "no BN stream");
    rkt_want(n, RK3568_DPU_RDMA_UNDOC_5030, 0, "undocumented, only 0");
    rkt_want(n, RK3568_DPU_RDMA_ERDMA_CFG, ERDMA_CFG_ADD, "the vendor's EW read [GOLD; IAV T53]");
    rkt_want(n, RK3568_DPU_RDMA_UNDOC_503C, surf - ATOM,
             "the operand's plane bytes - 8, as in both vendor ADDs [GOLD] and the third party's fused ADDs [IAV T55/T57]");
    rkt_want(n, RK3568_DPU_RDMA_EW_SURF_STRIDE, surf, "the operand's plane (raw bytes) [IAV T53]");
    rkt_want(n, RK3568_DPU_RDMA_FEATURE_MODE_CFG, 0x4001, "flying mode, BURST_LEN 8 [IAV T24/T27]");
    rkt_want(n, RK3568_DPU_RDMA_SRC_DMA_CFG, 0, "no pooling");
    rkt_want(n, RK3568_DPU_RDMA_SURF_NOTCH, 0, "no notch");
    rkt_want(n, RK3568_DPU_RDMA_PAD_CFG, 0, "no padding");
    rkt_want(n, RK3568_DPU_RDMA_WEIGHT, 0x01010101, "equal arbitration weights");
    if (n->bad || rkt_check_all_consumed(n))
        return -EINVAL;
    const uint64_t cube = (uint64_t)w * h * ATOM;
    for (int p = 0; p < (c + 7) / 8; p++) {
        const uint8_t *a = rkt_mem(n, RKT_DMA_FEATURE, "input a (DPU_RDMA_SRC_BASE_ADDR)", a_iova + (uint32_t)p * surf, cube);
        const uint8_t *b = rkt_mem(n, RKT_DMA_FEATURE, "input b (DPU_RDMA_EW_BASE_ADDR)", b_iova + (uint32_t)p * surf, cube);
        uint8_t *y = rkt_mem(n, RKT_DMA_WRITE, "output (DPU_DST_BASE_ADDR)", out_iova + (uint32_t)p * surf, cube);
        if (!a || !b || !y)
            return -EINVAL;
        for (uint64_t i = 0; i < cube; i++) {
            if ((int)(i % ATOM) + 8 * p >= c)
                continue;
            const int64_t va = rkt_shift_even(((int64_t)(int8_t)a[i] + alu) * mul_a, sh_a);
            const int64_t v = rkt_sat32(va + rkt_ew_convert((int8_t)b[i], ew_off, mul_b, sh_b, 0));
            const int64_t q = rkt_shift_even(v * os, osh) + oo;
            y[i] = (uint8_t)(int8_t)rkt_max64(rkt_min64(q, 127), -128);
        }
    }
    return 0;
}

static int rk3568_execute(rkt_npu *n)
{
    if (n->op_enable == RKT_OPEN_DPU_BITMAP)
        return add_task(n);
    return conv_task(n);
}

const struct rkt_soc rkt_soc_rk3568 = {
    .regs = rk3568_regs,
    .nregs = RK3568_NUM_REGS,
    .task_number_mask = RK3568_PC_TASK_CON__TASK_NUMBER__MASK,
    .task_con_hint = " (RK3568: 12-bit TASK_NUMBER [VEND; IAV T74])",
    .stream_core_spointers = 1,
    .execute = rk3568_execute,
    .ppu_pad_value = NULL, /* the PPU is not simulated on RK3568 (sim_npu.c, docs/hardware/rk3568.md) */
    .ppu_pad_shift = {RK3568_PPU_POOLING_PADDING_CFG__PAD_LEFT__SHIFT, RK3568_PPU_POOLING_PADDING_CFG__PAD_TOP__SHIFT,
                      RK3568_PPU_POOLING_PADDING_CFG__PAD_RIGHT__SHIFT, RK3568_PPU_POOLING_PADDING_CFG__PAD_BOTTOM__SHIFT},
    .ppu_pad_pairs_equal = 0,
    .ppu_rdma_8bit = 0,
    .conv_op_enable = OP_ENABLE_CONV,
    .ppu_no_irq = 1,
};
