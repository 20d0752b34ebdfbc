/* The simulators' switchable rules for hardware facts no public source settles yet (docs/hardware/board-facts.md).
 * Each fact has a few hypotheses; the simulated NPU follows one of them, the first listed (today's rule) unless
 * $TEFLON_SIM_RULES names another: "fact=hypothesis[,fact=hypothesis...]", read once when a simulated device opens
 * (each device keeps its own copy). `python -m teflon doctor --experiments` tells the hypotheses apart; its tests
 * switch the rule to show that each hypothesis yields its own verdict.
 */
#ifndef TEFLON_SIM_RULES_H
#define TEFLON_SIM_RULES_H

#include <stddef.h>
#include <stdint.h>

#define TEFLON_SIM_RULES_ENV "TEFLON_SIM_RULES"

enum teflon_sim_rule {
    TEFLON_RULE_EW_MUL,         /* fact 1 (rocket): the EW stage's multiply word (EW_OP_TYPE 1, ALU algo 0) */
    TEFLON_RULE_EW_TIE,         /* fact 2 (rocket): the EW operand converter's tie rule */
    TEFLON_RULE_DIRECT_PITCH,   /* fact 3 (RK3576): the direct convolution's output plane pitch (0x401C) */
    TEFLON_RULE_PPU_PAD,        /* fact 4 (RK3576): POOLING_PADDING_CFG, which nibble of a pair is x */
    TEFLON_RULE_PARTIAL_GROUPS, /* fact 5 (RK3588): a channel count ending part way through a group */
    TEFLON_RULE_V7_FC_ORDER,    /* fact 6 (etnaviv v7): the coefficient order of a 1x1-output, unpadded conv */
    TEFLON_RULE_EU_NATURAL,     /* fact 7 (Ethos-U65): how the NATURAL rounding mode rounds */
    TEFLON_RULE_COUNT,
};

/* Fact 1: the multiply word refused (0, today), or the product rule of a hypothesis: with e the converted operand
 * (EW_CVT offset added, scale, shift), u the main value, t EW_TRUNCATE: WIDE sat32(round_half_up(u*e / 2^t)),
 * WIDE_EVEN the same with ties to even, SAT32 round_half_up(sat32(u*e) / 2^t), WRAP32 the product wrapped to
 * 32 bits then shifted, NO_OFFSET as WIDE with EW_CVT_OFFSET not applied, TIMEOUT: the task never completes. */
enum { TEFLON_EW_MUL_REFUSE, TEFLON_EW_MUL_WIDE, TEFLON_EW_MUL_WIDE_EVEN, TEFLON_EW_MUL_SAT32, TEFLON_EW_MUL_WRAP32,
       TEFLON_EW_MUL_NO_OFFSET, TEFLON_EW_MUL_TIMEOUT };
enum { TEFLON_EW_TIE_HALF_EVEN, TEFLON_EW_TIE_HALF_UP };
/* Fact 3: the DPU writes surfaces at the programmed pitch (0), at OW*OH whatever is programmed, or at round4. */
enum { TEFLON_DIRECT_PITCH_PROGRAMMED, TEFLON_DIRECT_PITCH_EXACT, TEFLON_DIRECT_PITCH_ROUND4 };
/* Fact 4: pairs must be equal (0, today); x in the low nibble of each pair (the register table's names); y low. */
enum { TEFLON_PPU_PAD_EQUAL_ONLY, TEFLON_PPU_PAD_X_LOW, TEFLON_PPU_PAD_Y_LOW };
enum { TEFLON_PARTIAL_GROUPS_EXACT, TEFLON_PARTIAL_GROUPS_TIMEOUT };
/* Fact 6: the FC writer's input memory order (0, today) or Mesa's conv writers' order. */
enum { TEFLON_V7_FC_ORDER_FLAT, TEFLON_V7_FC_ORDER_CONV };
/* Fact 7: NATURAL (round_mode 2) scales x by (mult, shift) with one rounding, round_half_up(x*mult / 2^shift)
 * (0, today), or twice: with left = max(31 - shift, 0) and n = max(shift - 31, 0), q = (x*2^left*mult + 2^30) >> 31
 * (the doubling high multiply, ties toward +inf), then (q + 2^(n-1)) >> n (ties toward +inf; q when n = 0). */
enum { TEFLON_EU_NATURAL_SINGLE, TEFLON_EU_NATURAL_DOUBLE };

struct teflon_sim_rules {
    uint8_t rule[TEFLON_RULE_COUNT];
};

/* `spec` as $TEFLON_SIM_RULES takes it (NULL or "" = every default); -EINVAL with a message naming the variable,
 * the fact and the hypotheses it takes otherwise. */
int teflon_sim_rules_parse(const char *spec, struct teflon_sim_rules *r, char *err, size_t errlen);
/* The same from $TEFLON_SIM_RULES: what a simulated device calls when it is opened. */
int teflon_sim_rules_from_env(struct teflon_sim_rules *r, char *err, size_t errlen);
/* The spelling of a fact and of its hypothesis `v` (NULL past the end). */
const char *teflon_sim_rule_name(enum teflon_sim_rule f);
const char *teflon_sim_rule_value(enum teflon_sim_rule f, unsigned v);

#endif
