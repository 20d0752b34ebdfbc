/* TP (tensor processing) jobs: one 31-word descriptor per TP core (etnaviv.md §5).
 *
 * Model (docs/hardware/etnaviv-sim.md "TP"): the engine walks the input window plane by plane (z, with the
 * z over-fetch planes before/after), tile row by tile row, tile by tile, and inside a tile row by row.
 * Every element goes through the ALU (uint8 - in_zp -> optional PWL lookup -> scale -> + out_zp -> uint8)
 * and is written to out_base + sum(loop_k index * loop_k inc), where the seven out loops form one counter
 * cascade: loop 0 advances per element, loop k+1 when loop k wraps at its count; a count of 0 means the
 * extent of the current tile (the first such loop: tile width; the second: tile height); loop 6 never
 * wraps. [INFERRED: consistent with every TP configuration Mesa emits.] With the vendor's max pooling
 * (horizontal/vertical processing 3) each tile is first reduced to the maxima of its windows and the pooled tile
 * is what the ALU and the out loops see (docs/hardware/etnaviv-maxpool.md, [INFERRED]).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etna_sim_priv.h"
#include "etna_tp_desc.h"

#define ETNA_TP_WORDS 31

/* X(field, number of word slices, signed) for every field of the TP table. */
#define ETNA_TP_FIELDS(X) \
    X(IN_IMAGE_X_SIZE, 1, 0) X(IN_IMAGE_Y_SIZE, 1, 0) X(IN_IMAGE_Z_SIZE, 1, 0) X(IN_IMAGE_STRIDE, 1, 0) \
    X(IN_IMAGE_SLICE, 1, 0) X(IN_WINDOW_X_START, 1, 1) X(IN_WINDOW_Y_START, 1, 1) X(IN_WINDOW_X_END, 1, 1) \
    X(IN_WINDOW_Y_END, 1, 1) X(IN_TILE_SEQUENCE, 1, 0) X(IN_TILE_GLOBAL_MEM, 1, 0) X(IN_IMAGE_GLOBAL_MEM, 1, 0) \
    X(ALU_I2F_ENABLE, 1, 0) X(ALU_SQUARE_ENABLE, 1, 0) X(ALU_HORZ_PROCESSING, 1, 0) \
    X(ALU_HORZ_PROC_COUNT, 1, 0) X(ALU_HORZ_PROC_STRIDE, 1, 0) X(ALU_VERT_PROCESSING, 1, 0) \
    X(ALU_VERT_PROC_COUNT, 1, 0) X(ALU_VERT_PROC_STRIDE, 1, 0) X(ALU_NMS_ENABLE, 1, 0) X(ALU_PWL_ENABLE, 1, 0) \
    X(ALU_MULT_ENABLE, 1, 0) X(ALU_F2I_ENABLE, 1, 0) X(ALU_LOAD_PWL_LUT, 1, 0) \
    X(ALU_LOAD_PWL_LUT_GLOBAL_MEM, 1, 0) X(IN_TILE_LIST_ADDRESS, 1, 0) X(IN_TILE_X_SIZE, 1, 0) \
    X(IN_TILE_Y_SIZE, 1, 0) X(IN_TILE_X_INC, 1, 0) X(IN_TILE_Y_INC, 1, 0) X(IN_IMAGE_BASE_ADDRESS, 1, 0) \
    X(ALU_LOAD_PWL_LUT_ADDRESS, 1, 0) X(OUT_TILE_SKIP_AT_BORDER, 1, 0) X(OUT_IMAGE_GLOBAL_MEM, 1, 0) \
    X(OUT_LOOP_1_RESET, 1, 0) X(OUT_LOOP_2_RESET, 1, 0) X(OUT_LOOP_3_RESET, 1, 0) X(OUT_BRICK_MODE, 1, 0) \
    X(ALU_Z_FILTER_MODE, 1, 0) X(IN_WINDOW_Z_START_OVERFETCH, 1, 0) X(IN_WINDOW_Z_END_OVERFETCH, 1, 0) \
    X(ALU_SQUARE_PRESHIFT, 1, 0) X(IN_IMAGE_DATA_TYPE, 1, 0) X(OUT_IMAGE_DATA_TYPE, 1, 0) \
    X(ALU_PWL_SIGN_SUPPORT, 1, 0) X(ALU_RELU_ENABLE, 1, 0) X(NO_FLUSH, 1, 0) X(LAST, 1, 0) \
    X(OUT_IMAGE_BASE_ADDRESS, 1, 0) X(OUT_LOOP_0_INC, 1, 0) X(OUT_LOOP_1_INC, 1, 0) X(OUT_LOOP_0_COUNT, 1, 0) \
    X(OUT_LOOP_1_COUNT, 1, 0) X(OUT_LOOP_2_INC, 1, 0) X(OUT_LOOP_3_INC, 1, 0) X(OUT_LOOP_2_COUNT, 1, 0) \
    X(OUT_LOOP_3_COUNT, 1, 0) X(OUT_LOOP_4_INC, 1, 0) X(OUT_LOOP_5_INC, 1, 0) X(OUT_LOOP_4_COUNT, 1, 0) \
    X(OUT_LOOP_5_COUNT, 1, 0) X(OUT_LOOP_6_INC, 1, 0) X(ALU_FILTER_PWL_SWAP, 1, 0) X(FLAT_ROUNDING_MODE, 1, 0) \
    X(INTEGER_ROUNDING_MODE, 1, 0) X(ALU_INPUT_PRESHIFT, 1, 0) X(ALU_OUTPUT_POSTSHIFT, 2, 0) \
    X(ALU_REORDER_BITS_USED, 1, 0) X(ALU_REORDER_LOOP_2_MODE, 1, 0) X(IN_IMAGE_BORDER_MODE, 1, 0) \
    X(IN_IMAGE_CIRCULAR_BUF_SIZE, 1, 0) X(IN_IMAGE_CIRCULAR_BUF_END_ADDRESS_PLUS_1, 1, 0) \
    X(OUT_IMAGE_CIRCULAR_BUF_SIZE, 1, 0) X(OUT_IMAGE_CIRCULAR_BUF_END_ADDRESS_PLUS_1, 1, 0) \
    X(IN_IMAGE_BORDER_CONST, 1, 0) X(COEF_ZP, 1, 0) X(IN_ZP, 1, 0) X(OUT_ZP, 1, 0) \
    X(ALU_OUTPUT_POST_MULTIPLIER, 1, 0)

enum etna_tp_field {
#define ETNA_X(F, N, S) ETNA_TPF_##F,
    ETNA_TP_FIELDS(ETNA_X)
#undef ETNA_X
    ETNA_TPF_COUNT
};

static const struct etna_field etna_tp_table[ETNA_TPF_COUNT] = {
#define ETNA_X(F, N, S) ETNA_FIELD##N(ETNA_TP, F, S),
    ETNA_TP_FIELDS(ETNA_X)
#undef ETNA_X
};

#define ETNA_W(n) ETNA_TP_WORD##n##__DEFINED_MASK
static const uint32_t etna_tp_defined[ETNA_TP_WORDS] = {
    ETNA_W(0), ETNA_W(1), ETNA_W(2), ETNA_W(3), ETNA_W(4), ETNA_W(5), ETNA_W(6), ETNA_W(7), ETNA_W(8), ETNA_W(9),
    ETNA_W(10), ETNA_W(11), ETNA_W(12), ETNA_W(13), ETNA_W(14), ETNA_W(15), ETNA_W(16), ETNA_W(17), ETNA_W(18),
    ETNA_W(19), ETNA_W(20), ETNA_W(21), ETNA_W(22), ETNA_W(23), ETNA_W(24), ETNA_W(25), ETNA_W(26), ETNA_W(27),
    ETNA_W(28), ETNA_W(29), ETNA_W(30),
};
#undef ETNA_W

/* The bounded fields' ranges (the table's `bounds`, which the compiler's program check applies too). */
#define ETNA_BND(P, F) [ETNA_TPF_##F] = { 1, P##_##F##__MIN, P##_##F##__MAX },
static const struct etna_bounds etna_tp_bounds[ETNA_TPF_COUNT] = { ETNA_TP__BOUNDED(ETNA_BND, ETNA_TP) };
#undef ETNA_BND

/* Fields whose only modelled value is fixed (the defaults Mesa writes; etnaviv.md §5.2). Others are
 * features (SRAM tiles, squaring, NMS, bricks, circular buffers, other data types, the ALU ReLU bit) the
 * simulator does not implement, so another value is refused. The horizontal/vertical processing fields are
 * checked below: off, or the vendor's max pooling (docs/hardware/etnaviv-maxpool.md). */
static const struct { enum etna_tp_field f; int64_t v; } etna_tp_fixed[] = {
    { ETNA_TPF_IN_TILE_SEQUENCE, 0 }, { ETNA_TPF_IN_TILE_GLOBAL_MEM, 0 }, { ETNA_TPF_IN_IMAGE_GLOBAL_MEM, 1 },
    { ETNA_TPF_ALU_I2F_ENABLE, 1 }, { ETNA_TPF_ALU_SQUARE_ENABLE, 0 }, { ETNA_TPF_ALU_NMS_ENABLE, 0 },
    { ETNA_TPF_ALU_MULT_ENABLE, 0 }, { ETNA_TPF_ALU_F2I_ENABLE, 1 }, { ETNA_TPF_IN_TILE_LIST_ADDRESS, 0 },
    { ETNA_TPF_OUT_TILE_SKIP_AT_BORDER, 0 }, { ETNA_TPF_OUT_IMAGE_GLOBAL_MEM, 1 }, { ETNA_TPF_OUT_BRICK_MODE, 0 },
    { ETNA_TPF_ALU_Z_FILTER_MODE, 0 }, { ETNA_TPF_ALU_SQUARE_PRESHIFT, 0 }, { ETNA_TPF_IN_IMAGE_DATA_TYPE, 0 },
    { ETNA_TPF_OUT_IMAGE_DATA_TYPE, 0 }, { ETNA_TPF_ALU_RELU_ENABLE, 0 }, { ETNA_TPF_LAST, 1 },
    { ETNA_TPF_ALU_FILTER_PWL_SWAP, 0 }, { ETNA_TPF_FLAT_ROUNDING_MODE, 1 }, { ETNA_TPF_INTEGER_ROUNDING_MODE, 1 },
    { ETNA_TPF_ALU_INPUT_PRESHIFT, 0 }, { ETNA_TPF_ALU_REORDER_BITS_USED, 0 },
    { ETNA_TPF_ALU_REORDER_LOOP_2_MODE, 0 }, { ETNA_TPF_IN_IMAGE_BORDER_MODE, 0 },
    { ETNA_TPF_IN_IMAGE_CIRCULAR_BUF_SIZE, 0 }, { ETNA_TPF_IN_IMAGE_CIRCULAR_BUF_END_ADDRESS_PLUS_1, 0x3FFFFFF },
    { ETNA_TPF_OUT_IMAGE_CIRCULAR_BUF_SIZE, 0 }, { ETNA_TPF_OUT_IMAGE_CIRCULAR_BUF_END_ADDRESS_PLUS_1, 0x3FFFFFF },
    { ETNA_TPF_COEF_ZP, 0 },
};

/* fp21 (sign bit 20, 5-bit exponent bias 15 in bits 15..19, 15-bit mantissa) -> double (etnaviv.md §5.7). */
static double etna_fp21_to_double(uint32_t b)
{
    unsigned e = (b >> 15) & 0x1F, m = b & 0x7FFF;
    double v;
    if (e == 0)
        v = ldexp((double)m, -14 - 15);
    else if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = ldexp(32768.0 + m, (int)e - 15 - 15);
    return (b >> 20) & 1 ? -v : v;
}

/* An integer |v| < 65536 as fp21 (exact: 16 significant bits at most... 15 stored + the implicit one). */
static uint32_t etna_int_to_fp21(int32_t v)
{
    uint32_t sign = v < 0 ? 1u << 20 : 0;
    uint32_t a = (uint32_t)(v < 0 ? -v : v);
    if (a == 0)
        return sign;
    int msb = 31 - __builtin_clz(a);                    /* a = 2^msb * (1 + f) */
    uint32_t mant = msb >= 15 ? (a >> (msb - 15)) & 0x7FFF : (a << (15 - msb)) & 0x7FFF;
    return sign | (uint32_t)(msb + 15) << 15 | mant;
}

/* The piecewise-linear function: the top 10 bits of the fp21 input (sign, exponent, 4 mantissa bits)
 * select an entry, the low 11 mantissa bits interpolate linearly towards the next entry of the same
 * half. [INFERRED: etnaviv.md §5.7 gives the index; the interpolation is this simulator's choice.] */
static double etna_pwl(const double *lut, int32_t v)
{
    uint32_t b = etna_int_to_fp21(v);
    unsigned i = b >> 11, frac = b & 0x7FF;
    double y0 = lut[i];
    if (frac == 0 || (i & 511) == 511)
        return y0;
    return y0 + (lut[i + 1] - y0) * (double)frac / 2048.0;
}

struct etna_tp_out {
    etna_sim *sim;
    const struct etna_bo *bo;   /* BO of the output base (writes are bounds-checked against it) */
};

/* One step of the out-loop counter cascade from loop k0: loop k advances, and wraps into loop k + 1 at its count
 * (loop 6 never wraps); *off = sum of digit[k] * inc[k] (mod 2^32) follows the digits. */
static void etna_tp_advance(int64_t *digit, const int64_t *count, const uint32_t *inc, int k0, uint32_t *off)
{
    for (int k = k0; k < 7; k++) {
        *off += inc[k];
        if (++digit[k] < (k < 6 ? count[k] : INT64_MAX))
            break;
        *off -= (uint32_t)digit[k] * inc[k];
        digit[k] = 0;
    }
}

int etna_tp_run(etna_sim *sim, uint32_t desc_iova, int *is_last_core)
{
    const uint32_t *w = (const uint32_t *)etna_mem_span(sim, desc_iova, ETNA_TP_WORDS * 4);
    if (!w || desc_iova % 64)
        return etna_fail(sim, "TP descriptor at 0x%08x: not inside a BO (or not 64-byte aligned)", desc_iova);
    for (unsigned i = 0; i < ETNA_TP_WORDS; i++)
        if (w[i] & ~etna_tp_defined[i])
            return etna_fail(sim, "TP descriptor 0x%08x word %u = 0x%08x sets undefined bits 0x%08x", desc_iova, i,
                             w[i], w[i] & ~etna_tp_defined[i]);
    int64_t f[ETNA_TPF_COUNT];
    for (unsigned i = 0; i < ETNA_TPF_COUNT; i++)
        f[i] = etna_field_get(w, &etna_tp_table[i]);
    for (unsigned i = 0; i < sizeof(etna_tp_fixed) / sizeof(etna_tp_fixed[0]); i++)
        if (f[etna_tp_fixed[i].f] != etna_tp_fixed[i].v)
            return etna_fail(sim, "TP descriptor 0x%08x: %s = %lld is not modelled (only %lld)", desc_iova,
                             etna_tp_table[etna_tp_fixed[i].f].name, (long long)f[etna_tp_fixed[i].f],
                             (long long)etna_tp_fixed[i].v);
    const int bad = etna_out_of_bounds(f, etna_tp_bounds, ETNA_TPF_COUNT);
    if (bad >= 0)
        return etna_fail(sim, "TP descriptor 0x%08x: %s = %lld outside %lld..%lld", desc_iova, etna_tp_table[bad].name,
                         (long long)f[bad], (long long)etna_tp_bounds[bad].min, (long long)etna_tp_bounds[bad].max);
    *is_last_core = f[ETNA_TPF_NO_FLUSH] == 0;

    const int pwl = (int)f[ETNA_TPF_ALU_PWL_ENABLE];
    if (f[ETNA_TPF_ALU_LOAD_PWL_LUT] != pwl || f[ETNA_TPF_ALU_LOAD_PWL_LUT_GLOBAL_MEM] != pwl ||
        f[ETNA_TPF_ALU_PWL_SIGN_SUPPORT] != pwl || (!pwl && f[ETNA_TPF_ALU_LOAD_PWL_LUT_ADDRESS] != 0))
        return etna_fail(sim, "TP descriptor 0x%08x: PWL fields (enable %d, load %lld, global %lld, sign %lld, "
                         "address 0x%llx) are not a modelled combination", desc_iova, pwl,
                         (long long)f[ETNA_TPF_ALU_LOAD_PWL_LUT], (long long)f[ETNA_TPF_ALU_LOAD_PWL_LUT_GLOBAL_MEM],
                         (long long)f[ETNA_TPF_ALU_PWL_SIGN_SUPPORT], (long long)f[ETNA_TPF_ALU_LOAD_PWL_LUT_ADDRESS]);

    const int64_t xs = f[ETNA_TPF_IN_IMAGE_X_SIZE], ys = f[ETNA_TPF_IN_IMAGE_Y_SIZE], zs = f[ETNA_TPF_IN_IMAGE_Z_SIZE];
    const int64_t stride = f[ETNA_TPF_IN_IMAGE_STRIDE], slice = f[ETNA_TPF_IN_IMAGE_SLICE];
    const int64_t wx0 = f[ETNA_TPF_IN_WINDOW_X_START], wy0 = f[ETNA_TPF_IN_WINDOW_Y_START];
    const int64_t wx1 = f[ETNA_TPF_IN_WINDOW_X_END], wy1 = f[ETNA_TPF_IN_WINDOW_Y_END];
    const int64_t tw = f[ETNA_TPF_IN_TILE_X_SIZE], th = f[ETNA_TPF_IN_TILE_Y_SIZE];
    if (wx1 < wx0 || wy1 < wy0)
        return etna_fail(sim, "TP descriptor 0x%08x: empty input window", desc_iova);
    if (stride < xs || slice < stride * ys)
        return etna_fail(sim, "TP descriptor 0x%08x: stride %lld / slice %lld smaller than the image rows/planes",
                         desc_iova, (long long)stride, (long long)slice);
    /* Horizontal / vertical processing: 0 = off, 3 = max over a window of count + 1 columns (rows) stepping by
     * stride + 1 inside each input tile [INFERRED from the vendor's 3x3 stride-2 max pool, which writes 3 / 2 / 1
     * to both triples; docs/hardware/etnaviv-maxpool.md]. Other modes are not characterised. */
    const int64_t hp = f[ETNA_TPF_ALU_HORZ_PROCESSING], vp = f[ETNA_TPF_ALU_VERT_PROCESSING];
    if (!((hp == 0 && vp == 0) || (hp == 3 && vp == 3)))
        return etna_fail(sim, "TP descriptor 0x%08x: horizontal/vertical processing %lld/%lld is not modelled "
                         "(0/0 off, 3/3 max pooling)", desc_iova, (long long)hp, (long long)vp);
    const int pool = hp == 3;
    if (!pool && (f[ETNA_TPF_ALU_HORZ_PROC_COUNT] || f[ETNA_TPF_ALU_HORZ_PROC_STRIDE] ||
                  f[ETNA_TPF_ALU_VERT_PROC_COUNT] || f[ETNA_TPF_ALU_VERT_PROC_STRIDE]))
        return etna_fail(sim, "TP descriptor 0x%08x: processing count/stride set with processing off", desc_iova);
    if (pool && pwl)
        return etna_fail(sim, "TP descriptor 0x%08x: max pooling with a PWL lookup is not modelled", desc_iova);
    const int64_t kx = pool ? f[ETNA_TPF_ALU_HORZ_PROC_COUNT] + 1 : 1, ky = pool ? f[ETNA_TPF_ALU_VERT_PROC_COUNT] + 1 : 1;
    const int64_t sx = pool ? f[ETNA_TPF_ALU_HORZ_PROC_STRIDE] + 1 : 1, sy = pool ? f[ETNA_TPF_ALU_VERT_PROC_STRIDE] + 1 : 1;
    /* Tiles advance by their own size; pooling tiles overlap by the window's excess over the step so every
     * window lies inside one tile [INFERRED: the vendor's pooling tiles are out_tile * stride + k - stride wide,
     * advanced by out_tile * stride]. */
    const int64_t incx = f[ETNA_TPF_IN_TILE_X_INC], incy = f[ETNA_TPF_IN_TILE_Y_INC];
    if (incx != tw - (kx - sx) || incy != th - (ky - sy) || incx < 1 || incy < 1)
        return etna_fail(sim, "TP descriptor 0x%08x: tile %lldx%lld with increments %lldx%lld: only tiles advanced by "
                         "their size less the pooling overlap (%lldx%lld) are modelled", desc_iova, (long long)tw,
                         (long long)th, (long long)incx, (long long)incy, (long long)(kx - sx), (long long)(ky - sy));

    /* Input image, range-checked once. */
    const uint32_t in_base = (uint32_t)f[ETNA_TPF_IN_IMAGE_BASE_ADDRESS];
    const uint64_t in_len = (uint64_t)(zs - 1) * slice + (uint64_t)(ys - 1) * stride + xs;
    const uint8_t *in = etna_mem_span(sim, in_base, in_len);
    if (!in)
        return etna_fail(sim, "TP descriptor 0x%08x: input image 0x%08x+%llu is not inside one BO", desc_iova, in_base,
                         (unsigned long long)in_len);

    double lut[1024];
    if (pwl) {
        uint32_t la = (uint32_t)f[ETNA_TPF_ALU_LOAD_PWL_LUT_ADDRESS];
        const uint32_t *l = (const uint32_t *)etna_mem_access(sim, ETNA_DMA_OTHER, la, 4096);
        if (!l)
            return etna_fail(sim, "TP descriptor 0x%08x: PWL LUT 0x%08x+4096 is not inside one BO", desc_iova, la);
        for (unsigned i = 0; i < 1024; i++) {
            if (l[i] >> 21)
                return etna_fail(sim, "PWL LUT 0x%08x entry %u = 0x%08x is not an fp21 value", la, i, l[i]);
            lut[i] = etna_fp21_to_double(l[i]);
        }
    }

    /* ALU output scale: (1 + multiplier / 2^15) / 2^postshift (etnaviv.md §4 "TP requant"). postshift is
     * 127 - exponent of the float scale, stored in 7 bits: LOGISTIC's scale 1/output_scale (256 for the usual
     * 1/256) gives -8, written 0x78, so the field is read as signed 7-bit [INFERRED: the only reading under
     * which Mesa's LOGISTIC jobs produce sigmoid values]. */
    const int64_t mult = f[ETNA_TPF_ALU_OUTPUT_POST_MULTIPLIER];
    const int64_t pshift7 = f[ETNA_TPF_ALU_OUTPUT_POSTSHIFT] & 0x7F;
    const int64_t pshift = pshift7 >= 64 ? pshift7 - 128 : pshift7;
    const double scale = ldexp(32768.0 + (double)mult, -15 - (int)pshift);
    const int identity = !pwl && mult == 0 && pshift == 0;
    const int32_t in_zp = (int32_t)f[ETNA_TPF_IN_ZP], out_zp = (int32_t)f[ETNA_TPF_OUT_ZP];
    /* The border enters the ALU as a value relative to the input zero point [INFERRED: 0 gives TFLite's
     * zero-point padding, which Mesa relies on for PAD and the reshuffle's SAME padding]. */
    const int32_t border = (int16_t)(uint16_t)f[ETNA_TPF_IN_IMAGE_BORDER_CONST];

    /* The output counter cascade. */
    int64_t count[6];
    const int64_t count_field[6] = { f[ETNA_TPF_OUT_LOOP_0_COUNT], f[ETNA_TPF_OUT_LOOP_1_COUNT],
                                     f[ETNA_TPF_OUT_LOOP_2_COUNT], f[ETNA_TPF_OUT_LOOP_3_COUNT],
                                     f[ETNA_TPF_OUT_LOOP_4_COUNT], f[ETNA_TPF_OUT_LOOP_5_COUNT] };
    const uint32_t inc[7] = { (uint32_t)f[ETNA_TPF_OUT_LOOP_0_INC], (uint32_t)f[ETNA_TPF_OUT_LOOP_1_INC],
                              (uint32_t)f[ETNA_TPF_OUT_LOOP_2_INC], (uint32_t)f[ETNA_TPF_OUT_LOOP_3_INC],
                              (uint32_t)f[ETNA_TPF_OUT_LOOP_4_INC], (uint32_t)f[ETNA_TPF_OUT_LOOP_5_INC],
                              (uint32_t)f[ETNA_TPF_OUT_LOOP_6_INC] };
    int autos[6], nauto = 0;
    for (int k = 0; k < 6; k++) {
        autos[k] = count_field[k] == 0 ? ++nauto : 0;
        if (nauto > 2)
            return etna_fail(sim, "TP descriptor 0x%08x: more than two out loops with count 0 are not modelled",
                             desc_iova);
    }
    int64_t digit[7] = { 0 };
    uint32_t off = 0; /* sum of digit[k] * inc[k] (mod 2^32), kept as the digits move */

    const uint32_t out_base = (uint32_t)f[ETNA_TPF_OUT_IMAGE_BASE_ADDRESS];
    const struct etna_bo *ob = etna_mem_bo(sim, out_base);
    if (!ob)
        return etna_fail(sim, "TP descriptor 0x%08x: output base 0x%08x is not inside a BO", desc_iova, out_base);

    const int64_t ww = wx1 - wx0 + 1, wh = wy1 - wy0 + 1;
    /* tiles start while they still hold input past the previous tile's overlap */
    const int64_t ntx = ww - (tw - incx) <= 0 ? 1 : (ww - (tw - incx) + incx - 1) / incx;
    const int64_t nty = wh - (th - incy) <= 0 ? 1 : (wh - (th - incy) + incy - 1) / incy;
    int32_t *tile = NULL;   /* one tile's ALU inputs (relative to in_zp), grown on demand */
    uint64_t tile_cap = 0;
    int rc = 0;
    const int64_t z0 = -f[ETNA_TPF_IN_WINDOW_Z_START_OVERFETCH], z1 = zs - 1 + f[ETNA_TPF_IN_WINDOW_Z_END_OVERFETCH];
    uint64_t written = 0;
    for (int64_t z = z0; z <= z1 && !rc; z++) {
        for (int64_t tyi = 0; tyi < nty && !rc; tyi++) {
            const int64_t cur_h = th < wh - tyi * incy ? th : wh - tyi * incy;
            for (int64_t txi = 0; txi < ntx && !rc; txi++) {
                const int64_t cur_w = tw < ww - txi * incx ? tw : ww - txi * incx;
                const int64_t x0 = wx0 + txi * incx;
                if (cur_w < kx || cur_h < ky) {
                    rc = etna_fail(sim, "TP descriptor 0x%08x: a %lldx%lld tile is smaller than the %lldx%lld pooling "
                                   "window", desc_iova, (long long)cur_w, (long long)cur_h, (long long)kx, (long long)ky);
                    break;
                }
                /* the emitted tile: the pooled grid (the tile itself without pooling) */
                const int64_t ow = (cur_w - kx) / sx + 1, oh = (cur_h - ky) / sy + 1;
                for (int64_t k = 0; k < 6; k++)
                    count[k] = autos[k] == 1 ? ow : autos[k] == 2 ? oh : count_field[k];
                if ((uint64_t)(cur_w * cur_h) > tile_cap) {
                    int32_t *grown = realloc(tile, (size_t)(cur_w * cur_h) * sizeof(int32_t));
                    if (!grown) {
                        rc = etna_fail(sim, "TP descriptor 0x%08x: out of memory for a %lldx%lld tile", desc_iova,
                                       (long long)cur_w, (long long)cur_h);
                        break;
                    }
                    tile = grown;
                    tile_cap = (uint64_t)(cur_w * cur_h);
                }
                for (int64_t ty = 0; ty < cur_h; ty++) {
                    const int64_t y = wy0 + tyi * incy + ty;
                    /* the input fetch: one burst per tile row, of its columns inside the image (inside the
                     * range checked above, so counted without looking the BO up again) */
                    const int64_t xa = x0 > 0 ? x0 : 0, xb = x0 + cur_w < xs ? x0 + cur_w : xs;
                    const uint8_t *row = NULL;
                    if (y >= 0 && y < ys && z >= 0 && z < zs && xb > xa) {
                        row = in + z * slice + y * stride + xa;
                        etna_mem_count(sim, ETNA_DMA_FEATURE, (uint64_t)(xb - xa));
                    }
                    for (int64_t tx = 0; tx < cur_w; tx++) {
                        const int64_t x = x0 + tx;
                        tile[ty * cur_w + tx] = row && x >= xa && x < xb ? (int32_t)row[x - xa] - in_zp : border;
                    }
                }
                for (int64_t e = 0; e < ow * oh; e++) { /* the emitted elements, row by row */
                    const int64_t oy = e / ow, ox = e % ow;
                    /* Copies without pooling emit the tile in its own order: the elements up to loop 0's wrap
                     * (or the tile's end) go to one arithmetic run of addresses; when the whole run lies inside
                     * the output BO, they are written in one loop (the same bytes, addresses and count as one at
                     * a time below) */
                    const int64_t nrun = ow * oh - e < count[0] - digit[0] ? ow * oh - e : count[0] - digit[0];
                    const uint64_t a0 = (uint32_t)(out_base + off);
                    const uint64_t alast = a0 + (uint64_t)(nrun - 1) * inc[0];
                    if (identity && !pool && nrun > 0 && alast <= UINT32_MAX && a0 >= ob->iova &&
                        alast < (uint64_t)ob->iova + ob->size) {
                        uint8_t *dst = ob->map + (a0 - ob->iova);
                        const int32_t *src = tile + e; /* without pooling the tile is ow x oh */
                        for (int64_t i = 0; i < nrun; i++) {
                            const int32_t o = src[i] + out_zp;
                            dst[(uint64_t)i * inc[0]] = (uint8_t)(o < 0 ? 0 : o > 255 ? 255 : o);
                        }
                        written += (uint64_t)nrun;
                        e += nrun - 1;
                        off += (uint32_t)nrun * inc[0];
                        digit[0] += nrun;
                        if (digit[0] >= count[0]) {
                            off -= (uint32_t)digit[0] * inc[0];
                            digit[0] = 0;
                            etna_tp_advance(digit, count, inc, 1, &off);
                        }
                        continue;
                    }
                    int32_t v = tile[oy * sy * cur_w + ox * sx];
                    for (int64_t dy = 0; dy < ky; dy++)
                        for (int64_t dx = 0; dx < kx; dx++) {
                            const int32_t u = tile[(oy * sy + dy) * cur_w + ox * sx + dx];
                            v = u > v ? u : v;
                        }
                    int64_t o;
                    if (identity) {
                        o = v + out_zp;
                    } else {
                        double r = (pwl ? etna_pwl(lut, v) : (double)v) * scale;
                        if (isnan(r)) {
                            rc = etna_fail(sim, "TP descriptor 0x%08x: PWL output is NaN", desc_iova);
                            break;
                        }
                        r = r >= 0 ? floor(r + 0.5) : -floor(-r + 0.5);
                        o = r > 1e9 ? 1000000000 : r < -1e9 ? -1000000000 : (int64_t)r;
                        o += out_zp;
                    }
                    o = o < 0 ? 0 : o > 255 ? 255 : o;
                    const uint32_t addr = out_base + off;
                    if (addr < ob->iova || (uint64_t)addr >= (uint64_t)ob->iova + ob->size) {
                        rc = etna_fail(sim, "TP descriptor 0x%08x: write to 0x%08x outside the output BO "
                                       "0x%08x+0x%llx (element x %lld y %lld z %lld)", desc_iova, addr, ob->iova,
                                       (unsigned long long)ob->size, (long long)(x0 + ox * sx),
                                       (long long)(wy0 + tyi * incy + oy * sy), (long long)z);
                        break;
                    }
                    ob->map[addr - ob->iova] = (uint8_t)o;
                    written++;
                    etna_tp_advance(digit, count, inc, 0, &off);
                }
            }
        }
    }
    free(tile);
    if (rc)
        return rc;
    sim->stats.tp_elements += written;
    /* each element is a one-byte write through the output BO checked above (scattered by the out loops, so
     * counted here rather than as bursts) */
    sim->stats.data_wr += written;
    return 0;
}
