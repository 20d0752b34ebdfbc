/* The body of one Ethos-U weight-stream slice without zero runs, exported for the Python encoder
 * (teflon.ethosu.mlw; format: docs/hardware/ethosu-weights.md §2.4 and §2.6). Step t of the body holds the 12-bit
 * WUNARY0 and the WUNARY1 bits of unary chunk t, then the GRC remainders of the symbols whose last position is in
 * chunk t - 1; an uncompressed slice is its indices back to back. One pass instead of the numpy chunk arrays. */
#include "native.h"

#include "native_bits.h"

#define ETHOSU_MLW_CHUNK 12

/* One step: a chunk's WUNARY0 and WUNARY1 (none in the last step, chunk 0), then the remainders of the symbols
 * [a, end) done in the chunk before. */
static void ethosu_mlw_step(teflon_bits *b, int chunk, unsigned u0, unsigned u1, unsigned n1, const uint16_t *idx,
                            uint64_t a, uint64_t end, unsigned div)
{
    if (chunk) {
        teflon_bits_put(b, u0, ETHOSU_MLW_CHUNK);
        teflon_bits_put(b, u1, n1);
    }
    for (uint64_t r = a; r < end; r++)
        teflon_bits_put(b, idx[r] & ((1u << div) - 1), div);
}

int64_t teflon_native_ethosu_mlw_plain_body(const uint16_t *idx, uint64_t n, unsigned div, unsigned trunc,
                                            unsigned ubits, uint8_t *out, uint64_t cap, uint64_t *nbits)
{
    teflon_bits b = teflon_bits_init(out, cap);

    if (div > 5 || ubits > 16)
        return -1;
    if (ubits) { /* uncompressed: the indices back to back */
        for (uint64_t s = 0; s < n; s++)
            teflon_bits_put(&b, idx[s], ubits);
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
                    ethosu_mlw_step(&b, 1, u0, u1, n1, idx, prev_a, prev_b, div);
                    prev_a = cur_a;
                    prev_b = cur_b;
                    cur_a = cur_b;
                    u0 = u1 = n1 = pos = 0;
                }
            }
            if (s == n) {
                if (pos > 0) { /* the last, partly filled chunk: padding positions carry code 0 */
                    ethosu_mlw_step(&b, 1, u0, u1, n1, idx, prev_a, prev_b, div);
                    prev_a = cur_a;
                    prev_b = n;
                }
                ethosu_mlw_step(&b, 0, 0, 0, 0, idx, prev_a, prev_b, div); /* the last step: remainders only */
            }
        }
    }
    teflon_bits_pad(&b, 32);
    *nbits = b.bits;
    return b.overflow ? -1 : (int64_t)b.len;
}
