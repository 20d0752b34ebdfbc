/* Shared by the etnaviv kernel client, the simulated kernel and the shim (etna_family.h). */
#include "etna_family.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../errmsg.h"
#include "../targets.h"

static int param(const teflon_target *t, const char *name, unsigned *out, char *err, size_t errlen)
{
    uint32_t v;
    if (teflon_target_param_get(t, name, &v)) {
        teflon_errf(err, errlen, "target %s has no \"%s\" parameter (python/teflon/targets.py params)", t->name, name);
        return -EINVAL;
    }
    *out = v;
    return 0;
}

int etna_chip_of(const teflon_target *t, struct etna_chip *chip, char *err, size_t errlen)
{
    memset(chip, 0, sizeof(*chip));
    int rc = param(t, "version", &chip->version, err, errlen);
    rc = rc ? rc : param(t, "nn_core_count", &chip->nn_core_count, err, errlen);
    rc = rc ? rc : param(t, "tp_core_count", &chip->tp_core_count, err, errlen);
    rc = rc ? rc : param(t, "on_chip_sram_size", &chip->on_chip_sram_size, err, errlen);
    rc = rc ? rc : param(t, "nn_zrl_bits", &chip->nn_zrl_bits, err, errlen);
    rc = rc ? rc : param(t, "nn_input_buffer_depth", &chip->nn_input_buffer_depth, err, errlen);
    rc = rc ? rc : param(t, "nn_accum_buffer_depth", &chip->nn_accum_buffer_depth, err, errlen);
    return rc;
}

int etna_ids_of(const teflon_target *t, uint32_t *model, uint32_t *revision, char *err, size_t errlen)
{
    unsigned m, r;
    int rc = param(t, "chip_model", &m, err, errlen);
    rc = rc ? rc : param(t, "chip_revision", &r, err, errlen);
    if (!rc) {
        *model = m;
        *revision = r;
    }
    return rc;
}

/* ---- VA allocator ------------------------------------------------------------------------------------- */

void etna_vas_init(struct etna_vas *v, uint64_t start, uint64_t end)
{
    *v = (struct etna_vas){.start = start, .end = end};
}

int etna_vas_alloc(struct etna_vas *v, uint64_t size, uint64_t *va)
{
    if (size == 0 || size > v->end - v->start)
        return -ENOSPC;
    const uint64_t span = (size + ETNA_VA_PAGE - 1) / ETNA_VA_PAGE * ETNA_VA_PAGE + ETNA_VA_PAGE;
    uint64_t at = v->start;
    size_t pos = 0;
    for (; pos < v->n; pos++) {
        if (v->r[pos].va - at >= span)
            break;
        at = v->r[pos].va + v->r[pos].span;
    }
    if (at + span > v->end)
        return -ENOSPC;
    if (v->n == v->cap) {
        const size_t cap = v->cap ? 2 * v->cap : 64;
        struct etna_va_range *r = realloc(v->r, cap * sizeof(*r));
        if (!r)
            return -ENOMEM;
        v->r = r;
        v->cap = cap;
    }
    memmove(&v->r[pos + 1], &v->r[pos], (v->n - pos) * sizeof(*v->r));
    v->r[pos] = (struct etna_va_range){at, span};
    v->n++;
    *va = at;
    return 0;
}

void etna_vas_free(struct etna_vas *v, uint64_t va)
{
    for (size_t i = 0; i < v->n; i++)
        if (v->r[i].va == va) {
            memmove(&v->r[i], &v->r[i + 1], (v->n - i - 1) * sizeof(*v->r));
            v->n--;
            return;
        }
}

void etna_vas_fini(struct etna_vas *v)
{
    free(v->r);
    *v = (struct etna_vas){0};
}

/* ---- tasks ------------------------------------------------------------------------------------------- */

int etna_task_words(const teflon_task *task, const void *map, uint64_t bo_size, uint32_t ji, uint32_t ti,
                    const uint32_t **words, uint32_t *nwords, char *err, size_t errlen)
{
    if (task->bytes == 0 || task->bytes % 4 || task->offset % 4 || task->offset > bo_size ||
        task->bytes > bo_size - task->offset) {
        teflon_errf(err, errlen, "job %u task %u: command stream of %u bytes at offset %llu of a %llu-byte BO is not "
                    "whole 32-bit words inside the BO", ji, ti, task->bytes, (unsigned long long)task->offset,
                    (unsigned long long)bo_size);
        return -EINVAL;
    }
    *words = (const uint32_t *)((const uint8_t *)map + task->offset);
    *nwords = task->bytes / 4;
    return 0;
}

int etna_grow(void **items, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    const size_t ncap = *cap ? 2 * *cap : 64;
    void *p = realloc(*items, ncap * elem);
    if (!p)
        return -ENOMEM;
    *items = p;
    *cap = ncap;
    return 0;
}
