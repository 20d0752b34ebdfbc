/* The fast NN path's decoded-kernel cache (etna_sim_priv.h): decoding a coefficient stream costs more than the
 * job's MACs for the v7 dense depthwise form, and a program runs the same jobs on every inference. An entry is
 * reused only while the descriptor words and every coefficient byte the decoder consumed are unchanged, so the
 * simulator still answers to exactly the bytes in device memory. */
#include <stdlib.h>
#include <string.h>

#include "etna_sim_priv.h"

/* Memory the cache may hold per device; past it, jobs are decoded on every run. */
#define ETNA_NN_CACHE_MAX_BYTES ((uint64_t)512 << 20)

void etna_nn_kernels_free(struct etna_nn_kernels *k)
{
    free(k->bias);
    free(k->dest);
    free(k->blk);
    free(k->off);
    free(k->w);
    memset(k, 0, sizeof(*k));
}

static uint64_t etna_nn_kernels_bytes(const struct etna_nn_kernels *k)
{
    return (uint64_t)k->n * (sizeof(*k->bias) + sizeof(*k->dest)) + (uint64_t)k->nblk * sizeof(*k->blk) +
           2 * k->npairs * sizeof(*k->off) + k->nw * sizeof(*k->w);
}

static unsigned etna_nn_slot(const struct etna_nn_cache *c, uint32_t desc_iova)
{
    return (unsigned)((desc_iova * 2654435761u) & (c->cap - 1));
}

/* The slot holding desc_iova, or the empty slot where it would go. */
static struct etna_nn_cache_entry *etna_nn_probe(const struct etna_nn_cache *c, uint32_t desc_iova)
{
    for (unsigned i = etna_nn_slot(c, desc_iova);; i = (i + 1) & (c->cap - 1))
        if (!c->slots[i].coef || c->slots[i].desc_iova == desc_iova)
            return &c->slots[i];
}

const struct etna_nn_kernels *etna_nn_cache_find(const etna_sim *sim, uint32_t desc_iova, const uint32_t *words,
                                                 uint32_t kaddr, const uint8_t *cb, uint64_t cb_len,
                                                 uint64_t *coef_len)
{
    const struct etna_nn_cache *c = &sim->nn_cache;
    if (!c->count)
        return NULL;
    const struct etna_nn_cache_entry *e = etna_nn_probe(c, desc_iova);
    if (!e->coef || e->kaddr != kaddr || memcmp(e->words, words, sizeof(e->words)) || e->coef_len > cb_len ||
        memcmp(e->coef, cb, e->coef_len))
        return NULL;
    *coef_len = e->coef_len;
    return &e->k;
}

static int etna_nn_cache_grow(struct etna_nn_cache *c)
{
    const unsigned cap = c->cap ? 2 * c->cap : 64;
    struct etna_nn_cache_entry *slots = calloc(cap, sizeof(*slots));
    if (!slots)
        return -1;
    struct etna_nn_cache old = *c;
    c->slots = slots;
    c->cap = cap;
    for (unsigned i = 0; i < old.cap; i++)
        if (old.slots[i].coef)
            *etna_nn_probe(c, old.slots[i].desc_iova) = old.slots[i];
    free(old.slots);
    return 0;
}

const struct etna_nn_kernels *etna_nn_cache_put(etna_sim *sim, uint32_t desc_iova, const uint32_t *words,
                                                uint32_t kaddr, const uint8_t *cb, uint64_t coef_len,
                                                struct etna_nn_kernels *k)
{
    struct etna_nn_cache *c = &sim->nn_cache;
    const uint64_t bytes = etna_nn_kernels_bytes(k) + coef_len;
    if ((2 * (c->count + 1) > c->cap && etna_nn_cache_grow(c)))
        return NULL;
    struct etna_nn_cache_entry *e = etna_nn_probe(c, desc_iova);
    const uint64_t freed = e->coef ? etna_nn_kernels_bytes(&e->k) + e->coef_len : 0;
    if (c->bytes - freed + bytes > ETNA_NN_CACHE_MAX_BYTES)
        return NULL;
    uint8_t *copy = malloc(coef_len ? coef_len : 1);
    if (!copy)
        return NULL;
    memcpy(copy, cb, coef_len);
    if (e->coef) { /* the same descriptor address with other contents: replace it */
        free(e->coef);
        etna_nn_kernels_free(&e->k);
        c->count--;
        c->bytes -= freed;
    }
    e->desc_iova = desc_iova;
    e->kaddr = kaddr;
    memcpy(e->words, words, sizeof(e->words));
    e->coef = copy;
    e->coef_len = coef_len;
    e->k = *k;
    memset(k, 0, sizeof(*k));
    c->count++;
    c->bytes += bytes;
    return &e->k;
}

void etna_nn_cache_clear(etna_sim *sim)
{
    struct etna_nn_cache *c = &sim->nn_cache;
    for (unsigned i = 0; i < c->cap; i++)
        if (c->slots[i].coef) {
            free(c->slots[i].coef);
            etna_nn_kernels_free(&c->slots[i].k);
        }
    free(c->slots);
    memset(c, 0, sizeof(*c));
}
