/* The portable kernels (sim_dot_generic.h) for the baseline instruction set, and the runtime choice of the
 * kernels the CPU runs best. */
#include "sim_dot.h"

#include <string.h>

#if defined(RKT_DOT_ARM)
#include <sys/auxv.h>
/* HWCAP_ASIMDDP of the arm64 Linux UAPI (arch/arm64/include/uapi/asm/hwcap.h): the dot product instructions */
#define RKT_HWCAP_ASIMDDP (1UL << 20)
#endif

#define RKT_DOT_SFX c
#include "sim_dot_generic.h"

const struct rkt_dot_ops rkt_dot_c = {"c", direct_c, depthwise_c, pack_c, pixsum_c, requant_c};

static int runs(const struct rkt_dot_ops *ops)
{
    if (ops == &rkt_dot_c)
        return 1;
#if defined(RKT_DOT_X86)
    __builtin_cpu_init();
    if (ops == &rkt_dot_avx2)
        return __builtin_cpu_supports("avx2");
    if (ops == &rkt_dot_avx512)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512vnni");
#endif
#if defined(RKT_DOT_ARM)
    if (ops == &rkt_dot_neondot)
        return (getauxval(AT_HWCAP) & RKT_HWCAP_ASIMDDP) != 0;
#endif
    return 0;
}

const struct rkt_dot_ops *rkt_dot_select(const char *force)
{
    static const struct rkt_dot_ops *const all[] = {
#if defined(RKT_DOT_X86)
        &rkt_dot_avx512, &rkt_dot_avx2,
#endif
#if defined(RKT_DOT_ARM)
        &rkt_dot_neondot,
#endif
        &rkt_dot_c,
    };
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (force && *force && strcmp(force, all[i]->name) != 0)
            continue;
        if (runs(all[i]))
            return all[i];
    }
    return NULL;
}
