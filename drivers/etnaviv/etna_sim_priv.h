/* Internals shared by the simulator's source files (not part of the API). */
#ifndef ETNA_SIM_PRIV_H
#define ETNA_SIM_PRIV_H

#include <stdarg.h>
#include <stdint.h>

#include "../sim_rules.h"
#include "etna_sim.h"

#include "etna_sim_dot.h"

/* A decoded NN job's kernels in the form the fast MAC loop reads: blocks of kernels with their tap pairs
 * (struct etna_dot_ops), built once per decode and kept with the decoded-kernel cache. */
struct etna_nn_block {
    unsigned k0, nk, kb;            /* kernels k0 .. k0 + nk - 1 (nk <= kb; the kb - nk others have weight 0) */
    uint64_t pair0, npairs;         /* its pairs: off[2 pair0 ..], w[2 kb pair0 ..] (pairs of earlier blocks
                                       count kb weights each: wpos) */
    uint64_t wpos;                  /* index of its first weight in w */
};
struct etna_nn_kernels {
    unsigned n;                     /* kernels */
    int32_t *bias;                  /* [n] */
    uint32_t *dest;                 /* [n]: v7 output byte offset, v8 output channel */
    unsigned nblk;
    struct etna_nn_block *blk;      /* [nblk], kernels in order */
    uint64_t npairs, nw;            /* pairs and weights of all blocks */
    uint64_t nz;                    /* weights of all kernels that differ from the zero point */
    int64_t *off;                   /* [2 npairs] */
    int16_t *w;                     /* [nw] */
};

/* Decoded kernels kept per descriptor address, reused while the descriptor words and the coefficient bytes the
 * decoder consumed are unchanged (compared on every run, so a rewritten buffer is decoded again). */
struct etna_nn_cache_entry {
    uint32_t desc_iova, kaddr;
    uint32_t words[34];
    uint8_t *coef;                  /* copy of the coefficient bytes the decoder consumed */
    uint64_t coef_len;
    struct etna_nn_kernels k;
};
struct etna_nn_cache {
    struct etna_nn_cache_entry *slots; /* open addressing on desc_iova; coef == NULL: empty */
    unsigned cap, count;
    uint64_t bytes;                 /* memory the entries hold */
};

#define ETNA_PAGE 4096u

struct etna_bo {
    uint32_t iova;
    uint64_t size;      /* page-rounded: the device (MMU) sees whole pages, as with a GEM BO */
    uint8_t *map;
};

struct etna_sim {
    struct etna_chip chip;
    struct etna_bo *bos;
    unsigned nbos, cap;
    uint32_t next_iova;             /* simple bump allocator for etna_sim_bo_create */
    struct etna_sim_stats stats;
    char err[512];                  /* message of the failing job; copied to the caller's buffer */
    /* front-end state, written by LOAD_STATE */
    uint32_t nn_config;
    uint32_t unk3950;
    uint32_t tp_desc_pending;       /* TP descriptors of the current multi-core job kicked so far */
    /* TEFLON_SIM_REFERENCE=1 at creation: NN jobs through the reference MAC loop (every tap of every kernel)
     * instead of the fast one (non-zero taps only, int16 features); both compute the same integer sums.
     * TEFLON_SIM_REFERENCE=check: every NN job runs the fast path, then the reference one, which compares its
     * output bytes with what the fast path wrote and fails the job on the first difference (`verifying`). */
    int reference;
    int check;
    int verifying;
    struct teflon_sim_rules rules;  /* the open facts' hypotheses (etna_sim_set_rules; zero: the defaults) */
    struct etna_nn_cache nn_cache;  /* the fast path's decoded kernels (etna_sim_nn_cache.c) */
    const struct etna_dot_ops *dot; /* the fast path's MAC kernels (etna_dot_select at creation) */
    void *scratch_pad, *scratch_acc; /* an NN job's padded input planes and accumulators, grown to the largest */
    size_t scratch_pad_cap, scratch_acc_cap;
};

/* printf-style error into sim->err; always returns -1. */
int etna_fail(etna_sim *sim, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Host pointer for [iova, iova + len) when the whole range lies inside one BO, else NULL. */
uint8_t *etna_mem_span(etna_sim *sim, uint64_t iova, uint64_t len);
/* Which counter of struct etna_sim_stats an engine's device-memory access adds to. */
enum etna_dma { ETNA_DMA_FEATURE, ETNA_DMA_WEIGHT, ETNA_DMA_OTHER, ETNA_DMA_WRITE };
/* etna_mem_span for a range an engine actually reads or writes (one burst): counts its `len` bytes as `dma`.
 * Range checks of a whole extent before the bursts use etna_mem_span, which counts nothing. */
uint8_t *etna_mem_access(etna_sim *sim, enum etna_dma dma, uint64_t iova, uint64_t len);
/* Counts a burst of `len` bytes inside a range already found with etna_mem_span (no BO lookup; inline: the TP
 * and NN engines count one per row). */
static inline void etna_mem_count(etna_sim *sim, enum etna_dma dma, uint64_t len)
{
    switch (dma) {
    case ETNA_DMA_FEATURE: sim->stats.feature_rd += len; break;
    case ETNA_DMA_WEIGHT: sim->stats.weight_rd += len; break;
    case ETNA_DMA_OTHER: sim->stats.other_rd += len; break;
    case ETNA_DMA_WRITE: sim->stats.data_wr += len; break;
    }
}

/* The BO containing iova (NULL if none). */
const struct etna_bo *etna_mem_bo(const etna_sim *sim, uint64_t iova);

int etna_nn_run(etna_sim *sim, uint32_t desc_iova);

void etna_nn_kernels_free(struct etna_nn_kernels *k);
/* The cached kernels of the job at desc_iova when its 34 descriptor words and the coefficient bytes at cb
 * (cb_len readable) equal what they were decoded from (*coef_len: how many bytes those are), else NULL. */
const struct etna_nn_kernels *etna_nn_cache_find(const etna_sim *sim, uint32_t desc_iova, const uint32_t *words,
                                                 uint32_t kaddr, const uint8_t *cb, uint64_t cb_len,
                                                 uint64_t *coef_len);
/* Keep `k` (decoded from words and the first coef_len bytes at cb) for desc_iova; returns the kept kernels, or
 * NULL when the cache is full (the caller keeps `k` and frees it). On success `k` is emptied. */
const struct etna_nn_kernels *etna_nn_cache_put(etna_sim *sim, uint32_t desc_iova, const uint32_t *words,
                                                uint32_t kaddr, const uint8_t *cb, uint64_t coef_len,
                                                struct etna_nn_kernels *k);
void etna_nn_cache_clear(etna_sim *sim);
int etna_tp_run(etna_sim *sim, uint32_t desc_iova, int *is_last_core);

/* A descriptor field split over up to four word slices (layout from the generated headers). */
struct etna_part { uint8_t word, shift, pos; uint32_t mask; };
struct etna_field { const char *name; uint8_t nparts, width, is_signed; struct etna_part p[4]; };

int64_t etna_field_get(const uint32_t *words, const struct etna_field *f);

/* A field's [min, max] from the descriptor table's bounds (generated P_F__MIN / __MAX); `set` 0: unbounded. */
struct etna_bounds { int set; int64_t min, max; };

/* The first of n fields whose value lies outside its bounds, or -1. */
static inline int etna_out_of_bounds(const int64_t *v, const struct etna_bounds *b, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (b[i].set && (v[i] < b[i].min || v[i] > b[i].max))
            return (int)i;
    return -1;
}

#define ETNA_PART_(P, F, k) { P##_##F##__PART##k##__WORD, P##_##F##__PART##k##__SHIFT, \
                              P##_##F##__PART##k##__POS, P##_##F##__PART##k##__MASK }
#define ETNA_FIELD1(P, F, S) { #F, 1, P##_##F##__WIDTH, S, { ETNA_PART_(P, F, 0) } }
#define ETNA_FIELD2(P, F, S) { #F, 2, P##_##F##__WIDTH, S, { ETNA_PART_(P, F, 0), ETNA_PART_(P, F, 1) } }
#define ETNA_FIELD3(P, F, S) { #F, 3, P##_##F##__WIDTH, S, \
                               { ETNA_PART_(P, F, 0), ETNA_PART_(P, F, 1), ETNA_PART_(P, F, 2) } }
#define ETNA_FIELD4(P, F, S) { #F, 4, P##_##F##__WIDTH, S, \
                               { ETNA_PART_(P, F, 0), ETNA_PART_(P, F, 1), ETNA_PART_(P, F, 2), ETNA_PART_(P, F, 3) } }

/* Rounds x / 2^shift to nearest, halves away from zero (the NN/TP rounding_mode 1 model, etnaviv-sim.md), |x| <
 * 2^62. Written without branches (the magnitude rounded, the sign put back) so loops over it vectorize. */
static inline int64_t etna_round_shift(int64_t x, unsigned shift)
{
    const int64_t sign = x < 0 ? -1 : 0;
    const int64_t mag = (x ^ sign) - sign;
    const int64_t q = (int64_t)((uint64_t)(mag + (((int64_t)1 << shift) >> 1)) >> shift);
    return (q ^ sign) - sign;
}

#endif
