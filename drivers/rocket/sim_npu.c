/* Simulated rocket NPU core: PC fetch/decode, register file, op-enable -> the SoC's execute.
 *
 * Rules (docs/hardware/rocket-sim.md and rocket-rk3576-sim.md have the per-register detail and sources):
 * - every regcmd word is checked against the SoC's generated register table: unknown target or
 *   register, or a bit outside the register's defined fields, is an error;
 * - register writes land in the unit's ping-pong group selected by its S_POINTER; the op-enable
 *   word executes the groups selected by the executers;
 * - execution reads every register the datapath needs; a register the task relies on that was
 *   never written in this job is an error, and so is a register written but never consumed by the
 *   execution that follows (nothing the encoder emits is silently ignored);
 * - registers that select behaviour the simulator does not implement must hold the only value(s)
 *   understood, else the task fails naming register and value.
 */
#define _GNU_SOURCE
#include "sim_npu.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_dot.h"
#include "sim_dpu.h"
#include "sim_npu_priv.h"

int rkt_unit_of(uint32_t offset)
{
    switch (offset >> 12) {
    case 0x0: return U_PC;
    case 0x1: return U_CNA;
    case 0x2: return U_CMAC;
    case 0x3: return U_CORE;
    case 0x4: return U_DPU;
    case 0x5: return U_RDMA;
    case 0x6: return U_PPU;
    case 0x7: return U_PPU_RDMA;
    default: return U_NONE;
    }
}

const char *rkt_reg_name(const rkt_npu *n, uint32_t offset)
{
    if (offset >= 0x8000 || (offset & 3) || n->desc[offset / 4] < 0)
        return "?";
    return n->soc->regs[n->desc[offset / 4]].name;
}

int rkt_fail(rkt_npu *n, const char *fmt, ...)
{
    if (!n->bad) {
        int k = n->in_stream ? snprintf(n->err, sizeof(n->err), "regcmd word %u: ", n->word) : 0;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(n->err + k, sizeof(n->err) - (size_t)k, fmt, ap);
        va_end(ap);
        n->bad = 1;
    }
    return -EINVAL;
}

rkt_npu *rkt_npu_create(const struct rkt_gen *gen, const struct teflon_sim_rules *rules, rkt_mem_lookup lookup,
                        void *ctx)
{
    if (!gen)
        return NULL;
    const struct rkt_soc *s = gen->soc;
    rkt_npu *n = calloc(1, sizeof(*n));
    if (!n)
        return NULL;
    /* the datapath is chosen when the device opens: TEFLON_SIM_REFERENCE=1 runs the reference datapath,
     * TEFLON_SIM_KERNELS=c|avx2|avx512|neondot forces the fast path's kernels (when the CPU runs them) */
    const char *ref = getenv("TEFLON_SIM_REFERENCE");
    const struct rkt_dot_ops *ops = NULL;
    if (!(ref && strcmp(ref, "1") == 0) && !(ops = rkt_dot_select(getenv("TEFLON_SIM_KERNELS"))))
        ops = rkt_dot_select(NULL);
    n->conv = rkt_conv_create(ops);
    if (!n->conv) {
        free(n);
        return NULL;
    }
    n->gen = gen;
    n->soc = s;
    n->rules = *rules;
    n->lookup = lookup;
    n->ctx = ctx;
    for (int i = 0; i < RKT_NSLOTS; i++)
        n->desc[i] = -1;
    for (int i = 0; i < s->nregs; i++)
        n->desc[s->regs[i].offset / 4] = (int16_t)i;
    return n;
}

void rkt_npu_destroy(rkt_npu *n)
{
    if (!n)
        return;
    rkt_conv_destroy(n->conv);
    free(n->ring.data);
    free(n->ring.tag);
    free(n->bias);
    free(n->ow);
    free(n->mul);
    free(n->window);
    free(n);
}

void rkt_npu_attach(rkt_npu *n, rkt_mem_lookup lookup, void *ctx)
{
    n->lookup = lookup;
    n->ctx = ctx;
}

void rkt_npu_job_begin(rkt_npu *n)
{
    memset(n->written, 0, sizeof(n->written));
    memset(n->dirty, 0, sizeof(n->dirty));
    n->cbuf.valid = 0;
    memset(n->lut_loaded, 0, sizeof(n->lut_loaded));
    n->lut_write = 0;
    n->job_tasks = n->lut_task = 0;
    if (n->ring.tag)
        memset(n->ring.tag, 0, (size_t)n->ring.granules * sizeof(*n->ring.tag));
}

const char *rkt_npu_error(const rkt_npu *n)
{
    return n->err;
}

uint64_t rkt_npu_macs(const rkt_npu *n)
{
    return n->macs;
}

void rkt_npu_task_counters(const rkt_npu *n, struct rkt_npu_counters *out)
{
    *out = n->task_ctr;
}

/* ---- register file -------------------------------------------------------------------------- */

uint32_t rkt_rd(rkt_npu *n, uint32_t off)
{
    const int u = rkt_unit_of(off);
    if (u < 0 || off >= 0x8000) {
        rkt_fail(n, "internal: 0x%04x is not a ping-ponged unit register", off);
        return 0;
    }
    const int g = n->exe[u];
    n->consumed[off / 4] = 1;
    if (!n->written[g][off / 4]) {
        rkt_fail(n, "%s (0x%04x) is needed by the task but was never written in this job", rkt_reg_name(n, off), off);
        return 0;
    }
    return n->regs[g][off / 4];
}

/* The regcmd word that wrote a register of the executing group (for messages). */
static unsigned written_by(const rkt_npu *n, uint32_t off)
{
    const int u = rkt_unit_of(off);
    return u >= 0 && off < 0x8000 ? n->word_at[n->exe[u]][off / 4] : 0;
}

uint32_t rkt_want(rkt_npu *n, uint32_t off, uint32_t expect, const char *why)
{
    const uint32_t v = rkt_rd(n, off);
    if (!n->bad && v != expect)
        rkt_fail(n, "%s = 0x%08x not understood (only 0x%08x: %s) [regcmd word %u]", rkt_reg_name(n, off), v, expect,
                 why, written_by(n, off));
    return v;
}

void rkt_check(rkt_npu *n, int ok, uint32_t off, uint32_t v, const char *fmt, ...)
{
    if (ok || n->bad)
        return;
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    rkt_fail(n, "%s = 0x%08x: %s [regcmd word %u]", rkt_reg_name(n, off), v, why, written_by(n, off));
}

uint8_t *rkt_mem(rkt_npu *n, enum rkt_dma dma, const char *what, uint32_t iova, uint64_t len)
{
    uint8_t *p = n->lookup(n->ctx, iova, len);
    if (!p) {
        rkt_fail(n, "DMA fault: %s [0x%08x, +0x%llx) is not inside one buffer object", what, iova,
                 (unsigned long long)len);
        return NULL;
    }
    switch (dma) {
    case RKT_DMA_FEATURE: n->task_ctr.feature_rd += len; break;
    case RKT_DMA_WEIGHT: n->task_ctr.weight_rd += len; break;
    case RKT_DMA_BIAS: n->task_ctr.bias_rd += len; break;
    case RKT_DMA_WRITE: n->task_ctr.data_wr += len; break;
    case RKT_DMA_EXTENT: break;
    }
    return p;
}

int rkt_check_all_consumed(rkt_npu *n)
{
    for (int r = 0; r < n->soc->nregs; r++) {
        const uint32_t off = n->soc->regs[r].offset, i = off / 4;
        const int u = rkt_unit_of(off);
        if (u < 0 || !n->dirty[n->exe[u]][i])
            continue;
        if (!n->consumed[i])
            return rkt_fail(n, "%s (0x%04x) = 0x%08x was written but is not used by this task (not simulated)",
                            n->soc->regs[r].name, off, n->regs[n->exe[u]][i]);
        n->dirty[n->exe[u]][i] = 0;
    }
    return 0;
}

int rkt_run_conv(rkt_npu *n, const struct rkt_conv_task *t)
{
    const struct rkt_conv_geom *g = &t->g;
    if (n->hang) /* a hypothesis under which the task never completes: nothing is computed or written */
        return 0;
    if (rkt_conv_run(n->conv, t, n->err, sizeof(n->err)))
        return n->bad = 1, -ENOMEM;
    const uint64_t macs = (uint64_t)t->out_w * t->out_h * g->kw * g->kh * g->ic * (g->depthwise ? 1 : (uint64_t)g->kernels);
    n->macs += macs;
    n->task_ctr.macs += macs;
    return 0;
}

int rkt_tables_reserve(rkt_npu *n, size_t entries)
{
    if (entries <= n->table_cap)
        return 0;
    int32_t *b = realloc(n->bias, entries * sizeof(*b));
    if (b)
        n->bias = b;
    int16_t *o = realloc(n->ow, entries * sizeof(*o));
    if (o)
        n->ow = o;
    int16_t *m = realloc(n->mul, entries * sizeof(*m));
    if (m)
        n->mul = m;
    if (!b || !o || !m) {
        rkt_fail(n, "simulator out of memory for the per-channel tables");
        n->bad = 1;
        return -ENOMEM;
    }
    n->table_cap = entries;
    return 0;
}

static int spointer_write(rkt_npu *n, int u, uint32_t v, int from_kernel)
{
    const uint32_t core_bits = v & RKT_SPOINTER_CORE_SELECT;
    if ((v & ~core_bits) != RKT_SPOINTER_PP || (core_bits && !from_kernel))
        return rkt_fail(n, "S_POINTER value 0x%08x for unit %d not understood (only 0x%x: ping-pong pointer and "
                        "executer toggling per task%s)", v, u, RKT_SPOINTER_PP, from_kernel ? " + core select" : "");
    /* the mode only: writing the same mode again does not move the pointer or the executer [INFERRED] */
    n->spointer[u] = v;
    return 0;
}

/* ---- the PC ---------------------------------------------------------------------------------- */

static int stream_write(rkt_npu *n, uint16_t target, uint32_t off, uint32_t val)
{
    if (off >= 0x8000 || (off & 3) || n->desc[off / 4] < 0)
        return rkt_fail(n, "unknown register 0x%04x (target 0x%04x, value 0x%08x)", off, target, val);
    const struct rocket_reg_desc *d = &n->soc->regs[n->desc[off / 4]];
    if (d->target != target)
        return rkt_fail(n, "%s written with target 0x%04x (its unit's target is 0x%04x)", d->name, target, d->target);
    if (val & ~d->defined_mask)
        return rkt_fail(n, "%s = 0x%08x sets bits 0x%08x outside its defined fields", d->name, val, val & ~d->defined_mask);

    const int u = rkt_unit_of(off);
    switch (off) {
    case RKT_PC_BASE_ADDRESS:
        if (val & 1u) /* PC_SEL */
            return rkt_fail(n, "PC_BASE_ADDRESS = 0x%08x: PC_SEL is not writable from a stream", val);
        n->chain_base = val;
        return 0;
    case RKT_PC_REGISTER_AMOUNTS:
        n->chain_amount = val;
        return 0;
    case RKT_DPU_S_POINTER:
    case RKT_DPU_RDMA_S_POINTER:
    case RKT_PPU_S_POINTER:
    case RKT_PPU_RDMA_S_POINTER:
        return spointer_write(n, u, val, 0);
    case RKT_CNA_S_POINTER:
    case RKT_CORE_S_POINTER:
    case RKT_CMAC_S_POINTER:
        if (n->soc->stream_core_spointers)
            return spointer_write(n, u, val, 0);
        return rkt_fail(n, "%s written from a regcmd stream: the kernel owns it (it needs the per-core bit)", d->name);
    default:
        break;
    }
    if (u == U_PC)
        return rkt_fail(n, "%s is not writable from a regcmd stream", d->name);
    if ((off & 0xFFF) == 0x008)
        return rkt_fail(n, "%s written from a regcmd stream: units are enabled by the op-enable word", d->name);
    /* the LUT RAM is written as the words arrive (sim_dpu.c); the registers are still kept for the checks */
    if (off == RKT_DPU_LUT_ACCESS_CFG)
        rkt_lut_access_cfg(n, val & 0x3FFu, (val >> 16) & 1, (val >> 17) & 1);
    else if (off == RKT_DPU_LUT_ACCESS_DATA && rkt_lut_access_data(n, val))
        return -EINVAL;
    const int grp = n->ptr[u];
    n->word_at[grp][off / 4] = (uint16_t)n->word;
    n->regs[grp][off / 4] = val;
    n->written[grp][off / 4] = 1;
    n->dirty[grp][off / 4] = 1;
    return 0;
}

/* The completion interrupt is the last unit's, in its executing group: DPU_0/1 for a conv, PPU_0/1 for a pool
 * [TRM: "do not set PPU mask bit if don't use PPU"; the vendor's pool tasks carry int_mask 0xC00]. */
static void task_done(rkt_npu *n, int pool)
{
    n->job_tasks++;
    if (!pool)
        n->int_raw |= 1u << (RKT_IRQ_DPU_0 + n->exe[U_DPU]);
    else if (!n->soc->ppu_no_irq)
        n->int_raw |= 1u << (RKT_IRQ_PPU_0 + n->exe[U_PPU]);
    for (int u = 0; u < U_COUNT; u++) {
        if (n->spointer[u] & 2u) /* POINTER_PP_EN */
            n->ptr[u] ^= 1;
        if (n->spointer[u] & 4u) /* EXECUTER_PP_EN */
            n->exe[u] ^= 1;
    }
}

static int pc_run(rkt_npu *n)
{
    const uint32_t ntask = n->task_con & n->soc->task_number_mask;
    if (ntask != 1)
        return rkt_fail(n, "PC_TASK_CON = 0x%08x asks for %u tasks: only TASK_NUMBER 1 (one kick per task, as accel/rocket "
                        "does) is simulated%s", n->task_con, ntask, n->soc->task_con_hint);
    if (n->task_dma_base)
        return rkt_fail(n, "PC_TASK_DMA_BASE_ADDR = 0x%08x: descriptor-array dispatch is not simulated", n->task_dma_base);
    if (n->pc_base & 0xF)
        return rkt_fail(n, "PC_BASE_ADDRESS = 0x%08x: the regcmd address must be 16-byte aligned with PC_SEL 0", n->pc_base);
    const uint32_t nwords = n->gen->amount_scale * ((n->pc_amount & 0xFFFFu) + 1); /* PC_DATA_AMOUNT */
    memset(&n->task_ctr, 0, sizeof(n->task_ctr));
    const uint8_t *src = rkt_mem(n, RKT_DMA_EXTENT, "regcmd fetch (PC_BASE_ADDRESS/REGISTER_AMOUNTS)", n->pc_base, (uint64_t)nwords * 8);
    if (!src)
        return -EINVAL;
    n->chain_base = n->chain_amount = 0;

    int prev_sync = 0;
    for (uint32_t i = 0; i < nwords; i++) {
        uint64_t w;
        memcpy(&w, src + 8 * (size_t)i, 8);
        n->word = i;
        const uint16_t target = (uint16_t)(w >> 48);
        const uint32_t val = (uint32_t)(w >> 16);
        const uint32_t off = (uint32_t)(w & 0xFFFF);
        int rc = 0;
        if (w == 0) {
            prev_sync = 0;
            continue;
        }
        if (target == RKT_TARGET_SYNC) {
            if (off != 0 || val != 0)
                return rkt_fail(n, "regcmd word %u: SYNC word 0x%016llx must have offset and value 0", i, (unsigned long long)w);
            prev_sync = 1;
            continue;
        }
        if (target == RKT_TARGET_OP_ENABLE) {
            const uint32_t conv = n->soc->conv_op_enable ? n->soc->conv_op_enable : RKT_OPEN_CONV_BITMAP;
            if (off != RKT_OFFSET_OP_ENABLE || (val != conv && val != RKT_OPEN_PPU_BITMAP && val != RKT_OPEN_DPU_BITMAP))
                return rkt_fail(n, "regcmd word %u: op-enable 0x%016llx not understood (only offset 0x%04x value 0x%x = "
                            "the conv units, 0x%x = PPU+PPU_RDMA or 0x%x = DPU+DPU_RDMA)",
                            i, (unsigned long long)w, RKT_OFFSET_OP_ENABLE, conv, RKT_OPEN_PPU_BITMAP,
                            RKT_OPEN_DPU_BITMAP);
            n->op_enable = val;
            if (!prev_sync)
                return rkt_fail(n, "regcmd word %u: op-enable not immediately preceded by the SYNC word", i);
            for (uint32_t j = i + 1; j < nwords; j++) {
                uint64_t z;
                memcpy(&z, src + 8 * (size_t)j, 8);
                if (z)
                    return rkt_fail(n, "regcmd word %u: 0x%016llx fetched after the op-enable", j, (unsigned long long)z);
            }
            if (n->chain_base) {
                const uint64_t len = 8ull * n->gen->amount_scale * ((uint64_t)(n->chain_amount & 0xFFFFu) + 1);
                if (!n->lookup(n->ctx, n->chain_base, len))
                    return rkt_fail(n, "PC_BASE_ADDRESS/REGISTER_AMOUNTS chain 0x%08x/0x%08x does not point at a regcmd buffer",
                                n->chain_base, n->chain_amount);
            } else if (n->chain_amount) {
                return rkt_fail(n, "PC_REGISTER_AMOUNTS = 0x%08x with a zero next-task address", n->chain_amount);
            }
            memset(n->consumed, 0, sizeof(n->consumed));
            const int pool = val == RKT_OPEN_PPU_BITMAP;
            if (pool && !n->soc->ppu_pad_value)
                return rkt_fail(n, "regcmd word %u: PPU task not simulated on %s (a PPU task raises no completion interrupt "
                                "there, so a one-task kick of it never completes: docs/hardware/rk3568.md)", i,
                                n->gen->generation);
            n->hang = 0;
            rc = pool ? rkt_ppu_execute(n) : n->soc->execute(n);
            if (rc)
                return rc;
            if (n->hang) /* no completion: the kernel's wait runs into its job timeout */
                return 0;
            task_done(n, pool);
            return 0;
        }
        prev_sync = 0;
        n->in_stream = 1;
        rc = stream_write(n, target, off, val);
        n->in_stream = 0;
        if (rc)
            return rc;
    }
    return rkt_fail(n, "the PC fetched %u words without an op-enable word", nwords);
}

int rkt_npu_mmio_write(rkt_npu *n, uint32_t offset, uint32_t value)
{
    n->bad = 0;
    n->err[0] = 0;
    if (offset < 0x8000 && !(offset & 3) && n->desc[offset / 4] >= 0) {
        const struct rocket_reg_desc *d = &n->soc->regs[n->desc[offset / 4]];
        if (value & ~d->defined_mask)
            return rkt_fail(n, "MMIO write %s = 0x%08x sets bits 0x%08x outside its defined fields (%s)", d->name, value,
                            value & ~d->defined_mask, n->gen->generation);
    }
    switch (offset) {
    case RKT_PC_BASE_ADDRESS: n->pc_base = value; return 0;
    case RKT_PC_REGISTER_AMOUNTS: n->pc_amount = value; return 0;
    case RKT_PC_INTERRUPT_MASK: n->int_mask = value; return 0;
    case RKT_PC_INTERRUPT_CLEAR: n->int_raw &= ~value; return 0;
    case RKT_PC_TASK_CON: n->task_con = value; return 0;
    case RKT_PC_TASK_DMA_BASE_ADDR: n->task_dma_base = value; return 0;
    case RKT_CNA_S_POINTER: return spointer_write(n, U_CNA, value, 1);
    case RKT_CORE_S_POINTER: return spointer_write(n, U_CORE, value, 1);
    case RKT_PC_OPERATION_ENABLE:
        return value & 1 ? pc_run(n) : 0;
    default:
        return rkt_fail(n, "MMIO write of 0x%08x to 0x%04x is not simulated", value, offset);
    }
}

uint32_t rkt_npu_mmio_read(const rkt_npu *n, uint32_t offset)
{
    switch (offset) {
    case RKT_PC_INTERRUPT_RAW_STATUS: return n->int_raw;
    case RKT_PC_INTERRUPT_STATUS: return n->int_raw & n->int_mask;
    case RKT_PC_INTERRUPT_MASK: return n->int_mask;
    case RKT_PC_TASK_CON: return n->task_con;
    default: return 0;
    }
}
