/* Simulated device memory: buffer objects at 32-bit device addresses (softpin or a bump allocator). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etna_sim_priv.h"

/* Where etna_sim_bo_create starts handing out addresses (the golden fake addresses start at 0x10000000;
 * callers mixing both must keep them apart, which the overlap check enforces). */
#define ETNA_ALLOC_BASE 0x00100000u

static void etna_set_err(char *err, size_t errlen, const char *msg)
{
    if (err && errlen)
        snprintf(err, errlen, "%s", msg);
}

int etna_fail(etna_sim *sim, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sim->err, sizeof(sim->err), fmt, ap);
    va_end(ap);
    return -1;
}

etna_sim *etna_sim_create(const struct etna_chip *chip, char *err, size_t errlen)
{
    if (!chip) {
        etna_set_err(err, errlen, "etna_sim_create: no chip");
        return NULL;
    }
    if (chip->version != 7 && chip->version != 8) {
        etna_set_err(err, errlen, "etna_sim_create: NN core version must be 7 or 8");
        return NULL;
    }
    if (chip->nn_core_count < 1 || chip->nn_core_count > 15 || chip->tp_core_count < 1 ||
        chip->tp_core_count > 15) {
        etna_set_err(err, errlen, "etna_sim_create: NN core count must be 1..15 and TP core count 1..15");
        return NULL;
    }
    if (chip->version == 7 && chip->nn_zrl_bits > 8) {
        etna_set_err(err, errlen, "etna_sim_create: nn_zrl_bits above 8");
        return NULL;
    }
    etna_sim *sim = calloc(1, sizeof(*sim));
    if (!sim) {
        etna_set_err(err, errlen, "etna_sim_create: out of memory");
        return NULL;
    }
    sim->chip = *chip;
    sim->next_iova = ETNA_ALLOC_BASE;
    const char *ref = getenv("TEFLON_SIM_REFERENCE");
    sim->reference = ref && strcmp(ref, "1") == 0;
    sim->check = ref && strcmp(ref, "check") == 0;
    sim->dot = etna_dot_select(getenv("TEFLON_SIM_KERNELS"));
    return sim;
}

void etna_sim_set_rules(etna_sim *sim, const struct teflon_sim_rules *rules)
{
    sim->rules = *rules;
}

void etna_sim_destroy(etna_sim *sim)
{
    if (!sim)
        return;
    for (unsigned i = 0; i < sim->nbos; i++)
        free(sim->bos[i].map);
    free(sim->bos);
    etna_nn_cache_clear(sim);
    free(sim->scratch_pad);
    free(sim->scratch_acc);
    free(sim);
}

static int etna_range_free(const etna_sim *sim, uint64_t start, uint64_t size)
{
    for (unsigned i = 0; i < sim->nbos; i++) {
        const struct etna_bo *b = &sim->bos[i];
        if (start < (uint64_t)b->iova + b->size && (uint64_t)b->iova < start + size)
            return 0;
    }
    return 1;
}

static int etna_bo_add(etna_sim *sim, uint32_t iova, uint64_t size, void **map_out, char *err, size_t errlen)
{
    uint64_t rounded = (size + ETNA_PAGE - 1) / ETNA_PAGE * ETNA_PAGE;
    char msg[160];
    if (size == 0 || (uint64_t)iova + rounded > 0x100000000ull) {
        snprintf(msg, sizeof(msg), "BO of %llu bytes at 0x%08x does not fit the 32-bit device address space",
                 (unsigned long long)size, iova);
        etna_set_err(err, errlen, msg);
        return -1;
    }
    if (iova % ETNA_PAGE) {
        snprintf(msg, sizeof(msg), "BO address 0x%08x is not 4 KiB aligned", iova);
        etna_set_err(err, errlen, msg);
        return -1;
    }
    if (!etna_range_free(sim, iova, rounded)) {
        snprintf(msg, sizeof(msg), "BO range 0x%08x+0x%llx overlaps another BO", iova, (unsigned long long)rounded);
        etna_set_err(err, errlen, msg);
        return -1;
    }
    if (sim->nbos == sim->cap) {
        unsigned cap = sim->cap ? sim->cap * 2 : 16;
        struct etna_bo *bos = realloc(sim->bos, cap * sizeof(*bos));
        if (!bos) {
            etna_set_err(err, errlen, "out of memory");
            return -1;
        }
        sim->bos = bos;
        sim->cap = cap;
    }
    uint8_t *map = calloc(1, rounded);
    if (!map) {
        etna_set_err(err, errlen, "out of memory");
        return -1;
    }
    sim->bos[sim->nbos++] = (struct etna_bo){ iova, rounded, map };
    if (map_out)
        *map_out = map;
    return 0;
}

int etna_sim_bo_create_at(etna_sim *sim, uint32_t iova, uint64_t size, void **map_out, char *err, size_t errlen)
{
    return etna_bo_add(sim, iova, size, map_out, err, errlen);
}

int etna_sim_bo_create(etna_sim *sim, uint64_t size, uint32_t *iova_out, void **map_out, char *err, size_t errlen)
{
    uint64_t rounded = (size + ETNA_PAGE - 1) / ETNA_PAGE * ETNA_PAGE;
    uint64_t at = sim->next_iova;
    /* Skip over softpinned BOs in the way; one page of guard between BOs catches overruns. */
    while (at + rounded <= 0x100000000ull && !etna_range_free(sim, at, rounded + ETNA_PAGE))
        at += ETNA_PAGE;
    if (at + rounded > 0x100000000ull) {
        etna_set_err(err, errlen, "device address space exhausted");
        return -1;
    }
    if (etna_bo_add(sim, (uint32_t)at, size, map_out, err, errlen))
        return -1;
    sim->next_iova = (uint32_t)(at + rounded + ETNA_PAGE);
    if (iova_out)
        *iova_out = (uint32_t)at;
    return 0;
}

int etna_sim_bo_destroy(etna_sim *sim, uint32_t iova)
{
    for (unsigned i = 0; i < sim->nbos; i++) {
        if (sim->bos[i].iova == iova) {
            free(sim->bos[i].map);
            sim->bos[i] = sim->bos[--sim->nbos];
            return 0;
        }
    }
    return -1;
}

const struct etna_bo *etna_mem_bo(const etna_sim *sim, uint64_t iova)
{
    for (unsigned i = 0; i < sim->nbos; i++) {
        const struct etna_bo *b = &sim->bos[i];
        if (iova >= b->iova && iova < (uint64_t)b->iova + b->size)
            return b;
    }
    return NULL;
}

uint8_t *etna_mem_span(etna_sim *sim, uint64_t iova, uint64_t len)
{
    const struct etna_bo *b = etna_mem_bo(sim, iova);
    if (!b || iova + len > (uint64_t)b->iova + b->size)
        return NULL;
    return b->map + (iova - b->iova);
}

uint8_t *etna_mem_access(etna_sim *sim, enum etna_dma dma, uint64_t iova, uint64_t len)
{
    uint8_t *p = etna_mem_span(sim, iova, len);
    if (p)
        etna_mem_count(sim, dma, len);
    return p;
}

void etna_sim_get_stats(const etna_sim *sim, struct etna_sim_stats *out)
{
    *out = sim->stats;
}

int64_t etna_field_get(const uint32_t *words, const struct etna_field *f)
{
    uint64_t v = 0;
    for (unsigned k = 0; k < f->nparts; k++) {
        const struct etna_part *p = &f->p[k];
        v |= (uint64_t)((words[p->word] >> p->shift) & p->mask) << p->pos;
    }
    if (f->is_signed && f->width < 64 && (v >> (f->width - 1)) & 1)
        return (int64_t)v - ((int64_t)1 << f->width);
    return (int64_t)v;
}
