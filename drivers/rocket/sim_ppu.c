/* The PPU pooling task (op-enable 0x60 = PPU | PPU_RDMA), shared by RK3588 and RK3576: decode and validate the
 * executing PPU and PPU_RDMA groups, then read the input cube through the PPU_RDMA, pool it and write the output
 * cube. Register sources and every inference: docs/hardware/rocket-sim.md §"PPU" and rocket-rk3576-sim.md.
 * The padding value and the RDMA data format word differ per generation (struct rkt_soc hooks).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "sim_dot.h"
#include "sim_npu_priv.h"

#define ATOM 16 /* bytes (int8 channels) per feature atom: NC1HWC2 with C2 = 16 */
#define FIELD13(v) ((int)((v) & 0x1FFFu) + 1) /* the CUBE_* registers: count - 1 in bits 0..12 */

struct ppu_task {
    int in_w, in_h, ch, out_w, out_h;
    int kw, kh, sx, sy;
    int pl, pt, pr, pb;
    int average;
    uint32_t rw, rh;
    int32_t pad;
    uint32_t src, line, surf, dst, dst_surf;
};

static void ppu_geometry(rkt_npu *n, struct ppu_task *p)
{
    p->in_w = FIELD13(rkt_rd(n, RKT_PPU_CUBE_IN_WIDTH));
    p->in_h = FIELD13(rkt_rd(n, RKT_PPU_CUBE_IN_HEIGHT));
    const uint32_t cin = rkt_rd(n, RKT_PPU_CUBE_IN_CHANNEL);
    p->ch = FIELD13(cin);
    rkt_check(n, p->ch % ATOM == 0, RKT_PPU_CUBE_IN_CHANNEL, cin, "channels must be whole 16-channel atoms (int8)");
    p->out_w = FIELD13(rkt_rd(n, RKT_PPU_CUBE_OUT_WIDTH));
    p->out_h = FIELD13(rkt_rd(n, RKT_PPU_CUBE_OUT_HEIGHT));
    rkt_want(n, RKT_PPU_CUBE_OUT_CHANNEL, cin, "pooling keeps the channels: CUBE_OUT_CHANNEL = CUBE_IN_CHANNEL");
    rkt_want(n, RKT_PPU_RDMA_CUBE_IN_WIDTH, (uint32_t)p->in_w - 1, "the RDMA cube must be the PPU's input cube");
    rkt_want(n, RKT_PPU_RDMA_CUBE_IN_HEIGHT, (uint32_t)p->in_h - 1, "the RDMA cube must be the PPU's input cube");
    rkt_want(n, RKT_PPU_RDMA_CUBE_IN_CHANNEL, cin, "the RDMA cube must be the PPU's input cube");
}

/* OPERATION_MODE_CFG, the kernel, its reciprocals and the padding. */
static void ppu_window(rkt_npu *n, struct ppu_task *p)
{
    const uint32_t mode = rkt_rd(n, RKT_PPU_OPERATION_MODE_CFG);
    const uint32_t method = mode & 3u;
    rkt_check(n, (mode & ~3u) == 0x10 && method <= 1, RKT_PPU_OPERATION_MODE_CFG, mode,
              "only FLYING_MODE 1 (cube from memory) with POOLING_METHOD 0 average or 1 max; min pooling, "
              "USE_CNT, NOTCH_ADDR, INDEX_EN and bit 3 (the vendor's count-excluding average) are not simulated");
    p->average = method == 0;
    const uint32_t k = rkt_rd(n, RKT_PPU_POOLING_KERNEL_CFG);
    p->kw = (int)(k & 0xF) + 1;
    p->kh = (int)((k >> 8) & 0xF) + 1;
    p->sx = (int)((k >> 16) & 0xF) + 1;
    p->sy = (int)((k >> 20) & 0xF) + 1;
    p->rw = rkt_rd(n, RKT_PPU_RECIP_KERNEL_WIDTH);
    p->rh = rkt_rd(n, RKT_PPU_RECIP_KERNEL_HEIGHT);
    if (p->average) {
        /* floor(2^16 / k): the vendor's value, and the one the average's rounding was measured with (sim below) */
        rkt_check(n, p->rw == 0x10000u / (uint32_t)p->kw, RKT_PPU_RECIP_KERNEL_WIDTH, p->rw,
                  "an average: only floor(2^16 / kernel width), the measured reciprocal");
        rkt_check(n, p->rh == 0x10000u / (uint32_t)p->kh, RKT_PPU_RECIP_KERNEL_HEIGHT, p->rh,
                  "an average: only floor(2^16 / kernel height), the measured reciprocal");
    } else {
        rkt_check(n, p->rw == 0, RKT_PPU_RECIP_KERNEL_WIDTH, p->rw, "max pooling: only 0 (the vendor's value)");
        rkt_check(n, p->rh == 0, RKT_PPU_RECIP_KERNEL_HEIGHT, p->rh, "max pooling: only 0 (the vendor's value)");
    }
    const uint32_t pad = rkt_rd(n, RKT_PPU_POOLING_PADDING_CFG);
    const uint8_t *sh = n->soc->ppu_pad_shift;
    /* where the pairs' order is unknown, TEFLON_SIM_RULES ppu_pad (board-facts.md fact 4) may name a hypothesis:
     * x_low reads the fields as the register table names them, y_low swaps x and y within each pair */
    const int rule = n->soc->ppu_pad_pairs_equal ? n->rules.rule[TEFLON_RULE_PPU_PAD] : TEFLON_PPU_PAD_X_LOW;
    const int swap = rule == TEFLON_PPU_PAD_Y_LOW;
    p->pl = (int)((pad >> sh[swap ? 1 : 0]) & 7);
    p->pt = (int)((pad >> sh[swap ? 0 : 1]) & 7);
    p->pr = (int)((pad >> sh[swap ? 3 : 2]) & 7);
    p->pb = (int)((pad >> sh[swap ? 2 : 3]) & 7);
    rkt_check(n, rule != TEFLON_PPU_PAD_EQUAL_ONLY || (p->pl == p->pt && p->pr == p->pb), RKT_PPU_POOLING_PADDING_CFG, pad,
              "leading pads differing from each other or trailing ones differing: which field of a pair is x and "
              "which y is not known on this SoC");
    rkt_check(n, !p->average || pad == 0, RKT_PPU_POOLING_PADDING_CFG, pad,
              "an average whose windows reach into padding is not simulated (how the PPU counts pad is unknown)");
    p->pad = n->soc->ppu_pad_value(n, p->average);
}

/* DST / SRC addressing and the data formats. */
static void ppu_memory(rkt_npu *n, struct ppu_task *p)
{
    p->dst = rkt_rd(n, RKT_PPU_DST_BASE_ADDR);
    p->dst_surf = rkt_rd(n, RKT_PPU_DST_SURF_STRIDE);
    rkt_want(n, RKT_PPU_DATA_FORMAT, p->dst_surf, "int8, not from the DPU, INDEX_ADD = the surface stride (TRM: "
             "without INDEX_EN it equals dst_surface_stride)");
    rkt_want(n, RKT_PPU_MISC_CTRL, 0, "aligned output, the vendor's 0 (burst, surface count and non-align unset)");
    p->src = rkt_rd(n, RKT_PPU_RDMA_SRC_BASE_ADDR);
    p->line = rkt_rd(n, RKT_PPU_RDMA_SRC_LINE_STRIDE);
    p->surf = rkt_rd(n, RKT_PPU_RDMA_SRC_SURF_STRIDE);
    rkt_want(n, RKT_PPU_RDMA_DATA_FORMAT, n->soc->ppu_rdma_8bit, "8-bit input");
}

/* Output extent: OW = (IWc + pl + pr - k) / s + 1 with the trailing pads the last window actually consumes
 * [VENDOR]; every window must hold at least one input pixel. */
static int ppu_extent(rkt_npu *n, const struct ppu_task *p)
{
    const int rx = (p->out_w - 1) * p->sx + p->kw - p->pl - p->in_w;
    const int ry = (p->out_h - 1) * p->sy + p->kh - p->pt - p->in_h;
    if (rx != p->pr || ry != p->pb)
        return rkt_fail(n, "PPU_POOLING_PADDING_CFG: trailing pads %d,%d but the %dx%d output over a %dx%d input "
                        "consumes %d,%d", p->pr, p->pb, p->out_w, p->out_h, p->in_w, p->in_h, rx, ry);
    if (p->pl >= p->kw || p->pt >= p->kh || p->pr >= p->kw || p->pb >= p->kh)
        return rkt_fail(n, "PPU_POOLING_PADDING_CFG: a window lies entirely in padding");
    if (p->line < (uint32_t)p->in_w * ATOM || (p->line & 15))
        return rkt_fail(n, "PPU_RDMA_SRC_LINE_STRIDE = 0x%08x: rows of %d pixels x 16 bytes overlap", p->line, p->in_w);
    if (p->ch > ATOM && p->surf < p->line * (uint32_t)(p->in_h - 1) + (uint32_t)p->in_w * ATOM)
        return rkt_fail(n, "PPU_RDMA_SRC_SURF_STRIDE = 0x%08x: 16-channel surfaces of %d rows overlap", p->surf, p->in_h);
    if (p->ch > ATOM && p->dst_surf < (uint32_t)(p->out_w * p->out_h * ATOM))
        return rkt_fail(n, "PPU_DST_SURF_STRIDE = 0x%08x: output surfaces of %dx%d atoms overlap", p->dst_surf,
                        p->out_w, p->out_h);
    return 0;
}

static int8_t sat8(int64_t v)
{
    return (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
}

/* One 16-channel surface. Max: the largest input or padding value of the window. Average (no padding): the
 * window sum times RECIP_W x RECIP_H, rounded to nearest with ties to even at 2^-32, saturated to int8. The
 * third party's hardware sweeps of the int8 average (RK3588 and RK3576: 2x2 s2, 4x4 s4, 2x3 s1 with the vendor's
 * reciprocals floor(2^16 / k)) fit this exactly: ties to even where the reciprocals are exact, toward zero where
 * they fall short of 1/k; where windows are larger the product's rounding is [INFERRED] (docs/hardware/rocket.md
 * §6a). */
static void pool_surface(const struct ppu_task *p, const int8_t *in, int8_t *out)
{
    const int64_t recip = (int64_t)p->rw * p->rh;
    for (int oy = 0; oy < p->out_h; oy++) {
        for (int ox = 0; ox < p->out_w; ox++) {
            int64_t acc[ATOM];
            for (int c = 0; c < ATOM; c++)
                acc[c] = p->average ? 0 : INT64_MIN;
            for (int ky = 0; ky < p->kh; ky++) {
                const int y = oy * p->sy + ky - p->pt;
                for (int kx = 0; kx < p->kw; kx++) {
                    const int x = ox * p->sx + kx - p->pl;
                    const int inside = y >= 0 && y < p->in_h && x >= 0 && x < p->in_w;
                    const int8_t *px = inside ? in + (size_t)y * p->line + (size_t)x * ATOM : NULL;
                    for (int c = 0; c < ATOM; c++) {
                        const int64_t v = px ? px[c] : p->pad;
                        if (p->average)
                            acc[c] += v;
                        else if (v > acc[c])
                            acc[c] = v;
                    }
                }
            }
            int8_t *o = out + ((size_t)oy * p->out_w + ox) * ATOM;
            for (int c = 0; c < ATOM; c++)
                o[c] = sat8(p->average ? rkt_shift_even(acc[c] * recip, 32) : acc[c]);
        }
    }
}

int rkt_ppu_execute(rkt_npu *n)
{
    struct ppu_task p;
    memset(&p, 0, sizeof(p));
    ppu_geometry(n, &p);
    ppu_window(n, &p);
    ppu_memory(n, &p);
    if (n->bad)
        return -EINVAL;
    int rc = ppu_extent(n, &p);
    if (rc)
        return rc;
    const int planes = p.ch / ATOM;
    const uint64_t row = (uint64_t)p.in_w * ATOM, cube = (uint64_t)p.out_w * p.out_h * ATOM;
    const uint64_t in_len = (uint64_t)(planes - 1) * p.surf + (uint64_t)(p.in_h - 1) * p.line + row;
    const uint64_t out_len = (uint64_t)(planes - 1) * p.dst_surf + cube;
    const uint8_t *in = rkt_mem(n, RKT_DMA_EXTENT, "pool input (PPU_RDMA_SRC_BASE_ADDR)", p.src, in_len);
    uint8_t *out = rkt_mem(n, RKT_DMA_EXTENT, "pool output (PPU_DST_BASE_ADDR)", p.dst, out_len);
    if (!in || !out)
        return -EINVAL;
    /* the PPU_RDMA reads each row of each surface once; the PPU writes each output surface in one burst */
    for (int s = 0; s < planes; s++) {
        for (int r = 0; r < p.in_h; r++)
            rkt_mem(n, RKT_DMA_FEATURE, "pool input row (PPU_RDMA_SRC_BASE_ADDR)",
                    p.src + (uint32_t)((uint64_t)s * p.surf + (uint64_t)r * p.line), row);
        rkt_mem(n, RKT_DMA_WRITE, "pool output surface (PPU_DST_BASE_ADDR)", p.dst + (uint32_t)((uint64_t)s * p.dst_surf),
                cube);
    }
    if (n->bad)
        return -EINVAL;
    if (rkt_check_all_consumed(n))
        return -EINVAL;
    for (int s = 0; s < planes; s++)
        pool_surface(&p, (const int8_t *)(in + (size_t)s * p.surf), (int8_t *)(out + (size_t)s * p.dst_surf));
    return 0;
}
