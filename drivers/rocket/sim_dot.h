/* The fast simulated datapath's integer kernels, one implementation per instruction set behind one table
 * (docs/hardware/rocket-sim.md "Fast datapath").
 *
 * sim_conv.c gathers a task's input and weights from device memory into the layouts below and calls
 * these kernels for the CORE accumulators and the DPU stages after them; the kernels see no registers and
 * no device memory, only those buffers. Every kernel computes exactly what the reference datapath computes:
 * integer sums without overflow, then the bit-exact requantization (rkt_requantize).
 *
 * Layouts:
 * - input: the task's padded window as bytes x + 128 (uint8), [row][column][channel], `ic` channels per
 *   pixel; the +128 lets unsigned x signed byte dot products (VNNI) run on signed features;
 * - direct weights: blocks of RKT_DOT_KB kernels, [ky][kx][channel / 4][kernel][channel % 4] int8;
 * - depthwise weights: [ky][kx][channel] int16 with the OW factor folded in;
 * - accumulators: int32 [pixel][channel], the MAC sums of x + 128.
 */
#ifndef TEFLON_SIM_DOT_H
#define TEFLON_SIM_DOT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "../sim_rules.h"

#define RKT_DOT_KB 32 /* kernels per direct weight block: the hardware's kernel group */
#define RKT_DOT_P 8   /* output pixels per direct kernel call (rows are padded to a multiple) */

/* The DPU stages after the accumulators of one task, per output channel k < n (arrays hold `n` rounded up
 * to 16 entries, zero beyond n):
 * core = acc + corr[k] + ow[k] * S (S: window sum of x + 128 of the pixel, 0 for depthwise),
 * CLIP_TRUNCATE -> + bias -> (BS multiplier and shift) -> clamp [lo, hi] -> OUT_CVT -> int8. */
/* The DPU EW stage's lookup table (RK3576; [R76-USR] gregordinary/rocket-userspace 33643e4, measured on an RK3576:
 * docs/hardware/rocket-rk3576.md "The LUT on RK3576"): v < le_start reads uflow, v >= lo_end oflow; otherwise table
 * 0 at (v - le_start) >> sel for v < 0, table 1 at v >> sel; v = 0 belongs to both measured ranges (table 0 covers
 * [le_start, 0], table 1 [0, lo_end)), so it is simulated only when the two agree there (`join_ok`: table 0's last
 * entry loaded and equal to table 1's first, as in every vendor load). Only values on an entry the task `serial` loaded are
 * simulated (interpolation between entries needs a rounding rule no public source gives): any other value counts a
 * fault in *faults (atomic: the datapath may run on two threads) and reads 0; the caller then refuses the task. */
struct rkt_lut_stage {
    int32_t le_start, lo_end;
    int sel, entries;
    int16_t uflow, oflow;
    const int16_t *table[2];
    const uint32_t *loaded[2]; /* per entry: the serial of the task that loaded it (sim_npu_priv.h) */
    uint32_t serial;           /* the load task whose entries may be read: the one just before the consumer */
    int join_ok;               /* v = 0 reads the same value from both tables (see above) */
    atomic_uint *faults;
};

static inline int64_t rkt_lut_apply(const struct rkt_lut_stage *l, int64_t v)
{
    if (v < l->le_start)
        return l->uflow;
    if (v >= l->lo_end)
        return l->oflow;
    if (v == 0 && !l->join_ok) {
        atomic_fetch_add_explicit(l->faults, 1u, memory_order_relaxed);
        return 0;
    }
    const int tb = v >= 0;
    const int64_t pos = tb ? v : v - l->le_start;
    const int64_t idx = pos >> l->sel;
    if ((pos & (((int64_t)1 << l->sel) - 1)) || idx >= l->entries || l->loaded[tb][idx] != l->serial) {
        atomic_fetch_add_explicit(l->faults, 1u, memory_order_relaxed);
        return 0;
    }
    return l->table[tb][idx];
}

struct rkt_requant {
    int n;
    const int64_t *corr;
    const int32_t *corr32;   /* corr + the CLIP_TRUNCATE rounding as int32 when the task's bound shows that
                                acc + corr32 + ow * S and (that >> trunc) + bias never leave int32, else NULL */
    const int32_t *ow;
    const int32_t *bias;
    const int32_t *mul;      /* NULL: no BS multiplier (RK3588) */
    int trunc, shift, mul_shift_pos, mul_shift_neg;
    int64_t tround, pre, post, scale;
    int64_t offset;          /* OUT_CVT_OFFSET itself (pre and post hold it as rkt_requantize takes it) */
    int64_t vmax;            /* with corr32: no value after the bias add exceeds vmax in magnitude */
    int64_t mul_max;         /* the largest |mul[k]| (0 without a multiplier) */
    int64_t lo, hi;          /* the clamp after the multiplier (INT32_MIN, INT32_MAX: none) */
    /* the EW operand of the row being requantized (NULL: EW bypassed): the stored int8 operand of pixel p,
     * channel k at ew_row[(k / 16) * ew_surf_pitch + p * 16 + k % 16], converted by rkt_ew_convert. Only the
     * portable and the AVX-512 requantizations read it. */
    const uint8_t *ew_row;
    size_t ew_surf_pitch;
    int64_t ew_offset, ew_scale;
    int ew_shift;
    int ew_tie_up;           /* the converter rounds ties up (TEFLON_SIM_RULES ew_tie=half_up) */
    int ew_mul, ew_trunc;    /* the EW stage multiplies (a TEFLON_EW_MUL_* hypothesis, 0: adds), EW_TRUNCATE */
    const struct rkt_lut_stage *lut; /* the EW stage's LUT, or NULL (only the portable requantization has it) */
};

static inline int64_t rkt_min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static inline int64_t rkt_max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* floor((x + rnd + q0) / 2^s), q0 the parity of floor(x / 2^s), for s >= 1: with rnd = 2^(s-1) - 1 the ties-to-even
 * rounding of x / 2^s (rkt_shift_even); a caller may fold a multiple of 2^s into rnd (OUT_CVT's offset), which
 * leaves the parity, taken from x alone, unchanged. */
static inline int64_t rkt_round_shift(int64_t x, int64_t rnd, int s)
{
    return (x + rnd + ((x >> s) & 1)) >> s;
}

/* x / 2^s rounded to nearest with ties to even, x itself for s = 0: OUT_CVT's shift with CVT_ROUND 0 and the BS
 * multiplier's shift, both measured on RK3588 and RK3576 by a third party (docs/hardware/rocket.md "OUT_CVT's tie
 * rule"). Written as floor((x + 2^(s-1) - 1 + q0) / 2^s), q0 the parity of floor(x / 2^s): the SIMD datapaths
 * use the same form. |x| < 2^62. */
static inline int64_t rkt_shift_even(int64_t x, int s)
{
    return s ? rkt_round_shift(x, ((int64_t)1 << (s - 1)) - 1, s) : x;
}

/* DPU EW: a stored int8 operand converted, (e + offset) * scale >> shift with the shift rounding ties to even
 * [INFERRED: as OUT_CVT and the BS multiplier, the converters that were measured]. |e + offset| < 2^32 and
 * |scale| <= 2^15 keep the product inside int64. */
static inline int64_t rkt_ew_convert(int8_t e, int64_t offset, int64_t scale, int shift, int tie_up)
{
    const int64_t v = ((int64_t)e + offset) * scale;
    /* TEFLON_SIM_RULES ew_tie=half_up: the other hypothesis of board-facts.md fact 2 */
    return tie_up && shift ? (v + ((int64_t)1 << (shift - 1))) >> shift : rkt_shift_even(v, shift);
}

/* The converted EW operand of pixel p, channel k of the row `q` describes; 0 with the EW stage bypassed. */
static inline int64_t rkt_ew_term(const struct rkt_requant *q, int p, int k)
{
    if (!q->ew_row)
        return 0;
    const int8_t e = (int8_t)q->ew_row[(size_t)(k / 16) * q->ew_surf_pitch + (size_t)p * 16 + (size_t)(k % 16)];
    return rkt_ew_convert(e, q->ew_offset, q->ew_scale, q->ew_shift, q->ew_tie_up);
}

static inline int64_t rkt_sat32(int64_t v)
{
    return rkt_max64(rkt_min64(v, INT32_MAX), INT32_MIN);
}

/* x / 2^t rounding half up (t >= 0). */
static inline int64_t rkt_shift_up(int64_t x, int t)
{
    return t ? (x + ((int64_t)1 << (t - 1))) >> t : x;
}

/* The EW stage's multiply of the main value v by the converted operand e, then EW_TRUNCATE t, under the hypothesis
 * `rule` of board-facts.md fact 1 (sim_rules.h TEFLON_EW_MUL_*; the offset of NO_OFFSET is dropped by the caller).
 * None is measured: each is a hypothesis the doctor's experiment tells apart from the others. */
static inline int64_t rkt_ew_mul(int64_t v, int64_t e, int rule, int t)
{
    const int64_t p = v * rkt_sat32(e); /* |v|, |e| <= 2^31: inside int64 */
    switch (rule) {
    case TEFLON_EW_MUL_WIDE_EVEN:
        return rkt_sat32(rkt_shift_even(p, t));
    case TEFLON_EW_MUL_SAT32:
        return rkt_shift_up(rkt_sat32(p), t);
    case TEFLON_EW_MUL_WRAP32:
        return rkt_shift_up((int32_t)(uint32_t)(uint64_t)p, t);
    default: /* TEFLON_EW_MUL_WIDE, TEFLON_EW_MUL_NO_OFFSET */
        return rkt_sat32(rkt_shift_up(p, t));
    }
}

/* CLIP_TRUNCATE -> DPU BS bias -> BS multiplier -> BS clamp -> EW -> OUT_CVT of one channel's CORE value (MAC
 * sum + OW term), shared by the reference and the fast datapath (NVDLA SDP order: the BS stage's ReLU before the
 * EW stage). `lo`/`hi`: the clamp (INT32_MIN/INT32_MAX when off). `ew`: the converted element-wise operand (0 when
 * the EW stage is bypassed), added with 32-bit saturation [INFERRED, as the other DPU stages]. The BS multiplier: the
 * bias-added value times the channel's multiplier, held wide, shifted right by the shift selected by the
 * product's sign, rounding ties to even, saturated to 32 bits (measured by a third party on both SoCs:
 * docs/hardware/rocket.md "Per-channel weights").
 * OUT_CVT: (v * scale) >> shift rounding ties to even (CVT_ROUND 0, measured), then the offset: `pre` is
 * 2^(shift-1) - 1 (0 for shift 0) plus the offset times 2^shift when the caller folds it in, `post` the offset
 * otherwise. |v * scale| < 2^47, so every shift up to 63 stays in int64. */
static inline int8_t rkt_requantize(int trunc, int64_t tround, int32_t bias, int has_mul, int64_t mul,
                                    int mul_shift_pos, int mul_shift_neg, int64_t lo, int64_t hi, int64_t scale,
                                    int64_t pre, int shift, int64_t post, int64_t core, int64_t ew, int ew_mul,
                                    int ew_trunc, const struct rkt_lut_stage *lut)
{
    int64_t v = rkt_sat32(((core + tround) >> trunc) + bias);
    if (has_mul) {
        const int64_t m = v * mul;
        v = rkt_sat32(rkt_shift_even(m, m >= 0 ? mul_shift_pos : mul_shift_neg));
    }
    v = rkt_max64(rkt_min64(v, hi), lo); /* the DPU clamp (ReLU / ReLUX); a no-op at INT32_MIN, INT32_MAX */
    v = ew_mul ? rkt_ew_mul(v, ew, ew_mul, ew_trunc) : rkt_sat32(v + ew);
    if (lut) /* the LUT is the EW stage, between BN and OUT_CVT [R76-USR] */
        v = rkt_lut_apply(lut, v);
    const int64_t m = v * scale;
    const int64_t q = shift ? rkt_round_shift(m, pre, shift) : m + pre;
    return (int8_t)rkt_max64(rkt_min64(q + post, 127), -128);
}

struct rkt_dot_ops {
    const char *name;
    /* acc[p * astride + k] = sum over ky, kx, c < icl of x[ky * xrow + p * xstep + kx * ic + c] * w(k, ky, kx, c)
     * for p < RKT_DOT_P, k < RKT_DOT_KB: one direct weight block against RKT_DOT_P output pixels (icl: the
     * channels that can be non-zero, a multiple of 4). Only p < npix and k < nk (16 or RKT_DOT_KB) are read
     * afterwards: a kernel may leave the other entries unwritten. */
    void (*direct)(const uint8_t *x, size_t xstep, size_t xrow, const int8_t *w, int kh, int kw, int ic, int icl,
                   int32_t *acc, size_t astride, int npix, int nk);
    /* acc[p * ic + c] = sum over ky, kx of x[ky * xrow + p * xstep + kx * ic + c] * w[(ky * kw + kx) * ic + c]
     * for p < npix */
    void (*depthwise)(const uint8_t *x, size_t xstep, size_t xrow, const int16_t *w, int kh, int kw, int ic,
                      int npix, int32_t *acc);
    /* One block of the hardware's direct weight layout, nk kernels x wi channels (wi a multiple of 4),
     * to dst[(c / 4) * 4 * RKT_DOT_KB + 4 * k + c % 4] for k < nk (the other kernels are left alone), adding
     * each kernel's weights to wsum[k] */
    void (*pack)(const int8_t *src, int nk, int wi, int8_t *dst, int32_t *wsum);
    /* sum[i] = sum of the ic bytes of pixel i, for i < npix (window sums of the OW term) */
    void (*pixsum)(const uint8_t *x, int ic, size_t npix, int32_t *sum);
    /* One output row: pixel p's 16-channel surface s (16 bytes) to dst[s] + 16 p; channels >= q->n are 0.
     * s: window sums per pixel, or NULL (all 0). Every stage of rkt_requantize: a set whose vector code leaves
     * a stage or a bound out passes those rows to the portable requantization. */
    void (*requant)(const struct rkt_requant *q, const int32_t *acc, size_t astride, const int32_t *s, int npix,
                    int nsurf, uint8_t *const *dst);
};

/* x86 with GCC or clang: the AVX2 and AVX-512 units are built (each enables its instruction set for its own
 * functions, so no build flags are needed) and chosen at run time. */
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define RKT_DOT_X86 1
#endif

/* 64-bit Arm with GCC or clang: the dot product unit is built (it enables +dotprod for its own functions) and
 * chosen at run time when the CPU has the instructions (HWCAP_ASIMDDP: Cortex-A55/A76 and later, so RK3588's and
 * RK3576's cores; not the A311D's A73/A53). */
#if defined(__aarch64__) && defined(__GNUC__)
#define RKT_DOT_ARM 1
#endif

/* The implementations (sim_dot_c.c; sim_dot_avx2.c and sim_dot_avx512.c on x86; sim_dot_neon.c on aarch64). */
extern const struct rkt_dot_ops rkt_dot_c;
extern const struct rkt_dot_ops rkt_dot_avx2;
extern const struct rkt_dot_ops rkt_dot_avx512;
extern const struct rkt_dot_ops rkt_dot_neondot;

/* The best implementation this CPU runs, or the one named by `force` ("c", "avx2", "avx512", "neondot") when it runs
 * here; NULL when `force` names one that does not. */
const struct rkt_dot_ops *rkt_dot_select(const char *force);

#endif
