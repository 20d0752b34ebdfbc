#include "sim_rules.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "errmsg.h"

#define MAX_VALUES 8

static const struct {
    const char *name;
    const char *values[MAX_VALUES];
} facts[TEFLON_RULE_COUNT] = {
    [TEFLON_RULE_EW_MUL] = {"ew_mul", {"refuse", "wide", "wide_even", "sat32", "wrap32", "no_offset", "timeout"}},
    [TEFLON_RULE_EW_TIE] = {"ew_tie", {"half_even", "half_up"}},
    [TEFLON_RULE_DIRECT_PITCH] = {"direct_pitch", {"programmed", "exact", "round4"}},
    [TEFLON_RULE_PPU_PAD] = {"ppu_pad", {"equal_only", "x_low", "y_low"}},
    [TEFLON_RULE_PARTIAL_GROUPS] = {"partial_groups", {"exact", "timeout"}},
    [TEFLON_RULE_V7_FC_ORDER] = {"v7_fc_order", {"flat", "conv"}},
    [TEFLON_RULE_EU_NATURAL] = {"eu_natural", {"single", "double"}},
};

const char *teflon_sim_rule_name(enum teflon_sim_rule f)
{
    return (unsigned)f < TEFLON_RULE_COUNT ? facts[f].name : NULL;
}

const char *teflon_sim_rule_value(enum teflon_sim_rule f, unsigned v)
{
    return (unsigned)f < TEFLON_RULE_COUNT && v < MAX_VALUES ? facts[f].values[v] : NULL;
}

static int same(const char *s, size_t n, const char *word)
{
    return word && strlen(word) == n && strncmp(s, word, n) == 0;
}

/* One "fact=hypothesis" item of n bytes at s. */
static int parse_item(const char *spec, const char *s, size_t n, struct teflon_sim_rules *r, char *err, size_t errlen)
{
    const char *eq = memchr(s, '=', n);
    const size_t kn = eq ? (size_t)(eq - s) : n;
    for (unsigned f = 0; f < TEFLON_RULE_COUNT; f++) {
        if (!same(s, kn, facts[f].name))
            continue;
        const char *v = eq ? eq + 1 : s + n;
        const size_t vn = (size_t)(s + n - v);
        for (unsigned i = 0; i < MAX_VALUES && facts[f].values[i]; i++)
            if (same(v, vn, facts[f].values[i])) {
                r->rule[f] = (uint8_t)i;
                return 0;
            }
        char list[160] = "";
        for (unsigned i = 0; i < MAX_VALUES && facts[f].values[i]; i++) {
            strncat(list, i ? ", " : "", sizeof(list) - strlen(list) - 1);
            strncat(list, facts[f].values[i], sizeof(list) - strlen(list) - 1);
        }
        teflon_errf(err, errlen, TEFLON_SIM_RULES_ENV "=\"%s\": %s takes %s, not \"%.*s\"", spec, facts[f].name, list,
                    (int)vn, v);
        return -EINVAL;
    }
    teflon_errf(err, errlen, TEFLON_SIM_RULES_ENV "=\"%s\": unknown fact \"%.*s\" (facts: ew_mul, ew_tie, direct_pitch, "
                "ppu_pad, partial_groups, v7_fc_order, eu_natural; form fact=hypothesis[,...])", spec, (int)kn, s);
    return -EINVAL;
}

int teflon_sim_rules_parse(const char *spec, struct teflon_sim_rules *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    if (!spec)
        return 0;
    for (const char *s = spec; *s;) {
        const char *comma = strchr(s, ',');
        const size_t n = comma ? (size_t)(comma - s) : strlen(s);
        if (n && parse_item(spec, s, n, r, err, errlen)) {
            memset(r, 0, sizeof(*r));
            return -EINVAL;
        }
        s += n + (comma ? 1 : 0);
    }
    return 0;
}

int teflon_sim_rules_from_env(struct teflon_sim_rules *r, char *err, size_t errlen)
{
    return teflon_sim_rules_parse(getenv(TEFLON_SIM_RULES_ENV), r, err, errlen);
}
