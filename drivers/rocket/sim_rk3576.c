/* RK3576 register semantics for the simulated rocket NPU: decodes and validates the executing register
 * groups of one int8 direct or depthwise conv task, models the CBUF data ring the row windows go through,
 * decodes the coefficient table and the shift word, and runs the task on the shared datapath
 * (sim_conv.c).
 *
 * Sources: ../shared/docs/rocket.md §6.2 (third-party measurements) and §6.4 with
 * ../shared/golden/rocket-rk3576/ (programs Rockchip's toolkit emitted for the RK3576: the strongest
 * source). Every register, the value(s) understood and the [INFERRED] readings are listed in
 * docs/hardware/rocket-rk3576-sim.md; anything else is an error naming register and value.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rocket_regs_rk3576.h"
#include "sim_npu_priv.h"

#define F(v, REG, FIELD) (((v) >> RK3576_##REG##__##FIELD##__SHIFT) & RK3576_##REG##__##FIELD##__MASK)

#define GRANULE 64u                /* CBUF entry: 64 bytes */
#define RING_MAX_GRANULES 5120u    /* the largest data ring understood */
#define COEF_GROUP 8               /* output channels per coefficient group */
#define COEF_GROUP_BYTES 64u       /* direct: A int32 x 8, B int16 x 8, C int16 x 8 */
#define COEF_GROUP_BYTES_DW 48u    /* depthwise: A int32 x 8, C int16 x 8 */
#define EW_CFG_BYPASS 0x010041C1u  /* DPU 0x407C in every vendor conv without an element-wise operand */
#define EW_CFG_ADD 0x8002C0C0u     /* DPU 0x407C where the vendor adds a second tensor (add-2conv, add-bare) */
#define EW_CFG_LUT 0x01004140u  /* DPU 0x407C in the vendor's LUT consumers: bit 7 (EW_LUT_BYPASS, R76-USR) clear */
#define LUT_CFG_CONSUMER 0x02000006u /* DPU 0x4108 in every vendor LUT consumer and R76-USR's measured program */
#define LUT_BN_BYTES 4096u      /* DPU_RDMA 0x502C's buffer with the LUT: R76-USR's scratch size (lut.py SCRATCH_BYTES) */
#define NRDMA_CFG_LUT 0x1Au     /* DPU_RDMA 0x5028 in the same programs (what it fetches with BN bypassed: unknown) */

RKT_ASSERT_PC_LAYOUT(RK3576);
RKT_ASSERT_PPU_LAYOUT(RK3576);
_Static_assert(RK3576_DPU_LUT_ACCESS_CFG == RKT_DPU_LUT_ACCESS_CFG && RK3576_DPU_LUT_ACCESS_DATA == RKT_DPU_LUT_ACCESS_DATA,
               "the PC applies LUT access words at these offsets (sim_dpu.c)");

static uint32_t round_up(uint32_t v, uint32_t a)
{
    return (v + a - 1) / a * a;
}

static int32_t le32(const uint8_t *p)
{
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

static int16_t le16(const uint8_t *p)
{
    return (int16_t)((uint16_t)p[0] | (uint16_t)p[1] << 8);
}

/* Registers the vendor always writes with one value whose meaning is not known: only that value. */
static void want_vendor_constants(rkt_npu *n, int depthwise)
{
    static const struct { uint32_t off, val; } fixed[] = {
        {RK3576_CNA_UNDOC_1010, 0xFFF},
        {RK3576_CNA_CVT_CON0, 0x0B}, /* CVT bypassed, as RK3588's NC1HWC2 path */
        {RK3576_CNA_CVT_CON1, 0x00010001},
        {RK3576_CNA_CVT_CON2, 0x00010001},
        {RK3576_CNA_CVT_CON3, 0},
        {RK3576_CNA_CVT_CON4, 0},
        {RK3576_CNA_CVT_CON5, 0},
        {RK3576_CNA_UNDOC_1060, 0},
        {RK3576_CNA_UNDOC_1064, 0},
        {RK3576_CNA_UNDOC_1068, 0},
        {RK3576_CNA_UNDOC_106C, 0},
        {RK3576_CNA_UNDOC_1070, 0},
        {RK3576_CNA_UNDOC_1074, 0},
        {RK3576_CNA_DMA_CON0, 0x000F000F},
        {RK3576_CNA_UNDOC_109C, 0},
        {RK3576_CNA_UNDOC_1100, 0},
        {RK3576_CNA_UNDOC_1104, 0},
        {RK3576_CNA_UNDOC_1140, 0},
        {RK3576_CNA_UNDOC_1144, 0},
        {RK3576_CORE_CLIP_TRUNCATE, 0},
        {RK3576_DPU_DATA_FORMAT, 0}, /* int8 in, processing and out */
        {RK3576_DPU_UNDOC_4014, 0},
        {RK3576_DPU_UNDOC_4028, 0},
        {RK3576_DPU_UNDOC_403C, 0},
        {RK3576_DPU_CLAMP0_MIN, 0x80000000},
        {RK3576_DPU_CLAMP0_MAX, 0x7FFFFFFF},
        {RK3576_DPU_CLAMP1_MIN, 0x80000000},
        {RK3576_DPU_CLAMP1_MAX, 0x7FFFFFFF},
        {RK3576_DPU_CLAMP4_MIN, 0x80000000},
        {RK3576_DPU_CLAMP4_MAX, 0x7FFFFFFF},
        {RK3576_DPU_UNDOC_4090, 0},
        {RK3576_DPU_UNDOC_4094, 0},
        {RK3576_DPU_UNDOC_409C, 0},
        {RK3576_DPU_CLAMP5_MIN, 0x80000000},
        {RK3576_DPU_CLAMP5_MAX, 0x7FFFFFFF},
        {RK3576_DPU_UNDOC_40BC, 0},
        {RK3576_DPU_UNDOC_40C0, 0x04440100},
        {RK3576_DPU_UNDOC_40C8, 0},
        {RK3576_DPU_UNDOC_40CC, 0},
        {RK3576_DPU_UNDOC_40D0, 0x0040FFFF},
        {RK3576_DPU_LUT_ACCESS_CFG, 0},
        {RK3576_DPU_LUT_ACCESS_DATA, 0},
        {RK3576_DPU_UNDOC_4120, 0},
        {RK3576_DPU_UNDOC_4130, 0},
        {RK3576_DPU_UNDOC_4150, 0},
        {RK3576_DPU_UNDOC_4154, 0},
        {RK3576_DPU_UNDOC_4160, 0},
        {RK3576_DPU_UNDOC_4170, 0},
        {RK3576_DPU_UNDOC_4174, 0},
        {RK3576_DPU_UNDOC_4184, 0},
        {RK3576_DPU_RDMA_SRC_BASE_ADDR, 0},
        {RK3576_DPU_RDMA_UNDOC_5030, 0},
        {RK3576_DPU_RDMA_UNDOC_5048, 0},
        {RK3576_DPU_RDMA_UNDOC_5064, 0},
        {RK3576_DPU_RDMA_UNDOC_5078, 0},
        {RK3576_DPU_RDMA_UNDOC_507C, 0},
    };
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        rkt_want(n, fixed[i].off, fixed[i].val, "the only value the vendor writes on the int8 conv paths");
    rkt_want(n, RK3576_CNA_CONV_CON1, depthwise ? 1 : 0, "CONV_MODE as the task's mode, int8, no ARGB input");
    rkt_want(n, RK3576_CORE_MISC_CFG, depthwise ? 0x1000000A : 0x10000001, "the vendor's int8 direct / depthwise word");
    rkt_want(n, RK3576_DPU_FEATURE_MODE_CFG, depthwise ? 0x4000000C : 0x40000004, "output to memory, CONV_MODE as CNA");
    rkt_want(n, RK3576_DPU_UNDOC_4038, depthwise ? 0x100092 : 0x120080, "the vendor's int8 direct / depthwise word");
}

/* The CBUF data ring [INFERRED from the vendor's row windows, docs/hardware/rocket-rk3576-sim.md]:
 * `limit` granules from granule 0; a task's fetched rows are written from WRITE_ORIGIN on and its window
 * is read from READ_ORIGIN on, both wrapping at the limit. Each granule is tagged with the row format that
 * filled it, so rows kept from an earlier task are only read back in the same format. */
static uint32_t ring_tag(uint32_t iw, uint32_t c16, uint32_t limit)
{
    return iw << 18 | (c16 / 16) << 4 | limit / 1024;
}

/* Copy between host bytes and the ring, from byte `at` of the ring, wrapping at `limit` granules. */
static void ring_write(struct rkt_cbuf_ring *r, uint32_t limit, uint64_t at, const uint8_t *src, size_t len)
{
    const uint64_t size = (uint64_t)limit * GRANULE;
    for (size_t done = 0, chunk; done < len; done += chunk) {
        const uint64_t b = (at + done) % size;
        chunk = (size_t)(size - b) < len - done ? (size_t)(size - b) : len - done;
        memcpy(r->data + b, src + done, chunk);
    }
}

static void ring_read(const struct rkt_cbuf_ring *r, uint32_t limit, uint64_t at, uint8_t *dst, size_t len)
{
    const uint64_t size = (uint64_t)limit * GRANULE;
    for (size_t done = 0, chunk; done < len; done += chunk) {
        const uint64_t b = (at + done) % size;
        chunk = (size_t)(size - b) < len - done ? (size_t)(size - b) : len - done;
        memcpy(dst + done, r->data + b, chunk);
    }
}

static int ring_reserve(rkt_npu *n)
{
    if (n->ring.data)
        return 0;
    n->ring.data = calloc(RING_MAX_GRANULES, GRANULE);
    n->ring.tag = calloc(RING_MAX_GRANULES, sizeof(uint32_t));
    if (!n->ring.data || !n->ring.tag) {
        free(n->ring.data);
        free(n->ring.tag);
        n->ring.data = NULL;
        n->ring.tag = NULL;
        return rkt_fail(n, "simulator out of memory for the CBUF");
    }
    n->ring.granules = RING_MAX_GRANULES;
    return 0;
}

/* One task as the decode steps hand it on: the datapath task, and the register values the later steps
 * (checks across units, memory, the CBUF ring) still need. The steps run in the order of the original single
 * pass, which is also the order of the first error a broken stream reports. */
struct rk3576_task {
    struct rkt_conv_task t;
    int dw, kernels_m1, c, weight_reuse, pad_bottom, pad_right, nsurf, spg;
    uint32_t ws2, c16, ds0, iw, win_rows, fetched, entries, cb2, read_origin, limit, write_origin;
    uint32_t ws0, ws1, ds2, u1038, w_iova, pad0, in_iova, ss, ts, surf, cd0;
    uint32_t out_iova, surf_stride, jump, coef_iova, shift_iova, planes;
    int ew_on;                                  /* the EW stage adds the ERDMA operand */
    uint32_t ew_iova, ew_stride, ew_notch;      /* DPU_RDMA EW_BASE_ADDR, EW_SURF_STRIDE, SURF_NOTCH */
    uint32_t ls;
    size_t row_pitch, plane_pitch; /* of the input rows in the CBUF window; of the input planes in device memory */
    size_t dram_row_pitch;         /* of the input rows in device memory (4 x LINE_STRIDE) */
    const uint8_t *in; /* the input planes in device memory */
};

/* Conv mode, vendor constants, strides, kernel size. */
static void conv_mode(rkt_npu *n, struct rk3576_task *st)
{
    struct rkt_conv_task *t = &st->t;
    struct rkt_conv_geom *g = &st->t.g;
    const uint32_t con1 = rkt_rd(n, RK3576_CNA_CONV_CON1);
    rkt_check(n, con1 == 0 || con1 == 1, RK3576_CNA_CONV_CON1, con1,
              "only int8 direct (0) or depthwise (1): the ARGB first-conv and fp16 paths are not simulated");
    st->dw = con1 == 1;
    g->depthwise = st->dw;
    g->dw_byte_pairs = st->dw;
    want_vendor_constants(n, st->dw);

    const uint32_t con3 = rkt_rd(n, RK3576_CNA_CONV_CON3);
    t->sx = (int)F(con3, CNA_CONV_CON3, CONV_X_STRIDE);
    t->sy = (int)F(con3, CNA_CONV_CON3, CONV_Y_STRIDE);
    rkt_check(n, t->sx >= 1 && t->sy >= 1, RK3576_CNA_CONV_CON3, con3, "strides must be >= 1");

    st->ws2 = rkt_rd(n, RK3576_CNA_WEIGHT_SIZE2);
    g->kw = (int)F(st->ws2, CNA_WEIGHT_SIZE2, WEIGHT_WIDTH_M1) + 1;
    g->kh = (int)F(st->ws2, CNA_WEIGHT_SIZE2, WEIGHT_HEIGHT_M1) + 1;
    st->kernels_m1 = (int)F(st->ws2, CNA_WEIGHT_SIZE2, WEIGHT_KERNELS_M1);
}

/* CNA: channels, the input window, its rows in CBUF granules. */
static void input_window(rkt_npu *n, struct rk3576_task *st)
{
    struct rkt_conv_task *t = &st->t;
    struct rkt_conv_geom *g = &st->t.g;
    const uint32_t ds1 = rkt_rd(n, RK3576_CNA_DATA_SIZE1);
    st->c = (int)F(ds1, CNA_DATA_SIZE1, DATAIN_CHANNEL_M1) + 1;
    const uint32_t dsz1 = rkt_rd(n, RK3576_CNA_DMA_SIZE1);
    rkt_check(n, F(dsz1, CNA_DMA_SIZE1, DMA_CHANNEL_M1) + 1 == (uint32_t)st->c, RK3576_CNA_DMA_SIZE1, dsz1,
              "DMA channels must equal CNA_DATA_SIZE1 channels (%d)", st->c);
    /* channels >= C of the last 16-channel plane are not read (they count as 0 in the MAC and the window
     * sum); the weight cube still holds round16(C) channels [INFERRED for direct: the vendor's direct
     * programs all have C a multiple of 16; its depthwise ones size the cube with round16(C)] */
    st->c16 = round_up((uint32_t)st->c, 16); /* channels in the 16-channel planes of memory */
    g->ic = (int)st->c16;
    t->ic_real = st->c;
    /* CBUF row: the 16-channel groups, one more when their count is 3 mod 4 [R76-VENDOR 490/490] */
    const uint32_t groups = st->c16 / 16 + (st->c16 / 16 % 4 == 3);

    st->ds0 = rkt_rd(n, RK3576_CNA_DATA_SIZE0);
    st->iw = F(st->ds0, CNA_DATA_SIZE0, DATAIN_WIDTH_M1) + 1;
    st->win_rows = F(st->ds0, CNA_DATA_SIZE0, DATAIN_HEIGHT_M1) + 1;
    const uint32_t dsz0 = rkt_rd(n, RK3576_CNA_DMA_SIZE0);
    st->fetched = F(dsz0, CNA_DMA_SIZE0, DMA_HEIGHT_M1) + 1;
    rkt_check(n, F(dsz0, CNA_DMA_SIZE0, DMA_WIDTH_M1) + 1 == st->iw && st->fetched <= st->win_rows, RK3576_CNA_DMA_SIZE0, dsz0,
              "DMA width must equal the window width (%u) and the fetched rows at most the window's %u rows", st->iw,
              st->win_rows);
    st->entries = (st->iw * groups * 16 + GRANULE - 1) / GRANULE; /* granules per row */
    const uint32_t cb1 = rkt_rd(n, RK3576_CNA_CBUF_CON1);
    rkt_check(n, F(cb1, CNA_CBUF_CON1, DATA_ENTRIES) == st->entries && F(cb1, CNA_CBUF_CON1, DATAIN_WIDTH) == st->iw,
              RK3576_CNA_CBUF_CON1, cb1, "must be width %u and %u CBUF granules per row (ceil(width x %u channels / 64))",
              st->iw, st->entries, groups * 16);
    st->cb2 = rkt_rd(n, RK3576_CNA_CBUF_CON2);
    st->read_origin = F(st->cb2, CNA_CBUF_CON2, READ_ORIGIN);
    rkt_check(n, F(st->cb2, CNA_CBUF_CON2, DATA_ENTRIES) == st->entries, RK3576_CNA_CBUF_CON2, st->cb2,
              "DATA_ENTRIES must be %u granules per row", st->entries);
    rkt_check(n, F(ds1, CNA_DATA_SIZE1, WINDOW_ENTRIES) == st->fetched * st->entries, RK3576_CNA_DATA_SIZE1, ds1,
              "WINDOW_ENTRIES must be the %u fetched rows x %u granules", st->fetched, st->entries);
    const uint32_t u118c = rkt_rd(n, RK3576_CNA_UNDOC_118C);
    rkt_check(n, u118c == (st->iw - 1) * 0x10001u, RK3576_CNA_UNDOC_118C, u118c,
              "only (width - 1) in both halves (the vendor's value)");
}

/* CNA: the CBUF data ring the window goes through. */
static int cbuf_ring(rkt_npu *n, struct rk3576_task *st)
{
    const uint32_t cb0 = rkt_rd(n, RK3576_CNA_CBUF_CON0);
    st->limit = F(cb0, CNA_CBUF_CON0, DATA_LIMIT);
    st->write_origin = F(cb0, CNA_CBUF_CON0, WRITE_ORIGIN);
    rkt_check(n, st->limit == 4096 || st->limit == 5120, RK3576_CNA_CBUF_CON0, cb0,
              "data ring of %u granules not understood (only the vendor's core-0 rings of 4096 or 5120 from granule 0)",
              st->limit);
    const uint32_t u1018 = rkt_rd(n, RK3576_CNA_UNDOC_1018);
    const int retain_flag = (int)F(u1018, CNA_UNDOC_1018, CBUF_RETAIN);
    rkt_check(n, (u1018 & 0x7FFFFFFFu) == (0x40000000u | (st->limit / 1024) * 0x101u), RK3576_CNA_UNDOC_1018, u1018,
              "bits 0..3 and 8..11 must be the data ring in 1024-granule units (%u) and bit 30 set (vendor)", st->limit / 1024);
    const uint32_t kept = st->win_rows - st->fetched;
    rkt_check(n, retain_flag == (kept > 0), RK3576_CNA_UNDOC_1018, u1018,
              "CBUF_RETAIN must be set exactly when the window keeps rows from the previous task (%u kept)", kept);
    if (!n->bad && (st->read_origin >= st->limit || st->write_origin >= st->limit))
        return rkt_fail(n, "CNA_CBUF_CON2 = 0x%08x / CNA_CBUF_CON0 = 0x%08x: read origin %u or write origin %u outside "
                        "the %u-granule data ring", st->cb2, cb0, st->read_origin, st->write_origin, st->limit);
    if (!n->bad && (uint64_t)st->win_rows * st->entries > st->limit)
        return rkt_fail(n, "CNA_DATA_SIZE0 = 0x%08x: a window of %u rows x %u granules exceeds the CBUF data ring of %u "
                        "granules (CNA_CBUF_CON0 = 0x%08x): its rows would overwrite each other", st->ds0, st->win_rows, st->entries,
                        st->limit, cb0);
    if (!n->bad && st->write_origin != (st->read_origin + kept * st->entries) % st->limit)
        return rkt_fail(n, "CNA_CBUF_CON0 = 0x%08x: fetched rows written from granule %u, but the window starts at granule "
                        "%u with %u kept rows of %u granules (they must follow the kept rows: granule %u)", cb0,
                        st->write_origin, st->read_origin, kept, st->entries, (st->read_origin + kept * st->entries) % st->limit);
    return 0;
}

/* CNA: weight sizes, reuse, address. */
static void weight_regs(rkt_npu *n, struct rk3576_task *st)
{
    st->ws0 = rkt_rd(n, RK3576_CNA_WEIGHT_SIZE0);
    st->ws1 = rkt_rd(n, RK3576_CNA_WEIGHT_SIZE1);
    st->ds2 = rkt_rd(n, RK3576_CNA_DATA_SIZE2);
    st->u1038 = rkt_rd(n, RK3576_CNA_UNDOC_1038);
    st->weight_reuse = (int)F(st->u1038, CNA_UNDOC_1038, NOT_FIRST_TASK);
    rkt_check(n, F(st->u1038, CNA_UNDOC_1038, LOW) == 7, RK3576_CNA_UNDOC_1038, st->u1038, "low bits: only 7 (the vendor's value)");
    st->w_iova = rkt_rd(n, RK3576_CNA_DCOMP_ADDR0);
}

/* CNA: padding and input addressing. */
static void padding_input(rkt_npu *n, struct rk3576_task *st)
{
    struct rkt_conv_task *t = &st->t;
    st->pad0 = rkt_rd(n, RK3576_CNA_PAD_CON0);
    t->pad_top = (int)F(st->pad0, CNA_PAD_CON0, PAD_TOP);
    t->pad_left = (int)F(st->pad0, CNA_PAD_CON0, PAD_LEFT);
    st->pad_bottom = (int)F(st->pad0, CNA_PAD_CON0, PAD_BOTTOM);
    st->pad_right = (int)F(st->pad0, CNA_PAD_CON0, PAD_RIGHT);
    const uint32_t pad1 = rkt_rd(n, RK3576_CNA_PAD_CON1);
    rkt_check(n, (int32_t)pad1 >= -128 && (int32_t)pad1 <= 127, RK3576_CNA_PAD_CON1, pad1,
              "the pad value must be an int8 sign-extended to 32 bits (the input zero point as stored)");
    t->pad_value = (int32_t)pad1;
    t->pad_value_lane1 = t->pad_value; /* one value (0x1084 holds an int8): no lane rule known on RK3576 */
    st->in_iova = rkt_rd(n, RK3576_CNA_FEATURE_DATA_ADDR);
    st->ls = rkt_rd(n, RK3576_CNA_DMA_CON1);
    st->ss = rkt_rd(n, RK3576_CNA_DMA_CON2);
    st->ts = rkt_rd(n, RK3576_CNA_DMA_CON3);
    /* the vendor's value is exactly 4 x width (rows back to back); a longer stride reads a column window of a
     * wider tensor, the rows 4 x LINE_STRIDE bytes apart as on RK3588 [INFERRED, docs/hardware/rocket-rk3576.md
     * "Column windows"] */
    rkt_check(n, st->ls >= 4 * st->iw, RK3576_CNA_DMA_CON1, st->ls,
              "line stride must be at least 4 x width = %u (rows of width x 16 bytes may not overlap)", 4 * st->iw);
    st->surf = st->iw * st->fetched;
    rkt_check(n, st->ts == round_up(st->surf, 4) || (st->surf == 1 && st->ts == 1), RK3576_CNA_DMA_CON3, st->ts,
              "task surface must be round4(width x fetched rows) = %u 16-byte units", round_up(st->surf, 4));
}

/* CORE, DPU, DPU_RDMA: the output cube in every unit. */
static void output_cube(rkt_npu *n, struct rk3576_task *st)
{
    struct rkt_conv_task *t = &st->t;
    st->cd0 = rkt_rd(n, RK3576_CORE_DATAOUT_SIZE_0);
    t->out_w = (int)F(st->cd0, CORE_DATAOUT_SIZE_0, DATAOUT_WIDTH_M1) + 1;
    t->out_h = (int)F(st->cd0, CORE_DATAOUT_SIZE_0, DATAOUT_HEIGHT_M1) + 1;
    const uint32_t cd1 = rkt_rd(n, RK3576_CORE_DATAOUT_SIZE_1);
    t->oc_real = (int)F(cd1, CORE_DATAOUT_SIZE_1, DATAOUT_CHANNEL_M1) + 1;
    rkt_check(n, !st->dw || t->oc_real == st->c, RK3576_CORE_DATAOUT_SIZE_1, cd1, "depthwise: output channels must equal the %d input channels", st->c);
    t->group_channels = st->dw ? 64 : 32;
    t->oc = (int)round_up((uint32_t)t->oc_real, (uint32_t)t->group_channels);
    const uint32_t oc_m1 = (uint32_t)t->oc_real - 1, ow_m1 = (uint32_t)t->out_w - 1, oh_m1 = (uint32_t)t->out_h - 1;
    rkt_check(n, F(st->ds2, CNA_DATA_SIZE2, DATAOUT_WIDTH_M1) == ow_m1, RK3576_CNA_DATA_SIZE2, st->ds2, "output width - 1 must be %u", ow_m1);
    const uint32_t ds3 = rkt_rd(n, RK3576_CNA_DATA_SIZE3);
    rkt_check(n, ds3 == (uint32_t)(t->out_w * t->out_h) - 1, RK3576_CNA_DATA_SIZE3, ds3, "must be output width x height - 1 = %d",
              t->out_w * t->out_h - 1);
    rkt_want(n, RK3576_DPU_DATA_CUBE_WIDTH, ow_m1, "output width - 1 (CORE_DATAOUT_SIZE_0)");
    rkt_want(n, RK3576_DPU_DATA_CUBE_HEIGHT, oh_m1, "output height - 1 (CORE_DATAOUT_SIZE_0)");
    rkt_want(n, RK3576_DPU_WDMA_SIZE_1, oh_m1 << 16 | ow_m1, "output height - 1 / width - 1 (CORE_DATAOUT_SIZE_0)");
    rkt_want(n, RK3576_DPU_DATA_CUBE_CHANNEL, oc_m1, "output channels - 1 (CORE_DATAOUT_SIZE_1)");
    rkt_want(n, RK3576_DPU_UNDOC_4030, oc_m1 << 16 | (st->dw ? 0x310u : 0x710u), "output channels - 1 over the vendor's 0x710 / 0x310");
    rkt_want(n, RK3576_DPU_RDMA_DATA_CUBE_WIDTH, ow_m1, "output width - 1 (CORE_DATAOUT_SIZE_0)");
    rkt_want(n, RK3576_DPU_RDMA_DATA_CUBE_HEIGHT, oh_m1, "output height - 1 (CORE_DATAOUT_SIZE_0)");
    rkt_want(n, RK3576_DPU_RDMA_DATA_CUBE_CHANNEL, oc_m1, "output channels - 1 (CORE_DATAOUT_SIZE_1)");
}

/* CNA: the weight cube for the task's mode. */
static void weight_geometry(rkt_npu *n, struct rk3576_task *st)
{
    struct rkt_conv_task *t = &st->t;
    struct rkt_conv_geom *g = &st->t.g;
    const uint32_t taps = (uint32_t)(g->kw * g->kh);
    if (st->dw) {
        g->kernels = 1;
        rkt_check(n, st->kernels_m1 == 1, RK3576_CNA_WEIGHT_SIZE2, st->ws2, "depthwise: the kernel field must be 1 (the vendor's value)");
        rkt_check(n, st->ws1 == st->c16 * taps, RK3576_CNA_WEIGHT_SIZE1, st->ws1, "depthwise: must be round16(C) x kh x kw = %u", st->c16 * taps);
        rkt_check(n, st->ws0 == st->c16 * taps * 2, RK3576_CNA_WEIGHT_SIZE0, st->ws0,
                  "depthwise: must be round16(C) x kh x kw x 2 = %u (2 bytes per channel per tap)", st->c16 * taps * 2);
        rkt_check(n, F(st->ds2, CNA_DATA_SIZE2, KERNEL_FETCH) == st->ws0 / 16, RK3576_CNA_DATA_SIZE2, st->ds2,
                  "depthwise: KERNEL_FETCH must be the weight bytes / 16 = %u", st->ws0 / 16);
    } else {
        g->kernels = st->kernels_m1 + 1;
        const uint32_t kernels = round_up((uint32_t)t->oc_real, 2);
        rkt_check(n, (uint32_t)g->kernels == kernels, RK3576_CNA_WEIGHT_SIZE2, st->ws2,
                  "must hold the output channels rounded up to even (%u kernels) - 1", kernels);
        rkt_check(n, st->ws1 == st->c16 * taps, RK3576_CNA_WEIGHT_SIZE1, st->ws1, "must be round16(C) x kh x kw = %u", st->c16 * taps);
        rkt_check(n, st->ws0 == st->c16 * taps * kernels, RK3576_CNA_WEIGHT_SIZE0, st->ws0,
                  "must be round16(C) x kh x kw x kernels = %u", st->c16 * taps * kernels);
        rkt_check(n, F(st->ds2, CNA_DATA_SIZE2, KERNEL_FETCH) == st->c16 * taps * 2, RK3576_CNA_DATA_SIZE2, st->ds2,
                  "KERNEL_FETCH must be round16(C) x kh x kw x 2 = %u", st->c16 * taps * 2);
    }
}

/* DPU: bias / coefficient stage, requantization, output. */
/* The fused ReLU / Clip [INFERRED from the vendor's programs, docs/hardware/rocket-rk3576-sim.md]: 0x4060 0x903
 * with CLAMP2/3 at (INT32_MIN, INT32_MAX) is no clamp; 0x902 clamps the value before OUT_CVT to CLAMP2's
 * [0, MAX], with CLAMP3 equal to CLAMP2 (the vendor always writes both pairs alike and the minimum 0; which stage
 * each pair bounds is not known, so only that form is accepted). */
static void dpu_clamp(rkt_npu *n, struct rkt_conv_task *t)
{
    const uint32_t mode = rkt_rd(n, RK3576_DPU_UNDOC_4060);
    const uint32_t lo = rkt_rd(n, RK3576_DPU_CLAMP2_MIN), hi = rkt_rd(n, RK3576_DPU_CLAMP2_MAX);
    rkt_check(n, mode == 0x903 || mode == 0x902, RK3576_DPU_UNDOC_4060, mode, "only 0x903 (no clamp) or 0x902 (CLAMP2/3)");
    rkt_want(n, RK3576_DPU_CLAMP3_MIN, lo, "CLAMP3 must equal CLAMP2 (the vendor's form)");
    rkt_want(n, RK3576_DPU_CLAMP3_MAX, hi, "CLAMP3 must equal CLAMP2 (the vendor's form)");
    t->clamp = mode == 0x902;
    if (t->clamp) {
        rkt_check(n, lo == 0 && (int32_t)hi >= 0, RK3576_DPU_CLAMP2_MIN, lo,
                  "0x4060 0x902: only the vendor's ReLU form, minimum 0 and a maximum >= 0 (now 0x%08x)", hi);
        t->clamp_lo = (int32_t)lo;
        t->clamp_hi = (int32_t)hi;
    } else {
        rkt_check(n, lo == 0x80000000u && hi == 0x7FFFFFFFu, RK3576_DPU_CLAMP2_MIN, lo,
                  "0x4060 0x903 (no clamp): CLAMP2/3 only (INT32_MIN, INT32_MAX)");
    }
}

static void dpu(rkt_npu *n, struct rk3576_task *st)
{
    struct rkt_conv_task *t = &st->t;
    const uint32_t bs_cfg = rkt_rd(n, RK3576_DPU_BS_CFG);
    const uint32_t ow_cfg = rkt_rd(n, RK3576_DPU_BS_OW_CFG);
    const uint32_t brdma = rkt_rd(n, RK3576_DPU_RDMA_BRDMA_CFG);
    st->nsurf = (t->oc_real + 15) / 16;
    st->spg = t->group_channels / 16;
    const uint32_t phase = (uint32_t)((st->nsurf - 1) % st->spg) << RK3576_DPU_BS_OW_CFG__GROUP_PHASE__SHIFT;
    if (st->dw) {
        rkt_check(n, bs_cfg == 0 && brdma == 0x510, RK3576_DPU_BS_CFG, bs_cfg,
                  "depthwise: only BS_CFG 0 with DPU_RDMA_BRDMA_CFG 0x510 (now 0x%08x): coefficient A and C, no B", brdma);
        rkt_check(n, ow_cfg == (0x00013033u | phase), RK3576_DPU_BS_OW_CFG, ow_cfg,
                  "depthwise: only 0x13x33 with GROUP_PHASE = (surfaces - 1) mod 4 (0x%08x)", 0x00013033u | phase);
    } else {
        rkt_check(n, bs_cfg == 1 && brdma == 0x710, RK3576_DPU_BS_CFG, bs_cfg,
                  "direct: only BS_CFG 1 with DPU_RDMA_BRDMA_CFG 0x710 (now 0x%08x), the form of the vendor's live "
                  "capture (coefficients A, B and C); the 0 / 0x114 form is not understood", brdma);
        rkt_check(n, ow_cfg == (0x80011011u | phase), RK3576_DPU_BS_OW_CFG, ow_cfg,
                  "direct: only 0x8001x011 with GROUP_PHASE = (surfaces - 1) mod 2 (0x%08x)", 0x80011011u | phase);
    }
    dpu_clamp(n, t);
    t->out_offset = (int32_t)rkt_rd(n, RK3576_DPU_OUT_CVT_OFFSET);
    const uint32_t osc = rkt_rd(n, RK3576_DPU_OUT_CVT_SCALE);
    rkt_check(n, F(osc, DPU_OUT_CVT_SCALE, FP32TOFP16_EN) == 0, RK3576_DPU_OUT_CVT_SCALE, osc, "no fp16 output");
    t->out_scale = F(osc, DPU_OUT_CVT_SCALE, OUT_CVT_SCALE);
    const uint32_t osh = rkt_rd(n, RK3576_DPU_OUT_CVT_SHIFT);
    t->out_shift = (int)F(osh, DPU_OUT_CVT_SHIFT, OUT_CVT_SHIFT);
    rkt_check(n, osh == (uint32_t)t->out_shift, RK3576_DPU_OUT_CVT_SHIFT, osh,
              "only CVT_ROUND 0 (ties to even, the rule the simulator models)");
    st->out_iova = rkt_rd(n, RK3576_DPU_DST_BASE_ADDR);
    st->surf_stride = rkt_rd(n, RK3576_DPU_DST_SURF_STRIDE);
    st->jump = rkt_rd(n, RK3576_DPU_SURFACE_ADD);
    st->coef_iova = rkt_rd(n, RK3576_DPU_RDMA_BS_BASE_ADDR);
    st->shift_iova = rkt_rd(n, RK3576_DPU_RDMA_BS_SHIFT_ADDR);
}

/* DPU EW and DPU_RDMA ERDMA: bypassed, or the vendor's fused conv + Add (../shared/golden/rocket-rk3576-ops,
 * add-2conv): EW_CFG 0x8002C0C0, ERDMA_CFG 0x50000044, FEATURE_MODE_CFG 0x40000018 with the MRDMA off, so the
 * ERDMA reads every operand surface from EW_BASE_ADDR, EW_SURF_STRIDE (16-byte units) apart; SURF_NOTCH and
 * EW_SURF_NOTCH = 2 x EW_SURF_STRIDE - the cube (the vendor's W x H for a whole-plane task; the RK3588 reading
 * of Mesa's words for row windows, docs/hardware/rocket-rk3576-sim.md) [INFERRED]. */
static void lut_stage(rkt_npu *n, struct rk3576_task *st, int on);

static void ew_stage(rkt_npu *n, struct rk3576_task *st)
{
    struct rkt_conv_task *t = &st->t;
    const uint32_t mode = st->dw ? 0x40000012u : 0x40000010u;
    const uint32_t ew = rkt_rd(n, RK3576_DPU_EW_CFG);
    rkt_check(n, ew == EW_CFG_BYPASS || ew == EW_CFG_ADD || ew == EW_CFG_LUT, RK3576_DPU_EW_CFG, ew,
              "only the vendor's EW bypass (0x%08x), add of the converted operand (0x%08x) or LUT (0x%08x)", EW_CFG_BYPASS,
              EW_CFG_ADD, EW_CFG_LUT);
    st->ew_on = ew == EW_CFG_ADD;
    lut_stage(n, st, ew == EW_CFG_LUT);
    rkt_want(n, RK3576_DPU_RDMA_SRC_BASE_ADDR, 0, "the MRDMA source: unused (MRDMA off)");
    if (!st->ew_on) {
        rkt_want(n, RK3576_DPU_EW_CVT_OFFSET_VALUE, 0, "EW bypassed");
        rkt_want(n, RK3576_DPU_EW_CVT_SCALE_VALUE, 1, "EW bypassed");
        rkt_want(n, RK3576_DPU_RDMA_ERDMA_CFG, 0x41, "EW stream disabled (the vendor's int8 conv value)");
        rkt_want(n, RK3576_DPU_RDMA_FEATURE_MODE_CFG, mode, "MRDMA off, CONV_MODE as CNA");
        rkt_want(n, RK3576_DPU_RDMA_EW_BASE_ADDR, 0, "EW stream disabled");
        rkt_want(n, RK3576_DPU_RDMA_EW_SURF_STRIDE, 0, "EW stream disabled");
        rkt_want(n, RK3576_DPU_RDMA_SURF_NOTCH, 0, "EW stream disabled");
        rkt_want(n, RK3576_DPU_RDMA_EW_SURF_NOTCH, 0, "EW stream disabled");
        return;
    }
    t->ew_offset = (int32_t)rkt_rd(n, RK3576_DPU_EW_CVT_OFFSET_VALUE);
    const uint32_t sc = rkt_rd(n, RK3576_DPU_EW_CVT_SCALE_VALUE);
    t->ew_scale = RKT_SXT(F(sc, DPU_EW_CVT_SCALE_VALUE, EW_OP_CVT_SCALE), 16);
    t->ew_shift = (int)F(sc, DPU_EW_CVT_SCALE_VALUE, EW_OP_CVT_SHIFT);
    t->ew_tie_up = n->rules.rule[TEFLON_RULE_EW_TIE] == TEFLON_EW_TIE_HALF_UP; /* board-facts.md fact 2 */
    rkt_want(n, RK3576_DPU_RDMA_ERDMA_CFG, 0x50000044, "EW operand of a fused conv (the vendor's add-2conv word)");
    rkt_want(n, RK3576_DPU_RDMA_FEATURE_MODE_CFG, mode | 0x8u, "MRDMA off with the ERDMA operand (the vendor's add-2conv word)");
    st->ew_iova = rkt_rd(n, RK3576_DPU_RDMA_EW_BASE_ADDR);
    st->ew_stride = rkt_rd(n, RK3576_DPU_RDMA_EW_SURF_STRIDE);
    st->ew_notch = rkt_rd(n, RK3576_DPU_RDMA_SURF_NOTCH);
    const uint32_t ewn = rkt_rd(n, RK3576_DPU_RDMA_EW_SURF_NOTCH);
    rkt_check(n, ewn == st->ew_notch, RK3576_DPU_RDMA_EW_SURF_NOTCH, ewn, "must equal SURF_NOTCH (0x%08x, the vendor's form)",
              st->ew_notch);
}

/* The LUT words of a conv task [R76-USR measured, include/npu_regcmd_rk3576.h and tests/rk3576_lut_probe.c at
 * 33643e4; the words are the vendor consumers' (rocket-rk3576-ops)]: with EW_CFG 0x01004140 the EW stage maps the
 * BS output v through the tables loaded in this job, index = (v - LE_START) >> sel (LUT_INFO, both bytes alike), table
 * 0 over [LE_START, 0], table 1 over [0, LO_END), v < LE_START reads the underflow value and v >= LO_END the overflow
 * value (each written as the vendor does: high half of 0x4188 / 0x4190, both halves of 0x418C / 0x4194). Only the
 * measured context is accepted: BN bypassed (0x4060 0x903, no clamp), no EW operand, LUT_CFG and NRDMA_CFG as
 * measured, the slope words 0 (no tail arithmetic is simulated: a value past the window reads the end value, as
 * measured). Without the LUT every LUT word must be 0. */
static void lut_stage(rkt_npu *n, struct rk3576_task *st, int on)
{
    static const uint32_t slopes[] = {RK3576_DPU_UNDOC_4120, RK3576_DPU_UNDOC_4130};
    for (size_t i = 0; i < sizeof(slopes) / sizeof(slopes[0]); i++)
        rkt_want(n, slopes[i], 0, "LUT: only 0 (LE_END / LO_START analogues; 0 in every vendor and R76-USR program)");
    st->t.lut = NULL;
    if (!on) {
        static const uint32_t zero[] = {
            RK3576_DPU_UNDOC_4108, RK3576_DPU_LUT_INFO, RK3576_DPU_LUT_LE_START_0, RK3576_DPU_LUT_LE_START_1,
            RK3576_DPU_LUT_LE_START_2, RK3576_DPU_LUT_LE_START_3, RK3576_DPU_LUT_LO_END_0, RK3576_DPU_LUT_LO_END_1,
            RK3576_DPU_LUT_LO_END_2, RK3576_DPU_LUT_LO_END_3, RK3576_DPU_LUT_UFLOW_0, RK3576_DPU_LUT_UFLOW_1,
            RK3576_DPU_LUT_OFLOW_0, RK3576_DPU_LUT_OFLOW_1, RK3576_DPU_RDMA_UNDOC_5028, RK3576_DPU_RDMA_BN_BASE_ADDR,
        };
        for (size_t i = 0; i < sizeof(zero) / sizeof(zero[0]); i++)
            rkt_want(n, zero[i], 0, "LUT bypassed (EW_CFG): the LUT words are 0 (the vendor's convolutions)");
        return;
    }
    struct rkt_lut_stage *l = &n->lut_stage;
    rkt_want(n, RK3576_DPU_UNDOC_4108, LUT_CFG_CONSUMER, "LUT_CFG: only the vendor consumers' word, as R76-USR measured it");
    rkt_want(n, RK3576_DPU_RDMA_UNDOC_5028, NRDMA_CFG_LUT, "NRDMA_CFG with the LUT: only the word R76-USR measured with");
    /* BN_BASE_ADDR with the NRDMA on: [R76-USR] warns that a base left at 0 reads IOVA 0 (its probe put a 4 KiB
     * scratch buffer there); what it fetches with BN bypassed is not known, so it must be real memory of at least
     * that size. Its contents are a don't-care: BN is bypassed (0x4060 0x903) [INFERRED from the measured stage
     * arithmetic, which has no BN term]. */
    const uint32_t bn = rkt_rd(n, RK3576_DPU_RDMA_BN_BASE_ADDR);
    rkt_check(n, bn != 0, RK3576_DPU_RDMA_BN_BASE_ADDR, bn, "with the LUT: a buffer of the job, not IOVA 0 (whichever buffer "
              "happens to own it, R76-USR's warning)");
    if (!n->bad && !rkt_mem(n, RKT_DMA_EXTENT, "DPU_RDMA BN_BASE_ADDR with the LUT (4 KiB, R76-USR's scratch size)", bn,
                            LUT_BN_BYTES))
        return;
    const uint32_t info = rkt_rd(n, RK3576_DPU_LUT_INFO);
    const int le_sel = (int)F(info, DPU_LUT_INFO, LUT_LE_INDEX_SELECT), lo_sel = (int)F(info, DPU_LUT_INFO, LUT_LO_INDEX_SELECT);
    rkt_check(n, le_sel == lo_sel && le_sel <= 15, RK3576_DPU_LUT_INFO, info, "sel: both bytes alike (the measured form), at most 15");
    if (n->bad)
        return; /* the task fails; nothing below may shift by a bad sel */
    l->sel = le_sel;
    l->le_start = (int32_t)rkt_rd(n, RK3576_DPU_LUT_LE_START_0);
    l->lo_end = (int32_t)rkt_rd(n, RK3576_DPU_LUT_LO_END_0);
    for (uint32_t i = 1; i < 4; i++) {
        rkt_want(n, RK3576_DPU_LUT_LE_START_0 + 4 * i, (uint32_t)l->le_start, "LE_START: four lanes alike (the measured form)");
        rkt_want(n, RK3576_DPU_LUT_LO_END_0 + 4 * i, (uint32_t)l->lo_end, "LO_END: four lanes alike (the measured form)");
    }
    rkt_check(n, l->le_start <= 0 && l->lo_end > 0, RK3576_DPU_LUT_LE_START_0, (uint32_t)l->le_start,
              "the window must hold 0 (LE_START <= 0 < LO_END = %d)", l->lo_end);
    rkt_check(n, ((int64_t)0 - l->le_start) >> l->sel <= RKT_LUT_ENTRIES && (int64_t)l->lo_end >> l->sel <= RKT_LUT_ENTRIES,
              RK3576_DPU_LUT_LE_START_0, (uint32_t)l->le_start, "the window spans more entries than the LUT RAM holds");
    const uint32_t u0 = rkt_rd(n, RK3576_DPU_LUT_UFLOW_0), o0 = rkt_rd(n, RK3576_DPU_LUT_OFLOW_0);
    rkt_check(n, (u0 & 0xFFFFu) == 0, RK3576_DPU_LUT_UFLOW_0, u0, "underflow value in the high half, low half 0 (the vendor's form)");
    rkt_check(n, (o0 & 0xFFFFu) == 0, RK3576_DPU_LUT_OFLOW_0, o0, "overflow value in the high half, low half 0 (the vendor's form)");
    rkt_want(n, RK3576_DPU_LUT_UFLOW_1, (u0 & 0xFFFF0000u) | u0 >> 16, "the underflow value in both halves (the vendor's form)");
    rkt_want(n, RK3576_DPU_LUT_OFLOW_1, (o0 & 0xFFFF0000u) | o0 >> 16, "the overflow value in both halves (the vendor's form)");
    l->uflow = (int16_t)(u0 >> 16);
    l->oflow = (int16_t)(o0 >> 16);
    l->entries = RKT_LUT_ENTRIES;
    for (int tb = 0; tb < 2; tb++) {
        l->table[tb] = n->lut[tb];
        l->loaded[tb] = n->lut_loaded[tb];
    }
    l->faults = &n->lut_faults;
    /* the vendor reloads the tables before every consumer task (rocket-rk3576-ops README "C, non-conv ops": one
     * LUT-load per conv half; its files run load, consumer, load, consumer); whether a table survives a task is
     * not measured, so a consumer reads only what the task just before it loaded */
    l->serial = n->job_tasks;
    /* the table join v = 0: table 0 ends on it ((0 - LE_START) >> sel, when LE_START is a whole number of entries
     * below 0) and table 1 starts on it; which one the hardware reads there is not known, so v = 0 is simulated only
     * when both are loaded and agree (the vendor's loads always have T0[512] = T1[0]) */
    const int64_t last = ((int64_t)0 - l->le_start) >> l->sel;
    l->join_ok = !n->bad && ((((int64_t)0 - l->le_start) & (((int64_t)1 << l->sel) - 1)) == 0) && last < RKT_LUT_ENTRIES &&
                 n->lut_loaded[0][last] == l->serial && n->lut_loaded[1][0] == l->serial && n->lut[0][last] == n->lut[1][0];
    if (!n->bad && (n->job_tasks == 0 || n->lut_task != n->job_tasks))
        rkt_fail(n, "LUT consumer (EW_CFG 0x%08x): its tables must be loaded by the task immediately before it in the same "
                 "job (the vendor loads before every consumer task: rocket-rk3576-ops README \"C, non-conv ops\")", EW_CFG_LUT);
    rkt_check(n, !st->t.clamp, RK3576_DPU_UNDOC_4060, rkt_rd(n, RK3576_DPU_UNDOC_4060),
              "with the LUT only 0x903 (BN bypassed, no clamp): R76-USR's measured form (the vendor's 0x20 pins the LUT)");
    st->t.lut = l;
}

/* The EW operand in device memory: surfaces of the output cube's rows and width. */
static int map_operand(rkt_npu *n, struct rk3576_task *st)
{
    struct rkt_conv_task *t = &st->t;
    if (!st->ew_on)
        return 0;
    const uint32_t cube = (uint32_t)(t->out_w * t->out_h);
    if (st->ew_stride < cube)
        return rkt_fail(n, "DPU_RDMA_EW_SURF_STRIDE = 0x%08x: operand surfaces of %dx%d atoms overlap (16-byte units)",
                        st->ew_stride, t->out_w, t->out_h);
    if (st->ew_notch != 2 * st->ew_stride - cube)
        return rkt_fail(n, "DPU_RDMA_SURF_NOTCH = 0x%08x: must be 2 x EW_SURF_STRIDE - the task cube = 0x%08x", st->ew_notch,
                        2 * st->ew_stride - cube);
    t->ew_row_pitch = (size_t)t->out_w * 16;
    t->ew_surf_pitch = 16 * (size_t)st->ew_stride;
    t->ew = rkt_mem(n, RKT_DMA_EXTENT, "EW operand (DPU_RDMA_EW_BASE_ADDR)", st->ew_iova,
                    (uint64_t)(st->nsurf - 1) * t->ew_surf_pitch + 16 * (uint64_t)cube);
    /* the operand is feature traffic: one burst per 16-channel surface */
    for (int s = 0; s < st->nsurf && t->ew; s++)
        rkt_mem(n, RKT_DMA_FEATURE, "EW operand surface (DPU_RDMA_EW_BASE_ADDR)",
                st->ew_iova + (uint32_t)((uint64_t)s * t->ew_surf_pitch), 16 * (uint64_t)cube);
    return t->ew ? 0 : -EINVAL;
}

/* Across units: the window, pads, kernel and stride give exactly the output cube. */
static int check_geometry(rkt_npu *n, struct rk3576_task *st)
{
    struct rkt_conv_task *t = &st->t;
    struct rkt_conv_geom *g = &st->t.g;
    const int span_w = (int)st->iw + t->pad_left + st->pad_right - g->kw, span_h = (int)st->win_rows + t->pad_top + st->pad_bottom - g->kh;
    /* the window ends where its last column is (a whole row, or a column window), so without a right pad up to stride - 1 trailing
     * columns may stay unread (a VALID stride-2 layer with width - kernel odd), as on RK3588 [INFERRED]; a right pad
     * must be consumed */
    if (span_w < 0 || (span_w % t->sx && st->pad_right) || span_w / t->sx + 1 != t->out_w)
        return rkt_fail(n, "CNA_PAD_CON0 = 0x%08x / CORE_DATAOUT_SIZE_0 = 0x%08x: width %u with pads %d+%d, kernel %d, "
                        "stride %d does not give exactly %d output columns (trailing pads are the pads consumed)", st->pad0,
                        st->cd0, st->iw, t->pad_left, st->pad_right, g->kw, t->sx, t->out_w);
    if (span_h < 0 || span_h % t->sy || span_h / t->sy + 1 != t->out_h)
        return rkt_fail(n, "CNA_PAD_CON0 = 0x%08x / CORE_DATAOUT_SIZE_0 = 0x%08x: window of %u rows with pads %d+%d, "
                        "kernel %d, stride %d does not give exactly %d output rows (trailing pads are the pads consumed)",
                        st->pad0, st->cd0, st->win_rows, t->pad_top, st->pad_bottom, g->kh, t->sy, t->out_h);
    if (t->pad_left >= g->kw || st->pad_right >= g->kw || t->pad_top >= g->kh || st->pad_bottom >= g->kh)
        return rkt_fail(n, "CNA_PAD_CON0 = 0x%08x: a pad of at least the kernel size (%dx%d) puts a window entirely in "
                        "padding", st->pad0, g->kh, g->kw);
    t->in_w = (int)st->iw;
    t->in_h = (int)st->win_rows;
    return 0;
}

static int map_input(rkt_npu *n, struct rk3576_task *st)
{
    st->planes = st->c16 / 16;
    st->row_pitch = 16 * (size_t)st->iw;
    st->dram_row_pitch = 4 * (size_t)st->ls;
    st->plane_pitch = 16 * (size_t)st->ss;
    const uint64_t rows_bytes = (uint64_t)(st->fetched - 1) * st->dram_row_pitch + st->row_pitch;
    if (st->planes > 1 && (uint64_t)st->plane_pitch < rows_bytes)
        return rkt_fail(n, "CNA_DMA_CON2 = 0x%08x: 16-channel planes of %u fetched rows x %u overlap (plane stride in "
                        "16-byte units)", st->ss, st->fetched, st->iw);
    const uint64_t last = 16 * (uint64_t)st->ts > rows_bytes ? 16 * (uint64_t)st->ts : rows_bytes;
    st->in = rkt_mem(n, RKT_DMA_EXTENT, "input (CNA_FEATURE_DATA_ADDR, DMA_CON1/2/3)", st->in_iova,
                                (uint64_t)(st->planes - 1) * st->plane_pitch + last);
    return 0;
}

static int map_output(rkt_npu *n, struct rk3576_task *st)
{
    struct rkt_conv_task *t = &st->t;
    const size_t cube = (size_t)t->out_w * t->out_h * 16;
    t->out_surf_pitch = 16 * (size_t)st->surf_stride;
    /* TEFLON_SIM_RULES direct_pitch (board-facts.md fact 3): the hypotheses under which the direct path writes its
     * surfaces OW*OH or round4(OW*OH) atoms apart whatever 0x401C holds; by default it follows the register */
    const int pitch_rule = n->rules.rule[TEFLON_RULE_DIRECT_PITCH];
    if (!st->dw && pitch_rule == TEFLON_DIRECT_PITCH_EXACT)
        t->out_surf_pitch = cube;
    else if (!st->dw && pitch_rule == TEFLON_DIRECT_PITCH_ROUND4)
        t->out_surf_pitch = 16 * (size_t)round_up((uint32_t)(t->out_w * t->out_h), 4);
    t->out_group_pitch = cube + 16 * (size_t)st->jump;
    if (st->nsurf > 1 && t->out_surf_pitch < cube)
        return rkt_fail(n, "DPU_DST_SURF_STRIDE = 0x%08x: surfaces of %dx%d atoms overlap (16-byte units)", st->surf_stride,
                        t->out_w, t->out_h);
    if (st->nsurf > st->spg && t->out_group_pitch < (size_t)st->spg * t->out_surf_pitch)
        return rkt_fail(n, "DPU_SURFACE_ADD = 0x%08x: the next group of %d channels would start inside this one (jump in "
                        "16-byte units from the end of the group's first surface)", st->jump, t->group_channels);
    const int last = st->nsurf - 1;
    t->out = rkt_mem(n, RKT_DMA_EXTENT, "output (DPU_DST_BASE_ADDR)", st->out_iova,
                    (uint64_t)(last / st->spg) * t->out_group_pitch + (uint64_t)(last % st->spg) * t->out_surf_pitch + cube);
    /* the DPU WDMA: one burst per 16-channel output surface */
    for (int s = 0; s < st->nsurf && t->out; s++)
        rkt_mem(n, RKT_DMA_WRITE, "output surface (DPU_DST_BASE_ADDR)",
                st->out_iova + (uint32_t)((s / st->spg) * t->out_group_pitch + (s % st->spg) * t->out_surf_pitch), cube);
    return 0;
}

static int coefficients(rkt_npu *n, struct rk3576_task *st)
{
    struct rkt_conv_task *t = &st->t;
    const uint32_t gbytes = st->dw ? COEF_GROUP_BYTES_DW : COEF_GROUP_BYTES;
    const uint8_t *coef = rkt_mem(n, RKT_DMA_BIAS, "coefficient table (DPU_RDMA_BS_BASE_ADDR)", st->coef_iova,
                                  (uint64_t)((t->oc_real + COEF_GROUP - 1) / COEF_GROUP) * gbytes);
    const uint8_t *shiftw = rkt_mem(n, RKT_DMA_BIAS, "shift word (DPU_RDMA_BS_SHIFT_ADDR)", st->shift_iova, 4);
    if (n->bad)
        return -EINVAL;
    const uint32_t shift_word = (uint32_t)le32(shiftw);
    if (shift_word & ~0x3F3Fu)
        return rkt_fail(n, "shift word 0x%08x at 0x%08x (DPU_RDMA_BS_SHIFT_ADDR): only bits 0..5 (shift of values >= 0) "
                        "and 8..13 (shift of values < 0) are understood", shift_word, st->shift_iova);
    t->bs_shift_pos = (int)(shift_word & 0x3F);
    t->bs_shift_neg = (int)(shift_word >> 8 & 0x3F);
    if (t->lut && shift_word)
        return rkt_fail(n, "shift word 0x%08x at 0x%08x (DPU_RDMA_BS_SHIFT_ADDR) with the LUT on: only 0 (R76-USR measured the "
                        "LUT input as (acc + A) * C; whether the shift applies before the LUT is not known)", shift_word,
                        st->shift_iova);
    if (rkt_tables_reserve(n, (size_t)t->oc_real))
        return -ENOMEM;
    for (int k = 0; k < t->oc_real; k++) {
        const uint8_t *grp = coef + (size_t)(k / COEF_GROUP) * gbytes;
        const int j = k % COEF_GROUP;
        n->bias[k] = le32(grp + 4 * j);
        n->ow[k] = st->dw ? 0 : le16(grp + 32 + 2 * j);
        n->mul[k] = le16(grp + (st->dw ? 32 : 48) + 2 * j);
        if (n->mul[k] <= 0)
            return rkt_fail(n, "coefficient table at 0x%08x (DPU_RDMA_BS_BASE_ADDR): channel %d has multiplier C = %d; a "
                            "zero multiplier leaves the surface empty on silicon and negative ones are not understood",
                            st->coef_iova, k, n->mul[k]);
    }
    t->bias = n->bias;
    t->ow = n->ow;
    t->bs_mul = n->mul;
    return 0;
}

/* Weights: resident from an earlier task of this job when NOT_FIRST_TASK [INFERRED], else loaded. */
static int load_weights(rkt_npu *n, struct rk3576_task *st)
{
    struct rkt_conv_geom *g = &st->t.g;
    if (st->weight_reuse) {
        const struct rkt_resident_weights *r = &n->cbuf;
        if (!r->valid || r->iova != st->w_iova || r->bytes != st->ws0 || memcmp(&r->g, g, sizeof(*g)) != 0)
            return rkt_fail(n, "CNA_UNDOC_1038 = 0x%08x: NOT_FIRST_TASK set but the CBUF does not hold these weights (%s)",
                            st->u1038, !r->valid ? "no earlier task in this job" : "different weights or geometry");
    } else {
        const int8_t *wp = (const int8_t *)rkt_mem(n, RKT_DMA_WEIGHT, "weights (CNA_DCOMP_ADDR0)", st->w_iova, st->ws0);
        if (!wp)
            return -EINVAL;
        n->cbuf.valid = 0;
        if (rkt_conv_load_weights(n->conv, g, wp, n->err, sizeof(n->err)))
            return n->bad = 1, -EINVAL;
        n->cbuf = (struct rkt_resident_weights){.valid = 1, .iova = st->w_iova, .bytes = st->ws0, .g = *g};
    }
    return 0;
}

/* CNA: fetched rows -> CBUF ring -> the window, as [plane][row][x][16] for the datapath (in place when it does
 * not wrap). */
static int fill_window(rkt_npu *n, struct rk3576_task *st)
{
    struct rkt_conv_task *t = &st->t;
    if (ring_reserve(n))
        return -ENOMEM;
    const uint32_t tag = ring_tag(st->iw, st->c16, st->limit);
    const size_t row_bytes = (size_t)st->planes * st->row_pitch;
    for (uint32_t r = 0; r < st->fetched; r++) {
        const uint32_t g0 = (st->write_origin + r * st->entries) % st->limit;
        /* the CNA feature DMA: one burst per fetched row of each 16-channel plane, into the ring */
        for (uint32_t p = 0; p < st->planes; p++) {
            const uint8_t *src = rkt_mem(n, RKT_DMA_FEATURE, "input row (CNA_FEATURE_DATA_ADDR)",
                                         st->in_iova + (uint32_t)(p * st->plane_pitch + r * st->dram_row_pitch), st->row_pitch);
            if (!src)
                return -EINVAL;
            ring_write(&n->ring, st->limit, (uint64_t)g0 * GRANULE + p * st->row_pitch, src, st->row_pitch);
        }
        /* granule indices wrap at the limit: the run up to it, then the rest from granule 0 (this runs for
         * every granule of every task) */
        const uint32_t run = st->limit - g0 < st->entries ? st->limit - g0 : st->entries;
        for (uint32_t e = 0; e < run; e++)
            n->ring.tag[g0 + e] = tag;
        for (uint32_t e = run; e < st->entries; e++)
            n->ring.tag[e - run] = tag;
    }
    for (uint32_t r = 0; r < st->win_rows; r++) {
        const uint32_t g0 = (st->read_origin + r * st->entries) % st->limit;
        const uint32_t run = st->limit - g0 < st->entries ? st->limit - g0 : st->entries;
        uint32_t stale = 0; /* granules of this row that another fill tagged */
        for (uint32_t e = 0; e < run; e++)
            stale += n->ring.tag[g0 + e] != tag;
        for (uint32_t e = run; e < st->entries; e++)
            stale += n->ring.tag[e - run] != tag;
        for (uint32_t e = 0, gi = g0; stale && e < st->entries; e++, gi = gi + 1 == st->limit ? 0 : gi + 1)
            if (n->ring.tag[gi] != tag)
                return rkt_fail(n, "CNA_CBUF_CON2 = 0x%08x: window row %u (CBUF granule %u) %s", st->cb2, r, gi,
                                n->ring.tag[gi] ? "was filled with rows of another width or channel count"
                                                : "was never filled in this job");
    }
    /* a window that does not wrap at the limit is read in place: row r, plane p at granule
     * READ_ORIGIN + r * entries, byte p * row_pitch (the layout ring_write gave it) */
    if (st->read_origin + (uint64_t)st->win_rows * st->entries <= st->limit) {
        t->in = n->ring.data + (size_t)st->read_origin * GRANULE;
        t->in_row_pitch = (size_t)st->entries * GRANULE;
        t->in_plane_pitch = st->row_pitch;
        return 0;
    }
    const size_t wbytes = row_bytes * st->win_rows;
    if (wbytes > n->window_cap) {
        uint8_t *w = realloc(n->window, wbytes);
        if (!w)
            return rkt_fail(n, "simulator out of memory for the CBUF window");
        n->window = w;
        n->window_cap = wbytes;
    }
    for (uint32_t r = 0; r < st->win_rows; r++) {
        const uint32_t g0 = (st->read_origin + r * st->entries) % st->limit;
        for (uint32_t p = 0; p < st->planes; p++)
            ring_read(&n->ring, st->limit, (uint64_t)g0 * GRANULE + p * st->row_pitch,
                      n->window + p * st->win_rows * st->row_pitch + r * st->row_pitch, st->row_pitch);
    }
    t->in = n->window;
    t->in_row_pitch = st->row_pitch;
    t->in_plane_pitch = st->win_rows * st->row_pitch;
    return 0;
}

/* The vendor's LUT-load task (../shared/golden/rocket-rk3576-ops, every `dpu-lut-load` task; README §5): DPU +
 * DPU_RDMA only (op-enable 0x18) over a 1x1x16 dummy cube, its tables written through LUT_ACCESS_CFG/DATA as the
 * words are fetched (sim_dpu.c). Only the vendor's head is understood; the dummy cube's source and destination
 * (the vendor stores 0) must be one buffer of at least 16 bytes, and nothing is written there: [R76-USR]
 * (tests/rk3576_lut_probe.c "load") measured that the task writes none of its scratch buffer while the table it
 * loads takes effect. */
static int lut_load_task(rkt_npu *n)
{
    static const struct { uint32_t off, val; } head[] = {
        {RK3576_DPU_FEATURE_MODE_CFG, 0x5}, {RK3576_DPU_DATA_FORMAT, 0}, {RK3576_DPU_UNDOC_4014, 0},
        {RK3576_DPU_DST_SURF_STRIDE, 1}, {RK3576_DPU_DATA_CUBE_WIDTH, 0}, {RK3576_DPU_DATA_CUBE_HEIGHT, 0},
        {RK3576_DPU_UNDOC_4028, 0}, {RK3576_DPU_DATA_CUBE_CHANNEL, 0xF}, {RK3576_DPU_UNDOC_4030, 0x000F0F00},
        {RK3576_DPU_WDMA_SIZE_1, 0}, {RK3576_DPU_UNDOC_4038, 0x53}, {RK3576_DPU_UNDOC_403C, 0}, {RK3576_DPU_BS_CFG, 2},
        {RK3576_DPU_CLAMP0_MIN, 0x80000000}, {RK3576_DPU_CLAMP0_MAX, 0x7FFFFFFF}, {RK3576_DPU_BS_OW_CFG, 0x00020000},
        {RK3576_DPU_CLAMP1_MIN, 0x80000000}, {RK3576_DPU_CLAMP1_MAX, 0x7FFFFFFF}, {RK3576_DPU_UNDOC_4060, 0x903},
        {RK3576_DPU_CLAMP2_MIN, 0x80000000}, {RK3576_DPU_CLAMP2_MAX, 0x7FFFFFFF}, {RK3576_DPU_CLAMP3_MIN, 0x80000000},
        {RK3576_DPU_CLAMP3_MAX, 0x7FFFFFFF}, {RK3576_DPU_EW_CFG, EW_CFG_BYPASS}, {RK3576_DPU_EW_CVT_OFFSET_VALUE, 0},
        {RK3576_DPU_EW_CVT_SCALE_VALUE, 1}, {RK3576_DPU_CLAMP4_MIN, 0x80000000}, {RK3576_DPU_CLAMP4_MAX, 0x7FFFFFFF},
        {RK3576_DPU_UNDOC_4090, 0}, {RK3576_DPU_UNDOC_4094, 0}, {RK3576_DPU_UNDOC_409C, 0},
        {RK3576_DPU_CLAMP5_MIN, 0x80000000}, {RK3576_DPU_CLAMP5_MAX, 0x7FFFFFFF}, {RK3576_DPU_OUT_CVT_OFFSET, 0},
        {RK3576_DPU_OUT_CVT_SCALE, 0x00010001}, {RK3576_DPU_OUT_CVT_SHIFT, 0}, {RK3576_DPU_SURFACE_ADD, 0},
        {RK3576_DPU_UNDOC_40BC, 0}, {RK3576_DPU_UNDOC_40C0, 0x04440000}, {RK3576_DPU_UNDOC_40C8, 0},
        {RK3576_DPU_UNDOC_40CC, 0}, {RK3576_DPU_UNDOC_40D0, 0x0040FFFF}, {RK3576_DPU_UNDOC_4108, 0x00FF0000},
        {RK3576_DPU_LUT_INFO, 0}, {RK3576_DPU_LUT_LE_START_0, 0}, {RK3576_DPU_LUT_LE_START_1, 0},
        {RK3576_DPU_LUT_LE_START_2, 0}, {RK3576_DPU_LUT_LE_START_3, 0}, {RK3576_DPU_UNDOC_4120, 0},
        {RK3576_DPU_UNDOC_4130, 0}, {RK3576_DPU_LUT_LO_END_0, 0}, {RK3576_DPU_LUT_LO_END_1, 0},
        {RK3576_DPU_LUT_LO_END_2, 0}, {RK3576_DPU_LUT_LO_END_3, 0}, {RK3576_DPU_UNDOC_4150, 0},
        {RK3576_DPU_UNDOC_4154, 0}, {RK3576_DPU_UNDOC_4160, 0}, {RK3576_DPU_UNDOC_4170, 0}, {RK3576_DPU_UNDOC_4174, 0},
        {RK3576_DPU_UNDOC_4184, 0}, {RK3576_DPU_LUT_UFLOW_0, 0}, {RK3576_DPU_LUT_UFLOW_1, 0}, {RK3576_DPU_LUT_OFLOW_0, 0},
        {RK3576_DPU_LUT_OFLOW_1, 0}, {RK3576_DPU_RDMA_DATA_CUBE_WIDTH, 0}, {RK3576_DPU_RDMA_DATA_CUBE_HEIGHT, 0},
        {RK3576_DPU_RDMA_DATA_CUBE_CHANNEL, 0xF}, {RK3576_DPU_RDMA_BRDMA_CFG, 0}, {RK3576_DPU_RDMA_BS_BASE_ADDR, 0},
        {RK3576_DPU_RDMA_BS_SHIFT_ADDR, 0}, {RK3576_DPU_RDMA_UNDOC_5028, 0}, {RK3576_DPU_RDMA_BN_BASE_ADDR, 0},
        {RK3576_DPU_RDMA_UNDOC_5030, 0}, {RK3576_DPU_RDMA_ERDMA_CFG, 1}, {RK3576_DPU_RDMA_EW_BASE_ADDR, 0},
        {RK3576_DPU_RDMA_EW_SURF_STRIDE, 0}, {RK3576_DPU_RDMA_FEATURE_MODE_CFG, 0x9}, {RK3576_DPU_RDMA_UNDOC_5048, 0},
        {RK3576_DPU_RDMA_SURF_NOTCH, 0}, {RK3576_DPU_RDMA_UNDOC_5064, 0}, {RK3576_DPU_RDMA_EW_SURF_NOTCH, 0},
        {RK3576_DPU_RDMA_UNDOC_5078, 0}, {RK3576_DPU_RDMA_UNDOC_507C, 0},
    };
    for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++)
        rkt_want(n, head[i].off, head[i].val, "the vendor's LUT-load task (rocket-rk3576-ops dpu-lut-load): only its word");
    const uint32_t dst = rkt_rd(n, RK3576_DPU_DST_BASE_ADDR), src = rkt_rd(n, RK3576_DPU_RDMA_SRC_BASE_ADDR);
    rkt_check(n, src == dst, RK3576_DPU_RDMA_SRC_BASE_ADDR, src, "the dummy cube's source must be its destination (0x%08x)", dst);
    /* the table words took effect as they were fetched; the last ones are this task's */
    rkt_rd(n, RK3576_DPU_LUT_ACCESS_CFG);
    rkt_rd(n, RK3576_DPU_LUT_ACCESS_DATA);
    if (n->bad)
        return -EINVAL;
    if (!rkt_mem(n, RKT_DMA_EXTENT, "LUT-load dummy cube (DPU_DST_BASE_ADDR)", dst, 16))
        return -EINVAL;
    return rkt_check_all_consumed(n) ? -EINVAL : 0;
}

static int rk3576_execute(rkt_npu *n)
{
    if (n->op_enable == RKT_OPEN_DPU_BITMAP) {
        const int rc = lut_load_task(n);
        if (!rc)
            n->lut_task = n->job_tasks + 1;
        return rc;
    }
    if (n->op_enable != RKT_OPEN_CONV_BITMAP)
        return rkt_fail(n, "op-enable 0x%x: only conv, pool and the LUT-load DPU-only tasks are simulated on rk3576", n->op_enable);
    struct rk3576_task st;
    memset(&st, 0, sizeof(st));
    int rc;
    conv_mode(n, &st);
    input_window(n, &st);
    if ((rc = cbuf_ring(n, &st)))
        return rc;
    weight_regs(n, &st);
    padding_input(n, &st);
    output_cube(n, &st);
    weight_geometry(n, &st);
    dpu(n, &st);
    ew_stage(n, &st);
    if (n->bad)
        return -EINVAL;
    if ((rc = check_geometry(n, &st)) || (rc = map_input(n, &st)) || (rc = map_output(n, &st)) || (rc = map_operand(n, &st)) ||
        (rc = coefficients(n, &st)) || (rc = load_weights(n, &st)))
        return rc;
    /* everything written since this group last executed must have been consumed */
    if (rkt_check_all_consumed(n))
        return -EINVAL;
    if ((rc = fill_window(n, &st)))
        return rc;
    atomic_store(&n->lut_faults, 0u);
    if ((rc = rkt_run_conv(n, &st.t)))
        return rc;
    const unsigned faults = atomic_load(&n->lut_faults);
    if (faults)
        return rkt_fail(n, "LUT (EW_CFG 0x%08x): %u values fell between two entries (interpolation is not simulated) or on an "
                        "entry the task before it did not load, or on the table join 0 where table 0's last entry is not loaded or differs "
                        "from table 1's first (window %d..%d, sel %d)", EW_CFG_LUT, faults, n->lut_stage.le_start,
                        n->lut_stage.lo_end, n->lut_stage.sel);
    return 0;
}

/* PPU padding values pad_value_1x..7x (19-bit, NVDLA PDP's N x value) [VENDOR]: max pooling writes -128 into
 * the first four, an average (j + 1) x v (v its input zero point; unused, since an average is only run without
 * padding), the last three 0. Nothing else is understood. */
static int32_t rk3576_ppu_pad_value(rkt_npu *n, int average)
{
    int32_t v[7];
    for (int i = 0; i < 7; i++)
        v[i] = RKT_SXT(rkt_rd(n, RK3576_PPU_PADDING_VALUE_1_CFG + 4u * (uint32_t)i), 19);
    for (int i = 0; i < 7; i++) {
        const int32_t want = i >= 4 ? 0 : average ? (i + 1) * v[0] : -128;
        rkt_check(n, v[i] == want, RK3576_PPU_PADDING_VALUE_1_CFG + 4u * (uint32_t)i, (uint32_t)v[i] & 0x7FFFF,
                  "pad_value_%dx must be %d (%s)", i + 1, want,
                  average ? "(j + 1) x the first value, then 0" : "max pooling: -128 x 4, then 0");
    }
    return average ? 0 : -128;
}

const struct rkt_soc rkt_soc_rk3576 = {
    .regs = rk3576_regs,
    .nregs = RK3576_NUM_REGS,
    .task_number_mask = RK3576_PC_TASK_CON__TASK_NUMBER__MASK,
    .task_con_hint = " (RK3576's TASK_NUMBER is 16 bits wide: one task is 0x70001; the RK3588 word 0x7001 asks for "
                     "28673)",
    .stream_core_spointers = 1,
    .execute = rk3576_execute,
    .ppu_pad_value = rk3576_ppu_pad_value,
    .ppu_pad_shift = {RK3576_PPU_POOLING_PADDING_CFG__PAD_LEFT__SHIFT,
                      RK3576_PPU_POOLING_PADDING_CFG__PAD_TOP__SHIFT,
                      RK3576_PPU_POOLING_PADDING_CFG__PAD_RIGHT__SHIFT,
                      RK3576_PPU_POOLING_PADDING_CFG__PAD_BOTTOM__SHIFT},
    .ppu_pad_pairs_equal = 1,
    /* [INFERRED] IN_PRECISION moved to bits 6..7, 1 = 8-bit (the vendor's 0x40) */
    .ppu_rdma_8bit = 1u << RK3576_PPU_RDMA_DATA_FORMAT__IN_PRECISION__SHIFT,
};
