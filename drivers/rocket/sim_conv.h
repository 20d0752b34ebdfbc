/* The simulated CNA -> CORE -> DPU datapath of one rocket task.
 *
 * sim_npu.c decodes and validates the register file and hands over plain, already-checked
 * geometry plus host pointers into BO memory (every byte range below has been bounds-checked
 * against a single BO by the caller). Nothing here knows about TFLite or I/O bindings: the
 * datapath only sees what the hardware would see.
 *
 * Numeric convention: features and weights are the stored int8 bytes; the CORE accumulates
 * sum(x * w) in int32, CLIP_TRUNCATE pre-shifts it, the DPU BS stage adds the bias table and the
 * OW term (BS_OW_OP x window sum of the stored inputs), OUT_CVT requantizes to int8.
 * See docs/hardware/rocket-sim.md for the source of every step.
 */
#ifndef TEFLON_SIM_CONV_H
#define TEFLON_SIM_CONV_H

#include <stddef.h>
#include <stdint.h>

/* What determines the weight layout in the CBUF (tasks sharing weights must agree on it). */
struct sim_conv_geom {
    int depthwise;      /* CONV_MODE 3: one kernel per channel */
    int ic;             /* DATAIN_CHANNEL: programmed channels, multiple of 16 */
    int kw, kh;         /* WEIGHT_WIDTH / WEIGHT_HEIGHT */
    int kernels;        /* WEIGHT_KERNELS */
};

struct sim_conv_task {
    struct sim_conv_geom g;
    int in_w, in_h;           /* CNA DATAIN_WIDTH / DATAIN_HEIGHT (this task) */
    int ic_real;              /* DATAIN_CHANNEL_REAL + 1: channels >= this read as 0 */

    /* CNA input fetch */
    int argb;                 /* single-channel raw uint8 rows converted by the CNA CVT */
    int dma_w;                /* raw path: columns fetched per row (DMA_WIDTH); the rest up to
                                 in_w read as padding */
    const uint8_t *in;        /* FEATURE_DATA_ADDR */
    size_t in_row_pitch;      /* bytes between rows */
    size_t in_plane_pitch;    /* bytes between 16-channel planes (normal path) */
    int cvt_offset;           /* ARGB: (u + offset) * scale >> shift, saturated to int8 */
    int cvt_scale;
    int cvt_shift;
    int pad_value;            /* stored int8 value of padded taps (real channels) */

    int sx, sy;               /* CONV_X_STRIDE / CONV_Y_STRIDE */
    int pad_left, pad_top;
    int out_w, out_h;         /* task output cube */

    /* CORE */
    int clip_truncate;

    /* DPU */
    int oc;                   /* programmed channels (CHANNEL + 1) */
    int oc_real;              /* ORIG_CHANNEL + 1: channels written */
    const uint8_t *bias;      /* oc_real little-endian int32 (DPU_RDMA BS_BASE_ADDR) */
    int ow_op;                /* BS_OW_OP, int16 */
    int32_t out_offset;
    uint32_t out_scale;
    int out_shift;
    uint8_t *out;             /* DST_BASE_ADDR */
    size_t out_surf_pitch;    /* DST_SURF_STRIDE in bytes */
    size_t out_group_pitch;   /* SURFACE_ADD in bytes: between groups of group_channels */
    int group_channels;       /* 32 direct, 64 depthwise */
};

typedef struct sim_conv sim_conv;

sim_conv *sim_conv_create(void);
void sim_conv_destroy(sim_conv *c);

/* Load the packed weight bytes (Mesa/RK3588 CBUF weight layout) into the simulated CBUF. */
int sim_conv_load_weights(sim_conv *c, const struct sim_conv_geom *g, const int8_t *packed,
                          char *err, size_t errlen);

/* Run one task with the weights currently loaded (their geometry must match t->g). */
int sim_conv_run(sim_conv *c, const struct sim_conv_task *t, char *err, size_t errlen);

#endif
