/* The etnaviv v8 coefficient stream writer exported for the Python compiler (teflon.etnaviv.coefs_v8): codes go
 * in pairs; step t of the stream holds the two part0 fields of pair t, the part1 fields of pair t - 1 and the
 * payloads of pair t - 2, then two dummy steps push the last part1s and payloads out (the layout documented in
 * coefs_v8.py, docs/hardware/etnaviv-coefficients.md). One pass over the codes with the per-byte code tables. */
#include "native.h"

typedef struct {
    uint8_t *out;
    uint64_t cap;
    uint64_t len;
    uint64_t acc;
    unsigned nacc;
    int overflow;
} etna_v8_bits;

static void etna_v8_put(etna_v8_bits *b, uint64_t value, unsigned width)
{
    b->acc |= (value & ((UINT64_C(1) << width) - 1)) << b->nacc;
    b->nacc += width;
    while (b->nacc >= 8) {
        if (b->len >= b->cap) {
            b->overflow = 1;
            return;
        }
        b->out[b->len++] = (uint8_t)b->acc;
        b->acc >>= 8;
        b->nacc -= 8;
    }
}

int64_t teflon_native_etna_v8_stream(const uint8_t *codes, uint64_t n, const uint8_t *part0, const uint8_t *part1,
                                     const uint8_t *part1_w, const uint16_t *payload, const uint8_t *payload_w,
                                     uint8_t *out, uint64_t cap)
{
    etna_v8_bits b = { out, cap, 0, 0, 0, 0 };
    const uint64_t pairs = (n + 1) / 2; /* an odd count gets a zero code */
    const uint64_t dummy = (n % 2) ? 044 : 0; /* part0 = 4 in both codes of a dummy pair after an odd count */
    uint64_t nbits = 0;
    uint64_t p1 = 0, p1w = 0; /* part1 of the previous pair */
    uint64_t pl_prev = 0, plw_prev = 0, pl_prev2 = 0, plw_prev2 = 0; /* payloads of the two pairs before */

    for (uint64_t t = 0; t < pairs + 2; t++) {
        uint64_t p0 = dummy, n1 = 0, n1w = 0, npl = 0, nplw = 0;
        if (t < pairs) {
            const uint8_t c0 = codes[2 * t], c1 = 2 * t + 1 < n ? codes[2 * t + 1] : 0;
            p0 = (uint64_t)part0[c0] | ((uint64_t)part0[c1] << 3);
            n1 = (uint64_t)part1[c0] | ((uint64_t)part1[c1] << part1_w[c0]);
            n1w = (uint64_t)part1_w[c0] + part1_w[c1];
            npl = (uint64_t)payload[c0] | ((uint64_t)payload[c1] << payload_w[c0]);
            nplw = (uint64_t)payload_w[c0] + payload_w[c1];
        }
        /* step t: part0 of pair t, part1 of pair t - 1, payloads of pair t - 2 */
        etna_v8_put(&b, p0, 6);
        etna_v8_put(&b, p1, (unsigned)p1w);
        etna_v8_put(&b, pl_prev2, (unsigned)plw_prev2);
        nbits += 6 + p1w + plw_prev2;
        p1 = n1;
        p1w = n1w;
        pl_prev2 = pl_prev;
        plw_prev2 = plw_prev;
        pl_prev = npl;
        plw_prev = nplw;
    }
    if (b.nacc > 0)
        etna_v8_put(&b, 0, 8 - b.nacc);
    return b.overflow ? -1 : (int64_t)nbits;
}
