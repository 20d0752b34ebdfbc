/* The body of one Ethos-U weight-stream slice without zero runs, exported for the Python encoder
 * (teflon.ethosu.mlw; format: docs/hardware/ethosu-weights.md §2.4 and §2.6). Step t of the body holds the 12-bit
 * WUNARY0 and the WUNARY1 bits of unary chunk t, then the GRC remainders of the symbols whose last position is in
 * chunk t - 1; an uncompressed slice is its indices back to back. One pass instead of the numpy chunk arrays. */
#include "native.h"

#include "native_bits.h"

#define ETHOSU_MLW_CHUNK 12
#define ETHOSU_MLW_CODES 512 /* 9-bit sign-magnitude codes, and weight indices */
#define ETHOSU_MLW_ZDIVS 4 /* zero-run divisors 0..3 */
#define ETHOSU_MLW_SLICE_MAX 32768 /* weights per slice (SLICELEN is 15 bits of length - 1) */
#define ETHOSU_MLW_ZDIV_DISABLE 6 /* ZDIV of a slice without zero runs */
#define ETHOSU_MLW_ZDIV_EOS 7 /* ZDIV of the end-of-stream marker */
#define ETHOSU_MLW_STREAM_ALIGN 16 /* streams end 16-byte aligned */
#define ETHOSU_MLW_VITERBI_MAX 16 /* settings the slice plan may weigh at once */

#define ETHOSU_MLW_Q_MAX 31 /* the largest plain GRC quotient a setting is chosen for (mlw.GRC_Q_MAX) */

/* Up to 64 bits, as two fields. */
static inline void ethosu_mlw_put64(teflon_bits *b, uint64_t value, unsigned width)
{
    teflon_bits_put(b, value & 0xFFFFFFFFu, width < 32 ? width : 32);
    teflon_bits_put(b, value >> 32, width > 32 ? width - 32 : 0);
}

/* Set bits of a 12-bit value (without a popcount instruction the builtin is a library call). */
static inline unsigned ethosu_mlw_popcount12(unsigned v)
{
    v = v - ((v >> 1) & 0x555u);
    v = (v & 0x333u) + ((v >> 2) & 0x333u);
    v = (v + (v >> 4)) & 0xF0Fu;
    return (v + (v >> 8)) & 0x1Fu;
}

/* The pending state of a GRC body: unary positions not yet sent (u0, npos of them; a position is set when its
 * code is 1 or 2), the "> 1" bits of the set ones (u1, n1), and the remainders (at most 12 x 5 bits) of the
 * symbols done in the chunk being filled (rem) and in the chunk sent last (prev). */
typedef struct {
    uint64_t u0, u1, rem, prev;
    unsigned npos, n1, rem_bits, prev_bits;
} ethosu_mlw_grc;

/* One step: the first 12 pending positions as WUNARY0 and their WUNARY1 bits, then the remainders of the chunk
 * before; the chunk being filled becomes the chunk before. */
static inline void ethosu_mlw_step(teflon_bits *b, ethosu_mlw_grc *g)
{
    const unsigned chunk = (unsigned)(g->u0 & ((1u << ETHOSU_MLW_CHUNK) - 1));
    const unsigned c1 = ethosu_mlw_popcount12(chunk);
    /* WUNARY0 and its WUNARY1 bits as one field (at most 24 bits) */
    teflon_bits_put(b, chunk | (g->u1 & ((UINT64_C(1) << c1) - 1)) << ETHOSU_MLW_CHUNK, ETHOSU_MLW_CHUNK + c1);
    ethosu_mlw_put64(b, g->prev, g->prev_bits);
    g->u0 >>= ETHOSU_MLW_CHUNK;
    g->u1 >>= c1;
    g->npos = g->npos > ETHOSU_MLW_CHUNK ? g->npos - ETHOSU_MLW_CHUNK : 0;
    g->n1 -= c1;
    g->prev = g->rem;
    g->prev_bits = g->rem_bits;
    g->rem = 0;
    g->rem_bits = 0;
}

/* One weight symbol's unary positions: how many, their WUNARY0 bits, the WUNARY1 bits of the set ones and how many
 * of those. A plain quotient q is q / 2 positions of code 2 then one of code q % 2, a truncated one the single
 * code q (an uncompressed index is one position of code 0: q = 0, plain). */
typedef struct {
    unsigned positions, u0, u1, ones;
} ethosu_mlw_unary;

/* Returns -1 for a quotient no setting codes (plain above 31, truncated above 2). */
static inline int ethosu_mlw_symbol(unsigned q, unsigned trunc, ethosu_mlw_unary *u)
{
    if (trunc) {
        if (q > 2)
            return -1;
        u->positions = 1;
        u->u0 = q != 0;
        u->u1 = q > 1;
        u->ones = u->u0;
        return 0;
    }
    if (q > ETHOSU_MLW_Q_MAX)
        return -1;
    const unsigned twos = q >> 1, odd = q & 1;
    u->positions = twos + 1;
    u->u1 = (1u << twos) - 1;
    u->u0 = u->u1 | (odd << twos);
    u->ones = twos + odd;
    return 0;
}

/* A GRC body, symbol by symbol (ethosu_mlw_symbol); a symbol is done in the chunk of its last position. Returns -1
 * for a quotient no setting codes. */
static int ethosu_mlw_grc_body(teflon_bits *b, const uint16_t *idx, uint64_t n, unsigned div, unsigned trunc)
{
    const unsigned mask = (1u << div) - 1;
    ethosu_mlw_grc g = { 0, 0, 0, 0, 0, 0, 0, 0 };

    for (uint64_t s = 0; s < n; s++) {
        const unsigned v = idx[s], q = v >> div;
        ethosu_mlw_unary u;
        if (ethosu_mlw_symbol(q, trunc, &u) < 0)
            return -1;
        g.u0 |= (uint64_t)u.u0 << g.npos;
        g.u1 |= (uint64_t)u.u1 << g.n1;
        g.npos += u.positions;
        g.n1 += u.ones;
        while (g.npos > ETHOSU_MLW_CHUNK) /* chunks the symbol runs through without ending in them */
            ethosu_mlw_step(b, &g);
        g.rem |= (uint64_t)(v & mask) << g.rem_bits;
        g.rem_bits += div;
        if (g.npos == ETHOSU_MLW_CHUNK)
            ethosu_mlw_step(b, &g);
    }
    if (g.npos) /* the last, partly filled chunk: padding positions carry code 0 */
        ethosu_mlw_step(b, &g);
    ethosu_mlw_put64(b, g.prev, g.prev_bits); /* the last step: remainders only */
    return 0;
}

/* A slice body without zero runs: GRC indices, or with ubits > 0 uncompressed ubits-bit indices back to back. */
static int ethosu_mlw_plain_write(teflon_bits *b, const uint16_t *idx, uint64_t n, unsigned div, unsigned trunc,
                                  unsigned ubits)
{
    if (!ubits)
        return ethosu_mlw_grc_body(b, idx, n, div, trunc);
    for (uint64_t s = 0; s < n; s++) {
        if ((unsigned)idx[s] >> ubits)
            return -1;
        teflon_bits_put(b, idx[s], ubits);
    }
    return 0;
}

/* A slice's weight symbols cut into unary chunks on demand (the zero-run body interleaves them with the zero-run
 * chunks): width positions per chunk, and the symbols [done_a, s) completed so far; unary = 0 for uncompressed
 * indices (one position of code 0 per symbol, no unary fields). */
typedef struct {
    const uint16_t *idx;
    uint64_t n, s, done_a;
    unsigned div, trunc, unary, width;
    uint64_t u0, u1;
    unsigned npos, n1;
} ethosu_mlw_wchunks;

/* The next chunk's WUNARY0 (*u0), WUNARY1 (*u1, *c1 bits) and the symbols completed in it, [*a, *b). Returns -1
 * for a quotient no setting codes. */
static int ethosu_mlw_wnext(ethosu_mlw_wchunks *w, unsigned *u0, uint64_t *u1, unsigned *c1, uint64_t *a,
                            uint64_t *b)
{
    while (w->npos < w->width && w->s < w->n) {
        const unsigned q = w->unary ? (unsigned)w->idx[w->s] >> w->div : 0;
        if (!w->unary && (unsigned)w->idx[w->s] >> w->div)
            return -1; /* uncompressed: div is the index width */
        ethosu_mlw_unary u;
        if (ethosu_mlw_symbol(q, w->trunc, &u) < 0)
            return -1;
        w->u0 |= (uint64_t)u.u0 << w->npos;
        w->u1 |= (uint64_t)u.u1 << w->n1;
        w->npos += u.positions;
        w->n1 += u.ones;
        w->s++;
    }
    /* every symbol appended ends in this chunk but the last, which ends in a later one when it runs past it */
    *a = w->done_a;
    *b = w->npos > w->width ? w->s - 1 : w->s;
    w->done_a = *b;
    *u0 = (unsigned)(w->u0 & ((1u << w->width) - 1));
    *c1 = ethosu_mlw_popcount12(*u0);
    *u1 = w->u1 & ((UINT64_C(1) << *c1) - 1);
    w->u0 >>= w->width;
    w->u1 >>= *c1;
    w->npos = w->npos > w->width ? w->npos - w->width : 0;
    w->n1 -= *c1;
    return 0;
}

/* The zero runs cut into ZUNARY chunks: a run r is r >> zdiv ones then a zero; ones_left of run r are still to
 * place. Padding past the last run is zeros, each of which the decoder counts as a run. */
typedef struct {
    const uint32_t *runs;
    uint64_t n, r, ones_left;
    unsigned zdiv, width;
} ethosu_mlw_zchunks;

/* The next ZUNARY chunk; the runs completed in it are [*a, *b); *counted: the runs the decoder counts in it,
 * padding included. */
static unsigned ethosu_mlw_znext(ethosu_mlw_zchunks *z, uint64_t *a, uint64_t *b, uint64_t *counted)
{
    unsigned zu = 0, pos = 0;
    *a = z->r;
    *counted = 0;
    while (pos < z->width) {
        if (z->r < z->n && z->ones_left) {
            const unsigned k = z->ones_left < z->width - pos ? (unsigned)z->ones_left : z->width - pos;
            zu |= ((1u << k) - 1) << pos;
            pos += k;
            z->ones_left -= k;
            continue;
        }
        pos++; /* a run's closing zero, or padding */
        (*counted)++;
        if (z->r < z->n && ++z->r < z->n)
            z->ones_left = z->runs[z->r] >> z->zdiv;
    }
    *b = z->r;
    return zu;
}

/* A slice body with zero runs: the n weight indices (GRC divisor div, truncated when trunc, or uncompressed
 * ubits-bit indices when ubits > 0) interleaved with the nruns zero runs (divisor zdiv). */
static int ethosu_mlw_zero_run_write(teflon_bits *b, const uint16_t *idx, uint64_t n, const uint32_t *runs,
                                     uint64_t nruns, unsigned div, unsigned trunc, unsigned ubits, unsigned zdiv)
{
    const unsigned unary = ubits == 0, rem_bits = unary ? div : ubits;
    const unsigned rem_mask = (1u << rem_bits) - 1, zmask = (1u << zdiv) - 1;
    /* uncompressed: div is the index width (wnext checks it), chunks of 8 positions past 5 bits */
    ethosu_mlw_wchunks w = { idx, n, 0, 0, unary ? div : ubits, trunc, unary,
                             (!unary && ubits > 5) ? 8 : ETHOSU_MLW_CHUNK, 0, 0, 0, 0 };
    ethosu_mlw_zchunks z = { runs, nruns, 0, 0, zdiv, zdiv < 3 ? ETHOSU_MLW_CHUNK : 8 };
    uint64_t wp = 0, zp = 0, pw_a = 0, pw_b = 0, pz_a = 0, pz_b = 0;

    if (zdiv > 3 || n == 0 || nruns == 0)
        return -1;
    z.ones_left = runs[0] >> zdiv;
    /* One step per iteration, as the decoder reads them (docs/hardware/ethosu-weights.md §2.6): a weight chunk
     * while the weights lead the zero runs by fewer than 8 symbols, a zero-run chunk while they do not trail
     * them; WUNARY0, ZUNARY, WUNARY1, then the remainders of the previous step's chunks. */
    while (wp < n || zp < nruns) {
        const int64_t balance = (int64_t)wp - (int64_t)zp;
        const int w_on = balance < 8 && wp < n, z_on = balance >= 0 && zp < nruns;
        unsigned u0 = 0, c1 = 0, zu = 0;
        uint64_t u1 = 0, wa = 0, wb = 0, za = 0, zb = 0, counted = 0;
        if (w_on && ethosu_mlw_wnext(&w, &u0, &u1, &c1, &wa, &wb) < 0)
            return -1;
        if (z_on)
            zu = ethosu_mlw_znext(&z, &za, &zb, &counted);
        if (w_on && unary)
            teflon_bits_put(b, u0, ETHOSU_MLW_CHUNK);
        if (z_on)
            teflon_bits_put(b, zu, z.width);
        if (w_on && unary)
            teflon_bits_put(b, u1, c1);
        for (uint64_t s = pw_a; s < pw_b; s++)
            teflon_bits_put(b, idx[s] & rem_mask, rem_bits);
        for (uint64_t r = pz_a; r < pz_b; r++)
            teflon_bits_put(b, runs[r] & zmask, zdiv);
        pw_a = wa;
        pw_b = wb;
        pz_a = za;
        pz_b = zb;
        wp += wb - wa;
        zp += counted;
    }
    for (uint64_t s = pw_a; s < pw_b; s++) /* the last step: remainders only */
        teflon_bits_put(b, idx[s] & rem_mask, rem_bits);
    for (uint64_t r = pz_a; r < pz_b; r++)
        teflon_bits_put(b, runs[r] & zmask, zdiv);
    return 0;
}

int64_t teflon_native_ethosu_mlw_stream(const uint16_t *idx, uint64_t n, const uint32_t *runs, const int64_t *slices,
                                        uint64_t nslices, const uint16_t *palette, unsigned npal, unsigned dirofs,
                                        unsigned palbits, unsigned ub, unsigned zdiv, uint8_t *out, uint64_t cap)
{
    teflon_bits b = teflon_bits_init(out, cap);

    if (nslices == 0 || npal > 32 || palbits < 2 || palbits > 9 || dirofs > 31 || ub > 16 || zdiv > 3)
        return -1;
    for (uint64_t k = 0; k < nslices; k++) {
        const int64_t *sl = slices + 4 * k;
        const int64_t a = sl[0], e = sl[1], wdiv = sl[2], trunc = sl[3];
        if (a < 0 || e <= a || (uint64_t)e > n || e - a > ETHOSU_MLW_SLICE_MAX || (wdiv > 5 && wdiv != 7) || wdiv < 0
            || (trunc && wdiv == 7))
            return -1;
        /* the slice header (§2.2): ZDIV, SLICELEN - 1, WDIV, WTRUNC, NEWPAL; the first slice carries the palette */
        teflon_bits_put(&b, runs ? zdiv : ETHOSU_MLW_ZDIV_DISABLE, 3);
        teflon_bits_put(&b, (uint64_t)(e - a - 1), 15);
        teflon_bits_put(&b, (uint64_t)wdiv, 3);
        teflon_bits_put(&b, (uint64_t)!!trunc, 1);
        teflon_bits_put(&b, k == 0, 1);
        if (k == 0) {
            teflon_bits_put(&b, dirofs, 5);
            teflon_bits_put(&b, npal ? npal - 1 : 0, 5);
            teflon_bits_put(&b, palbits - 2, 3);
            for (unsigned p = 0; p < npal; p++)
                teflon_bits_put(&b, palette[p], palbits);
        }
        const unsigned div = wdiv == 7 ? 0 : (unsigned)wdiv, ubits = wdiv == 7 ? ub : 0;
        if (wdiv == 7 && ub == 0)
            return -1;
        /* the first slice carries the zero run before its first weight too; every slice the runs after its
         * weights (§2.5) */
        const int rc = runs ? ethosu_mlw_zero_run_write(&b, idx + a, (uint64_t)(e - a), runs + a + (k > 0),
                                                        (uint64_t)(e - a) + (k == 0), div, (unsigned)trunc, ubits,
                                                        zdiv)
                            : ethosu_mlw_plain_write(&b, idx + a, (uint64_t)(e - a), div, (unsigned)trunc, ubits);
        if (rc < 0)
            return -1;
    }
    teflon_bits_put(&b, ETHOSU_MLW_ZDIV_EOS, 3);
    if (b.bits % 8) /* the end marker is followed by ones up to the byte boundary */
        teflon_bits_put(&b, 0xFF, 8 - (unsigned)(b.bits % 8));
    while (b.len % ETHOSU_MLW_STREAM_ALIGN) /* and 0xFF up to 16 bytes */
        teflon_bits_put(&b, 0xFF, 8);
    return b.overflow ? -1 : (int64_t)b.len;
}

/* The sign-magnitude code of a value -255..255: (|v| << 1) | (v < 0) (teflon.ethosu.mlw.sign_magnitude). */
static inline unsigned ethosu_mlw_code(int v)
{
    const unsigned neg = v < 0;
    return ((unsigned)(neg ? -v : v) << 1) | neg;
}

/* The loops below carry no branch on the values (zeros and non-zeros alternate unpredictably in real weights):
 * a zero run grows by one at a zero and ends at a non-zero value, by masks. */
int teflon_native_ethosu_mlw_stats(const int16_t *values, uint64_t n, int64_t *freq, int64_t *run_sums)
{
    /* four histograms, one per value position mod 4: equal neighbours (zeros mostly) then do not wait on each
     * other's counts */
    uint32_t part[4][ETHOSU_MLW_CODES] = { { 0 } };
    uint64_t run = 0, s0 = 0, s1 = 0, s2 = 0, s3 = 0; /* the sums of run >> d, d = 0..3 */
    unsigned bad = 0;

    for (uint64_t s = 0; s < n; s++) {
        const int v = values[s];
        bad |= (unsigned)(v + 255) > 510u;
        part[s & 3][ethosu_mlw_code(v) & (ETHOSU_MLW_CODES - 1)]++;
        const uint64_t ends = -(uint64_t)(v != 0); /* all ones at a non-zero value: the run before it ends */
        s0 += run & ends;
        s1 += (run >> 1) & ends;
        s2 += (run >> 2) & ends;
        s3 += (run >> 3) & ends;
        run = (run + 1) & ~ends;
    }
    for (unsigned c = 0; c < ETHOSU_MLW_CODES; c++)
        freq[c] = (int64_t)part[0][c] + part[1][c] + part[2][c] + part[3][c];
    /* and the run after the last non-zero value */
    run_sums[0] = (int64_t)(s0 + run);
    run_sums[1] = (int64_t)(s1 + (run >> 1));
    run_sums[2] = (int64_t)(s2 + (run >> 2));
    run_sums[3] = (int64_t)(s3 + (run >> 3));
    return bad ? -1 : 0;
}

/* The per-segment index histograms of `indices`: counted in 32-bit integers for the segment being filled, stored
 * as a float row when it is full (or at the end). */
typedef struct {
    float *hist;
    uint64_t seg, next; /* the segment being filled; the index count that fills it */
    unsigned shift;
    uint32_t counts[ETHOSU_MLW_CODES];
} ethosu_mlw_seghist;

static void ethosu_mlw_seghist_store(ethosu_mlw_seghist *h)
{
    float *row = h->hist + h->seg * ETHOSU_MLW_CODES;
    for (unsigned c = 0; c < ETHOSU_MLW_CODES; c++) {
        row[c] = (float)h->counts[c];
        h->counts[c] = 0;
    }
    h->seg++;
    h->next += UINT64_C(1) << h->shift;
}

int64_t teflon_native_ethosu_mlw_indices(const int16_t *values, uint64_t n, const int32_t *lut, int zero_runs,
                                         uint16_t *idx, uint32_t *runs, float *hist, unsigned seg_shift)
{
    /* without hist the counts are never stored */
    ethosu_mlw_seghist h = { hist, 0, hist ? UINT64_C(1) << seg_shift : UINT64_MAX, seg_shift, { 0 } };
    uint64_t k = 0, run = 0;
    unsigned bad = 0;

    if (seg_shift > 32 || n > UINT32_MAX) /* runs are 32-bit */
        return -1;
    if (!zero_runs) {
        for (uint64_t s = 0; s < n; s++) {
            const int v = values[s];
            bad |= (unsigned)(v + 255) > 510u;
            const int32_t i = lut[ethosu_mlw_code(v) & (ETHOSU_MLW_CODES - 1)];
            bad |= (unsigned)i >= ETHOSU_MLW_CODES;
            idx[s] = (uint16_t)i;
            h.counts[(unsigned)i & (ETHOSU_MLW_CODES - 1)]++;
            if (s + 1 == h.next)
                ethosu_mlw_seghist_store(&h);
        }
        k = n;
    } else {
        /* Every value writes slot k; only a non-zero one moves k on (idx and runs hold count + 1 slots). */
        for (uint64_t s = 0; s < n; s++) {
            const int v = values[s];
            bad |= (unsigned)(v + 255) > 510u;
            const unsigned nz = v != 0;
            const int32_t i = lut[ethosu_mlw_code(v) & (ETHOSU_MLW_CODES - 1)];
            bad |= nz & ((unsigned)i >= ETHOSU_MLW_CODES);
            idx[k] = (uint16_t)i;
            runs[k] = (uint32_t)run;
            h.counts[(unsigned)i & (ETHOSU_MLW_CODES - 1)] += nz;
            k += nz;
            run = (run + 1) & ~-(uint64_t)nz;
            if (k == h.next)
                ethosu_mlw_seghist_store(&h);
        }
        runs[k] = (uint32_t)run;
    }
    if (hist && (k & ((UINT64_C(1) << seg_shift) - 1))) /* the last, partly filled segment */
        ethosu_mlw_seghist_store(&h);
    return bad ? -1 : (int64_t)k;
}

double teflon_native_ethosu_mlw_viterbi(const double *cost, uint64_t nseg, unsigned ncfg, double slice_cost,
                                        int32_t *choice, uint8_t *back)
{
    double best[ETHOSU_MLW_VITERBI_MAX];

    if (nseg == 0 || ncfg == 0 || ncfg > ETHOSU_MLW_VITERBI_MAX)
        return -1.0;
    for (unsigned c = 0; c < ncfg; c++)
        best[c] = cost[c] + slice_cost;
    for (uint64_t s = 1; s < nseg; s++) {
        unsigned j = 0;
        for (unsigned c = 1; c < ncfg; c++) /* the first cheapest */
            if (best[c] < best[j])
                j = c;
        const double sw = best[j] + slice_cost; /* a new slice after the cheapest so far */
        for (unsigned c = 0; c < ncfg; c++) {
            const int stay = best[c] <= sw;
            back[(s - 1) * ncfg + c] = (uint8_t)(stay ? c : j);
            best[c] = (stay ? best[c] : sw) + cost[s * ncfg + c];
        }
    }
    unsigned c = 0;
    for (unsigned k = 1; k < ncfg; k++)
        if (best[k] < best[c])
            c = k;
    const double total = best[c];
    choice[nseg - 1] = (int32_t)c;
    for (uint64_t s = nseg - 1; s > 0; s--) {
        c = back[(s - 1) * ncfg + c];
        choice[s - 1] = (int32_t)c;
    }
    return total;
}

/* The micro-block depths of the U55/U65-256 brick order (teflon.ethosu.bricks). */
#define ETHOSU_BRICK_UBLOCK 8

static uint64_t ethosu_ceil_div(uint64_t a, uint64_t b)
{
    return (a + b - 1) / b;
}

int64_t teflon_native_ethosu_brick_order(const int16_t *w, int depthwise, int part_kernel, uint32_t ofm_depth,
                                         uint32_t ifm_depth, uint32_t kh, uint32_t kw, uint32_t ofm_block,
                                         uint32_t ifm_block, uint32_t sub_y, uint32_t sub_x, uint32_t tap_round,
                                         int16_t *out, uint64_t cap)
{
    const uint64_t ifm = depthwise ? 1 : ifm_depth, ifm_stop = ifm, iz_len = depthwise ? 1 : ETHOSU_BRICK_UBLOCK;
    uint64_t k = 0;

    if (!ofm_block || !ifm_block || !sub_y || !sub_x || !tap_round || (depthwise && part_kernel))
        return -1;
    for (uint64_t o0 = 0; o0 < ofm_depth; o0 += ofm_block) {
        const uint64_t ofm_len = ofm_depth - o0 < ofm_block ? ofm_depth - o0 : ofm_block;
        const uint64_t n_ou = ethosu_ceil_div(ofm_len, ETHOSU_BRICK_UBLOCK), o_lim = ofm_depth - o0;
        for (uint64_t i0 = 0; i0 < ifm_stop; i0 += ifm_block) {
            /* depthwise: one micro-block one element deep; part-kernel-first: the IFM block cut at the depth;
             * depth-first: the whole IFM block, padded past the depth */
            const uint64_t ifm_len = depthwise ? ETHOSU_BRICK_UBLOCK
                                   : part_kernel && ifm_depth - i0 < ifm_block ? ifm_depth - i0 : ifm_block;
            const uint64_t i_lim = ifm - i0, ublocks = ethosu_ceil_div(ifm_len, ETHOSU_BRICK_UBLOCK);
            const uint64_t outer = part_kernel ? ublocks : 1, inner = part_kernel ? 1 : ublocks;
            for (uint64_t sy = 0; sy < kh; sy += sub_y) {
                for (uint64_t sx = 0; sx < kw; sx += sub_x) {
                    const uint64_t sub_h = kh - sy < sub_y ? kh - sy : sub_y, sub_w = kw - sx < sub_x ? kw - sx : sub_x;
                    const uint64_t taps = ethosu_ceil_div(sub_h * sub_w, tap_round) * tap_round;
                    const uint64_t len = outer * n_ou * taps * inner * ETHOSU_BRICK_UBLOCK * iz_len;
                    if (!out) { /* counting only */
                        k += len;
                        continue;
                    }
                    if (k + len > cap)
                        return -1;
                    /* the decoder's axis order: IFM outer micro-block, OFM micro-block, tap, IFM inner micro-block,
                     * OFM channel in it, IFM channel in it; taps past the sub-kernel, OFM channels past the depth and
                     * IFM channels past the depth are padding zeros */
                    for (uint64_t iuo = 0; iuo < outer; iuo++)
                        for (uint64_t ou = 0; ou < n_ou; ou++)
                            for (uint64_t tap = 0; tap < taps; tap++) {
                                const uint64_t ky = tap / sub_w, kx = tap % sub_w;
                                for (uint64_t iui = 0; iui < inner; iui++)
                                    for (uint64_t oz = 0; oz < ETHOSU_BRICK_UBLOCK; oz++) {
                                        const uint64_t o = ou * ETHOSU_BRICK_UBLOCK + oz;
                                        const int row = ky < sub_h && o < o_lim;
                                        const uint64_t base = (((o0 + o) * kh + sy + ky) * kw + sx + kx) * ifm + i0;
                                        for (uint64_t iz = 0; iz < iz_len; iz++) {
                                            const uint64_t i = depthwise ? 0
                                                             : (iuo + iui) * ETHOSU_BRICK_UBLOCK + iz;
                                            out[k++] = row && i < i_lim ? w[base + i] : 0;
                                        }
                                    }
                            }
                }
            }
        }
    }
    return (int64_t)k;
}
