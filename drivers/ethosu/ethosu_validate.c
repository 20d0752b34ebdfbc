/* The accel/ethosu command-stream validator (ethosu_validate.h). Written from the behaviour of Linux
 * drivers/accel/ethosu/ethosu_gem.c (ethosu_gem_cmdstream_copy_and_validate and its helpers), restated rule by rule
 * in docs/hardware/ethosu-kernel.md "Validator"; the opcode numbers are the U65 command set's (ethosu_regs_u65.h).
 * The rules are the kernel's, including where they are loose (an IFM read is bounded
 * by the element at the last kernel tap, not by every byte; NHWC addresses add the channel index unscaled): a stream
 * the kernel accepts must be accepted here, and one it refuses refused.
 *
 * State never programmed reads as all ones, as in the kernel (it fills its state with 0xff before the walk), so an
 * operation whose stride, base, region or length was never set is refused.
 */
#include "ethosu_validate.h"

#include <errno.h>
#include <string.h>

#include "../errmsg.h"
#include "ethosu_regs_u65.h"

/* The U65 command set (ethosu_regs_u65.h, generated from teflon.ethosu.regs): cmd0 opcodes as they are, cmd1
 * opcodes with bit 14 set (the kernel and this walk key on the low 16 bits of the first word). */
#define CMD1 0x4000u
#define OP_CONV ETHOSU_U65_NPU_OP_CONV
#define OP_DEPTHWISE ETHOSU_U65_NPU_OP_DEPTHWISE
#define OP_POOL ETHOSU_U65_NPU_OP_POOL
#define OP_ELEMENTWISE ETHOSU_U65_NPU_OP_ELEMENTWISE
#define OP_DMA_START ETHOSU_U65_NPU_OP_DMA_START
#define SET_IFM_PAD_TOP ETHOSU_U65_NPU_SET_IFM_PAD_TOP
#define SET_IFM_PAD_LEFT ETHOSU_U65_NPU_SET_IFM_PAD_LEFT
#define SET_IFM_PAD_RIGHT ETHOSU_U65_NPU_SET_IFM_PAD_RIGHT
#define SET_IFM_PAD_BOTTOM ETHOSU_U65_NPU_SET_IFM_PAD_BOTTOM
#define SET_IFM_DEPTH_M1 ETHOSU_U65_NPU_SET_IFM_DEPTH_M1
#define SET_IFM_PRECISION ETHOSU_U65_NPU_SET_IFM_PRECISION
#define SET_IFM_BROADCAST 0x108 /* a U85 register (NPU_SET_IFM_BROADCAST); the kernel tracks it on both */
#define SET_IFM_WIDTH0_M1 ETHOSU_U65_NPU_SET_IFM_WIDTH0_M1
#define SET_IFM_HEIGHT0_M1 ETHOSU_U65_NPU_SET_IFM_HEIGHT0_M1
#define SET_IFM_HEIGHT1_M1 ETHOSU_U65_NPU_SET_IFM_HEIGHT1_M1
#define SET_IFM_REGION ETHOSU_U65_NPU_SET_IFM_REGION
#define SET_OFM_WIDTH_M1 ETHOSU_U65_NPU_SET_OFM_WIDTH_M1
#define SET_OFM_HEIGHT_M1 ETHOSU_U65_NPU_SET_OFM_HEIGHT_M1
#define SET_OFM_DEPTH_M1 ETHOSU_U65_NPU_SET_OFM_DEPTH_M1
#define SET_OFM_PRECISION ETHOSU_U65_NPU_SET_OFM_PRECISION
#define SET_OFM_WIDTH0_M1 ETHOSU_U65_NPU_SET_OFM_WIDTH0_M1
#define SET_OFM_HEIGHT0_M1 ETHOSU_U65_NPU_SET_OFM_HEIGHT0_M1
#define SET_OFM_HEIGHT1_M1 ETHOSU_U65_NPU_SET_OFM_HEIGHT1_M1
#define SET_OFM_REGION ETHOSU_U65_NPU_SET_OFM_REGION
#define SET_KERNEL_WIDTH_M1 ETHOSU_U65_NPU_SET_KERNEL_WIDTH_M1
#define SET_KERNEL_HEIGHT_M1 ETHOSU_U65_NPU_SET_KERNEL_HEIGHT_M1
#define SET_KERNEL_STRIDE ETHOSU_U65_NPU_SET_KERNEL_STRIDE
#define SET_WEIGHT_REGION ETHOSU_U65_NPU_SET_WEIGHT_REGION
#define SET_SCALE_REGION ETHOSU_U65_NPU_SET_SCALE_REGION
#define SET_DMA0_SRC_REGION ETHOSU_U65_NPU_SET_DMA0_SRC_REGION
#define SET_DMA0_DST_REGION ETHOSU_U65_NPU_SET_DMA0_DST_REGION
#define SET_DMA0_SIZE0 ETHOSU_U65_NPU_SET_DMA0_SIZE0
#define SET_DMA0_SIZE1 ETHOSU_U65_NPU_SET_DMA0_SIZE1
#define SET_IFM2_BROADCAST ETHOSU_U65_NPU_SET_IFM2_BROADCAST
#define SET_IFM2_PRECISION ETHOSU_U65_NPU_SET_IFM2_PRECISION
#define SET_IFM2_WIDTH0_M1 ETHOSU_U65_NPU_SET_IFM2_WIDTH0_M1
#define SET_IFM2_HEIGHT0_M1 ETHOSU_U65_NPU_SET_IFM2_HEIGHT0_M1
#define SET_IFM2_HEIGHT1_M1 ETHOSU_U65_NPU_SET_IFM2_HEIGHT1_M1
#define SET_IFM2_REGION ETHOSU_U65_NPU_SET_IFM2_REGION
#define IFM2_BROADCAST_SCALAR                                                                                      \
    (ETHOSU_U65_NPU_SET_IFM2_BROADCAST__broadcast_scalar__MASK << ETHOSU_U65_NPU_SET_IFM2_BROADCAST__broadcast_scalar__SHIFT)
#define SET_IFM_BASE0 (CMD1 | ETHOSU_U65_NPU_SET_IFM_BASE0)
#define SET_IFM_STRIDE_C (CMD1 | ETHOSU_U65_NPU_SET_IFM_STRIDE_C)
#define SET_OFM_BASE0 (CMD1 | ETHOSU_U65_NPU_SET_OFM_BASE0)
#define SET_OFM_STRIDE_C (CMD1 | ETHOSU_U65_NPU_SET_OFM_STRIDE_C)
#define SET_IFM2_BASE0 (CMD1 | ETHOSU_U65_NPU_SET_IFM2_BASE0)
#define SET_IFM2_STRIDE_C (CMD1 | ETHOSU_U65_NPU_SET_IFM2_STRIDE_C)
#define SET_WEIGHT_BASE (CMD1 | ETHOSU_U65_NPU_SET_WEIGHT_BASE)
#define SET_WEIGHT_LENGTH (CMD1 | ETHOSU_U65_NPU_SET_WEIGHT_LENGTH)
#define SET_SCALE_BASE (CMD1 | ETHOSU_U65_NPU_SET_SCALE_BASE)
#define SET_SCALE_LENGTH (CMD1 | ETHOSU_U65_NPU_SET_SCALE_LENGTH)
#define SET_DMA0_SRC (CMD1 | ETHOSU_U65_NPU_SET_DMA0_SRC)
#define SET_DMA0_DST (CMD1 | ETHOSU_U65_NPU_SET_DMA0_DST)
#define SET_DMA0_LEN (CMD1 | ETHOSU_U65_NPU_SET_DMA0_LEN)
#define SET_DMA0_SRC_STRIDE0 (CMD1 | ETHOSU_U65_NPU_SET_DMA0_SKIP0) /* the kernel's DMA0_SRC_STRIDE0 */
#define SET_DMA0_SRC_STRIDE1 (CMD1 | ETHOSU_U65_NPU_SET_DMA0_SKIP1)
#define SET_DMA0_DST_STRIDE0 (CMD1 | 0x035) /* U85 registers; the kernel tracks them on both */
#define SET_DMA0_DST_STRIDE1 (CMD1 | 0x036)

#define UNSET64 UINT64_MAX
#define UNSET16 0xffffu
#define NO_REGION (-1)

/* An IFM, IFM2 or OFM as far as the extent goes: tile bases, strides, geometry (the _M1 values as written). */
struct ethosu_vfm {
    uint64_t base[4];
    uint64_t stride_x, stride_y, stride_c;
    int region;
    uint32_t broadcast, precision, depth, width, width0, height[3];
    /* IFM only: the kernel keeps the kernel size (width, height[2]), stride and padding with the IFM */
    uint32_t stride_kernel, pad_top, pad_left, pad_bottom, pad_right;
};

struct ethosu_vbuf {
    int region;
    uint64_t base, length;
};

struct ethosu_vdma {
    int src_region, dst_region, mode;
    uint32_t size0, size1;
    uint64_t src, dst, len;
    uint64_t src_stride[2], dst_stride[2];
};

struct ethosu_vstate {
    struct ethosu_vfm ifm, ifm2, ofm;
    struct ethosu_vbuf weight, scale;
    struct ethosu_vdma dma;
};

static void ethosu_vfm_init(struct ethosu_vfm *f)
{
    for (int i = 0; i < 4; i++)
        f->base[i] = UNSET64;
    f->stride_x = f->stride_y = f->stride_c = UNSET64;
    f->region = NO_REGION;
    f->broadcast = 0xff;
    f->precision = f->depth = f->width = f->width0 = UNSET16;
    f->height[0] = f->height[1] = f->height[2] = UNSET16;
    f->stride_kernel = UNSET16;
    f->pad_top = f->pad_left = f->pad_bottom = f->pad_right = 0xff;
}

static void ethosu_vstate_init(struct ethosu_vstate *s)
{
    ethosu_vfm_init(&s->ifm);
    ethosu_vfm_init(&s->ifm2);
    ethosu_vfm_init(&s->ofm);
    s->weight = s->scale = (struct ethosu_vbuf){NO_REGION, UNSET64, UNSET64};
    s->dma = (struct ethosu_vdma){.src_region = NO_REGION, .dst_region = NO_REGION, .mode = -1, .size0 = UNSET16,
                                  .size1 = UNSET16, .src = UNSET64, .dst = UNSET64, .len = UNSET64,
                                  .src_stride = {UNSET64, UNSET64}, .dst_stride = {UNSET64, UNSET64}};
}

static void ethosu_grow(struct ethosu_cmd_info *info, int region, uint64_t end)
{
    if (end > info->region_size[region])
        info->region_size[region] = end;
}

/* The tile of element (x, y) and its coordinates inside the tile, by the storage mode in precision bits 14..15
 * (0: four tiles split at width0 / height0 / height1; 1: three tiles stacked at height0 and height1). */
static int ethosu_tile(const struct ethosu_vfm *f, uint32_t *x, uint32_t *y)
{
    int tile = 0;
    switch (f->precision >> 14) {
    case 0:
        if (*x >= f->width0 + 1) {
            *x -= f->width0 + 1;
            tile = 1;
        }
        if (*y >= f->height[tile] + 1) {
            *y -= f->height[tile] + 1;
            tile += 2;
        }
        break;
    case 1:
        if (*y >= f->height[1] + 1) {
            *y -= f->height[1] + 1;
            tile = 2;
        } else if (*y >= f->height[0] + 1) {
            *y -= f->height[0] + 1;
            tile = 1;
        }
        break;
    default:
        break;
    }
    return tile;
}

/* Records the byte of element (x, y, c) of f as touched; -EINVAL when f's region or that tile's base is unset. */
static int ethosu_fm_touch(struct ethosu_cmd_info *info, const struct ethosu_vfm *f, uint32_t x, uint32_t y,
                           uint32_t c)
{
    if (f->region < 0 || f->region >= ETHOSU_MAX_REGIONS)
        return -EINVAL;
    const int tile = ethosu_tile(f, &x, &y);
    if (f->base[tile] == UNSET64)
        return -EINVAL;
    uint64_t addr = f->base[tile] + (uint64_t)y * f->stride_y;
    switch ((f->precision >> 6) & 0x3) { /* format */
    case 0:                              /* NHWC */
        addr += (uint64_t)x * f->stride_x + c;
        break;
    case 1: { /* NHCWB16: bricks of 16 channels; element size from precision bits 1..2 */
        const uint64_t elem = 1ull << ((f->precision >> 1) & 0x3);
        addr += (uint64_t)(c / 16) * f->stride_c + (16ull * x + (c & 0xf)) * elem;
        break;
    }
    default:
        break;
    }
    ethosu_grow(info, f->region, addr + 1);
    return 0;
}

static int ethosu_buf_touch(struct ethosu_cmd_info *info, const struct ethosu_vbuf *b)
{
    if (b->region < 0 || b->region >= ETHOSU_MAX_REGIONS || b->base == UNSET64 || b->length == UINT32_MAX ||
        b->length == UNSET64)
        return -EINVAL;
    ethosu_grow(info, b->region, b->base + b->length);
    return 0;
}

/* The IFM element at the last kernel tap of the last OFM element (stride and padding as the kernel reads them). */
static int ethosu_ifm_touch(struct ethosu_cmd_info *info, const struct ethosu_vstate *s)
{
    const uint32_t sk = s->ifm.stride_kernel;
    if (sk == UNSET16)
        return -EINVAL;
    const uint32_t stride_y = ((sk >> 8) & 0x2) + ((sk >> 1) & 0x1) + 1; /* bits 9 (msb) and 1 (lsb) */
    const uint32_t stride_x = ((sk >> 5) & 0x2) + (sk & 0x1) + 1;        /* bits 6 (msb) and 0 (lsb) */
    /* padding larger than the extent it pads goes negative: refused (Linux 838ae99f9a77's series, "Handle possible
     * underflow in IFM size calculations") */
    const int32_t h = (int32_t)(s->ofm.height[2] * stride_y + s->ifm.height[2] - (s->ifm.pad_top + s->ifm.pad_bottom));
    const int32_t w = (int32_t)(s->ofm.width * stride_x + s->ifm.width - (s->ifm.pad_left + s->ifm.pad_right));
    if (h < 0 || w < 0)
        return -EINVAL;
    return ethosu_fm_touch(info, &s->ifm, (uint32_t)w, (uint32_t)h, s->ifm.depth);
}

static int ethosu_ofm_touch(struct ethosu_cmd_info *info, const struct ethosu_vstate *s)
{
    const int rc = ethosu_fm_touch(info, &s->ofm, s->ofm.width, s->ofm.height[2], s->ofm.depth);
    if (!rc)
        info->output_region[s->ofm.region] = 1;
    return rc;
}

/* CONV, DEPTHWISE, POOL: the IFM (unless the op reads none), IFM2 (weights from IFM2), weights, scales, the OFM. */
static int ethosu_kernel_op(struct ethosu_cmd_info *info, const struct ethosu_vstate *s, int ifm, int ifm2,
                            int weight, int scale, const char **what)
{
    if (ifm && ethosu_ifm_touch(info, s))
        return *what = "IFM", -EINVAL;
    if (ifm2 && ethosu_fm_touch(info, &s->ifm2, s->ifm.depth, 0, s->ofm.depth))
        return *what = "IFM2", -EINVAL;
    if (weight && ethosu_buf_touch(info, &s->weight))
        return *what = "weight stream", -EINVAL;
    if (scale && ethosu_buf_touch(info, &s->scale))
        return *what = "scale stream", -EINVAL;
    if (ethosu_ofm_touch(info, s))
        return *what = "OFM", -EINVAL;
    return 0;
}

/* ELEMENTWISE: each operand over the OFM's extent, collapsed on its broadcast axes (bit 0 height, 1 width,
 * 2 depth). */
static int ethosu_elementwise_op(struct ethosu_cmd_info *info, const struct ethosu_vstate *s, int use_ifm,
                                 int use_ifm2, const char **what)
{
    const struct ethosu_vfm *ops[2] = {&s->ifm, &s->ifm2};
    const int use[2] = {use_ifm, use_ifm2};
    for (int i = 0; i < 2; i++) {
        if (!use[i])
            continue;
        const uint32_t b = ops[i]->broadcast;
        if (ethosu_fm_touch(info, ops[i], b & 2 ? 0 : s->ofm.width, b & 1 ? 0 : s->ofm.height[2],
                            b & 4 ? 0 : s->ofm.depth))
            return *what = i ? "IFM2" : "IFM", -EINVAL;
    }
    if (ethosu_ofm_touch(info, s))
        return *what = "OFM", -EINVAL;
    return 0;
}

/* DMA_START: length (mode 1: size0 rows, mode 2: size1 planes of them, each adding its stride) from each end. */
static int ethosu_dma_op(struct ethosu_cmd_info *info, const struct ethosu_vdma *d, const char **what)
{
    for (int end = 0; end < 2; end++) {
        const int region = end ? d->dst_region : d->src_region;
        const uint64_t offset = end ? d->dst : d->src, *stride = end ? d->dst_stride : d->src_stride;
        if (region < 0)
            continue; /* the NPU's internal memory */
        if (d->len == UNSET64 || offset == UNSET64 || (d->mode >= 1 && (stride[0] == UNSET64 || d->size0 == UNSET16)) ||
            (d->mode == 2 && (stride[1] == UNSET64 || d->size1 == UNSET16)))
            return *what = end ? "DMA destination" : "DMA source", -EINVAL;
        uint64_t len = d->len;
        if (d->mode >= 1)
            len = (len + stride[0]) * d->size0;
        if (d->mode == 2)
            len = (len + stride[1]) * d->size1;
        ethosu_grow(info, region, len + offset);
        if (end)
            info->output_region[region] = 1;
    }
    return 0;
}

/* A 40-bit address / length / stride: the payload word, param bits 0..7 above it. */
static uint64_t ethosu_addr(uint32_t w0, uint32_t w1)
{
    return (uint64_t)((w0 >> 16) & 0xff) << 32 | w1;
}

/* A DMA stride: the 40-bit value sign-extended. */
static uint64_t ethosu_stride40(uint64_t a)
{
    return (uint64_t)((int64_t)(a << 24) >> 24);
}

/* cmd0 settings: 1 when `op` was one. */
static int ethosu_set0(struct ethosu_vstate *s, uint32_t op, uint32_t p)
{
    struct ethosu_vfm *ifm = &s->ifm, *ofm = &s->ofm, *ifm2 = &s->ifm2;
    switch (op) {
    case SET_KERNEL_WIDTH_M1: ifm->width = p; break;
    case SET_KERNEL_HEIGHT_M1: ifm->height[2] = p; break;
    case SET_KERNEL_STRIDE: ifm->stride_kernel = p; break;
    case SET_IFM_PAD_TOP: ifm->pad_top = p & 0x7f; break;
    case SET_IFM_PAD_LEFT: ifm->pad_left = p & 0x7f; break;
    case SET_IFM_PAD_RIGHT: ifm->pad_right = p & 0xff; break;
    case SET_IFM_PAD_BOTTOM: ifm->pad_bottom = p & 0xff; break;
    case SET_IFM_DEPTH_M1: ifm->depth = p; break;
    case SET_IFM_PRECISION: ifm->precision = p; break;
    case SET_IFM_BROADCAST: ifm->broadcast = p; break;
    case SET_IFM_REGION: ifm->region = (int)(p & 0x7); break; /* Linux 00f547e0dfec: & 0x7 as the others */
    case SET_IFM_WIDTH0_M1: ifm->width0 = p; break;
    case SET_IFM_HEIGHT0_M1: ifm->height[0] = p; break;
    case SET_IFM_HEIGHT1_M1: ifm->height[1] = p; break;
    case SET_OFM_WIDTH_M1: ofm->width = p; break;
    case SET_OFM_HEIGHT_M1: ofm->height[2] = p; break;
    case SET_OFM_DEPTH_M1: ofm->depth = p; break;
    case SET_OFM_PRECISION: ofm->precision = p; break;
    case SET_OFM_REGION: ofm->region = (int)(p & 0x7); break;
    case SET_OFM_WIDTH0_M1: ofm->width0 = p; break;
    case SET_OFM_HEIGHT0_M1: ofm->height[0] = p; break;
    case SET_OFM_HEIGHT1_M1: ofm->height[1] = p; break;
    case SET_IFM2_BROADCAST: ifm2->broadcast = p; break;
    case SET_IFM2_PRECISION: ifm2->precision = p; break;
    case SET_IFM2_REGION: ifm2->region = (int)(p & 0x7); break;
    case SET_IFM2_WIDTH0_M1: ifm2->width0 = p; break;
    case SET_IFM2_HEIGHT0_M1: ifm2->height[0] = p; break;
    case SET_IFM2_HEIGHT1_M1: ifm2->height[1] = p; break;
    case SET_WEIGHT_REGION: s->weight.region = (int)(p & 0x7); break;
    case SET_SCALE_REGION: s->scale.region = (int)(p & 0x7); break;
    case SET_DMA0_SRC_REGION: /* bit 8: internal memory; bits 9..10: stride mode */
        s->dma.src_region = p & 0x100 ? NO_REGION : (int)(p & 0x7);
        s->dma.mode = (int)((p >> 9) & 0x3);
        break;
    case SET_DMA0_DST_REGION: s->dma.dst_region = p & 0x100 ? NO_REGION : (int)(p & 0x7); break;
    case SET_DMA0_SIZE0: s->dma.size0 = p; break;
    case SET_DMA0_SIZE1: s->dma.size1 = p; break;
    default: return 0;
    }
    return 1;
}

/* cmd1 settings (a = the 40-bit value, w1 = the payload word alone). */
static void ethosu_set1(struct ethosu_vstate *s, uint32_t op, uint64_t a, uint32_t w1)
{
    struct ethosu_vfm *fm = NULL;
    uint32_t reg = op;
    if (op >= SET_IFM_BASE0 && op <= SET_IFM_STRIDE_C)
        fm = &s->ifm, reg -= SET_IFM_BASE0;
    else if (op >= SET_OFM_BASE0 && op <= SET_OFM_STRIDE_C)
        fm = &s->ofm, reg -= SET_OFM_BASE0;
    else if (op >= SET_IFM2_BASE0 && op <= SET_IFM2_STRIDE_C)
        fm = &s->ifm2, reg -= SET_IFM2_BASE0;
    if (fm) { /* BASE0..3, STRIDE_X, _Y, _C in that order */
        if (reg < 4)
            fm->base[reg] = a;
        else
            *(reg == 4 ? &fm->stride_x : reg == 5 ? &fm->stride_y : &fm->stride_c) = a;
        return;
    }
    switch (op) {
    case SET_WEIGHT_BASE: s->weight.base = a; break;
    case SET_WEIGHT_LENGTH: s->weight.length = w1; break;
    case SET_SCALE_BASE: s->scale.base = a; break;
    case SET_SCALE_LENGTH: s->scale.length = w1; break;
    case SET_DMA0_SRC: s->dma.src = a; break;
    case SET_DMA0_DST: s->dma.dst = a; break;
    case SET_DMA0_LEN: s->dma.len = a; break;
    case SET_DMA0_SRC_STRIDE0: s->dma.src_stride[0] = ethosu_stride40(a); break;
    case SET_DMA0_SRC_STRIDE1: s->dma.src_stride[1] = ethosu_stride40(a); break;
    case SET_DMA0_DST_STRIDE0: s->dma.dst_stride[0] = ethosu_stride40(a); break;
    case SET_DMA0_DST_STRIDE1: s->dma.dst_stride[1] = ethosu_stride40(a); break;
    default: break; /* the second weight/scale streams and every other register: not bounded by the kernel */
    }
}

/* An operation: -EINVAL with *what naming the operand whose state is incomplete. */
static int ethosu_op(struct ethosu_cmd_info *info, const struct ethosu_vstate *s, uint32_t op, uint32_t p,
                     const char **what)
{
    const int scale = !(s->ofm.precision & 0x100); /* OFM precision bit 8: no scaling, so no scale stream */
    switch (op) {
    case OP_CONV:
    case OP_DEPTHWISE: /* param bit 0: weights from IFM2 instead of a weight stream */
        return ethosu_kernel_op(info, s, 1, p & 1, !(p & 1), scale, what);
    case OP_POOL: /* pooling mode 4 reads no IFM */
        return ethosu_kernel_op(info, s, p != 4, 0, 0, scale, what);
    case OP_ELEMENTWISE: { /* unary modes (5, 6, 7, 0x24) and a scalar IFM2 read no IFM2; on the U65 a scalar IFM2
                            * is IFM2_BROADCAST bit 7 (Linux 838ae99f9a77; the U85's encoding, value 8, is not this
                            * command set's) */
        const int scalar = (s->ifm2.broadcast & IFM2_BROADCAST_SCALAR) != 0;
        const int ifm2 = !(scalar || p == 5 || p == 6 || p == 7 || p == 0x24);
        return ethosu_elementwise_op(info, s, s->ifm.broadcast != 8, ifm2, what);
    }
    case OP_DMA_START:
        return ethosu_dma_op(info, &s->dma, what);
    default:
        return 0; /* STOP, IRQ, waits, PMU mask: no memory */
    }
}

int ethosu_validate(const uint32_t *words, size_t nwords, struct ethosu_cmd_info *info, char *err, size_t errlen)
{
    memset(info, 0, sizeof(*info));
    info->cmd_bytes = (uint32_t)(nwords * 4);
    struct ethosu_vstate s;
    ethosu_vstate_init(&s);
    for (size_t i = 0; i < nwords; i++) {
        const uint32_t w0 = words[i], op = w0 & 0xffff, p = w0 >> 16;
        if (op & CMD1) {
            if (i + 1 >= nwords) {
                teflon_errf(err, errlen, "word %zu (0x%08x): a cmd1 without its payload word at the end of the stream",
                            i, w0);
                return -EINVAL;
            }
            const uint32_t w1 = words[++i];
            ethosu_set1(&s, op, ethosu_addr(w0, w1), w1);
            continue;
        }
        if (ethosu_set0(&s, op, p))
            continue;
        const char *what = "";
        if (ethosu_op(info, &s, op, p, &what)) {
            teflon_errf(err, errlen, "word %zu: operation 0x%03x with its %s never fully set (region, base, stride or "
                        "length unset, or padding wider than the extent)", i, op, what);
            return -EINVAL;
        }
    }
    return 0;
}
