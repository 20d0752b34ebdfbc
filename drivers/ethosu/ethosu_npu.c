/* The simulated Ethos-U65: the command-stream parser, the register file, DMA and the dispatch of operations
 * (docs/hardware/ethosu-sim.md). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim_rules.h"
#include "ethosu_npu_priv.h"

int ethosu_npu_fail(struct ethosu_npu *npu, int rc, const char *fmt, ...)
{
    if (npu->err && npu->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(npu->err, npu->errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

int ethosu_npu_get0(struct ethosu_npu *npu, unsigned op, uint16_t *v)
{
    if (!npu->set0[op])
        return ethosu_npu_fail(npu, -EINVAL, "register cmd0 0x%03x used but never set", op);
    *v = npu->p0[op];
    return 0;
}

int ethosu_npu_get1(struct ethosu_npu *npu, unsigned op, uint64_t *v)
{
    if (!npu->set1[op])
        return ethosu_npu_fail(npu, -EINVAL, "register cmd1 0x%03x used but never set", op);
    *v = npu->p1[op];
    return 0;
}

/* The command definition for (opcode, cmd1), or NULL: the table is small and a stream is parsed once. */
static const struct ethosu_cmd_desc *ethosu_npu_lookup(unsigned opcode, unsigned cmd1)
{
    for (unsigned i = 0; i < ethosu_npu_cmd_count; i++)
        if (ethosu_npu_cmd_table[i].opcode == opcode && ethosu_npu_cmd_table[i].cmd1 == cmd1)
            return &ethosu_npu_cmd_table[i];
    return NULL;
}

/* Resolves region + address + length to host memory; region 8 + internal bit means SHRAM. */
static uint8_t *ethosu_npu_dma_ptr(struct ethosu_npu *npu, unsigned regv, uint64_t addr, uint64_t len,
                                   const char *what)
{
    if (ETHOSU_DMA_INTERNAL(regv)) {
        if (addr > ETHOSU_NPU_SHRAM_SIZE || len > ETHOSU_NPU_SHRAM_SIZE - addr) {
            ethosu_npu_fail(npu, -EFAULT, "DMA %s 0x%llx+%llu outside SHRAM", what, (unsigned long long)addr,
                            (unsigned long long)len);
            return NULL;
        }
        return npu->shram + addr;
    }
    unsigned r = ETHOSU_DMA_REGION(regv);
    if (r >= ETHOSU_NPU_REGIONS) {
        ethosu_npu_fail(npu, -EINVAL, "DMA %s region %u does not exist", what, r);
        return NULL;
    }
    const struct ethosu_npu_region *reg = &npu->regions[r];
    if (!reg->base || addr > reg->size || len > reg->size - addr) {
        ethosu_npu_fail(npu, -EFAULT, "DMA %s 0x%llx+%llu outside region %u (%llu bytes)", what,
                        (unsigned long long)addr, (unsigned long long)len, r, (unsigned long long)reg->size);
        return NULL;
    }
    return reg->base + addr;
}

/* NPU_OP_DMA_START: a 1-D copy of DMA0_LEN bytes (the only stride mode Vela emits for the U65); the DMA
 * runs to completion at once, so DMA_WAIT has nothing left to wait for. */
static int ethosu_npu_dma(struct ethosu_npu *npu, unsigned param)
{
    uint16_t sreg = 0, dreg = 0;
    uint64_t src = 0, dst = 0, len = 0;
    int rc;
    if (param != 0)
        return ethosu_npu_fail(npu, -EINVAL, "DMA_START channel/mode 0x%x: only channel 0, mode 0 defined", param);
    if ((rc = ethosu_npu_get0(npu, ETHOSU_DMA0_SRC_REGION, &sreg)) || (rc = ethosu_npu_get0(npu, ETHOSU_DMA0_DST_REGION, &dreg)) ||
        (rc = ethosu_npu_get1(npu, ETHOSU_DMA0_SRC, &src)) || (rc = ethosu_npu_get1(npu, ETHOSU_DMA0_DST, &dst)) ||
        (rc = ethosu_npu_get1(npu, ETHOSU_DMA0_LEN, &len)))
        return rc;
    if (ETHOSU_DMA_STRIDE_MODE(sreg) != 0 || ETHOSU_DMA_STRIDE_MODE(dreg) != 0)
        return ethosu_npu_fail(npu, -EINVAL, "DMA stride modes 2D/3D are not simulated");
    uint8_t *s = ethosu_npu_dma_ptr(npu, sreg, src, len, "source");
    uint8_t *d = s ? ethosu_npu_dma_ptr(npu, dreg, dst, len, "destination") : NULL;
    if (!d)
        return -EFAULT;
    memmove(d, s, len);
    if (npu->stats)
        npu->stats->data_wr += len;
    return 0;
}

/* OFM block: a scheduling choice that does not change the result, but the U65-256 only takes blocks built of
 * its 2x2x8 OFM micro-blocks (Vela architecture_features.py: ArchitectureConfig for Ethos_U65_256,
 * ofm_ublock Block(2, 2, 8); architecture_allocator.py steps block sizes by the micro-block). [Inference: a
 * block that breaks the micro-block raster is a command error.] */
int ethosu_npu_check_blocks(struct ethosu_npu *npu)
{
    uint16_t bw = 0, bh = 0, bd = 0;
    int rc;
    if ((rc = ethosu_npu_get0(npu, ETHOSU_OFM_BLK_WIDTH_M1, &bw)) || (rc = ethosu_npu_get0(npu, ETHOSU_OFM_BLK_HEIGHT_M1, &bh)) ||
        (rc = ethosu_npu_get0(npu, ETHOSU_OFM_BLK_DEPTH_M1, &bd)))
        return rc;
    if ((bw + 1) % 2 || (bh + 1) % 2 || (bd + 1) % 8)
        return ethosu_npu_fail(npu, -EINVAL, "OFM block %ux%ux%u is not made of 2x2x8 micro-blocks", bw + 1u, bh + 1u,
                               bd + 1u);
    return 0;
}

static int ethosu_npu_operation(struct ethosu_npu *npu, unsigned opcode, unsigned param)
{
    switch (opcode) {
    case ETHOSU_OP_IRQ:
    case ETHOSU_OP_DMA_WAIT:
    case ETHOSU_OP_KERNEL_WAIT:
    case ETHOSU_OP_PMU_MASK:
        /* Synchronisation and profiling: operations complete in order here, so nothing to do. */
        return 0;
    case ETHOSU_OP_DMA_START:
        return ethosu_npu_dma(npu, param);
    case ETHOSU_OP_CONV:
    case ETHOSU_OP_DEPTHWISE:
        if (npu->stats)
            npu->stats->ops++;
        return ethosu_npu_conv(npu, opcode == ETHOSU_OP_DEPTHWISE);
    case ETHOSU_OP_POOL:
        if (npu->stats)
            npu->stats->ops++;
        return ethosu_npu_pool(npu, param);
    case ETHOSU_OP_ELEMENTWISE:
        if (npu->stats)
            npu->stats->ops++;
        return ethosu_npu_elementwise(npu, param);
    default:
        return ethosu_npu_fail(npu, -EINVAL, "operation 0x%03x not simulated", opcode);
    }
}

static int ethosu_npu_exec(struct ethosu_npu *npu, const uint32_t *cmds, size_t nwords)
{
    for (size_t i = 0; i < nwords; i++) {
        uint32_t w = cmds[i];
        unsigned opcode = w & 0x3ff, cmd1 = (w >> 14) & 1, param = w >> 16;
        if (w & 0xbc00)
            return ethosu_npu_fail(npu, -EINVAL, "word %zu: 0x%08x has reserved bits 10..13/15 set", i, w);
        const struct ethosu_cmd_desc *d = ethosu_npu_lookup(opcode, cmd1);
        if (!d)
            return ethosu_npu_fail(npu, -EINVAL, "word %zu: unknown %s opcode 0x%03x", i, cmd1 ? "cmd1" : "cmd0",
                                   opcode);
        if (cmd1 && i + 1 >= nwords)
            return ethosu_npu_fail(npu, -EINVAL, "word %zu: %s lacks its payload word", i, d->name);
        /* cmd0: the 16-bit param; cmd1: param << 32 | payload (the generated table's defined_mask covers it). */
        uint64_t value = cmd1 ? ((uint64_t)param << 32) | cmds[i + 1] : param;
        if (value & ~d->defined_mask)
            return ethosu_npu_fail(npu, -EINVAL, "word %zu: %s value 0x%llx sets bits outside its fields (0x%llx)", i,
                                   d->name, (unsigned long long)value, (unsigned long long)d->defined_mask);
        if (cmd1) {
            npu->p1[opcode] = value;
            npu->set1[opcode] = 1;
            i++;
        } else if (opcode >= 0x100) {
            if (opcode == ETHOSU_PARALLEL_MODE && param != 0)
                return ethosu_npu_fail(npu, -EINVAL, "word %zu: PARALLEL_MODE %u: the U65-256 has one core", i, param);
            npu->p0[opcode] = (uint16_t)param;
            npu->set0[opcode] = 1;
        } else if (opcode == ETHOSU_OP_STOP) {
            return 0;
        } else {
            int rc = ethosu_npu_operation(npu, opcode, param);
            if (rc)
                return rc;
        }
    }
    return ethosu_npu_fail(npu, -EINVAL, "command stream ends without NPU_OP_STOP");
}

int ethosu_npu_run_opts(const struct ethosu_npu_region regions[ETHOSU_NPU_REGIONS], const uint32_t *cmds,
                        size_t nwords, struct ethosu_npu_stats *stats, char *err, size_t errlen,
                        const struct ethosu_npu_opts *opts)
{
    static const struct ethosu_npu_opts defaults = {NULL, NULL, NULL, NULL, NULL};
    struct ethosu_npu *npu = calloc(1, sizeof(*npu));
    if (!npu)
        return -ENOMEM;
    npu->regions = regions;
    npu->stats = stats;
    npu->opts = opts ? opts : &defaults;
    npu->err = err;
    npu->errlen = errlen;
    if (err && errlen)
        err[0] = '\0';
    npu->shram = calloc(1, ETHOSU_NPU_SHRAM_SIZE);
    int rc = npu->shram ? ethosu_npu_exec(npu, cmds, nwords) : -ENOMEM;
    free(npu->shram);
    free(npu);
    return rc;
}

int ethosu_npu_run(const struct ethosu_npu_region regions[ETHOSU_NPU_REGIONS], const uint32_t *cmds, size_t nwords,
                   struct ethosu_npu_stats *stats, char *err, size_t errlen)
{
    return ethosu_npu_run_opts(regions, cmds, nwords, stats, err, errlen, NULL);
}

int ethosu_npu_run_rules(const struct ethosu_npu_region regions[ETHOSU_NPU_REGIONS], const uint32_t *cmds,
                         size_t nwords, struct ethosu_npu_stats *stats, char *err, size_t errlen,
                         const struct teflon_sim_rules *rules)
{
    const struct ethosu_npu_opts opts = {NULL, NULL, rules, NULL, NULL};
    return ethosu_npu_run_opts(regions, cmds, nwords, stats, err, errlen, &opts);
}

int ethosu_npu_round_mode(const struct ethosu_npu *npu, int field)
{
    const struct teflon_sim_rules *r = npu->opts->rules;
    if (field == 2 && r && r->rule[TEFLON_RULE_EU_NATURAL] == TEFLON_EU_NATURAL_DOUBLE)
        return ETHOSU_NPU_ROUND_NATURAL2; /* board-facts.md fact 7, hypothesis "double" */
    return field;
}
