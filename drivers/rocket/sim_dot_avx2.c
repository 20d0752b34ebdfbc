/* The portable kernels (sim_dot_generic.h) compiled for AVX2 (this unit is built with -mavx2 and only
 * called when the CPU has AVX2, rkt_dot_select). */
#define RKT_DOT_SFX avx2
#include "sim_dot_generic.h"

const struct rkt_dot_ops rkt_dot_avx2 = {"avx2", direct_avx2, depthwise_avx2, pack_avx2, pixsum_avx2, requant_avx2};
