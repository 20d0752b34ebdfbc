/* The DPU without the convolution pipe (sim_dpu.h): the flying-mode element-wise datapath and the EW stage's
 * lookup table. Facts and inferences: docs/hardware/rocket.md "DPU-only programs and the LUT". */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "sim_dot.h"
#include "sim_dpu.h"

void rkt_lut_access_cfg(rkt_npu *n, uint32_t addr, int table, int write)
{
    n->lut_addr = addr;
    n->lut_table = table;
    n->lut_write = write;
}

/* A data word with ACCESS_TYPE write stores one int16 entry and moves to the next address (NVDLA
 * S_LUT_ACCESS_DATA); with ACCESS_TYPE read the word is not stored [INFERRED: the read direction returns
 * data to the CPU over MMIO, which a stream cannot observe]. */
int rkt_lut_access_data(rkt_npu *n, uint32_t value)
{
    if (!n->lut_write)
        return 0;
    if (n->lut_addr >= RKT_LUT_ENTRIES)
        return rkt_fail(n, "LUT_ACCESS_DATA: write past the %d entries of LUT table %d", RKT_LUT_ENTRIES, n->lut_table);
    n->lut[n->lut_table][n->lut_addr] = (int16_t)(value & 0xFFFFu);
    n->lut_loaded[n->lut_table][n->lut_addr] = n->job_tasks + 1;
    n->lut_addr++;
    return 0;
}

/* One table's lookup of x: 1 hit (*v set), 0 miss (under- or overflow), -1 an error recorded. Only inputs that
 * land exactly on an entry are simulated: interpolation between entries needs a rounding rule no public
 * source gives. */
static int lut_lookup(rkt_npu *n, const struct rkt_dpu_task *t, int tb, int32_t x, int16_t *v)
{
    const struct rkt_lut_range *r = &t->range[tb];
    if (x < r->start || x > r->end)
        return 0;
    const int64_t d = (int64_t)x - r->start;
    const int64_t idx = d >> r->select;
    if (d & (((int64_t)1 << r->select) - 1))
        return rkt_fail(n, "LUT table %d: input %d falls between entries (START %d, INDEX_SELECT %d): interpolation is "
                        "not simulated", tb, x, r->start, r->select), -1;
    if (idx >= RKT_LUT_ENTRIES || !n->lut_loaded[tb][idx])
        return rkt_fail(n, "LUT table %d: input %d reads entry %lld, never loaded in this job", tb, x, (long long)idx), -1;
    *v = n->lut[tb][idx];
    return 1;
}

/* The EW LUT of one element: a table that hits wins; both hit -> LUT_HYBRID_PRIORITY (NVDLA SDP). Neither
 * hitting needs the under/overflow slopes, whose arithmetic is not public: an error. */
static int lut_map(rkt_npu *n, const struct rkt_dpu_task *t, int32_t x, int32_t *out)
{
    int16_t le = 0, lo = 0;
    const int hle = lut_lookup(n, t, 0, x, &le), hlo = lut_lookup(n, t, 1, x, &lo);
    if (hle < 0 || hlo < 0)
        return -1;
    if (!hle && !hlo)
        return rkt_fail(n, "LUT: input %d is outside both tables (under/overflow slopes are not simulated)", x), -1;
    *out = hle && hlo ? (t->hybrid_lo ? lo : le) : hle ? le : lo;
    return 0;
}

static int8_t out_cvt(const struct rkt_dpu_task *t, int32_t v)
{
    const int64_t y = rkt_shift_even((int64_t)v * t->out_scale, t->out_shift) + t->out_offset;
    return (int8_t)(y < -128 ? -128 : y > 127 ? 127 : y);
}

int rkt_dpu_run(rkt_npu *n, const struct rkt_dpu_task *t)
{
    const int nsurf = (t->c + 15) / 16;
    const uint64_t surf = (uint64_t)t->w * t->h * 16;
    /* all 256 int8 values first: every element then is one table read */
    int8_t map[256];
    for (int x = -128; x < 128; x++) {
        int32_t v = x;
        if (t->lut && lut_map(n, t, x, &v))
            return -EINVAL;
        map[x + 128] = out_cvt(t, v);
    }
    for (int s = 0; s < nsurf; s++) {
        const uint8_t *in = rkt_mem(n, RKT_DMA_FEATURE, "input surface (DPU_RDMA_SRC_BASE_ADDR)",
                                    t->in_iova + (uint32_t)(s * t->surf_pitch), surf);
        uint8_t *out = rkt_mem(n, RKT_DMA_WRITE, "output surface (DPU_DST_BASE_ADDR)",
                               t->out_iova + (uint32_t)(s * t->surf_pitch), surf);
        if (!in || !out)
            return -EINVAL;
        for (uint64_t i = 0; i < surf; i++)
            out[i] = (uint8_t)map[(int8_t)in[i] + 128];
    }
    return 0;
}
