/* What the etnaviv family's kernel client, simulated kernel and test shim share: the chip of a target row,
 * the device virtual address allocator (softpin: userspace owns the NPU's address space) and the task ->
 * command stream check. */
#ifndef ETNA_FAMILY_H
#define ETNA_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include "../driver.h"
#include "etna_sim.h"

#define ETNA_VA_PAGE 4096u
/* The first VA userspace may softpin at: the kernel reports ETNAVIV_SOFTPIN_START_ADDRESS = SZ_4M
 * (drivers/gpu/drm/etnaviv/etnaviv_drv.h) through GET_PARAM SOFTPIN_START_ADDR; the simulated kernel and the
 * shim use the same value so every path places BOs alike. */
#define ETNA_SOFTPIN_START 0x400000u
/* NPU addresses are 32-bit (descriptor and LOAD_STATE address fields; etnaviv.md §7.1: VAs in [start, 4 GiB)). */
#define ETNA_VA_END (1ull << 32)

/* The simulator's chip from the row's params (targets.py); -EINVAL with a message naming a missing one. */
int etna_chip_of(const teflon_target *t, struct etna_chip *chip, char *err, size_t errlen);
/* GET_PARAM MODEL / REVISION of the row's NPU core; -EINVAL when the row lacks them. */
int etna_ids_of(const teflon_target *t, uint32_t *model, uint32_t *revision, char *err, size_t errlen);

/* A lowest-fit allocator of 4 KiB aligned VA ranges in [start, end). Each range is followed by one unmapped
 * guard page, so a device access past a BO's last page faults instead of landing in the next BO. */
struct etna_va_range {
    uint64_t va, span; /* span: page-rounded size + guard page */
};
struct etna_vas {
    uint64_t start, end;
    struct etna_va_range *r; /* sorted by va */
    size_t n, cap;
};
void etna_vas_init(struct etna_vas *v, uint64_t start, uint64_t end);
/* 0 with *va set; -ENOSPC when no gap fits, -ENOMEM. */
int etna_vas_alloc(struct etna_vas *v, uint64_t size, uint64_t *va);
void etna_vas_free(struct etna_vas *v, uint64_t va);
void etna_vas_fini(struct etna_vas *v);

/* The command stream words of task `ti` of job `ji`, inside a BO of `bo_size` bytes mapped at `map`:
 * whole u32 words, inside the BO (the kernel takes stream_size in bytes, a multiple of 4). */
int etna_task_words(const teflon_task *task, const void *map, uint64_t bo_size, uint32_t ji, uint32_t ti,
                    const uint32_t **words, uint32_t *nwords, char *err, size_t errlen);

/* Makes room for one more element in a growable array (*items of *cap elements, n used): 0, or -ENOMEM. */
int etna_grow(void **items, size_t *cap, size_t n, size_t elem);

#endif
