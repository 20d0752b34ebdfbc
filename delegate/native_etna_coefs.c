/* The etnaviv v7 coefficient stream writer exported for the Python compiler (teflon.etnaviv.coefs_v7): the
 * zero-run-length tokens and the raw bias/trailer words of one core's weights, bit-packed. The stream layout and
 * the token rules are those documented in coefs_v7.py (written from Mesa's etnaviv_ml_nn.c as the fact source);
 * this is the same arithmetic as one pass over the weights instead of many numpy passes. */
#include "native.h"

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
