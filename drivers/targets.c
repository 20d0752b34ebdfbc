/* Lookups over the target registry (targets.h). */
#include "targets.h"

#include <stdio.h>
#include <string.h>

const teflon_target *teflon_target_at(size_t i)
{
    return i < TEFLON_NUM_TARGETS ? &teflon_targets[i] : NULL;
}

const teflon_target *teflon_target_named(const char *name)
{
    for (size_t i = 0; name && i < TEFLON_NUM_TARGETS; i++)
        if (strcmp(teflon_targets[i].name, name) == 0)
            return &teflon_targets[i];
    return NULL;
}

const teflon_target *teflon_target_by_blob_id(uint32_t blob_id)
{
    for (size_t i = 0; i < TEFLON_NUM_TARGETS; i++)
        if (teflon_targets[i].blob_id == blob_id)
            return &teflon_targets[i];
    return NULL;
}

const teflon_target *teflon_target_default(void)
{
    for (size_t i = 0; i < TEFLON_NUM_TARGETS; i++)
        if (teflon_targets[i].drivable)
            return &teflon_targets[i];
    return NULL;
}

void teflon_target_list(char *out, size_t len, int drivable_only)
{
    if (!len)
        return;
    out[0] = '\0';
    for (size_t i = 0, n = 0; i < TEFLON_NUM_TARGETS; i++) {
        if (drivable_only && !teflon_targets[i].drivable)
            continue;
        const size_t used = strlen(out);
        snprintf(out + used, len - used, "%s%s", n++ ? ", " : "", teflon_targets[i].name);
    }
}

int teflon_target_param_get(const teflon_target *t, const char *name, uint32_t *value)
{
    for (const teflon_target_param *p = t->params; p && p->name; p++)
        if (strcmp(p->name, name) == 0) {
            *value = p->value;
            return 0;
        }
    return -1;
}
