/* The etnaviv v8 coefficient stream writer exported for the Python compiler (teflon.etnaviv.coefs_v8): codes go
 * in pairs; step t of the stream holds the two part0 fields of pair t, the part1 fields of pair t - 1 and the
 * payloads of pair t - 2, then two dummy steps push the last part1s and payloads out (the layout documented in
 * coefs_v8.py, docs/hardware/etnaviv-coefficients.md). One pass over the codes with the per-byte code tables. */
#include "native.h"

#include <stdlib.h>
#include <string.h>

#include "native_bits.h"

/* The buffer header (coefs_v8.py): 64 bytes, byte 0 the version, the symbol map word, each core's stream bits. */
#define V8_HEADER 64
#define V8_HEADER_BYTE0 0x10
#define V8_SYMBOL_MAP_OFFSET 20
#define V8_STREAM_SIZE_OFFSET 28

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
        /* step t: part0 of pair t, part1 of pair t - 1, payloads of pair t - 2 (at most 6 + 4 + 16 bits, one put) */
        teflon_bits_put(&b, p0 | (p1 << 6) | (pl_prev2 << (6 + p1w)), (unsigned)(6 + p1w + plw_prev2));
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

void teflon_native_byte_histogram(const uint8_t *w, uint64_t n, unsigned sub, uint64_t *hist)
{
    uint64_t h[4][256] = { { 0 } }; /* four tables: consecutive equal bytes do not wait on one counter */
    uint64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        h[0][(uint8_t)(w[i] - sub)]++;
        h[1][(uint8_t)(w[i + 1] - sub)]++;
        h[2][(uint8_t)(w[i + 2] - sub)]++;
        h[3][(uint8_t)(w[i + 3] - sub)]++;
    }
    for (; i < n; i++)
        h[0][(uint8_t)(w[i] - sub)]++;
    for (unsigned v = 0; v < 256; v++)
        hist[v] = h[0][v] + h[1][v] + h[2][v] + h[3][v];
}

/* Little-endian u32 at out. */
static void v8_put_u32(uint8_t *out, uint64_t v)
{
    for (unsigned i = 0; i < 4; i++)
        out[i] = (uint8_t)(v >> (8 * i));
}

int64_t teflon_native_etna_v8_buffer(const uint8_t *w, uint64_t wlen, uint64_t oc, uint64_t k, unsigned bs,
                                     unsigned pad, uint64_t nblocks, unsigned weight_zp, unsigned raw,
                                     const int64_t *ch, const int64_t *sb_len, unsigned ncores, unsigned nsb,
                                     uint32_t symbol_map, const uint8_t *part0, const uint8_t *part1,
                                     const uint8_t *part1_w, const uint16_t *payload, const uint8_t *payload_w,
                                     const int64_t *bias, int64_t input_zp, uint8_t *out, uint64_t cap)
{
    const uint64_t slot = (uint64_t)bs + pad;
    uint64_t total_ch = 0, most = 0;
    if (bs == 0 || weight_zp > 255 || oc * k > wlen || nblocks * bs < k || ncores > 9 || V8_HEADER > cap)
        return -1;
    for (unsigned c = 0; c < ncores; c++) {
        uint64_t n = 0;
        for (unsigned s = 0; s < nsb; s++) {
            if (sb_len[c * nsb + s] < 0)
                return -1;
            n += (uint64_t)sb_len[c * nsb + s];
        }
        total_ch += n;
        most = n > most ? n : most;
    }
    for (uint64_t i = 0; i < total_ch; i++)
        if (ch[i] < 0 || (uint64_t)ch[i] >= oc)
            return -1;
    uint8_t *codes = malloc(2 + most * nblocks * slot);
    if (!codes)
        return -1;
    const uint8_t fill = raw ? (uint8_t)weight_zp : 0; /* past the kernel and the block padding: the zero point */
    memset(out, 0, V8_HEADER);
    out[0] = V8_HEADER_BYTE0;
    v8_put_u32(out + V8_SYMBOL_MAP_OFFSET, symbol_map);
    uint64_t off = V8_HEADER;
    const int64_t *chs = ch;
    int64_t rc = 0;
    for (unsigned c = 0; c < ncores && rc == 0; c++) {
        /* the kernel count leads the stream as two coded bytes, then per superblock block j of every kernel */
        uint64_t n = 2, kpc = 0;
        for (unsigned s = 0; s < nsb; s++) {
            const uint64_t m = (uint64_t)sb_len[c * nsb + s];
            for (uint64_t j = 0; j < nblocks; j++) {
                const uint64_t first = j * bs, len = first >= k ? 0 : (k - first < bs ? k - first : bs);
                for (uint64_t i = 0; i < m; i++) {
                    const uint8_t *src = w + (uint64_t)chs[i] * k + first;
                    uint8_t *dst = codes + n;
                    if (raw)
                        memcpy(dst, src, len);
                    else
                        for (uint64_t e = 0; e < len; e++)
                            dst[e] = (uint8_t)(src[e] - weight_zp);
                    memset(dst + len, fill, slot - len);
                    n += slot;
                }
            }
            chs += m;
            kpc += m;
        }
        codes[0] = (uint8_t)(kpc & 0xFF);
        codes[1] = (uint8_t)(kpc >> 8);
        const int64_t bits = teflon_native_etna_v8_stream(codes, n, part0, part1, part1_w, payload, payload_w,
                                                          out + off, cap - off);
        if (bits < 0) {
            rc = -1;
            break;
        }
        const uint64_t bytes = ((uint64_t)bits + 7) / 8, aligned = (bytes + 63) / 64 * 64;
        if (off + aligned > cap) {
            rc = -1;
            break;
        }
        memset(out + off + bytes, 0, aligned - bytes);
        v8_put_u32(out + V8_STREAM_SIZE_OFFSET + 4 * c, (uint64_t)bits);
        off += aligned;
    }
    free(codes);
    if (rc < 0 || off + 4 * oc > cap)
        return -1;
    /* the bias table: the v8 MAC sees activations as x - 128, so (128 - zp_in) * sum(w - zp) folds into the bias */
    for (uint64_t o = 0; o < oc; o++) {
        const int64_t sum = teflon_byte_sum(w, wlen, o * k, k) - (int64_t)(k * weight_zp);
        v8_put_u32(out + off + 4 * o, (uint64_t)(bias[o] + sum * (128 - input_zp)) & 0xFFFFFFFF);
    }
    return (int64_t)(off + 4 * oc);
}
