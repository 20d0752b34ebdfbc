/* Feature maps as the registers describe them: four tiles (BASE0..3 split at WIDTH0 and HEIGHT0/HEIGHT1),
 * NHWC or NHCWB16, 8/16/32-bit elements (docs/hardware/ethosu-sim.md, "Feature maps"). */
#include <errno.h>
#include <string.h>

#include "ethosu_npu_priv.h"

struct ethosu_npu_fm_regs {
    unsigned region, base0, h0, h1, w0, sx, sy, sc, zp, prec;
};

static const struct ethosu_npu_fm_regs ethosu_npu_fm_regs[3] = {
    {ETHOSU_IFM_REGION, ETHOSU_IFM_BASE0, ETHOSU_IFM_HEIGHT0_M1, ETHOSU_IFM_HEIGHT1_M1, ETHOSU_IFM_WIDTH0_M1,
     ETHOSU_IFM_STRIDE_X, ETHOSU_IFM_STRIDE_Y, ETHOSU_IFM_STRIDE_C, ETHOSU_IFM_ZERO_POINT, ETHOSU_IFM_PRECISION},
    {ETHOSU_IFM2_REGION, ETHOSU_IFM2_BASE0, ETHOSU_IFM2_HEIGHT0_M1, ETHOSU_IFM2_HEIGHT1_M1, ETHOSU_IFM2_WIDTH0_M1,
     ETHOSU_IFM2_STRIDE_X, ETHOSU_IFM2_STRIDE_Y, ETHOSU_IFM2_STRIDE_C, ETHOSU_IFM2_ZERO_POINT, ETHOSU_IFM2_PRECISION},
    {ETHOSU_OFM_REGION, ETHOSU_OFM_BASE0, ETHOSU_OFM_HEIGHT0_M1, ETHOSU_OFM_HEIGHT1_M1, ETHOSU_OFM_WIDTH0_M1,
     ETHOSU_OFM_STRIDE_X, ETHOSU_OFM_STRIDE_Y, ETHOSU_OFM_STRIDE_C, ETHOSU_OFM_ZERO_POINT, ETHOSU_OFM_PRECISION},
};

static const char *const ethosu_npu_fm_names[3] = {"IFM", "IFM2", "OFM"};

/* Tile of (y, x) and the coordinates inside it: tile 1 is right of WIDTH0, its height split at HEIGHT1; tile 0
 * is split at HEIGHT0 into tiles 0 and 2 (the tile model of Vela's register_command_stream_util.get_address
 * and of Linux ethosu_gem.c feat_matrix_length). */
static inline int ethosu_npu_tile(const struct ethosu_npu_fm *fm, int *y, int *x)
{
    if (*x >= fm->width0) {
        *x -= fm->width0;
        if (*y >= fm->height1) {
            *y -= fm->height1;
            return 3;
        }
        return 1;
    }
    if (*y >= fm->height0) {
        *y -= fm->height0;
        return 2;
    }
    return 0;
}

uint64_t ethosu_npu_fm_offset(const struct ethosu_npu_fm *fm, int y, int x, int c)
{
    int t = ethosu_npu_tile(fm, &y, &x);
    uint64_t off = fm->base[t] + (uint64_t)y * fm->sy;
    if (fm->brick)
        return off + (uint64_t)x * 16 * (unsigned)fm->bytes + ethosu_npu_fm_choff(fm, c);
    return off + (uint64_t)x * fm->sx + ethosu_npu_fm_choff(fm, c);
}

int32_t ethosu_npu_fm_read(const struct ethosu_npu_fm *fm, int y, int x, int c)
{
    return ethosu_npu_fm_get(fm, fm->mem + ethosu_npu_fm_offset(fm, y, x, c));
}

void ethosu_npu_fm_write(const struct ethosu_npu_fm *fm, int y, int x, int c, int32_t v)
{
    ethosu_npu_fm_put(fm, fm->mem + ethosu_npu_fm_offset(fm, y, x, c), v);
}

/* Every tile the extent uses must lie inside the region: offsets grow with y, x and c, so the last element
 * of each tile bounds it. */
static int ethosu_npu_fm_check(struct ethosu_npu *npu, int which, const struct ethosu_npu_fm *fm)
{
    int ys[2] = {fm->h < fm->height0 ? fm->h : fm->height0, fm->h};
    int ys1[2] = {fm->h < fm->height1 ? fm->h : fm->height1, fm->h};
    for (int t = 0; t < 4; t++) {
        int x = (t & 1) ? fm->w - 1 : (fm->w < fm->width0 ? fm->w : fm->width0) - 1;
        int y = (t & 1) ? ((t & 2) ? ys1[1] : ys1[0]) - 1 : ((t & 2) ? ys[1] : ys[0]) - 1;
        if ((t & 1) && fm->w <= fm->width0)
            continue;
        if ((t == 2 && fm->h <= fm->height0) || (t == 3 && fm->h <= fm->height1))
            continue;
        if (x < 0 || y < 0)
            continue;
        uint64_t end = ethosu_npu_fm_offset(fm, y, x, fm->c - 1) + (unsigned)fm->bytes;
        if (fm->base[t] >= end || end > fm->memsize)
            return ethosu_npu_fail(npu, -EFAULT, "%s tile %d: bytes 0x%llx..0x%llx outside region %d (%llu bytes)",
                                   ethosu_npu_fm_names[which], t, (unsigned long long)fm->base[t],
                                   (unsigned long long)end, fm->region, (unsigned long long)fm->memsize);
    }
    return 0;
}

int ethosu_npu_fm_load(struct ethosu_npu *npu, int which, int h, int w, int c, struct ethosu_npu_fm *fm)
{
    const struct ethosu_npu_fm_regs *r = &ethosu_npu_fm_regs[which];
    uint16_t region, h0, h1, w0, zp, prec;
    uint64_t sx, sy, sc;
    int rc;
    memset(fm, 0, sizeof(*fm));
    if ((rc = ethosu_npu_get0(npu, r->region, &region)) || (rc = ethosu_npu_get0(npu, r->h0, &h0)) ||
        (rc = ethosu_npu_get0(npu, r->h1, &h1)) || (rc = ethosu_npu_get0(npu, r->w0, &w0)) ||
        (rc = ethosu_npu_get0(npu, r->zp, &zp)) || (rc = ethosu_npu_get0(npu, r->prec, &prec)) ||
        (rc = ethosu_npu_get1(npu, r->sx, &sx)) || (rc = ethosu_npu_get1(npu, r->sy, &sy)) ||
        (rc = ethosu_npu_get1(npu, r->sc, &sc)))
        return rc;
    for (int t = 0; t < 4; t++)
        if ((rc = ethosu_npu_get1(npu, r->base0 + (unsigned)t, &fm->base[t])))
            return rc;
    unsigned bits = which == 2 ? ETHOSU_OFM_PREC_BITS(prec) : ETHOSU_IFM_PREC_BITS(prec);
    unsigned format = ETHOSU_PREC_FORMAT(prec);
    if (bits > 2)
        return ethosu_npu_fail(npu, -EINVAL, "%s precision %u (64-bit) is not defined for the U65",
                               ethosu_npu_fm_names[which], bits);
    if (format > 1)
        return ethosu_npu_fail(npu, -EINVAL, "%s format %u undefined", ethosu_npu_fm_names[which], format);
    fm->region = region;
    fm->bytes = 1 << bits;
    fm->is_signed = ETHOSU_PREC_TYPE(prec);
    fm->brick = format == 1;
    fm->zero_point = fm->is_signed ? (int32_t)(int16_t)zp : (int32_t)zp;
    fm->height0 = h0 + 1;
    fm->height1 = h1 + 1;
    fm->width0 = w0 + 1;
    fm->sx = sx;
    fm->sy = sy;
    fm->sc = sc;
    fm->h = h;
    fm->w = w;
    fm->c = c;
    const struct ethosu_npu_region *reg = &npu->regions[region];
    if (!reg->base)
        return ethosu_npu_fail(npu, -EFAULT, "%s region %u has no memory", ethosu_npu_fm_names[which], region);
    fm->mem = reg->base;
    fm->memsize = reg->size;
    return ethosu_npu_fm_check(npu, which, fm);
}
