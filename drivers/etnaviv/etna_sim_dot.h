/* The multiply-accumulate kernel sets of etna_sim_dot.c (one implementation per instruction set), declared apart
 * from the rest of the simulator's internals because the Ethos-U simulator's fast datapath runs the same MAC
 * kernels on its planar copy of the IFM (drivers/ethosu/ethosu_fast.c). */
#ifndef ETNA_SIM_DOT_H
#define ETNA_SIM_DOT_H

#include <stdint.h>

/* The fast NN path's multiply-accumulate kernels (etna_sim_dot.c), one implementation per instruction set behind
 * one table, chosen when the simulator is created. A block is `kb` kernels (1 or ETNA_DOT_KB) sharing one list
 * of tap pairs: pair p reads the padded input planes at off[2p] and off[2p + 1] and holds, per kernel k, the two
 * weights w[2 (p kb + k)] and w[2 (p kb + k) + 1] (relative to the weight zero point; a kernel without that tap
 * has weight 0 there). For every position i of the run (rounded up to ETNA_DOT_PX):
 *   acc[k * astride + i] = bias[k] + sum over p of pad[off[2p] + i] * w0(p, k) + pad[off[2p + 1] + i] * w1(p, k)
 * Every product and pair sum fits int16 x int16 -> int32 (|pad| <= 255, |w| <= 255), so the integer sums are
 * the reference loop's. `pad` must be readable ETNA_DOT_PX elements past the last tap's run, `acc` writable
 * to the rounded-up run. */
#define ETNA_DOT_KB 4   /* kernels per block */
#define ETNA_DOT_PX 32  /* run positions per inner iteration */
/* One output row: row[x] = clamp(etna_round_shift(acc[x * step] * mult, shift) + ozp, lo, 255) for x < n (step 1,
 * or 2 for first-pixel pooling; 0 <= ozp, lo <= 255). etna_dot_requant_c is the portable one, which the
 * reference path takes. */
typedef void etna_dot_requant_fn(const int32_t *acc, int64_t step, int64_t n, int64_t mult, unsigned shift,
                                 int32_t ozp, int32_t lo, uint8_t *row);
etna_dot_requant_fn etna_dot_requant_c;
struct etna_dot_ops {
    const char *name;
    void (*mac)(unsigned kb, const int16_t *pad, const int64_t *off, const int16_t *w, uint64_t npairs,
                const int32_t *bias, int64_t run, int32_t *acc, int64_t astride);
    etna_dot_requant_fn *requant;
};
/* The best implementation this CPU runs ("avx512", "avx2", "c"), or the one `force` names when it runs here
 * (TEFLON_SIM_KERNELS, the variable rocket's simulator reads too; another name: the best). */
const struct etna_dot_ops *etna_dot_select(const char *force);

#endif
