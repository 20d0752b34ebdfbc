/* An LSB-first bit writer over a caller's byte buffer, shared by the compiler's stream writers (native_*.c): fields
 * of up to 32 bits go into a 64-bit accumulator and out as little-endian bytes. */
#ifndef TEFLON_NATIVE_BITS_H
#define TEFLON_NATIVE_BITS_H

#include <stdint.h>

typedef struct {
    uint8_t *out;
    uint64_t cap;
    uint64_t len; /* bytes written */
    uint64_t bits; /* bits put */
    uint64_t acc;
    unsigned nacc;
    int overflow;
} teflon_bits;

static inline teflon_bits teflon_bits_init(uint8_t *out, uint64_t cap)
{
    teflon_bits b = { out, cap, 0, 0, 0, 0, 0 };
    return b;
}

/* The low `width` (<= 32) bits of value. */
static inline void teflon_bits_put(teflon_bits *b, uint64_t value, unsigned width)
{
    if (width == 0)
        return;
    b->acc |= (value & ((UINT64_C(1) << width) - 1)) << b->nacc;
    b->nacc += width;
    b->bits += width;
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

/* Zero bits up to the next multiple of `align` bits (8 or 32); the bit count stays that of the fields put. */
static inline void teflon_bits_pad(teflon_bits *b, unsigned align)
{
    const uint64_t bits = b->bits;
    const unsigned rest = (unsigned)(bits % align);
    if (rest)
        teflon_bits_put(b, 0, align - rest);
    b->bits = bits;
}

#endif
