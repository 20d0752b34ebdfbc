/* The etnaviv v8 coefficient stream writer exported for the Python compiler (teflon.etnaviv.coefs_v8): codes go
 * in pairs; step t of the stream holds the two part0 fields of pair t, the part1 fields of pair t - 1 and the
 * payloads of pair t - 2, then two dummy steps push the last part1s and payloads out (the layout documented in
 * coefs_v8.py, docs/hardware/etnaviv-coefficients.md). One pass over the codes with the per-byte code tables. */
#include "native.h"

#include "native_bits.h"

int64_t teflon_native_etna_v8_stream(const uint8_t *codes, uint64_t n, const uint8_t *part0, const uint8_t *part1,
                                     const uint8_t *part1_w, const uint16_t *payload, const uint8_t *payload_w,
                                     uint8_t *out, uint64_t cap)
{
    teflon_bits b = teflon_bits_init(out, cap);
    const uint64_t pairs = (n + 1) / 2; /* an odd count gets a zero code */
    const uint64_t dummy = (n % 2) ? 044 : 0; /* part0 = 4 in both codes of a dummy pair after an odd count */
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
        teflon_bits_put(&b, p0, 6);
        teflon_bits_put(&b, p1, (unsigned)p1w);
        teflon_bits_put(&b, pl_prev2, (unsigned)plw_prev2);
        p1 = n1;
        p1w = n1w;
        pl_prev2 = pl_prev;
        plw_prev2 = plw_prev;
        pl_prev = npl;
        plw_prev = nplw;
    }
    teflon_bits_pad(&b, 8);
    return b.overflow ? -1 : (int64_t)b.bits;
}
