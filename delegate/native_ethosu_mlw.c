/* The body of one Ethos-U weight-stream slice without zero runs, exported for the Python encoder
 * (teflon.ethosu.mlw; format: docs/hardware/ethosu-weights.md §2.4 and §2.6). Step t of the body holds the 12-bit
 * WUNARY0 and the WUNARY1 bits of unary chunk t, then the GRC remainders of the symbols whose last position is in
 * chunk t - 1; an uncompressed slice is its indices back to back. One pass instead of the numpy chunk arrays. */
#include "native.h"

#define ETHOSU_MLW_CHUNK 12

typedef struct {
    uint8_t *out;
    uint64_t cap;
    uint64_t len;
    uint64_t acc;
    unsigned nacc;
    int overflow;
} ethosu_mlw_bits;

static void ethosu_mlw_put(ethosu_mlw_bits *b, uint64_t value, unsigned width)
{
    if (width == 0)
        return;
    b->acc |= (value & ((UINT64_C(1) << width) - 1)) << b->nacc;
    b->nacc += width;
    while (b->nacc >= 32) {
        if (b->len + 4 > b->cap) {
            b->overflow = 1;
            return;
        }
        for (unsigned i = 0; i < 4; i++)
            b->out[b->len++] = (uint8_t)(b->acc >> (8 * i));
        b->acc >>= 32;
        b->nacc -= 32;
    }
}

int64_t teflon_native_ethosu_mlw_plain_body(const uint16_t *idx, uint64_t n, unsigned div, unsigned trunc,
                                            unsigned ubits, uint8_t *out, uint64_t cap, uint64_t *nbits)
{
    ethosu_mlw_bits b = { out, cap, 0, 0, 0, 0 };
    const uint16_t mask = (uint16_t)((1u << div) - 1);
    uint64_t bits = 0;

    if (div > 5 || ubits > 16)
        return -1;
    if (ubits) { /* uncompressed: the indices back to back */
        for (uint64_t s = 0; s < n; s++)
            ethosu_mlw_put(&b, idx[s], ubits);
        bits = n * ubits;
    } else {
        /* prev/cur: the symbols done in the previous / current chunk, as [first, end) ranges of idx (symbols
         * complete in order) */
        uint64_t prev_a = 0, prev_b = 0, cur_a = 0;
        unsigned u0 = 0, u1 = 0, n1 = 0, pos = 0;
        for (uint64_t s = 0; s <= n; s++) {
            unsigned q = s < n ? (unsigned)(idx[s] >> div) : 0;
            unsigned twos = (s < n && !trunc) ? q >> 1 : 0;
            /* positions of symbol s: trunc one code q; plain q / 2 codes 2 then q % 2; s == n: padding */
            for (unsigned k = 0; s < n && k <= twos; k++) {
                unsigned code = trunc ? q : (k < twos ? 2 : (q & 1));
                if (code) {
                    u0 |= 1u << pos;
                    u1 |= (unsigned)(code > 1) << n1;
                    n1++;
                }
                pos++;
                if (pos == ETHOSU_MLW_CHUNK) {
                    uint64_t cur_b = k == twos ? s + 1 : s; /* symbol s done in this chunk when k is its last */
                    ethosu_mlw_put(&b, u0, ETHOSU_MLW_CHUNK);
                    ethosu_mlw_put(&b, u1, n1);
                    bits += ETHOSU_MLW_CHUNK + n1;
                    for (uint64_t r = prev_a; r < prev_b; r++)
                        ethosu_mlw_put(&b, idx[r] & mask, div);
                    bits += (prev_b - prev_a) * div;
                    prev_a = cur_a;
                    prev_b = cur_b;
                    cur_a = cur_b;
                    u0 = u1 = n1 = pos = 0;
                }
            }
            if (s == n) {
                if (pos > 0) { /* the last, partly filled chunk: padding positions carry code 0 */
                    ethosu_mlw_put(&b, u0, ETHOSU_MLW_CHUNK);
                    ethosu_mlw_put(&b, u1, n1);
                    bits += ETHOSU_MLW_CHUNK + n1;
                    for (uint64_t r = prev_a; r < prev_b; r++)
                        ethosu_mlw_put(&b, idx[r] & mask, div);
                    bits += (prev_b - prev_a) * div;
                    prev_a = cur_a;
                    prev_b = n;
                }
                for (uint64_t r = prev_a; r < prev_b; r++) /* the last step: remainders only */
                    ethosu_mlw_put(&b, idx[r] & mask, div);
                bits += (prev_b - prev_a) * div;
            }
        }
    }
    if (b.nacc > 0)
        ethosu_mlw_put(&b, 0, 32 - b.nacc);
    *nbits = bits;
    return b.overflow ? -1 : (int64_t)b.len;
}
