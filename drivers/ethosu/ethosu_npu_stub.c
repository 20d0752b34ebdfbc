/* A stand-in for the simulated NPU (ethosu_npu.h) until it exists: it walks the command words to NPU_OP_STOP and
 * touches no memory, so the kernel side can be built and tested. Its outputs are whatever the regions held. */
#include "ethosu_npu.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int ethosu_npu_run(const struct ethosu_npu_region regions[ETHOSU_NPU_REGIONS], const uint32_t *cmds, size_t nwords,
                   struct ethosu_npu_stats *stats, char *err, size_t errlen)
{
    (void)regions;
    memset(stats, 0, sizeof(*stats));
    for (size_t i = 0; i < nwords; i++) {
        const uint32_t op = cmds[i] & 0xffff;
        if (op & 0x4000) {
            i++; /* cmd1 payload */
            continue;
        }
        if (op == 0x000) /* NPU_OP_STOP */
            return 0;
        if (op >= 0x002 && op <= 0x006)
            stats->ops++;
    }
    if (err && errlen)
        snprintf(err, errlen, "the command stream ended without NPU_OP_STOP");
    return -EINVAL;
}
