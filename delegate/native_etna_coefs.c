/* The etnaviv v7 coefficient stream writer exported for the Python compiler (teflon.etnaviv.coefs_v7): the
 * zero-run-length tokens and the raw bias/trailer words of one core's weights, bit-packed. The stream layout and
 * the token rules are those documented in coefs_v7.py (written from Mesa's etnaviv_ml_nn.c as the fact source);
 * this is the same arithmetic as one pass over the weights instead of many numpy passes. */
#include "native.h"

#include <stdlib.h>
#include <string.h>

#include "native_bits.h"

int64_t teflon_native_etna_coef_stream(const uint8_t *seq, uint64_t n, const uint8_t *flush, const int64_t *raw_pos,
                                       const uint32_t *raw_val, uint64_t nraw, unsigned z, unsigned zp, unsigned kpc,
                                       uint8_t *out, uint64_t cap)
{
    teflon_bits b = teflon_bits_init(out, cap);
    const unsigned tw = z + 8;
    const uint64_t period = UINT64_C(1) << z;
    uint64_t r = 0, run = 0;

    if (z > 16)
        return -1;
    teflon_bits_put(&b, z, 8);
    teflon_bits_put(&b, kpc, 16);
    const uint64_t zp8 = UINT64_C(0x0101010101010101) * (zp & 0xFF);
    for (uint64_t p = 0; p < n; p++) {
        if (z > 0) { /* long zero-point runs (dense depthwise kernels): 8 weights at a time */
            uint64_t s8, f8;
            while (p + 8 <= n) {
                memcpy(&s8, seq + p, 8);
                memcpy(&f8, flush + p, 8);
                if (s8 != zp8 || f8 != 0)
                    break;
                run += 8;
                p += 8;
            }
            if (p >= n)
                break;
        }
        const int literal = seq[p] != zp;
        if (z == 0) { /* every weight is its own 8-bit token */
            teflon_bits_put(&b, seq[p], tw);
        } else if (literal || flush[p]) {
            /* a group: `run` zero points then a literal, or a run cut by a flush (its last weight included) */
            uint64_t zeros = literal ? run : run + 1;
            for (uint64_t f = zeros >> z; f > 0; f--) /* full tokens: 2^z - 1 zero points and one as the literal */
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

/* One superblock's raw words: the bias after bias_at[k] and the trailer after trailer_at[k] of each of its n
 * kernels, merged by position (both lists ascend; the bias first where they meet), flushes set at each. */
static void v7_raw_words(const int64_t *ch, uint64_t n, const int64_t *bias_at, const int64_t *trailer_at,
                         const uint32_t *bias_word, const uint32_t *trailer, uint8_t *flush, int64_t *raw_pos,
                         uint32_t *raw_val)
{
    uint64_t i = 0, j = 0, r = 0;
    while (i < n || j < n) {
        if (j >= n || (i < n && bias_at[i] <= trailer_at[j])) {
            raw_pos[r] = bias_at[i];
            raw_val[r++] = bias_word[ch[i++]];
        } else {
            raw_pos[r] = trailer_at[j];
            raw_val[r++] = trailer[ch[j++]];
        }
        flush[raw_pos[r - 1]] = 1;
    }
}

/* Tokens at every run-length width 0..zmax of one core's weights: groups end at a literal or a flush; a group
 * of `run` zero points (before its literal, or all of it when a flush cuts it) takes run >> z full tokens plus
 * one when it has a literal or a remainder. */
static void v7_token_counts(const uint8_t *seq, const uint8_t *flush, uint64_t n, unsigned zp, unsigned zmax,
                            int64_t *tokens)
{
    uint64_t run = 0;
    for (unsigned z = 0; z <= zmax; z++)
        tokens[z] = 0;
    const uint64_t zp8 = UINT64_C(0x0101010101010101) * (zp & 0xFF);
    for (uint64_t p = 0; p < n; p++) {
        uint64_t s8, f8;
        while (p + 8 <= n) { /* long zero-point runs: 8 weights at a time */
            memcpy(&s8, seq + p, 8);
            memcpy(&f8, flush + p, 8);
            if (s8 != zp8 || f8 != 0)
                break;
            run += 8;
            p += 8;
        }
        if (p >= n)
            break;
        const int literal = seq[p] != zp;
        if (!literal && !flush[p]) {
            run++;
            continue;
        }
        if (run == 0) { /* the dense case: one token at every width */
            for (unsigned z = 0; z <= zmax; z++)
                tokens[z] += 1;
            continue;
        }
        const uint64_t zeros = literal ? run : run + 1;
        for (unsigned z = 0; z <= zmax; z++)
            tokens[z] += (int64_t)((zeros >> z) + (literal || (zeros & ((UINT64_C(1) << z) - 1)) ? 1 : 0));
        run = 0;
    }
}

int64_t teflon_native_etna_v7_plan(const uint8_t *w, uint64_t wlen, unsigned writer, unsigned ic, unsigned taps,
                                   const int64_t *tap, const int64_t *ch, const int64_t *sb_len, unsigned ncores,
                                   unsigned nsb, const uint32_t *bias_word, const uint32_t *trailer, uint64_t nchan,
                                   unsigned zp, unsigned zmax, uint8_t *seq, uint8_t *flush, uint64_t cap,
                                   int64_t *core_len, int64_t *raw_pos, uint32_t *raw_val, int64_t *tokens)
{
    uint64_t total_ch = 0, maxn = 0;
    if (writer > TEFLON_V7_SIX || ic == 0 || taps == 0 || zmax > 16)
        return -1;
    for (uint64_t i = 0; i < (uint64_t)ncores * nsb; i++) {
        if (sb_len[i] < 0)
            return -1;
        total_ch += (uint64_t)sb_len[i];
        maxn = (uint64_t)sb_len[i] > maxn ? (uint64_t)sb_len[i] : maxn;
    }
    for (uint64_t i = 0; i < total_ch; i++)
        if (ch[i] < 0 || (uint64_t)ch[i] >= nchan)
            return -1;
    int in_order = 1; /* the tap order is the identity (kernels of up to 3 columns) */
    for (unsigned t = 0; t < taps; t++) {
        if (tap[t] < 0 || (uint64_t)tap[t] >= taps)
            return -1;
        in_order &= tap[t] == (int64_t)t;
    }
    if (total_ch * ic * taps > cap)
        return -1;
    int64_t *at = malloc(2 * (maxn ? maxn : 1) * sizeof(*at));
    if (!at)
        return -1;
    memset(flush, 0, total_ch * ic * taps);
    const uint64_t st = ic < 6 ? ic : 6, blocks = (ic + st - 1) / st, last = ic - (blocks - 1) * st;
    uint64_t pos = 0, nraw = 0;
    const int64_t *chs = ch;
    for (unsigned c = 0; c < ncores; c++) {
        const uint64_t core_start = pos;
        for (unsigned s = 0; s < nsb; s++) {
            const uint64_t n = (uint64_t)sb_len[(uint64_t)c * nsb + s];
            const uint64_t start = pos - core_start;
            int64_t *bias_at = at, *trailer_at = at + n;
            if (n == 0)
                continue;
            if (writer == TEFLON_V7_SEQUENTIAL) { /* kernel after kernel */
                for (uint64_t k = 0; k < n; k++) {
                    for (unsigned t = 0; t < taps; t++)
                        seq[pos++] = v7_weight(w, wlen, (uint64_t)chs[k] * taps + (uint64_t)tap[t]);
                    bias_at[k] = (int64_t)(start + k * taps);
                    trailer_at[k] = bias_at[k] + taps - 1;
                }
            } else if (writer == TEFLON_V7_INTERLEAVED) { /* input channel z of every kernel, then z + 1 */
                for (unsigned z = 0; z < ic; z++) {
                    for (uint64_t k = 0; k < n; k++) {
                        const uint64_t base = ((uint64_t)chs[k] * ic + z) * taps;
                        if (in_order && base + taps <= wlen) { /* the common case: one copy per kernel slice */
                            memcpy(seq + pos, w + base, taps);
                            pos += taps;
                            continue;
                        }
                        for (unsigned t = 0; t < taps; t++)
                            seq[pos++] = v7_weight(w, wlen, base + (uint64_t)tap[t]);
                    }
                    if (s == nsb - 1) /* every input-channel round of the last superblock ends with a flush */
                        flush[pos - 1] = 1;
                }
                for (uint64_t k = 0; k < n; k++) {
                    bias_at[k] = (int64_t)(start + k * taps);
                    trailer_at[k] = (int64_t)(start + ((ic - 1) * n + k) * taps + taps - 1);
                }
            } else { /* 1x1: blocks of up to six input channels of every kernel */
                for (uint64_t b = 0; b < blocks; b++)
                    for (uint64_t k = 0; k < n; k++)
                        for (uint64_t i = 0; i < st && b * st + i < ic; i++)
                            seq[pos++] = v7_weight(w, wlen, (uint64_t)chs[k] * ic + b * st + i);
                for (uint64_t k = 0; k < n; k++) {
                    bias_at[k] = (int64_t)(start + k * st);
                    trailer_at[k] = (int64_t)(start + (blocks - 1) * n * st + k * last + last - 1);
                }
            }
            v7_raw_words(chs, n, bias_at, trailer_at, bias_word, trailer, flush + core_start, raw_pos + nraw,
                         raw_val + nraw);
            nraw += 2 * n;
            chs += n;
        }
        core_len[c] = (int64_t)(pos - core_start);
        if (pos > core_start)
            flush[pos - 1] = 1; /* the stream's end */
        v7_token_counts(seq + core_start, flush + core_start, pos - core_start, zp, zmax, tokens + (uint64_t)c * (zmax + 1));
    }
    free(at);
    return (int64_t)pos;
}

int64_t teflon_native_etna_v7_buffer(const uint8_t *seq, const uint8_t *flush, const int64_t *core_len,
                                     const int64_t *raw_pos, const uint32_t *raw_val, const int64_t *core_raw,
                                     unsigned ncores, unsigned header, unsigned z, unsigned zp, unsigned kpc,
                                     uint8_t *out, uint64_t cap)
{
    uint64_t off = header, n = 0, r = 0;
    if ((uint64_t)ncores * 4 > header || header > cap)
        return -1;
    memset(out, 0, header);
    for (unsigned c = 0; c < ncores; c++) {
        if (core_len[c] < 0 || core_raw[c] < 0)
            return -1;
        const int64_t len = teflon_native_etna_coef_stream(seq + n, (uint64_t)core_len[c], flush + n, raw_pos + r,
                                                           raw_val + r, (uint64_t)core_raw[c], z, zp, kpc, out + off,
                                                           cap - off);
        if (len < 0)
            return -1;
        const uint64_t aligned = ((uint64_t)len + 63) / 64 * 64;
        if (off + aligned > cap)
            return -1;
        memset(out + off + len, 0, aligned - (uint64_t)len);
        for (unsigned i = 0; i < 4; i++) /* the header: each stream's 64-aligned size, u32 little-endian */
            out[4 * c + i] = (uint8_t)(aligned >> (8 * i));
        off += aligned;
        n += (uint64_t)core_len[c];
        r += (uint64_t)core_raw[c];
    }
    return (int64_t)off;
}
