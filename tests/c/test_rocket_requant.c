/* The fast datapath's requantization kernels (drivers/rocket/sim_dot*.c) against rkt_requantize, the scalar
 * statement of the DPU stages, on random rows: every kernel set this CPU runs must write the same bytes. Built by
 * tests/rocket/test_sim_fast.py straight from drivers/rocket/ (under ASan/UBSan when the runtime is there):
 *
 *   test_rocket_requant [rows]    prints "<set>: <rows> rows" per kernel set it ran, then
 *                                 "all checks passed"; a mismatch prints the first differing row and exits 1
 *
 * The rows cover the paths of each set: the int32 bound (corr32) held or not, with and without the window sums,
 * the RK3576 multiplier with one shift or a shift per sign, saturation after the multiplier, the DPU clamp, the
 * EW operand (ties to even or half up), OUT_CVT scales and offsets beyond what a vector tail takes, and shifts
 * small enough that ties are frequent, also on rows inside the AVX-512 tail's plain loop with odd offsets.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_dot.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t next(void)
{
    /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

/* uniform in [lo, hi] */
static int64_t range(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(next() % (uint64_t)(hi - lo + 1));
}

static int chance(int percent)
{
    return (int)(next() % 100) < percent;
}

#define MAXN 80
#define MAXSURF ((MAXN + 15) / 16)
#define MAXPIX 24

struct row {
    struct rkt_requant q;
    int64_t corr[MAXSURF * 16];
    int32_t corr32[MAXSURF * 16], ow[MAXSURF * 16], bias[MAXSURF * 16], mul[MAXSURF * 16];
    int32_t acc[MAXPIX * (MAXSURF * 16 + 8)];
    int32_t sums[MAXPIX];
    uint8_t ew[MAXSURF * (MAXPIX * 16 + 32)];
    size_t astride;
    int npix, nsurf, with_sums;
};

/* A random row, with the tables and bounds sim_conv.c's fast_run would give it. */
static void make_row(struct row *r)
{
    memset(r, 0, sizeof(*r));
    struct rkt_requant *q = &r->q;
    const int n = (int)range(1, MAXN);
    r->nsurf = (n + 15) / 16;
    r->npix = (int)range(1, MAXPIX);
    r->astride = (size_t)r->nsurf * 16 + (size_t)range(0, 8);
    r->with_sums = chance(60);
    const int nq = r->nsurf * 16;
    /* tie rows: small values, scale and shift, so OUT_CVT's result stays inside the vector tails' bounds and
     * its ties (half-way quotients) are frequent, with odd offsets (an offset added before the rounding would
     * move those ties) */
    const int tie = chance(10);
    /* accumulator and window-sum magnitudes: realistic ones, or ones that break the int32 bound */
    const int64_t amax = tie ? range(0, 1 << 12) : chance(85) ? range(0, 1 << 22) : range(0, INT32_MAX / 2);
    const int64_t smax = r->with_sums ? range(0, 1 << 16) : 0;
    const int trunc = chance(70) ? 0 : (int)range(1, 10);
    const int64_t tround = trunc ? (int64_t)1 << (trunc - 1) : 0;
    const int with_mul = chance(50);
    int64_t mul_max = 0;
    for (int k = 0; k < nq; k++) {
        const int live = k < n;
        r->corr[k] = live ? range(-amax, amax) : 0;
        r->ow[k] = live && r->with_sums ? (int32_t)range(-256, 256) : 0;
        r->bias[k] = live ? (int32_t)(tie ? range(-(1 << 12), 1 << 12) : chance(90) ? range(-(1 << 20), 1 << 20) : range(-(1 << 30), 1 << 30)) : 0;
        r->mul[k] = live && with_mul ? (int32_t)range(-32768, 32767) : 0; /* a signed 16-bit coefficient */
        mul_max = llabs(r->mul[k]) > mul_max ? llabs(r->mul[k]) : mul_max;
    }
    int fits32 = 1;
    int64_t vmax = 0;
    for (int k = 0; k < nq; k++) {
        const int64_t b = amax + llabs(r->corr[k]) + llabs(r->ow[k]) * smax + tround;
        const int64_t v = (b >> trunc) + 1 + llabs(r->bias[k]);
        fits32 &= b <= INT32_MAX && v <= INT32_MAX;
        vmax = v > vmax ? v : vmax;
        r->corr32[k] = (int32_t)(r->corr[k] + tround);
    }
    for (int p = 0; p < r->npix; p++) {
        r->sums[p] = (int32_t)range(0, smax);
        for (size_t k = 0; k < r->astride; k++)
            r->acc[(size_t)p * r->astride + k] = (int32_t)range(-amax, amax);
    }
    const int shift = tie ? (int)range(1, 6) : chance(20) ? (int)range(0, 4) : chance(90) ? (int)range(12, 30) : (int)range(31, 47);
    /* the register fields: OUT_CVT_SCALE 16 bits unsigned, OUT_CVT_OFFSET 32 bits */
    const int64_t scale = tie ? range(1, 255) : chance(95) ? range(0, 32767) : range(0, 65535);
    const int64_t offset = tie ? 2 * range(-64, 63) + 1 : chance(85) ? range(-128, 127) : chance(50) ? range(-(1 << 26), 1 << 26)
                                                                      : range(INT32_MIN, INT32_MAX);
    q->n = n;
    q->corr = r->corr;
    q->corr32 = fits32 ? r->corr32 : NULL;
    q->ow = r->ow;
    q->bias = r->bias;
    q->mul = with_mul ? r->mul : NULL;
    q->trunc = trunc;
    q->tround = tround;
    q->shift = shift;
    q->scale = scale;
    q->offset = offset;
    /* pre / post as sim_conv.c's post_of folds them */
    q->pre = shift ? ((int64_t)1 << (shift - 1)) - 1 : 0;
    if (shift <= 31)
        q->pre += offset * ((int64_t)1 << shift);
    else
        q->post = offset;
    q->mul_shift_pos = (int)range(0, 31);
    q->mul_shift_neg = chance(70) ? q->mul_shift_pos : (int)range(0, 31);
    q->vmax = vmax;
    q->mul_max = with_mul ? mul_max : 0;
    q->lo = INT32_MIN;
    q->hi = INT32_MAX;
    if (chance(15)) {
        q->lo = range(-1000000, 0);
        q->hi = range(0, 1000000);
    }
    if (chance(30)) {
        for (size_t i = 0; i < sizeof(r->ew); i++)
            r->ew[i] = (uint8_t)next();
        q->ew_row = r->ew;
        q->ew_surf_pitch = (size_t)r->npix * 16 + (size_t)range(0, 32);
        /* EW_CVT_OFFSET 32 bits, EW_OP_CVT_SCALE signed 16 bits */
        q->ew_offset = chance(80) ? range(-128, 127) : chance(50) ? range(-(1 << 20), 1 << 20)
                                                                  : range(INT32_MIN, INT32_MAX);
        q->ew_scale = range(-32768, 32767);
        q->ew_shift = (int)(chance(30) ? range(0, 3) : range(4, 24));
        q->ew_tie_up = chance(10);
    }
}

static int check_set(const struct rkt_dot_ops *ops, int rows)
{
    static struct row r;
    static uint8_t got[MAXSURF][MAXPIX * 16], want[MAXSURF][MAXPIX * 16];
    for (int i = 0; i < rows; i++) {
        make_row(&r);
        const struct rkt_requant *q = &r.q;
        uint8_t *dst[MAXSURF];
        for (int s = 0; s < r.nsurf; s++)
            dst[s] = got[s];
        memset(got, 0xA5, sizeof(got));
        ops->requant(q, r.acc, r.astride, r.with_sums ? r.sums : NULL, r.npix, r.nsurf, dst);
        for (int p = 0; p < r.npix; p++)
            for (int k = 0; k < r.nsurf * 16; k++) {
                const int64_t core = (int64_t)r.acc[(size_t)p * r.astride + k] + q->corr[k] +
                                     (int64_t)q->ow[k] * (r.with_sums ? r.sums[p] : 0);
                want[k / 16][p * 16 + k % 16] =
                    k >= q->n ? 0
                              : (uint8_t)rkt_requantize(q->trunc, q->tround, q->bias[k], q->mul != NULL,
                                                        q->mul ? q->mul[k] : 0, q->mul_shift_pos, q->mul_shift_neg,
                                                        q->lo, q->hi, q->scale, q->pre, q->shift, q->post, core,
                                                        rkt_ew_term(q, p, k), q->ew_mul, q->ew_trunc, q->lut);
            }
        for (int s = 0; s < r.nsurf; s++)
            for (int b = 0; b < r.npix * 16; b++)
                if (got[s][b] != want[s][b]) {
                    printf("FAIL %s row %d: surface %d pixel %d channel %d: %d, rkt_requantize %d (n %d, shift %d, "
                           "scale %lld, offset %lld, trunc %d, mul %d sp %d sn %d, corr32 %d, sums %d, ew %d, "
                           "clamp %d)\n",
                           ops->name, i, s, b / 16, s * 16 + b % 16, (int8_t)got[s][b], (int8_t)want[s][b], q->n,
                           q->shift, (long long)q->scale, (long long)q->offset, q->trunc, q->mul != NULL,
                           q->mul_shift_pos, q->mul_shift_neg, q->corr32 != NULL, r.with_sums, q->ew_row != NULL,
                           q->lo != INT32_MIN);
                    return 1;
                }
    }
    printf("%s: %d rows\n", ops->name, rows);
    return 0;
}

int main(int argc, char **argv)
{
    const int rows = argc > 1 ? atoi(argv[1]) : 20000;
    static const char *const names[] = {"c", "avx2", "avx512", "neondot"};
    int failed = 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const struct rkt_dot_ops *ops = rkt_dot_select(names[i]);
        if (!ops || strcmp(ops->name, names[i]) != 0)
            continue; /* not built for this CPU, or the CPU does not run it */
        rng_state = 0x9E3779B97F4A7C15ull; /* the same rows for every set */
        failed |= check_set(ops, rows);
    }
    if (failed)
        return 1;
    printf("all checks passed\n");
    return 0;
}
