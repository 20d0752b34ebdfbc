/* An LSB-first bit writer over a caller's byte buffer, shared by the compiler's stream writers (native_*.c): fields
 * of up to 32 bits go into a 64-bit accumulator and out as little-endian bytes. */
#ifndef TEFLON_NATIVE_BITS_H
#define TEFLON_NATIVE_BITS_H

#include <stdint.h>
#include <string.h>

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

/* The low `width` bits of value: up to 56 (fewer than 8 bits wait in the accumulator between puts). */
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

/* The sum of the n bytes of w from `first` (zeros past wlen): 8 bytes a step into four 16-bit lanes, emptied
 * before they can overflow. */
static inline int64_t teflon_byte_sum(const uint8_t *w, uint64_t wlen, uint64_t first, uint64_t n)
{
    uint64_t i = 0, sum = 0;
    if (first >= wlen)
        return 0;
    const uint64_t end = wlen - first < n ? wlen - first : n, lo = UINT64_C(0x00FF00FF00FF00FF);
    const uint8_t *p = w + first;
    while (i + 8 <= end) {
        uint64_t lanes = 0;
        for (unsigned step = 0; step < 128 && i + 8 <= end; step++, i += 8) {
            uint64_t x;
            memcpy(&x, p + i, 8);
            lanes += (x & lo) + ((x >> 8) & lo);
        }
        for (unsigned l = 0; l < 4; l++)
            sum += (lanes >> (16 * l)) & 0xFFFF;
    }
    for (; i < end; i++)
        sum += p[i];
    return (int64_t)sum;
}

#endif
