/* Simulated rocket NPU core (RK3588): PC fetch/decode, register file, op-enable -> datapath.
 *
 * Rules (docs/hardware/rocket-sim.md has the per-register detail and sources):
 * - every regcmd word is checked against the generated register table: unknown target or
 *   register, or a bit outside the register's defined fields, is an error;
 * - register writes land in the unit's ping-pong group selected by its S_POINTER; the op-enable
 *   word executes the groups selected by the executers;
 * - execution reads every register the datapath needs; a register the task relies on that was
 *   never written in this job is an error, and so is a register written but never consumed by the
 *   execution that follows (nothing the encoder emits is silently ignored);
 * - registers that select behaviour the simulator does not implement must hold the only value(s)
 *   understood (the silicon-proven Mesa values), else the task fails naming register and value.
 */
#define _GNU_SOURCE
#include "sim_npu.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rocket_regs_rk3588.h"
#include "sim_conv.h"

#define NSLOTS (0x8000 / 4)   /* register slots: offsets 0x0000..0x7ffc */
#define FLD(v, REG, F) (((v) >> RK3588_##REG##__##F##__SHIFT) & RK3588_##REG##__##F##__MASK)
#define SXT(v, bits) ((int32_t)((uint32_t)(v) << (32 - (bits))) >> (32 - (bits)))

enum unit { U_CNA, U_CORE, U_DPU, U_RDMA, U_PPU, U_PPU_RDMA, U_COUNT, U_PC = -1, U_NONE = -2 };

/* S_POINTER value the simulator understands: POINTER_PP_EN | EXECUTER_PP_EN | POINTER_PP_MODE. */
#define SPOINTER_PP 0xEu
#define OPEN_CONV_BITMAP 0x1Du    /* CNA | CORE | DPU | DPU_RDMA */
#define CBUF_BANKS 12
#define CBUF_BANK_BYTES 32768u

struct resident_weights {
    int valid;
    uint32_t iova;
    uint32_t bytes;
    int data_bank, weight_bank;
    struct sim_conv_geom g;
};

struct sim_npu {
    sim_mem_lookup lookup;
    void *ctx;

    /* PC block (not ping-ponged) */
    uint32_t pc_base, pc_amount, int_mask, int_raw, task_con, task_dma_base;
    uint32_t chain_base, chain_amount; /* trailer values written by the stream */

    /* per-unit ping-pong state */
    uint32_t spointer[U_COUNT];
    int ptr[U_COUNT], exe[U_COUNT];

    uint32_t regs[2][NSLOTS];
    uint8_t written[2][NSLOTS];
    uint8_t dirty[2][NSLOTS];
    uint8_t consumed[NSLOTS];
    int16_t desc[NSLOTS]; /* slot -> index in rk3588_regs, -1 unknown */

    struct resident_weights cbuf;
    sim_conv *conv;

    uint64_t macs;
    unsigned word;     /* index of the word being decoded */
    int in_stream;     /* errors name the word */
    int bad;
    char err[512];
};

static int unit_of(uint32_t offset)
{
    switch (offset >> 12) {
    case 0x0: return U_PC;
    case 0x1: return U_CNA;
    case 0x3: return U_CORE;
    case 0x4: return U_DPU;
    case 0x5: return U_RDMA;
    case 0x6: return U_PPU;
    case 0x7: return U_PPU_RDMA;
    default: return U_NONE;
    }
}

static const char *reg_name(const sim_npu *n, uint32_t offset)
{
    if (offset >= 0x8000 || (offset & 3) || n->desc[offset / 4] < 0)
        return "?";
    return rk3588_regs[n->desc[offset / 4]].name;
}

static int fail(sim_npu *n, const char *fmt, ...)
{
    if (!n->bad) {
        int k = n->in_stream ? snprintf(n->err, sizeof(n->err), "regcmd word %u: ", n->word) : 0;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(n->err + k, sizeof(n->err) - (size_t)k, fmt, ap);
        va_end(ap);
        n->bad = 1;
    }
    return -EINVAL;
}

sim_npu *sim_npu_create(sim_mem_lookup lookup, void *ctx)
{
    sim_npu *n = calloc(1, sizeof(*n));
    if (!n)
        return NULL;
    n->conv = sim_conv_create();
    if (!n->conv) {
        free(n);
        return NULL;
    }
    n->lookup = lookup;
    n->ctx = ctx;
    for (int i = 0; i < NSLOTS; i++)
        n->desc[i] = -1;
    for (int i = 0; i < RK3588_NUM_REGS; i++)
        n->desc[rk3588_regs[i].offset / 4] = (int16_t)i;
    return n;
}

void sim_npu_destroy(sim_npu *n)
{
    if (!n)
        return;
    sim_conv_destroy(n->conv);
    free(n);
}

void sim_npu_job_begin(sim_npu *n)
{
    memset(n->written, 0, sizeof(n->written));
    memset(n->dirty, 0, sizeof(n->dirty));
    n->cbuf.valid = 0;
}

const char *sim_npu_error(const sim_npu *n)
{
    return n->err;
}

uint64_t sim_npu_macs(const sim_npu *n)
{
    return n->macs;
}

/* ---- register file -------------------------------------------------------------------------- */

/* Read a register for execution: marks it consumed; never written in this job is an error. */
static uint32_t rd(sim_npu *n, uint32_t off)
{
    const int u = unit_of(off);
    const int g = n->exe[u];
    n->consumed[off / 4] = 1;
    if (!n->written[g][off / 4]) {
        fail(n, "%s (0x%04x) is needed by the task but was never written in this job", reg_name(n, off), off);
        return 0;
    }
    return n->regs[g][off / 4];
}

/* The register must hold exactly `want` (the only value the simulator understands). */
static uint32_t want(sim_npu *n, uint32_t off, uint32_t expect, const char *why)
{
    const uint32_t v = rd(n, off);
    if (!n->bad && v != expect)
        fail(n, "%s = 0x%08x not understood (only 0x%08x: %s)", reg_name(n, off), v, expect, why);
    return v;
}

static void check(sim_npu *n, int ok, uint32_t off, uint32_t v, const char *fmt, ...)
{
    if (ok || n->bad)
        return;
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    fail(n, "%s = 0x%08x: %s", reg_name(n, off), v, why);
}

static int spointer_write(sim_npu *n, int u, uint32_t v, int from_kernel)
{
    const uint32_t core_bits = v & (RK3588_CNA_S_POINTER__CORE_SELECT__MASK << RK3588_CNA_S_POINTER__CORE_SELECT__SHIFT);
    if ((v & ~core_bits) != SPOINTER_PP || (core_bits && !from_kernel))
        return fail(n, "S_POINTER value 0x%08x for unit %d not understood (only 0x%x: ping-pong pointer and "
                    "executer toggling per task%s)", v, u, SPOINTER_PP, from_kernel ? " + core select" : "");
    n->spointer[u] = v;
    return 0;
}

/* ---- execution of one conv task -------------------------------------------------------------- */

static uint8_t *mem(sim_npu *n, const char *what, uint32_t iova, uint64_t len)
{
    uint8_t *p = n->lookup(n->ctx, iova, len);
    if (!p)
        fail(n, "DMA fault: %s [0x%08x, +0x%llx) is not inside one buffer object", what, iova,
             (unsigned long long)len);
    return p;
}

/* PAD_CON1: the stored int8 pad value. Mesa emits it sign-extended from 8 bits, or with the low
 * byte repeated in bits 8..15 and bits 16..31 the sign of bit 15 (0xFFFF8080, 0x0B0B). */
static int decode_pad(sim_npu *n, uint32_t v)
{
    const uint32_t lo = v & 0xFF, b1 = (v >> 8) & 0xFF, hi = v >> 16;
    const uint32_t sx8 = (lo & 0x80) ? 0xFF : 0x00, sx16 = (b1 & 0x80) ? 0xFFFF : 0x0000;
    check(n, (b1 == sx8 || b1 == lo) && hi == sx16, RK3588_CNA_PAD_CON1, v,
          "pad value must be an int8 sign-extended to 32 bits, or repeated in bits 8..15 and sign-extended");
    return SXT(lo, 8);
}

static int execute(sim_npu *n)
{
    struct sim_conv_task t;
    memset(&t, 0, sizeof(t));
    struct sim_conv_geom *g = &t.g;
    memset(n->consumed, 0, sizeof(n->consumed));

    /* ---------------- CNA ---------------- */
    const uint32_t con1 = rd(n, RK3588_CNA_CONV_CON1);
    const uint32_t conv_mode = FLD(con1, CNA_CONV_CON1, CONV_MODE);
    check(n, conv_mode == 0 || conv_mode == 3, RK3588_CNA_CONV_CON1, con1, "CONV_MODE %u (only 0 direct, 3 depthwise)", conv_mode);
    g->depthwise = conv_mode == 3;
    check(n, FLD(con1, CNA_CONV_CON1, IN_PRECISION) == 0 && FLD(con1, CNA_CONV_CON1, PROC_PRECISION) == 0 &&
          FLD(con1, CNA_CONV_CON1, DECONV) == 0, RK3588_CNA_CONV_CON1, con1, "only int8, no deconvolution");
    const uint32_t argb_bits = con1 & ~RK3588_CNA_CONV_CON1__CONV_MODE__MASK;
    const uint32_t argb_form = (8u << RK3588_CNA_CONV_CON1__ARGB_IN__SHIFT) | (1u << RK3588_CNA_CONV_CON1__NONALIGN_DMA__SHIFT) |
                               (1u << RK3588_CNA_CONV_CON1__GROUP_LINE_OFF__SHIFT);
    t.argb = argb_bits == argb_form;
    check(n, argb_bits == 0 || (t.argb && !g->depthwise), RK3588_CNA_CONV_CON1, con1,
          "input format: only NC1HWC2 int8 (0) or the single-channel raw path ARGB_IN 8 + NONALIGN_DMA + GROUP_LINE_OFF");

    const uint32_t con3 = rd(n, RK3588_CNA_CONV_CON3);
    t.sx = (int)FLD(con3, CNA_CONV_CON3, CONV_X_STRIDE);
    t.sy = (int)FLD(con3, CNA_CONV_CON3, CONV_Y_STRIDE);
    check(n, t.sx >= 1 && t.sy >= 1 && con3 == (uint32_t)(t.sx | t.sy << 3), RK3588_CNA_CONV_CON3, con3,
          "strides must be >= 1; dilation, deconvolution strides and NN_MODE must be 0");

    const uint32_t con2 = rd(n, RK3588_CNA_CONV_CON2);
    check(n, con2 == (uint32_t)(51 + t.sy) << RK3588_CNA_CONV_CON2__FEATURE_GRAINS__SHIFT, RK3588_CNA_CONV_CON2, con2,
          "only FEATURE_GRAINS = 51 + stride (Mesa's silicon-proven value) and KERNEL_GROUP/CSC bits 0");

    const uint32_t ds0 = rd(n, RK3588_CNA_DATA_SIZE0);
    t.in_w = (int)FLD(ds0, CNA_DATA_SIZE0, DATAIN_WIDTH);
    t.in_h = (int)FLD(ds0, CNA_DATA_SIZE0, DATAIN_HEIGHT);
    check(n, t.in_w >= 1 && t.in_h >= 1, RK3588_CNA_DATA_SIZE0, ds0, "empty input");
    const uint32_t ds1 = rd(n, RK3588_CNA_DATA_SIZE1);
    g->ic = (int)FLD(ds1, CNA_DATA_SIZE1, DATAIN_CHANNEL);
    t.ic_real = (int)FLD(ds1, CNA_DATA_SIZE1, DATAIN_CHANNEL_REAL) + 1;
    check(n, g->ic >= 16 && g->ic % 16 == 0 && g->ic <= 4096 && t.ic_real <= g->ic && t.ic_real > g->ic - 16,
          RK3588_CNA_DATA_SIZE1, ds1, "DATAIN_CHANNEL must be a multiple of 16 (<= 4096) whose last 16-group holds real channels");
    check(n, !t.argb || (g->ic == 16 && t.ic_real == 1), RK3588_CNA_DATA_SIZE1, ds1, "the raw single-channel path needs 1 real of 16 channels");
    const uint32_t ds2 = rd(n, RK3588_CNA_DATA_SIZE2);
    t.out_w = (int)FLD(ds2, CNA_DATA_SIZE2, DATAOUT_WIDTH);

    const uint32_t ws0 = rd(n, RK3588_CNA_WEIGHT_SIZE0);
    const uint32_t ws1 = rd(n, RK3588_CNA_WEIGHT_SIZE1);
    const uint32_t ws2 = rd(n, RK3588_CNA_WEIGHT_SIZE2);
    g->kw = (int)FLD(ws2, CNA_WEIGHT_SIZE2, WEIGHT_WIDTH);
    g->kh = (int)FLD(ws2, CNA_WEIGHT_SIZE2, WEIGHT_HEIGHT);
    g->kernels = (int)FLD(ws2, CNA_WEIGHT_SIZE2, WEIGHT_KERNELS);
    check(n, g->kw >= 1 && g->kh >= 1 && g->kernels >= 1 && (!g->depthwise || g->kernels == 1), RK3588_CNA_WEIGHT_SIZE2, ws2,
          "kernel size and count must be >= 1 (depthwise: exactly 1 kernel)");
    const uint64_t bpk = (uint64_t)g->kw * g->kh * g->ic;
    check(n, ws1 == bpk, RK3588_CNA_WEIGHT_SIZE1, ws1, "WEIGHT_BYTES_PER_KERNEL must be KW*KH*DATAIN_CHANNEL = %llu", (unsigned long long)bpk);
    check(n, ws0 == bpk * g->kernels, RK3588_CNA_WEIGHT_SIZE0, ws0, "WEIGHT_BYTES must be bytes per kernel x kernels = %llu",
          (unsigned long long)(bpk * g->kernels));

    const uint32_t cb0 = rd(n, RK3588_CNA_CBUF_CON0);
    const int data_bank = (int)FLD(cb0, CNA_CBUF_CON0, DATA_BANK);
    const int weight_bank = (int)FLD(cb0, CNA_CBUF_CON0, WEIGHT_BANK);
    const int weight_reuse = (int)FLD(cb0, CNA_CBUF_CON0, WEIGHT_REUSE);
    check(n, FLD(cb0, CNA_CBUF_CON0, DATA_REUSE) == 0 && FLD(cb0, CNA_CBUF_CON0, FC_DATA_BANK) == 0, RK3588_CNA_CBUF_CON0, cb0,
          "DATA_REUSE and FC_DATA_BANK are not simulated (must be 0)");
    check(n, data_bank >= 1 && weight_bank >= 1 && data_bank + weight_bank <= CBUF_BANKS, RK3588_CNA_CBUF_CON0, cb0,
          "needs >= 1 data and weight bank and at most %d banks in total", CBUF_BANKS);

    const uint32_t cb1 = rd(n, RK3588_CNA_CBUF_CON1);
    const uint32_t entries = FLD(cb1, CNA_CBUF_CON1, DATA_ENTRIES);
    if (t.argb) {
        check(n, entries == (uint32_t)(t.in_w * t.in_h), RK3588_CNA_CBUF_CON1, cb1, "raw path: DATA_ENTRIES must be width x height = %d",
              t.in_w * t.in_h);
        check(n, (uint64_t)entries * 16 <= (uint64_t)data_bank * CBUF_BANK_BYTES, RK3588_CNA_CBUF_CON1, cb1,
              "converted input (16 B per pixel) does not fit in %d data banks", data_bank);
    } else {
        const int c1 = g->ic / 16;
        const uint32_t need = (uint32_t)(t.in_w * c1 + 3) / 4, alt = (uint32_t)(t.in_w * (c1 + 1) + 3) / 4;
        check(n, entries == need || (c1 % 4 == 3 && entries == alt), RK3588_CNA_CBUF_CON1, cb1,
              "DATA_ENTRIES must be ceil(width x 16-channel groups / 4) = %u (64-byte CBUF granules per row)", need);
        check(n, (uint64_t)entries * t.in_h <= (uint64_t)data_bank * (CBUF_BANK_BYTES / 64), RK3588_CNA_CBUF_CON1, cb1,
              "%d input rows of %u entries do not fit in %d data banks", t.in_h, entries, data_bank);
    }

    const uint32_t cvt0 = rd(n, RK3588_CNA_CVT_CON0);
    const uint32_t cvt[4] = {rd(n, RK3588_CNA_CVT_CON1), rd(n, RK3588_CNA_CVT_CON2), rd(n, RK3588_CNA_CVT_CON3),
                             rd(n, RK3588_CNA_CVT_CON4)};
    const uint32_t cvt5 = rd(n, RK3588_CNA_CVT_CON5);
    if (!t.argb) {
        check(n, cvt0 == 0x0B, RK3588_CNA_CVT_CON0, cvt0, "NC1HWC2 int8 input: only CVT bypass (0x0B)");
        for (int i = 0; i < 4; i++)
            check(n, cvt[i] == 0x00010000, RK3588_CNA_CVT_CON1 + 4 * i, cvt[i], "with CVT bypassed only scale 1 offset 0 (0x00010000)");
        check(n, cvt5 == 0, RK3588_CNA_CVT_CON5, cvt5, "per-channel CVT is off on the NC1HWC2 path");
    } else {
        const uint32_t tr = FLD(cvt0, CNA_CVT_CON0, CVT_TRUNCATE_0);
        check(n, (cvt0 & 0xF) == 0 && FLD(cvt0, CNA_CVT_CON0, CVT_TRUNCATE_1) == tr && FLD(cvt0, CNA_CVT_CON0, CVT_TRUNCATE_2) == tr &&
              FLD(cvt0, CNA_CVT_CON0, CVT_TRUNCATE_3) == tr && tr <= 31, RK3588_CNA_CVT_CON0, cvt0,
              "raw path: CVT on (bypass/type/round/sign 0) with one truncate (<= 31) for all four lanes");
        for (int i = 1; i < 4; i++)
            check(n, cvt[i] == cvt[0], RK3588_CNA_CVT_CON1 + 4 * i, cvt[i], "raw path: all four CVT lanes must match lane 0 (0x%08x)", cvt[0]);
        check(n, cvt5 == 0xFFFF, RK3588_CNA_CVT_CON5, cvt5, "raw path: only PER_CHANNEL_CVT_EN = 0xFFFF");
        t.cvt_shift = (int)tr;
        t.cvt_scale = (int)FLD(cvt[0], CNA_CVT_CON1, CVT_SCALE0);
        t.cvt_offset = SXT(FLD(cvt[0], CNA_CVT_CON1, CVT_OFFSET0), 16);
    }
    want(n, RK3588_CNA_FC_CON0, 0, "no FC skipping");
    want(n, RK3588_CNA_FC_CON1, 0, "no FC data offset");
    want(n, RK3588_CNA_FC_CON2, 0, "no FC weight offset");

    const uint32_t pc0 = rd(n, RK3588_CNA_PAD_CON0);
    t.pad_top = (int)FLD(pc0, CNA_PAD_CON0, PAD_TOP);
    t.pad_left = (int)FLD(pc0, CNA_PAD_CON0, PAD_LEFT);
    t.pad_value = decode_pad(n, rd(n, RK3588_CNA_PAD_CON1));

    const uint32_t in_iova = rd(n, RK3588_CNA_FEATURE_DATA_ADDR);
    want(n, RK3588_CNA_DMA_CON0, 0x000F000F, "burst lengths 15/15 (Mesa's value)");
    const uint32_t ls = rd(n, RK3588_CNA_DMA_CON1);
    const uint32_t ss = rd(n, RK3588_CNA_DMA_CON2);
    const uint32_t fds0 = rd(n, RK3588_CNA_FC_DATA_SIZE0);
    t.dma_w = (int)FLD(fds0, CNA_FC_DATA_SIZE0, DMA_WIDTH);
    if (t.argb)
        check(n, t.dma_w >= 1 && t.dma_w <= t.in_w && FLD(fds0, CNA_FC_DATA_SIZE0, DMA_HEIGHT) == (uint32_t)t.in_h,
              RK3588_CNA_FC_DATA_SIZE0, fds0, "raw path: DMA width must be 1..DATAIN_WIDTH (%d) and DMA height DATAIN_HEIGHT (%d)",
              t.in_w, t.in_h);
    else
        check(n, t.dma_w == t.in_w && FLD(fds0, CNA_FC_DATA_SIZE0, DMA_HEIGHT) == (uint32_t)t.in_h, RK3588_CNA_FC_DATA_SIZE0,
              fds0, "DMA width/height must equal DATAIN width/height (%dx%d)", t.in_w, t.in_h);
    const uint32_t fds1 = rd(n, RK3588_CNA_FC_DATA_SIZE1);
    check(n, fds1 == (uint32_t)g->ic, RK3588_CNA_FC_DATA_SIZE1, fds1, "DMA_CHANNEL must equal DATAIN_CHANNEL (%d)", g->ic);

    want(n, RK3588_CNA_DCOMP_CTRL, 0, "no weight decompression");
    want(n, RK3588_CNA_DCOMP_REGNUM, 0, "no weight decompression");
    for (uint32_t off = RK3588_CNA_DCOMP_AMOUNT0; off <= RK3588_CNA_DCOMP_AMOUNT15; off += 4)
        want(n, off, 0, "no weight decompression");
    const uint32_t w_iova = rd(n, RK3588_CNA_DCOMP_ADDR0);

    /* ---------------- CORE ---------------- */
    want(n, RK3588_CORE_MISC_CFG, 1u | (uint32_t)g->depthwise << RK3588_CORE_MISC_CFG__DW_EN__SHIFT,
         "QD_EN = 1 and DW_EN matching CNA CONV_MODE, int8");
    const uint32_t cd0 = rd(n, RK3588_CORE_DATAOUT_SIZE_0);
    t.out_h = (int)FLD(cd0, CORE_DATAOUT_SIZE_0, DATAOUT_HEIGHT) + 1;
    check(n, (int)FLD(cd0, CORE_DATAOUT_SIZE_0, DATAOUT_WIDTH) + 1 == t.out_w && t.out_w >= 1, RK3588_CORE_DATAOUT_SIZE_0, cd0,
          "DATAOUT_WIDTH + 1 must equal CNA DATAOUT_WIDTH (%d)", t.out_w);
    const uint32_t ds3 = rd(n, RK3588_CNA_DATA_SIZE3);
    check(n, ds3 == (uint32_t)(t.out_w * t.out_h), RK3588_CNA_DATA_SIZE3, ds3, "DATAOUT_ATOMICS must be width x height = %d (SURF_MODE 0)",
          t.out_w * t.out_h);
    const uint32_t cd1 = rd(n, RK3588_CORE_DATAOUT_SIZE_1);
    const uint32_t ctr = rd(n, RK3588_CORE_CLIP_TRUNCATE);
    t.clip_truncate = (int)FLD(ctr, CORE_CLIP_TRUNCATE, CLIP_TRUNCATE);
    check(n, FLD(ctr, CORE_CLIP_TRUNCATE, ROUND_TYPE) == 0 && t.clip_truncate <= 16, RK3588_CORE_CLIP_TRUNCATE, ctr,
          "ROUND_TYPE must be 0 and the truncation at most 16 bits");
    want(n, RK3588_CORE_UNDOC_3030, 0, "undocumented register, only 0");

    /* ---------------- DPU ---------------- */
    want(n, RK3588_DPU_FEATURE_MODE_CFG, 0x1E4u | (g->depthwise ? 3u << RK3588_DPU_FEATURE_MODE_CFG__CONV_MODE__SHIFT : 0),
         "burst 15, output to memory, CONV_MODE matching CNA");
    want(n, RK3588_DPU_DATA_FORMAT, 0, "int8 in/out/processing");
    want(n, RK3588_DPU_OFFSET_PEND, 0, "no pending offset");
    const uint32_t out_iova = rd(n, RK3588_DPU_DST_BASE_ADDR);
    t.out_surf_pitch = rd(n, RK3588_DPU_DST_SURF_STRIDE);
    const uint32_t cw = rd(n, RK3588_DPU_DATA_CUBE_WIDTH), chh = rd(n, RK3588_DPU_DATA_CUBE_HEIGHT);
    check(n, cw == (uint32_t)t.out_w - 1, RK3588_DPU_DATA_CUBE_WIDTH, cw, "must be output width - 1 = %d", t.out_w - 1);
    check(n, chh == (uint32_t)t.out_h - 1, RK3588_DPU_DATA_CUBE_HEIGHT, chh, "must be output height - 1 = %d (MINMAX_CTL 0)", t.out_h - 1);
    want(n, RK3588_DPU_DATA_CUBE_NOTCH_ADDR, 0, "no notch");
    const uint32_t cch = rd(n, RK3588_DPU_DATA_CUBE_CHANNEL);
    t.oc = (int)FLD(cch, DPU_DATA_CUBE_CHANNEL, CHANNEL) + 1;
    t.oc_real = (int)FLD(cch, DPU_DATA_CUBE_CHANNEL, ORIG_CHANNEL) + 1;
    t.group_channels = g->depthwise ? 64 : 32;
    check(n, t.oc == (t.oc_real + t.group_channels - 1) / t.group_channels * t.group_channels, RK3588_DPU_DATA_CUBE_CHANNEL, cch,
          "CHANNEL + 1 must be ORIG_CHANNEL + 1 rounded up to %d", t.group_channels);
    check(n, g->depthwise ? t.oc_real == t.ic_real : t.oc_real <= g->kernels, RK3588_DPU_DATA_CUBE_CHANNEL, cch,
          g->depthwise ? "depthwise output channels must equal the real input channels" : "more output channels than weight kernels");
    check(n, cd1 == (uint32_t)t.oc - 1, RK3588_CORE_DATAOUT_SIZE_1, cd1, "DATAOUT_CHANNEL must be DPU CHANNEL (%d)", t.oc - 1);
    want(n, RK3588_DPU_BS_CFG, 0x00020150, "BS: ALU add with the bias table from memory, MUL and ReLU bypassed");
    want(n, RK3588_DPU_BS_ALU_CFG, 0, "ALU operand comes from memory");
    want(n, RK3588_DPU_BS_MUL_CFG, 0, "BS MUL bypassed");
    want(n, RK3588_DPU_BS_RELUX_CMP_VALUE, 0, "BS ReLU bypassed");
    want(n, RK3588_DPU_BS_OW_CFG, g->depthwise ? 0x36C : 0x124, "OW window from the conv mode, operand from BS_OW_OP");
    t.ow_op = SXT(FLD(rd(n, RK3588_DPU_BS_OW_OP), DPU_BS_OW_OP, OW_OP), 16);
    want(n, RK3588_DPU_WDMA_SIZE_0, (uint32_t)t.oc - 1, "CHANNEL_WDMA must be DPU CHANNEL");
    want(n, RK3588_DPU_WDMA_SIZE_1, (uint32_t)(t.out_h - 1) << 16 | (uint32_t)(t.out_w - 1), "WDMA height/width must match the cube");
    want(n, RK3588_DPU_BN_CFG, 0x53, "BN stage bypassed");
    want(n, RK3588_DPU_BN_ALU_CFG, 0, "BN stage bypassed");
    want(n, RK3588_DPU_BN_MUL_CFG, 0, "BN stage bypassed");
    want(n, RK3588_DPU_BN_RELUX_CMP_VALUE, 0, "BN stage bypassed");
    const uint32_t ew = rd(n, RK3588_DPU_EW_CFG);
    check(n, ew == 0x383, RK3588_DPU_EW_CFG, ew, "only the EW bypass (0x383): the fused-ADD elementwise path is not simulated yet");
    want(n, RK3588_DPU_EW_CVT_OFFSET_VALUE, 0, "EW bypassed");
    want(n, RK3588_DPU_EW_CVT_SCALE_VALUE, 1, "EW bypassed");
    want(n, RK3588_DPU_EW_RELUX_CMP_VALUE, 0, "EW bypassed");
    for (uint32_t off = RK3588_DPU_EW_OP_VALUE_0; off <= RK3588_DPU_EW_OP_VALUE_7; off += 4)
        want(n, off, 0, "EW bypassed");
    t.out_offset = (int32_t)rd(n, RK3588_DPU_OUT_CVT_OFFSET);
    const uint32_t osc = rd(n, RK3588_DPU_OUT_CVT_SCALE);
    check(n, FLD(osc, DPU_OUT_CVT_SCALE, FP32TOFP16_EN) == 0, RK3588_DPU_OUT_CVT_SCALE, osc, "no fp16 output");
    t.out_scale = FLD(osc, DPU_OUT_CVT_SCALE, OUT_CVT_SCALE);
    const uint32_t osh = rd(n, RK3588_DPU_OUT_CVT_SHIFT);
    t.out_shift = (int)FLD(osh, DPU_OUT_CVT_SHIFT, OUT_CVT_SHIFT);
    check(n, osh == (uint32_t)t.out_shift && t.out_shift <= 47, RK3588_DPU_OUT_CVT_SHIFT, osh,
          "only OUT_CVT_SHIFT <= 47 with MINUS_EXP, CVT_ROUND and CVT_TYPE 0");
    t.out_group_pitch = rd(n, RK3588_DPU_SURFACE_ADD);
    want(n, RK3588_DPU_UNDOC_40C4, 0, "undocumented register, only 0");
    for (uint32_t off = RK3588_DPU_LUT_ACCESS_CFG; off <= RK3588_DPU_LUT_LO_SLOPE_SHIFT; off += 4)
        want(n, off, 0, "LUT unused (EW bypassed)");

    /* ---------------- DPU_RDMA ---------------- */
    want(n, RK3588_DPU_RDMA_DATA_CUBE_WIDTH, (uint32_t)t.out_w - 1, "must match the DPU cube width");
    want(n, RK3588_DPU_RDMA_DATA_CUBE_HEIGHT, (uint32_t)t.out_h - 1, "must match the DPU cube height (EW_LINE_NOTCH_ADDR 0)");
    want(n, RK3588_DPU_RDMA_DATA_CUBE_CHANNEL, (uint32_t)t.oc - 1, "must match the DPU CHANNEL");
    want(n, RK3588_DPU_RDMA_SRC_BASE_ADDR, 0, "MRDMA disabled");
    want(n, RK3588_DPU_RDMA_BRDMA_CFG, 0x2, "bias stream used (BRDMA_DATA_USE 1)");
    const uint32_t bias_iova = rd(n, RK3588_DPU_RDMA_BS_BASE_ADDR);
    want(n, RK3588_DPU_RDMA_NRDMA_CFG, 0, "BN stream unused");
    want(n, RK3588_DPU_RDMA_BN_BASE_ADDR, 0, "BN stream unused");
    want(n, RK3588_DPU_RDMA_ERDMA_CFG, 0x1, "EW stream disabled");
    want(n, RK3588_DPU_RDMA_EW_BASE_ADDR, 0, "EW stream disabled");
    want(n, RK3588_DPU_RDMA_EW_SURF_STRIDE, 0, "EW stream disabled");
    want(n, RK3588_DPU_RDMA_FEATURE_MODE_CFG, 0x7810u | (g->depthwise ? 3u << RK3588_DPU_RDMA_FEATURE_MODE_CFG__CONV_MODE__SHIFT : 0),
         "burst 15, MRDMA disabled, CONV_MODE matching CNA");
    want(n, RK3588_DPU_RDMA_SRC_DMA_CFG, 0, "no pooling");
    want(n, RK3588_DPU_RDMA_SURF_NOTCH, 0, "EW stream disabled");
    want(n, RK3588_DPU_RDMA_PAD_CFG, 0, "no RDMA padding");
    want(n, RK3588_DPU_RDMA_WEIGHT, 0x01010101, "equal arbitration weights (Mesa's value)");
    want(n, RK3588_DPU_RDMA_EW_SURF_NOTCH, 0, "EW stream disabled");
    if (n->bad)
        return -EINVAL;

    /* ---------------- geometry ---------------- */
    const int right = (t.out_w - 1) * t.sx + g->kw - t.pad_left - t.in_w;
    const int bottom = (t.out_h - 1) * t.sy + g->kh - t.pad_top - t.in_h;
    if (t.pad_left >= g->kw || right >= g->kw)
        return fail(n, "CNA_PAD_CON0 = 0x%08x / CNA_DATA_SIZE2 = 0x%08x: left pad %d, implied right pad %d: a window lies "
                    "entirely in padding (kernel width %d)", pc0, ds2, t.pad_left, right, g->kw);
    if (t.pad_top >= g->kh || bottom >= g->kh)
        return fail(n, "CNA_PAD_CON0 = 0x%08x / CORE_DATAOUT_SIZE_0 = 0x%08x: top pad %d, implied bottom pad %d: a window lies "
                    "entirely in padding (kernel height %d)", pc0, cd0, t.pad_top, bottom, g->kh);

    /* input addressing [INFERRED]: row pitch = 4 x LINE_STRIDE bytes, plane pitch =
     * 16 x (SURF_STRIDE + LINE_STRIDE) bytes; raw path: row pitch = LINE_STRIDE bytes */
    const int planes = g->ic / 16;
    uint64_t in_len;
    if (t.argb) {
        t.in_row_pitch = FLD(ls, CNA_DMA_CON1, LINE_STRIDE);
        if (t.in_row_pitch < (size_t)t.dma_w)
            return fail(n, "CNA_DMA_CON1 = 0x%08x: raw rows of %d bytes overlap", ls, t.dma_w);
        in_len = (uint64_t)(t.in_h - 1) * t.in_row_pitch + t.dma_w;
    } else {
        t.in_row_pitch = 4 * (size_t)FLD(ls, CNA_DMA_CON1, LINE_STRIDE);
        /* the sum wraps at the 28-bit field width: Mesa's W*(H-4) is negative below four rows and
         * still addresses whole planes on silicon [INFERRED] */
        t.in_plane_pitch = 16 * (((size_t)FLD(ss, CNA_DMA_CON2, SURF_STRIDE) + FLD(ls, CNA_DMA_CON1, LINE_STRIDE)) &
                                 RK3588_CNA_DMA_CON2__SURF_STRIDE__MASK);
        if (t.in_row_pitch < (size_t)t.in_w * 16)
            return fail(n, "CNA_DMA_CON1 = 0x%08x: rows of %d pixels x 16 bytes overlap (line stride counts 4-byte units)", ls, t.in_w);
        if (planes > 1 && t.in_plane_pitch < (size_t)t.in_h * t.in_row_pitch)
            return fail(n, "CNA_DMA_CON2 = 0x%08x: 16-channel planes of %d rows overlap (plane pitch 16 x (SURF_STRIDE + LINE_STRIDE) = %zu bytes)",
                        ss, t.in_h, t.in_plane_pitch);
        in_len = (uint64_t)(planes - 1) * t.in_plane_pitch + (uint64_t)(t.in_h - 1) * t.in_row_pitch + (uint64_t)t.in_w * 16;
    }

    /* output addressing: surface s (16 channels) of group s / (G/16) */
    const int spg = t.group_channels / 16, nsurf = (t.oc_real + 15) / 16;
    const size_t cube = (size_t)t.out_w * t.out_h * 16;
    if (t.out_surf_pitch < cube)
        return fail(n, "DPU_DST_SURF_STRIDE = 0x%08x: surfaces of %dx%d atoms (%zu bytes) overlap", (uint32_t)t.out_surf_pitch,
                    t.out_w, t.out_h, cube);
    if (nsurf > spg && t.out_group_pitch < (size_t)spg * t.out_surf_pitch)
        return fail(n, "DPU_SURFACE_ADD = 0x%08x: groups of %d surfaces (%zu bytes) overlap", (uint32_t)t.out_group_pitch, spg,
                    (size_t)spg * t.out_surf_pitch);
    const int last = nsurf - 1;
    const uint64_t out_len = (uint64_t)(last / spg) * t.out_group_pitch + (uint64_t)(last % spg) * t.out_surf_pitch + cube;

    /* CBUF weight residency */
    const uint64_t wbytes = ws0;
    if (weight_reuse) {
        const struct resident_weights *r = &n->cbuf;
        if (!r->valid || r->iova != w_iova || r->bytes != ws0 || r->data_bank != data_bank || r->weight_bank != weight_bank ||
            memcmp(&r->g, g, sizeof(*g)) != 0)
            return fail(n, "CNA_CBUF_CON0 = 0x%08x: WEIGHT_REUSE set but the CBUF does not hold these weights (%s)", cb0,
                        !r->valid ? "nothing resident in this job" : "different weights, geometry or bank split");
    } else {
        const int8_t *wp = (const int8_t *)mem(n, "weights (CNA_DCOMP_ADDR0)", w_iova, wbytes);
        if (!wp)
            return -EINVAL;
        if (sim_conv_load_weights(n->conv, g, wp, n->err, sizeof(n->err)))
            return n->bad = 1, -ENOMEM;
        n->cbuf.valid = wbytes <= (uint64_t)weight_bank * CBUF_BANK_BYTES;
        n->cbuf.iova = w_iova;
        n->cbuf.bytes = ws0;
        n->cbuf.data_bank = data_bank;
        n->cbuf.weight_bank = weight_bank;
        n->cbuf.g = *g;
    }

    t.in = mem(n, "input (CNA_FEATURE_DATA_ADDR)", in_iova, in_len);
    t.bias = mem(n, "bias table (DPU_RDMA_BS_BASE_ADDR)", bias_iova, 4 * (uint64_t)t.oc_real);
    t.out = mem(n, "output (DPU_DST_BASE_ADDR)", out_iova, out_len);
    if (n->bad)
        return -EINVAL;

    /* everything written since this group last executed must have been consumed */
    for (int r = 0; r < RK3588_NUM_REGS; r++) {
        const uint32_t off = rk3588_regs[r].offset, i = off / 4;
        const int u = unit_of(off);
        if (u < 0 || !n->dirty[n->exe[u]][i])
            continue;
        if (!n->consumed[i])
            return fail(n, "%s (0x%04x) = 0x%08x was written but is not used by a conv task (not simulated)",
                        rk3588_regs[r].name, off, n->regs[n->exe[u]][i]);
        n->dirty[n->exe[u]][i] = 0;
    }

    if (sim_conv_run(n->conv, &t, n->err, sizeof(n->err)))
        return n->bad = 1, -ENOMEM;
    n->macs += (uint64_t)t.out_w * t.out_h * g->kw * g->kh * g->ic * (g->depthwise ? 1 : (uint64_t)g->kernels);
    return 0;
}

/* ---- the PC ---------------------------------------------------------------------------------- */

static int stream_write(sim_npu *n, uint16_t target, uint32_t off, uint32_t val)
{
    if (off >= 0x8000 || (off & 3) || n->desc[off / 4] < 0)
        return fail(n, "unknown register 0x%04x (target 0x%04x, value 0x%08x)", off, target, val);
    const struct rocket_reg_desc *d = &rk3588_regs[n->desc[off / 4]];
    if (d->target != target)
        return fail(n, "%s written with target 0x%04x (its unit's target is 0x%04x)", d->name, target, d->target);
    if (val & ~d->defined_mask)
        return fail(n, "%s = 0x%08x sets bits 0x%08x outside its defined fields", d->name, val, val & ~d->defined_mask);

    const int u = unit_of(off);
    switch (off) {
    case RK3588_PC_BASE_ADDRESS:
        if (val & (RK3588_PC_BASE_ADDRESS__PC_SEL__MASK << RK3588_PC_BASE_ADDRESS__PC_SEL__SHIFT))
            return fail(n, "PC_BASE_ADDRESS = 0x%08x: PC_SEL is not writable from a stream", val);
        n->chain_base = val;
        return 0;
    case RK3588_PC_REGISTER_AMOUNTS:
        n->chain_amount = val;
        return 0;
    case RK3588_DPU_S_POINTER:
    case RK3588_DPU_RDMA_S_POINTER:
        return spointer_write(n, u, val, 0);
    case RK3588_CNA_S_POINTER:
    case RK3588_CORE_S_POINTER:
        return fail(n, "%s written from a regcmd stream: the kernel owns it (it needs the per-core bit)", d->name);
    default:
        break;
    }
    if (u == U_PC)
        return fail(n, "%s is not writable from a regcmd stream", d->name);
    if ((off & 0xFFF) == 0x008)
        return fail(n, "%s written from a regcmd stream: units are enabled by the op-enable word", d->name);
    const int grp = n->ptr[u];
    n->regs[grp][off / 4] = val;
    n->written[grp][off / 4] = 1;
    n->dirty[grp][off / 4] = 1;
    return 0;
}

static void task_done(sim_npu *n)
{
    const int dpu_group = n->exe[U_DPU];
    n->int_raw |= 1u << (RK3588_PC_INTERRUPT_RAW_STATUS__DPU_0__SHIFT + dpu_group);
    for (int u = 0; u < U_COUNT; u++) {
        if (n->spointer[u] & (1u << RK3588_CNA_S_POINTER__POINTER_PP_EN__SHIFT))
            n->ptr[u] ^= 1;
        if (n->spointer[u] & (1u << RK3588_CNA_S_POINTER__EXECUTER_PP_EN__SHIFT))
            n->exe[u] ^= 1;
    }
}

static int pc_run(sim_npu *n)
{
    const uint32_t ntask = FLD(n->task_con, PC_TASK_CON, TASK_NUMBER);
    if (ntask != 1)
        return fail(n, "PC_TASK_CON = 0x%08x: only TASK_NUMBER 1 (one kick per task, as accel/rocket does) is simulated", n->task_con);
    if (n->task_dma_base)
        return fail(n, "PC_TASK_DMA_BASE_ADDR = 0x%08x: descriptor-array dispatch is not simulated", n->task_dma_base);
    if (n->pc_base & 0xF)
        return fail(n, "PC_BASE_ADDRESS = 0x%08x: the regcmd address must be 16-byte aligned with PC_SEL 0", n->pc_base);
    const uint32_t nwords = 2 * (FLD(n->pc_amount, PC_REGISTER_AMOUNTS, PC_DATA_AMOUNT) + 1);
    const uint8_t *src = mem(n, "regcmd fetch (PC_BASE_ADDRESS/REGISTER_AMOUNTS)", n->pc_base, (uint64_t)nwords * 8);
    if (!src)
        return -EINVAL;
    n->chain_base = n->chain_amount = 0;

    int prev_sync = 0;
    for (uint32_t i = 0; i < nwords; i++) {
        uint64_t w;
        memcpy(&w, src + 8 * (size_t)i, 8);
        n->word = i;
        const uint16_t target = (uint16_t)(w >> 48);
        const uint32_t val = (uint32_t)(w >> 16);
        const uint32_t off = (uint32_t)(w & 0xFFFF);
        int rc = 0;
        if (w == 0) {
            prev_sync = 0;
            continue;
        }
        if (target == RK3588_TARGET_SYNC) {
            if (off != RK3588_OFFSET_SYNC || val != 0)
                return fail(n, "regcmd word %u: SYNC word 0x%016llx must have offset and value 0", i, (unsigned long long)w);
            prev_sync = 1;
            continue;
        }
        if (target == RK3588_TARGET_OP_ENABLE) {
            if (off != RK3588_OFFSET_OP_ENABLE || val != OPEN_CONV_BITMAP)
                return fail(n, "regcmd word %u: op-enable 0x%016llx not understood (only offset 0x%04x value 0x%x = CNA+CORE+DPU+DPU_RDMA)",
                            i, (unsigned long long)w, RK3588_OFFSET_OP_ENABLE, OPEN_CONV_BITMAP);
            if (!prev_sync)
                return fail(n, "regcmd word %u: op-enable not immediately preceded by the SYNC word", i);
            for (uint32_t j = i + 1; j < nwords; j++) {
                uint64_t z;
                memcpy(&z, src + 8 * (size_t)j, 8);
                if (z)
                    return fail(n, "regcmd word %u: 0x%016llx fetched after the op-enable", j, (unsigned long long)z);
            }
            if (n->chain_base) {
                const uint64_t len = 16 * ((uint64_t)FLD(n->chain_amount, PC_REGISTER_AMOUNTS, PC_DATA_AMOUNT) + 1);
                if (!n->lookup(n->ctx, n->chain_base, len))
                    return fail(n, "PC_BASE_ADDRESS/REGISTER_AMOUNTS chain 0x%08x/0x%08x does not point at a regcmd buffer",
                                n->chain_base, n->chain_amount);
            } else if (n->chain_amount) {
                return fail(n, "PC_REGISTER_AMOUNTS = 0x%08x with a zero next-task address", n->chain_amount);
            }
            rc = execute(n);
            if (rc)
                return rc;
            task_done(n);
            return 0;
        }
        prev_sync = 0;
        n->in_stream = 1;
        rc = stream_write(n, target, off, val);
        n->in_stream = 0;
        if (rc)
            return rc;
    }
    return fail(n, "the PC fetched %u words without an op-enable word", nwords);
}

int sim_npu_mmio_write(sim_npu *n, uint32_t offset, uint32_t value)
{
    n->bad = 0;
    n->err[0] = 0;
    switch (offset) {
    case RK3588_PC_BASE_ADDRESS: n->pc_base = value; return 0;
    case RK3588_PC_REGISTER_AMOUNTS: n->pc_amount = value; return 0;
    case RK3588_PC_INTERRUPT_MASK: n->int_mask = value; return 0;
    case RK3588_PC_INTERRUPT_CLEAR: n->int_raw &= ~value; return 0;
    case RK3588_PC_TASK_CON: n->task_con = value; return 0;
    case RK3588_PC_TASK_DMA_BASE_ADDR: n->task_dma_base = value; return 0;
    case RK3588_CNA_S_POINTER: return spointer_write(n, U_CNA, value, 1);
    case RK3588_CORE_S_POINTER: return spointer_write(n, U_CORE, value, 1);
    case RK3588_PC_OPERATION_ENABLE:
        return value & 1 ? pc_run(n) : 0;
    default:
        return fail(n, "MMIO write of 0x%08x to 0x%04x is not simulated", value, offset);
    }
}

uint32_t sim_npu_mmio_read(const sim_npu *n, uint32_t offset)
{
    switch (offset) {
    case RK3588_PC_INTERRUPT_RAW_STATUS: return n->int_raw;
    case RK3588_PC_INTERRUPT_STATUS: return n->int_raw & n->int_mask;
    case RK3588_PC_INTERRUPT_MASK: return n->int_mask;
    case RK3588_PC_TASK_CON: return n->task_con;
    default: return 0;
    }
}
