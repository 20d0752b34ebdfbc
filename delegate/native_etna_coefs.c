/* The etnaviv v7 coefficient writers exported for the Python compiler (teflon.etnaviv.coefs_v7): the stream plan
 * of a buffer (every core's weights in stream order, where runs are cut, the raw bias/trailer words, the token
 * count at each run-length width) and the zero-run-length streams bit-packed from it. The stream layout, the
 * writers' weight orders and the token rules are those documented in coefs_v7.py (written from Mesa's
 * etnaviv_ml_nn.c as the fact source); this is the same arithmetic as one pass over the weights instead of many
 * numpy passes. */
#include "native.h"

#include <stdlib.h>
#include <string.h>

#include "native_bits.h"

/* 8 copies of byte v. */
static inline uint64_t bytes8(unsigned v)
{
    return UINT64_C(0x0101010101010101) * (v & 0xFF);
}

/* Past the 8-weight groups of zero points (zp8: the zero point in every byte) from p that end at or before
 * `limit`; the first weight not skipped. */
static inline uint64_t v7_zp_run(const uint8_t *q, uint64_t p, uint64_t limit, uint64_t zp8)
{
    uint64_t s8;
    while (p + 8 <= limit) {
        memcpy(&s8, q + p, 8);
        if (s8 != zp8)
            break;
        p += 8;
    }
    return p;
}

int64_t teflon_native_etna_coef_stream(const uint8_t *seq, uint64_t n, const int64_t *flush_pos, uint64_t nflush,
                                       const int64_t *raw_pos, const uint32_t *raw_val, uint64_t nraw, unsigned z,
                                       unsigned zp, unsigned kpc, uint8_t *out, uint64_t cap)
{
    teflon_bits b = teflon_bits_init(out, cap);
    const unsigned tw = z + 8;
    const uint64_t period = UINT64_C(1) << z, zp8 = bytes8(zp);
    uint64_t r = 0, f = 0, run = 0;

    if (z > 16)
        return -1;
    teflon_bits_put(&b, z, 8);
    teflon_bits_put(&b, kpc, 16);
    for (uint64_t p = 0; p < n; p++) {
        while (f < nflush && flush_pos[f] < (int64_t)p)
            f++;
        const uint64_t next_flush = f < nflush ? (uint64_t)flush_pos[f] : n;
        if (z > 0) { /* long zero-point runs (dense depthwise kernels): 8 weights at a time */
            const uint64_t end = v7_zp_run(seq, p, next_flush < n ? next_flush : n, zp8);
            run += end - p;
            p = end;
            if (p >= n)
                break;
        }
        const int literal = seq[p] != zp;
        if (z == 0) { /* every weight is its own 8-bit token */
            teflon_bits_put(&b, seq[p], tw);
        } else if (literal || p == next_flush) {
            /* a group: `run` zero points then a literal, or a run cut by a flush (its last weight included) */
            uint64_t zeros = literal ? run : run + 1;
            for (uint64_t k = zeros >> z; k > 0; k--) /* full tokens: 2^z - 1 zero points and one as the literal */
                teflon_bits_put(&b, (period - 1) | ((uint64_t)zp << z), tw);
            uint64_t rem = zeros & (period - 1);
            if (literal)
                teflon_bits_put(&b, rem | ((uint64_t)seq[p] << z), tw);
            else if (rem > 0)
                teflon_bits_put(&b, (rem - 1) | ((uint64_t)zp << z), tw);
            run = 0;
        } else {
            run++;
            continue;
        }
        while (r < nraw && raw_pos[r] <= (int64_t)p) /* a raw word follows the token that ends on its weight */
            teflon_bits_put(&b, raw_val[r++], 32);
    }
    while (r < nraw)
        teflon_bits_put(&b, raw_val[r++], 32);
    teflon_bits_pad(&b, 32); /* the FIFO is flushed as whole 32-bit words */
    return b.overflow ? -1 : (int64_t)b.len;
}

/* Weight i of the traversal array; reads past its end are 0, as in the golden build's zero-padded heap. */
static inline uint8_t v7_weight(const uint8_t *w, uint64_t wlen, uint64_t i)
{
    return i < wlen ? w[i] : 0;
}

/* Element i of a job's traversal array, dense or block-diagonal (teflon_etna_v7_job): past its end 0. */
static uint8_t v7_elem(const teflon_etna_v7_job *j, uint64_t i)
{
    if (!j->block)
        return v7_weight(j->w, j->wlen, i);
    const uint64_t row = (uint64_t)j->ic * j->taps, ch = i / row, z = (i % row) / j->taps, t = i % j->taps;
    const uint64_t nk = j->wlen / ((uint64_t)j->block * j->taps), b0 = (ch + j->first) * j->block;
    if (ch >= nk)
        return 0;
    if (z < b0 || z >= b0 + j->block)
        return (uint8_t)j->zp;
    return j->w[(ch * j->block + (z - b0)) * j->taps + t];
}

/* Appends the ascending positions a (na) and b (nb) to out, in order and without repeating a position; returns the
 * new length. */
static uint64_t v7_merge_unique(const int64_t *a, uint64_t na, const int64_t *b, uint64_t nb, int64_t *out,
                                uint64_t len)
{
    uint64_t i = 0, j = 0;
    while (i < na || j < nb) {
        const int64_t v = (j >= nb || (i < na && a[i] <= b[j])) ? a[i++] : b[j++];
        if (len == 0 || out[len - 1] != v)
            out[len++] = v;
    }
    return len;
}

/* What a job's checks derive: the most channels of a superblock and of a core, every channel, whether the tap
 * order is the identity (kernels of up to 3 columns). */
typedef struct {
    uint64_t total_ch, max_sb, max_core;
    int in_order;
} v7_shape;

static int v7_check(const teflon_etna_v7_job *j, v7_shape *sh)
{
    memset(sh, 0, sizeof(*sh));
    if (j->writer > TEFLON_V7_SIX || j->ic == 0 || j->taps == 0)
        return -1;
    for (unsigned c = 0; c < j->ncores; c++) {
        uint64_t core = 0;
        for (unsigned s = 0; s < j->nsb; s++) {
            const int64_t n = j->sb_len[(uint64_t)c * j->nsb + s];
            if (n < 0)
                return -1;
            core += (uint64_t)n;
            sh->max_sb = (uint64_t)n > sh->max_sb ? (uint64_t)n : sh->max_sb;
        }
        sh->total_ch += core;
        sh->max_core = core > sh->max_core ? core : sh->max_core;
    }
    for (uint64_t i = 0; i < sh->total_ch; i++)
        if (j->ch[i] < 0 || (uint64_t)j->ch[i] >= j->nchan)
            return -1;
    if (j->block) { /* whole blocks, each kernel's inside its row */
        const uint64_t per = (uint64_t)j->block * j->taps;
        if (j->zp > 255 || j->wlen % per || (j->wlen / per + j->first) * j->block > j->ic)
            return -1;
    }
    sh->in_order = 1;
    for (unsigned t = 0; t < j->taps; t++) {
        if (j->tap[t] < 0 || (uint64_t)j->tap[t] >= j->taps)
            return -1;
        sh->in_order &= j->tap[t] == (int64_t)t;
    }
    return 0;
}

/* The raw words' values: the bias word bias[ch] - (sum of ksum weights from ch * ksum - ksum * weight_zp) *
 * input_zp, and trailer[ch]. */
typedef struct {
    const int64_t *bias;
    const uint32_t *trailer;
    uint64_t ksum;
    int64_t weight_zp, input_zp;
} v7_words;

/* The sum of the ksum weights of channel ch's row (from ch * ksum; zeros past the end); a block-diagonal array's
 * rows are ksum = ic * taps long (checked by the plan). */
static int64_t v7_kernel_sum(const teflon_etna_v7_job *j, uint64_t ch, uint64_t ksum)
{
    if (!j->block)
        return teflon_byte_sum(j->w, j->wlen, ch * ksum, ksum);
    const uint64_t per = (uint64_t)j->block * j->taps;
    if (ch >= j->wlen / per)
        return 0;
    return teflon_byte_sum(j->w, j->wlen, ch * per, per) + (int64_t)((ksum - per) * j->zp);
}

/* Core c's weights in stream order into seq (its channels from chs); returns how many. With `words`, also its raw
 * words (2 per channel, by position) and its run cuts (ascending, unique, the stream's end included; *nflush of
 * them). `at` has room for 3 * max_sb + ic positions. */
static uint64_t v7_core(const teflon_etna_v7_job *j, const v7_shape *sh, unsigned c, const int64_t *chs,
                        uint8_t *seq, int64_t *at, const v7_words *words, int64_t *raw_pos, uint32_t *raw_val,
                        int64_t *flush_pos, uint64_t *nflush)
{
    const uint8_t *w = j->w;
    const uint64_t wlen = j->wlen, ic = j->ic, taps = j->taps;
    const uint64_t st = ic < 6 ? ic : 6, blocks = (ic + st - 1) / st, last = ic - (blocks - 1) * st;
    uint64_t pos = 0, nraw = 0, nfl = 0;
    for (unsigned s = 0; s < j->nsb; s++) {
        const uint64_t n = (uint64_t)j->sb_len[(uint64_t)c * j->nsb + s], start = pos;
        int64_t *bias_at = at, *trailer_at = at + n, *rounds = at + 2 * n;
        uint64_t nrounds = 0;
        if (n == 0)
            continue;
        if (j->writer == TEFLON_V7_SEQUENTIAL) { /* kernel after kernel */
            for (uint64_t k = 0; k < n; k++) {
                for (unsigned t = 0; t < taps; t++)
                    seq[pos++] = v7_elem(j, (uint64_t)chs[k] * taps + (uint64_t)j->tap[t]);
                bias_at[k] = (int64_t)(start + k * taps);
                trailer_at[k] = bias_at[k] + (int64_t)taps - 1;
            }
        } else if (j->writer == TEFLON_V7_INTERLEAVED) { /* input channel z of every kernel, then z + 1 */
            /* eight kernels at a time: their ic * taps weights are read in eight sweeps, and each round gets
             * their slices as one contiguous piece (the kernels lie far apart in w) */
            uint64_t k = 0;
            const uint64_t step = n * taps;
            if (j->block) { /* block-diagonal: the zero point but in each kernel's own input channels */
                const uint64_t nk = wlen / ((uint64_t)j->block * taps);
                for (; k < n; k++) {
                    const uint64_t ch = (uint64_t)chs[k], b0 = (ch + j->first) * j->block;
                    const uint8_t fill = ch < nk ? (uint8_t)j->zp : 0;
                    uint8_t *dst = seq + start + k * taps;
                    for (uint64_t z = 0; z < ic; z++, dst += step) {
                        if (ch < nk && z >= b0 && z < b0 + j->block) {
                            const uint8_t *src = w + (ch * j->block + (z - b0)) * taps;
                            for (unsigned t = 0; t < taps; t++)
                                dst[t] = src[j->tap[t]];
                        } else if (taps == 9) {
                            const uint64_t f8 = bytes8(fill);
                            memcpy(dst, &f8, 8);
                            dst[8] = fill;
                        } else {
                            memset(dst, fill, taps);
                        }
                    }
                }
            }
            for (; sh->in_order && taps == 9 && k + 8 <= n; k += 8) { /* 3x3, the common case: inline copies */
                const uint8_t *src[8];
                int inside = 1;
                for (unsigned b = 0; b < 8; b++) {
                    const uint64_t base = (uint64_t)chs[k + b] * ic * 9;
                    inside &= base + ic * 9 <= wlen;
                    src[b] = w + base;
                }
                if (!inside)
                    break;
                uint8_t *dst = seq + start + k * 9;
                for (uint64_t z = 0; z < ic; z++, dst += step)
                    for (unsigned b = 0; b < 8; b++) {
                        memcpy(dst + 9 * b, src[b] + 9 * z, 8);
                        dst[9 * b + 8] = src[b][9 * z + 8];
                    }
            }
            for (; k < n; k++) {
                const uint64_t base = (uint64_t)chs[k] * ic * taps;
                uint8_t *dst = seq + start + k * taps;
                if (sh->in_order && base + ic * taps <= wlen) {
                    for (uint64_t z = 0; z < ic; z++, dst += step)
                        memcpy(dst, w + base + taps * z, taps);
                } else {
                    for (uint64_t z = 0; z < ic; z++, dst += step)
                        for (unsigned t = 0; t < taps; t++)
                            dst[t] = v7_elem(j, base + z * taps + (uint64_t)j->tap[t]);
                }
            }
            pos = start + ic * n * taps;
            if (s == j->nsb - 1) /* every input-channel round of the last superblock ends with a flush */
                for (uint64_t z = 0; z < ic; z++)
                    rounds[nrounds++] = (int64_t)(start + (z + 1) * n * taps - 1);
            for (uint64_t k = 0; k < n; k++) {
                bias_at[k] = (int64_t)(start + k * taps);
                trailer_at[k] = (int64_t)(start + ((ic - 1) * n + k) * taps + taps - 1);
            }
        } else { /* 1x1: blocks of up to six input channels of every kernel */
            /* block b of kernel k lands at start + b * n * st + k * (its length): kernel by kernel, each row of
             * ic weights is read in one sweep (the rows lie far apart in w) */
            for (uint64_t k = 0; k < n; k++) {
                const uint64_t row = (uint64_t)chs[k] * ic;
                for (uint64_t b = 0; b < blocks; b++) {
                    const uint64_t len = b + 1 < blocks ? st : last;
                    uint8_t *dst = seq + start + b * n * st + k * len;
                    if (!j->block && row + ic <= wlen)
                        for (uint64_t i = 0; i < len; i++)
                            dst[i] = w[row + b * st + i];
                    else
                        for (uint64_t i = 0; i < len; i++)
                            dst[i] = v7_elem(j, row + b * st + i);
                }
            }
            pos = start + n * ic;
            for (uint64_t k = 0; k < n; k++) {
                bias_at[k] = (int64_t)(start + k * st);
                trailer_at[k] = (int64_t)(start + (blocks - 1) * n * st + k * last + last - 1);
            }
        }
        if (words) {
            /* the raw words by position, the bias first where a bias and a trailer follow the same weight */
            uint64_t i = 0, k = 0, r = nraw;
            while (i < n || k < n) {
                if (k >= n || (i < n && bias_at[i] <= trailer_at[k])) {
                    const int64_t ks = (int64_t)words->ksum;
                    const int64_t sum = v7_kernel_sum(j, (uint64_t)chs[i], words->ksum);
                    raw_pos[r] = bias_at[i];
                    raw_val[r++] = (uint32_t)((words->bias[chs[i]] - (sum - ks * words->weight_zp) * words->input_zp)
                                              & 0xFFFFFFFF);
                    i++;
                } else {
                    raw_pos[r] = trailer_at[k];
                    raw_val[r++] = words->trailer[chs[k++]];
                }
            }
            /* every raw word and round end cuts a run */
            nfl = v7_merge_unique(raw_pos + nraw, 2 * n, rounds, nrounds, flush_pos, nfl);
            nraw = r;
        }
        chs += n;
    }
    if (words && pos > 0) { /* the stream's end */
        const int64_t end = (int64_t)pos - 1;
        nfl = v7_merge_unique(&end, 1, NULL, 0, flush_pos, nfl);
    }
    if (nflush)
        *nflush = nfl;
    return pos;
}

/* Tokens of one core's n weights at every run-length width 0..zmax: groups end at a literal or a run cut; a group
 * of `zeros` zero points (before its literal, or all of it when a cut ends it) takes zeros >> z full tokens, plus
 * one when it has a literal or a remainder. */
static void v7_tokens(const uint8_t *q, uint64_t len, const int64_t *fl, uint64_t nfl, unsigned zp, unsigned zmax,
                      int64_t *tok)
{
    const uint64_t zp8 = bytes8(zp);
    uint64_t run = 0, f = 0, dense = 0;
    for (unsigned z = 0; z <= zmax; z++)
        tok[z] = 0;
    for (uint64_t p = 0; p < len; p++) {
        while (f < nfl && fl[f] < (int64_t)p)
            f++;
        const uint64_t next_flush = f < nfl ? (uint64_t)fl[f] : len;
        const uint64_t end = v7_zp_run(q, p, next_flush < len ? next_flush : len, zp8); /* long zero-point runs */
        run += end - p;
        p = end;
        if (p >= len)
            break;
        const int literal = q[p] != (uint8_t)zp;
        if (!literal && p != next_flush) {
            run++;
            continue;
        }
        if (run == 0) { /* one token at every width */
            dense++;
            continue;
        }
        const uint64_t zeros = literal ? run : run + 1;
        for (unsigned z = 0; z <= zmax; z++)
            tok[z] += (int64_t)((zeros >> z) + (literal || (zeros & ((UINT64_C(1) << z) - 1)) ? 1 : 0));
        run = 0;
    }
    for (unsigned z = 0; z <= zmax; z++)
        tok[z] += (int64_t)dense;
}

int64_t teflon_native_etna_v7_plan(const teflon_etna_v7_job *job, const int64_t *bias, const uint32_t *trailer,
                                   uint64_t ksum, int64_t weight_zp, int64_t input_zp, unsigned zmax, uint8_t *seq,
                                   int64_t *core_len, int64_t *flush_pos, int64_t *core_flush, int64_t *raw_pos,
                                   uint32_t *raw_val, int64_t *tokens)
{
    v7_shape sh;
    if (v7_check(job, &sh) || zmax > 16 || weight_zp < 0 || weight_zp > 255
        || (job->block && ksum != (uint64_t)job->ic * job->taps))
        return -1;
    const v7_words words = { bias, trailer, ksum, weight_zp, input_zp };
    int64_t *at = malloc((3 * (sh.max_sb ? sh.max_sb : 1) + job->ic) * sizeof(*at));
    /* without `seq` every core's weights go through one scratch buffer, which stays in cache */
    uint8_t *scratch = seq ? NULL : malloc(sh.max_core * job->ic * job->taps + 1);
    if (!at || (!seq && !scratch)) {
        free(at);
        free(scratch);
        return -1;
    }
    uint64_t total = 0, nraw = 0, nflush = 0;
    const int64_t *chs = job->ch;
    for (unsigned c = 0; c < job->ncores; c++) {
        uint8_t *q = seq ? seq + total : scratch;
        uint64_t nfl = 0, nch = 0;
        for (unsigned s = 0; s < job->nsb; s++)
            nch += (uint64_t)job->sb_len[(uint64_t)c * job->nsb + s];
        const uint64_t len = v7_core(job, &sh, c, chs, q, at, &words, raw_pos + nraw, raw_val + nraw,
                                     flush_pos + nflush, &nfl);
        v7_tokens(q, len, flush_pos + nflush, nfl, (unsigned)weight_zp, zmax, tokens + (uint64_t)c * (zmax + 1));
        core_len[c] = (int64_t)len;
        core_flush[c] = (int64_t)nfl;
        total += len;
        nraw += 2 * nch;
        nflush += nfl;
        chs += nch;
    }
    free(at);
    free(scratch);
    return (int64_t)total;
}

int64_t teflon_native_etna_v7_buffer(const teflon_etna_v7_job *job, const int64_t *flush_pos,
                                     const int64_t *core_flush, const int64_t *raw_pos, const uint32_t *raw_val,
                                     unsigned header, unsigned z, unsigned zp, unsigned kpc, uint8_t *out,
                                     uint64_t cap)
{
    v7_shape sh;
    if (v7_check(job, &sh) || (uint64_t)job->ncores * 4 > header || header > cap)
        return -1;
    int64_t *at = malloc((3 * (sh.max_sb ? sh.max_sb : 1) + job->ic) * sizeof(*at));
    uint8_t *seq = malloc(sh.max_core * job->ic * job->taps + 1);
    if (!at || !seq) {
        free(at);
        free(seq);
        return -1;
    }
    memset(out, 0, header);
    uint64_t off = header, f = 0, r = 0;
    const int64_t *chs = job->ch;
    int64_t rc = 0;
    for (unsigned c = 0; c < job->ncores && rc == 0; c++) {
        uint64_t nch = 0;
        for (unsigned s = 0; s < job->nsb; s++)
            nch += (uint64_t)job->sb_len[(uint64_t)c * job->nsb + s];
        const uint64_t len = v7_core(job, &sh, c, chs, seq, at, NULL, NULL, NULL, NULL, NULL);
        if (core_flush[c] < 0) {
            rc = -1;
            break;
        }
        const int64_t bytes = teflon_native_etna_coef_stream(seq, len, flush_pos + f, (uint64_t)core_flush[c],
                                                             raw_pos + r, raw_val + r, 2 * nch, z, zp, kpc,
                                                             out + off, cap - off);
        const uint64_t aligned = ((uint64_t)bytes + 63) / 64 * 64;
        if (bytes < 0 || off + aligned > cap) {
            rc = -1;
            break;
        }
        memset(out + off + bytes, 0, aligned - (uint64_t)bytes);
        for (unsigned i = 0; i < 4; i++) /* the header: each stream's 64-aligned size, u32 little-endian */
            out[4 * c + i] = (uint8_t)(aligned >> (8 * i));
        off += aligned;
        f += (uint64_t)core_flush[c];
        r += 2 * nch;
        chs += nch;
    }
    free(at);
    free(seq);
    return rc < 0 ? -1 : (int64_t)off;
}
