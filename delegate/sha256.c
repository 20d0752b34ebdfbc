/* SHA-256 as specified in FIPS 180-4 (sections 4.1.2, 4.2.2, 5.1.1, 6.2).
 *
 * The program cache hashes a model's constant data on every Prepare, so on x86-64 CPUs with the SHA
 * extensions the block function uses them (about 5x faster than the portable code); everywhere else the
 * portable code runs. Both are checked against the same known digests (tests/test_program_cache.py).
 */
#include "sha256.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(TEFLON_SHA256_PORTABLE)
#include <immintrin.h>
#define HAVE_SHA_NI 1
#endif

/* First 32 bits of the fractional parts of the cube roots of the first 64 primes (FIPS 180-4 4.2.2). */
static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32 - n));
}

static void compress(uint32_t s[8], const uint8_t *p)
{
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 | (uint32_t)p[4 * t + 2] << 8 | p[4 * t + 3];
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
    for (int t = 0; t < 64; t++) {
        uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + w[t];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    s[0] += a;
    s[1] += b;
    s[2] += c;
    s[3] += d;
    s[4] += e;
    s[5] += f;
    s[6] += g;
    s[7] += h;
}

#ifdef HAVE_SHA_NI
/* The same compression with the SHA-NI instructions: the state lives as (A,B,E,F) and (C,D,G,H) vectors,
 * sha256rnds2 does two rounds, sha256msg1/msg2 the two halves of the message schedule recurrence. */
__attribute__((target("sha,sse4.1,ssse3"))) static void compress_ni(uint32_t s[8], const uint8_t *p, size_t nblocks)
{
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i dcba = _mm_loadu_si128((const __m128i *)&s[0]);
    __m128i hgfe = _mm_loadu_si128((const __m128i *)&s[4]);
    __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
    __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
    __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
    for (; nblocks > 0; nblocks--, p += 64) {
        const __m128i abef0 = abef, cdgh0 = cdgh;
        __m128i w[16];
        for (int j = 0; j < 4; j++)
            w[j] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * j)), bswap);
#pragma GCC unroll 12
        for (int j = 4; j < 16; j++) {
            /* W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16], four at a time. */
            __m128i x = _mm_add_epi32(_mm_sha256msg1_epu32(w[j - 4], w[j - 3]), _mm_alignr_epi8(w[j - 1], w[j - 2], 4));
            w[j] = _mm_sha256msg2_epu32(x, w[j - 1]);
        }
#pragma GCC unroll 16
        for (int j = 0; j < 16; j++) {
            __m128i wk = _mm_add_epi32(w[j], _mm_loadu_si128((const __m128i *)&K[4 * j]));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
        }
        abef = _mm_add_epi32(abef, abef0);
        cdgh = _mm_add_epi32(cdgh, cdgh0);
    }
    __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128((__m128i *)&s[0], _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128((__m128i *)&s[4], _mm_alignr_epi8(dchg, feba, 8));
}
#endif

static void compress_blocks(uint32_t s[8], const uint8_t *p, size_t nblocks)
{
#ifdef HAVE_SHA_NI
    if (__builtin_cpu_supports("sha") && __builtin_cpu_supports("sse4.1")) {
        compress_ni(s, p, nblocks);
        return;
    }
#endif
    for (; nblocks > 0; nblocks--, p += 64)
        compress(s, p);
}

void teflon_sha256_init(teflon_sha256_ctx *h)
{
    /* First 32 bits of the fractional parts of the square roots of the first 8 primes (FIPS 180-4 5.3.3). */
    static const uint32_t H0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(h->state, H0, sizeof(H0));
    h->length = 0;
    h->used = 0;
}

void teflon_sha256_update(teflon_sha256_ctx *h, const void *data, size_t len)
{
    const uint8_t *p = data;
    h->length += len;
    if (h->used) {
        size_t take = 64 - h->used < len ? 64 - h->used : len;
        memcpy(h->block + h->used, p, take);
        h->used += take;
        p += take;
        len -= take;
        if (h->used < 64)
            return;
        compress_blocks(h->state, h->block, 1);
        h->used = 0;
    }
    compress_blocks(h->state, p, len / 64);
    p += len / 64 * 64;
    len %= 64;
    memcpy(h->block, p, len);
    h->used = len;
}

void teflon_sha256_final(teflon_sha256_ctx *h, uint8_t out[TEFLON_SHA256_BYTES])
{
    const uint64_t bits = h->length * 8;
    uint8_t pad[72] = {0x80};
    /* 0x80, zeros up to 56 mod 64, then the message length in bits, big-endian (FIPS 180-4 5.1.1). */
    size_t npad = (h->used < 56 ? 56 : 120) - h->used;
    for (int i = 0; i < 8; i++)
        pad[npad + (size_t)i] = (uint8_t)(bits >> (56 - 8 * i));
    teflon_sha256_update(h, pad, npad + 8);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(h->state[i] >> 24);
        out[4 * i + 1] = (uint8_t)(h->state[i] >> 16);
        out[4 * i + 2] = (uint8_t)(h->state[i] >> 8);
        out[4 * i + 3] = (uint8_t)h->state[i];
    }
}

void teflon_sha256(const void *data, size_t len, uint8_t out[TEFLON_SHA256_BYTES])
{
    teflon_sha256_ctx h;
    teflon_sha256_init(&h);
    teflon_sha256_update(&h, data, len);
    teflon_sha256_final(&h, out);
}

void teflon_sha256_hex(const uint8_t digest[TEFLON_SHA256_BYTES], char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < TEFLON_SHA256_BYTES; i++) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    out[2 * TEFLON_SHA256_BYTES] = '\0';
}
