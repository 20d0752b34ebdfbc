/* The target registry in C: lookups over the rows of the generated teflon_targets.h (written at build time
 * from python/teflon/targets.py, the one list of SoCs). Nothing in C names a SoC except through these rows. */
#ifndef TEFLON_TARGETS_LOOKUP_H
#define TEFLON_TARGETS_LOOKUP_H

#include <stddef.h>
#include <stdint.h>

#include "teflon_targets.h"

/* The row whose `name` (the device option value) is `name`, or NULL. */
const teflon_target *teflon_target_named(const char *name);
/* The row with program-blob id `blob_id`, or NULL. */
const teflon_target *teflon_target_by_blob_id(uint32_t blob_id);
/* Row i (0 <= i < TEFLON_NUM_TARGETS). */
const teflon_target *teflon_target_at(size_t i);
/* The first drivable row (device=auto's choice when no NPU is found), or NULL. */
const teflon_target *teflon_target_default(void);
/* "a, b, c": the names of every row (drivable_only = 0) or of the drivable ones, for messages. */
void teflon_target_list(char *out, size_t len, int drivable_only);

/* A generation-specific chip parameter of the row (targets.py `params`): 0 with *value set, -1 when absent. */
int teflon_target_param_get(const teflon_target *t, const char *name, uint32_t *value);

#endif
