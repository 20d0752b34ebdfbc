/* The simulated kernel's fast datapath for NPU_OP_CONV / NPU_OP_DEPTHWISE (docs/hardware/ethosu-sim.md, "Fast
 * datapath"): the hook of ethosu_npu_opts.conv. It computes the bytes of the reference loop in
 * ethosu_npu_conv.c, with the MAC kernels of drivers/etnaviv/etna_sim_dot.c on a planar copy of the IFM, the
 * output stage's TFL rounding vectorized (ethosu_fast_rq.c), and the decoded weight streams kept per simulated
 * device while their bytes are unchanged. One per simulated device; not thread-safe (a device runs one job at a
 * time). */
#ifndef ETHOSU_FAST_H
#define ETHOSU_FAST_H

#include <stddef.h>
#include <stdint.h>

#include "ethosu_npu_priv.h"

struct ethosu_fast;

/* The fast datapath with the kernel set `kernels` names when this CPU runs it (TEFLON_SIM_KERNELS: avx512vnni,
 * avx512, avx2, neon, c), else the best one; NULL when out of memory. */
struct ethosu_fast *ethosu_fast_create(const char *kernels);
void ethosu_fast_destroy(struct ethosu_fast *f);
/* The kernel set in use ("avx512vnni", ..., "c"). */
const char *ethosu_fast_kernels(const struct ethosu_fast *f);

/* ethosu_npu_conv_fn: runs the op, or returns ETHOSU_NPU_DECLINED for the cases the fast datapath leaves to the
 * reference (an accumulator bound it cannot prove, see ethosu_fast.c). ctx is the struct ethosu_fast. */
int ethosu_fast_conv(void *ctx, const struct ethosu_npu_conv_op *op, char *err, size_t errlen);

/* The output stage's requantization for one channel in its common case (ethosu_fast_rq.c): OFM_PRECISION round
 * mode TFL with shift >= 31 (no left shift), no LUT, an 8- or 16-bit OFM. For x < n:
 *   res[x] = clamp(ethosu_npu_scale(acc[x], mult, 31 + right, 0) + zp, lo, hi)
 * with lo <= hi the two clamps of ethosu_npu_out_finish folded into one (ethosu_fast.c). The vector sets work on
 * magnitudes: |acc| * mult < 2^63, both roundings done on the magnitude (TFL's nudge is 2^30 - 1 for negative
 * products; the right shift rounds ties away from zero), the result capped at ETHOSU_FAST_RQ_CAP before the sign
 * comes back: any larger magnitude clamps to the same lo or hi (|zp|, |lo|, |hi| <= 65535). */
#define ETHOSU_FAST_RQ_CAP (1 << 20)
typedef void ethosu_fast_rq_fn(const int32_t *acc, int64_t n, uint32_t mult, unsigned right, int32_t zp, int32_t lo,
                               int32_t hi, int32_t *res);
ethosu_fast_rq_fn ethosu_fast_rq_c;
/* The requantization of the kernel set `name` (the MAC kernels' name, etna_dot_ops.name). */
ethosu_fast_rq_fn *ethosu_fast_rq_select(const char *name);

#endif
