/* Simulated etnaviv (Vivante VIPNano) NPU: device memory, the front-end command stream, NN and TP jobs.
 *
 * The simulator executes exactly what the hardware would receive: a command stream (LOAD_STATE words),
 * NN/TP descriptors, coefficient buffers, PWL lookup tables and planar uint8 feature maps, all reached
 * through 32-bit device addresses. It never sees model parameters. Anything it does not know (a state,
 * a descriptor value, a coefficient-format flag) is an error with a message, never ignored.
 * Semantics and every inferred choice: docs/hardware/etnaviv-sim.md.
 *
 * Every function returning int returns 0 on success and -1 on error (message in err, if given).
 */
#ifndef ETNA_SIM_H
#define ETNA_SIM_H

#include <stddef.h>
#include <stdint.h>

/* Chip values (the vendor feature database; etnaviv.md §7.1). */
struct etna_chip {
    unsigned version;               /* NN core version: 7 (A311D class) or 8 (i.MX8MP class) */
    unsigned nn_core_count;
    unsigned tp_core_count;
    unsigned on_chip_sram_size;     /* bytes */
    unsigned nn_zrl_bits;           /* v7 coefficient streams: largest zero-run field width */
    unsigned nn_input_buffer_depth;
    unsigned nn_accum_buffer_depth;
};

struct etna_sim_stats {
    uint64_t submits;
    uint64_t nn_jobs;
    uint64_t tp_jobs;               /* multi-core TP jobs count once (at their last descriptor) */
    uint64_t tp_descriptors;
    uint64_t macs;                  /* multiply-accumulates the NN jobs performed (programmed geometry) */
    uint64_t tp_elements;           /* elements the TP jobs wrote */
    /* Bytes the NN/TP engines moved, counted where the simulator reaches device memory (etna_mem_access);
     * descriptors and the command stream are not counted. */
    uint64_t feature_rd;            /* input feature maps (NN input planes, TP input image) */
    uint64_t weight_rd;             /* NN coefficient buffers: compressed weight streams and bias */
    uint64_t other_rd;              /* other operands: TP PWL lookup tables */
    uint64_t data_wr;               /* output feature maps */
    uint64_t macs_nz;               /* of `macs`, those whose weight differs from the zero point */
};

typedef struct etna_sim etna_sim;

etna_sim *etna_sim_create(const struct etna_chip *chip, char *err, size_t errlen);
void etna_sim_destroy(etna_sim *sim);
/* The hypotheses this simulator follows for the open hardware facts (../sim_rules.h; all defaults until set): the
 * simulated kernel and the ioctl shim pass what $TEFLON_SIM_RULES names when the device opens. */
struct teflon_sim_rules;
void etna_sim_set_rules(etna_sim *sim, const struct teflon_sim_rules *rules);

/* A zero-filled buffer object at a device address chosen by the simulator (4 KiB aligned). The mapping
 * (page-rounded, like a GEM BO) stays valid until the BO is destroyed. */
int etna_sim_bo_create(etna_sim *sim, uint64_t size, uint32_t *iova_out, void **map_out, char *err, size_t errlen);
/* The same at a caller-chosen address (softpin); iova must be 4 KiB aligned and the range free. */
int etna_sim_bo_create_at(etna_sim *sim, uint32_t iova, uint64_t size, void **map_out, char *err, size_t errlen);
int etna_sim_bo_destroy(etna_sim *sim, uint32_t iova);

/* Execute a command stream (as DRM_IOCTL_ETNAVIV_GEM_SUBMIT takes it from user memory), synchronously. */
int etna_sim_submit(etna_sim *sim, const uint32_t *stream, uint32_t nwords, char *err, size_t errlen);

void etna_sim_get_stats(const etna_sim *sim, struct etna_sim_stats *out);

#endif
