/* delegate/sha256.c against hashlib (tests/test_program_cache.py): prints the digest of the first N bytes of
 * FILE for each N, hashing once in one call and once in uneven pieces; the two must agree. */
#include <stdio.h>
#include <stdlib.h>

#include "sha256.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s FILE N...\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f)
        return 1;
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc((size_t)size + 1);
    if (!data || fread(data, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        free(data);
        return 1;
    }
    fclose(f);
    int rc = 0;
    for (int i = 2; i < argc; i++) {
        const size_t n = (size_t)strtoul(argv[i], NULL, 10);
        uint8_t one[TEFLON_SHA256_BYTES], pieces[TEFLON_SHA256_BYTES];
        char hex[2 * TEFLON_SHA256_BYTES + 1];
        teflon_sha256(data, n, one);
        teflon_sha256_ctx h;
        teflon_sha256_init(&h);
        for (size_t off = 0, step = 1; off < n; step = step * 7 % 193 + 1) {
            const size_t take = step < n - off ? step : n - off;
            teflon_sha256_update(&h, data + off, take);
            off += take;
        }
        teflon_sha256_final(&h, pieces);
        for (int j = 0; j < TEFLON_SHA256_BYTES; j++)
            rc |= one[j] != pieces[j];
        teflon_sha256_hex(one, hex);
        printf("%s\n", rc ? "pieces-differ" : hex);
    }
    free(data);
    return rc;
}
