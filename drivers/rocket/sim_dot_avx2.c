/* The portable kernels (sim_dot_generic.h) compiled for AVX2 (only called when the CPU has AVX2,
 * rkt_dot_select). */
#include "sim_dot.h"
#if RKT_DOT_X86
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC target("avx2,fma")
#endif
#define RKT_DOT_SFX avx2
#include "sim_dot_generic.h"

const struct rkt_dot_ops rkt_dot_avx2 = {"avx2", direct_avx2, depthwise_avx2, pack_avx2, pixsum_avx2, requant_avx2};

#if defined(__clang__)
#pragma clang attribute pop
#endif
#endif
