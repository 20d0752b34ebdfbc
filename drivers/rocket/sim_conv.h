/* The simulated CNA -> CORE -> DPU datapath of one rocket task.
 *
 * sim_npu.c decodes and validates the register file and hands over plain, already-checked
 * geometry plus host pointers into BO memory (every byte range below has been bounds-checked
 * against a single BO by the caller). Nothing here knows about TFLite or I/O bindings: the
 * datapath only sees what the hardware would see.
 *
 * Numeric convention: features and weights are the stored int8 bytes; the CORE accumulates
 * sum(x * w) in int32 plus the OW term (a factor x the window sum of the stored inputs), CLIP_TRUNCATE
 * pre-shifts it, the DPU BS stage adds the bias, optionally multiplies by a per-channel factor and
 * shifts (RK3576; RK3588 per-channel BS MUL), optionally clamps (ReLU), OUT_CVT requantizes to int8. Sources: docs/hardware/rocket-sim.md (RK3588) and
 * docs/hardware/rocket-rk3576-sim.md.
 */
#ifndef TEFLON_SIM_CONV_H
#define TEFLON_SIM_CONV_H

#include <stddef.h>
#include <stdint.h>

/* What determines the weight layout in the CBUF (tasks sharing weights must agree on it). */
struct rkt_conv_geom {
    int depthwise;      /* one kernel per channel */
    int ic;             /* programmed input channels, multiple of 16 */
    int kw, kh;         /* kernel width / height */
    int kernels;        /* direct: kernels in memory (depthwise: 1) */
    int dw_byte_pairs;  /* depthwise weights stored as byte pairs that add up (RK3576), not single bytes */
};

struct rkt_lut_stage;

struct rkt_conv_task {
    struct rkt_conv_geom g;
    int in_w, in_h;           /* CNA DATAIN_WIDTH / DATAIN_HEIGHT (this task) */
    int ic_real;              /* DATAIN_CHANNEL_REAL + 1: channels >= this read as 0 */

    /* CNA input fetch */
    int argb;                 /* single-channel raw uint8 rows converted by the CNA CVT */
    int dma_w;                /* raw path: columns fetched per row (DMA_WIDTH); the rest up to
                                 in_w read as padding */
    const uint8_t *in;        /* first input row: device memory (RK3588) or the CBUF window (RK3576) */
    size_t in_row_pitch;      /* bytes between rows */
    size_t in_plane_pitch;    /* bytes between 16-channel planes (normal path) */
    int cvt_offset;           /* ARGB: (u + offset) * scale >> shift, saturated to int8 */
    int cvt_scale;
    int cvt_shift;
    int pad_value;            /* stored int8 value of padded taps (real channels) */
    int pad_value_lane1;      /* depthwise: the pad of the odd channels among the first 32 of each 64-channel
                               * group (RK3588 reads them from PAD_CON1 byte 1); pad_value elsewhere */

    int sx, sy;               /* CONV_X_STRIDE / CONV_Y_STRIDE */
    int pad_left, pad_top;
    int out_w, out_h;         /* task output cube */

    /* CORE */
    int clip_truncate;

    /* DPU, per output channel k < oc_real; the caller decodes the tables the hardware reads (RK3588
     * bias table, RK3576 coefficient table) into these host arrays */
    int oc;                   /* programmed channels (CHANNEL + 1) */
    int oc_real;              /* channels computed and written */
    const int32_t *bias;      /* added after CLIP_TRUNCATE (RK3588 bias table, RK3576 coefficient A) */
    int ow_op;                /* factor of the window sum of stored inputs, all channels (RK3588 BS_OW_OP) */
    const int16_t *ow;        /* per-channel factor instead of ow_op (RK3576 coefficient B), or NULL */
    const int16_t *bs_mul;    /* per-channel multiplier after the bias (RK3576 coefficient C), or NULL */
    int bs_shift_pos;         /* right shift of the multiplied value, bias-added value >= 0 / < 0 */
    int bs_shift_neg;
    int clamp;                /* DPU clamp after the multiplier (RK3588 BS ReLU / ReLUX): v = min(max(v, lo), hi) */
    int32_t clamp_lo, clamp_hi;
    int32_t out_offset;
    uint32_t out_scale;
    int out_shift;
    const struct rkt_lut_stage *lut; /* the EW stage's lookup table before OUT_CVT (RK3576, sim_dot.h), or NULL */
    uint8_t *out;             /* DST_BASE_ADDR */
    size_t out_surf_pitch;    /* DST_SURF_STRIDE in bytes */
    size_t out_group_pitch;   /* SURFACE_ADD in bytes: between groups of group_channels */
    int group_channels;       /* 32 direct, 64 depthwise */

    /* DPU EW stage (a fused element-wise add), or ew == NULL: after BS, before OUT_CVT (NVDLA SDP order
     * BS -> BN -> EW -> OUT_CVT), the value becomes sat32(v + ((e + ew_offset) * ew_scale >> ew_shift)) with
     * e the stored int8 operand of output (y, x, channel k) at
     * ew + (k / 16) * ew_surf_pitch + y * ew_row_pitch + x * 16 + k % 16 (read by DPU_RDMA's ERDMA). */
    const uint8_t *ew;
    size_t ew_row_pitch;
    size_t ew_surf_pitch;
    int32_t ew_offset;        /* EW_CVT_OFFSET */
    int ew_scale;             /* signed 16-bit converter multiplier */
    int ew_shift;             /* its right shift, rounding ties to even (ew_tie_up: half up) */
    int ew_tie_up;            /* TEFLON_SIM_RULES ew_tie=half_up (board-facts.md fact 2) */
    int ew_mul;               /* 0: the EW stage adds; else it multiplies under that TEFLON_EW_MUL_* hypothesis */
    int ew_trunc;             /* EW_TRUNCATE: the product's right shift (multiply only) */
};

typedef struct rkt_conv rkt_conv;

struct rkt_dot_ops;

/* A datapath running the fast kernels `ops` (sim_dot.h), or only the reference datapath (NULL). Both give
 * the same bytes; the reference stays as the plain statement of what the hardware computes. */
rkt_conv *rkt_conv_create(const struct rkt_dot_ops *ops);
void rkt_conv_destroy(rkt_conv *c);

/* Load the packed weight bytes into the simulated CBUF. Layouts: direct (both SoCs) - kernel groups of
 * 32, input-channel groups of 32 (a trailing group of 16 stays 16 wide), taps row-major, kernel, channel;
 * depthwise - channel groups of 64, taps, channel, one byte per channel (RK3588) or two signed bytes per
 * channel that add up to the weight, interleaved by channel pairs (g->dw_byte_pairs, RK3576: channel i's at
 * 4 (i / 2) + i % 2 and two further on). */
int rkt_conv_load_weights(rkt_conv *c, const struct rkt_conv_geom *g, const int8_t *packed,
                          char *err, size_t errlen);

/* Run one task with the weights currently loaded (their geometry must match t->g). */
int rkt_conv_run(rkt_conv *c, const struct rkt_conv_task *t, char *err, size_t errlen);

#endif
