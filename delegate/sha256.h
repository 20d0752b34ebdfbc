/* SHA-256 (FIPS 180-4): the program cache's keys and entry checksums. Streaming and one-shot forms. */
#ifndef TEFLON_SHA256_H
#define TEFLON_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define TEFLON_SHA256_BYTES 32

typedef struct teflon_sha256_ctx {
    uint32_t state[8];
    uint64_t length;        /* bytes hashed so far */
    uint8_t block[64];
    size_t used;            /* bytes waiting in block[] */
} teflon_sha256_ctx;

void teflon_sha256_init(teflon_sha256_ctx *h);
void teflon_sha256_update(teflon_sha256_ctx *h, const void *data, size_t len);
void teflon_sha256_final(teflon_sha256_ctx *h, uint8_t out[TEFLON_SHA256_BYTES]);
void teflon_sha256(const void *data, size_t len, uint8_t out[TEFLON_SHA256_BYTES]);

/* Lower-case hex of a digest into out (at least 2 * TEFLON_SHA256_BYTES + 1 bytes). */
void teflon_sha256_hex(const uint8_t digest[TEFLON_SHA256_BYTES], char *out);

#endif
