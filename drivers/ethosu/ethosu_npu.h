/* The simulated Ethos-U65 NPU: executes one command stream on device memory reached through the region bases,
 * as the hardware does after the kernel has written BASEP(0..7) and started the queue
 * (docs/hardware/ethosu-sim.md). It sees only what the hardware sees: the command words and the bytes of the
 * regions (feature maps, weight and scale streams, LUTs); never TFLite parameters.
 *
 * Called by the simulated kernel (ethosu_kernel_sim.c) after its command-stream validator accepted the stream
 * and the region sizes. Pure function of its arguments: no global state.
 */
#ifndef ETHOSU_NPU_H
#define ETHOSU_NPU_H

#include <stddef.h>
#include <stdint.h>

struct teflon_sim_rules;

#define ETHOSU_NPU_REGIONS 8

/* Host view of the memory BASEP(n) points at: region n's byte a is base[a] (a < size). size 0: no memory. */
struct ethosu_npu_region {
    uint8_t *base;
    uint64_t size;
};

/* What the NPU read and wrote, counted where a unit touches memory (bytes), and its multiply-accumulates. */
struct ethosu_npu_stats {
    uint64_t ops;        /* NPU_OP_CONV / DEPTHWISE / POOL / ELEMENTWISE kicks */
    uint64_t macs;
    uint64_t feature_rd; /* IFM and IFM2 bytes read */
    uint64_t weight_rd;  /* weight stream bytes read */
    uint64_t bias_rd;    /* scale/bias stream bytes read */
    uint64_t data_wr;    /* OFM bytes written, DMA destination bytes */
};

/* Runs cmds[0..nwords) until NPU_OP_STOP. Returns 0, or a negative errno with a message in err (an unknown
 * command, a field value the hardware does not define, an access outside a region: what the real NPU reports as
 * a command-parse or bus error). */
int ethosu_npu_run(const struct ethosu_npu_region regions[ETHOSU_NPU_REGIONS], const uint32_t *cmds, size_t nwords,
                   struct ethosu_npu_stats *stats, char *err, size_t errlen);
/* The same following the hypotheses `rules` names for the open hardware facts (../sim_rules.h; NULL: defaults). */
int ethosu_npu_run_rules(const struct ethosu_npu_region regions[ETHOSU_NPU_REGIONS], const uint32_t *cmds,
                         size_t nwords, struct ethosu_npu_stats *stats, char *err, size_t errlen,
                         const struct teflon_sim_rules *rules);

#endif
