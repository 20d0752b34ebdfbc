/* NHWC <-> device layout conversion (see layout.h). The per-pixel channel loops are plain byte
 * loops over a fixed-size atom so the compiler vectorizes them. */
#include "layout.h"

#include <string.h>

/* Element (y, x, c) of the host tensor: NHWC, or NCHW (an NCHW island tensor whose device copy is its NHWC
 * twin, python/teflon/nchw_islands.py). Not the hot path: island tensors cross a partition boundary only where a
 * CPU node reads or writes them. */
static size_t host_index(const tp_io *io, size_t y, size_t x, size_t c)
{
    const size_t h = (size_t)io->h, w = (size_t)io->w, cc = (size_t)io->c;
    return io->host_order == TP_HOST_NCHW ? (c * h + y) * w + x : (y * w + x) * cc + c;
}

static void nchw_to_device(const tp_io *io, const uint8_t *host, uint8_t *dev)
{
    const size_t h = (size_t)io->h, w = (size_t)io->w, c = (size_t)io->c, c2 = io->c2;
    const uint8_t x = (uint8_t)io->xor_mask, pad = (uint8_t)io->pad_value;
    uint8_t *base = dev + io->offset;
    const size_t planes = (c + c2 - 1) / c2;
    for (size_t p = 0; p < planes; p++)
        for (size_t y = 0; y < h; y++) {
            uint8_t *d = base + p * io->plane_pitch + y * io->row_pitch;
            memset(d, pad, io->row_pitch);
            for (size_t j = 0; j < c2 && p * c2 + j < c; j++)
                for (size_t i = 0; i < w; i++)
                    d[i * c2 + j] = host[host_index(io, y, i, p * c2 + j)] ^ x;
        }
}

static void nchw_from_device(const tp_io *io, const uint8_t *dev, uint8_t *host)
{
    const size_t h = (size_t)io->h, w = (size_t)io->w, c = (size_t)io->c, c2 = io->c2;
    const uint8_t x = (uint8_t)io->xor_mask;
    const uint8_t *base = dev + io->offset;
    for (size_t ch = 0; ch < c; ch++)
        for (size_t y = 0; y < h; y++) {
            const uint8_t *s = base + (ch / c2) * io->plane_pitch + y * io->row_pitch + ch % c2;
            for (size_t i = 0; i < w; i++)
                host[host_index(io, y, i, ch)] = s[i * c2] ^ x;
        }
}

void teflon_layout_to_device(const tp_io *io, const uint8_t *host, uint8_t *dev)
{
    if (io->host_order == TP_HOST_NCHW) {
        nchw_to_device(io, host, dev);
        return;
    }

    const size_t h = (size_t)io->h, w = (size_t)io->w, c = (size_t)io->c;
    const uint8_t x = (uint8_t)io->xor_mask, pad = (uint8_t)io->pad_value;
    uint8_t *base = dev + io->offset;

    if (io->layout == TP_LAYOUT_ROWS) {
        for (size_t y = 0; y < h; y++) {
            uint8_t *d = base + y * io->row_pitch;
            const uint8_t *s = host + y * w;
            for (size_t i = 0; i < w; i++)
                d[i] = s[i] ^ x;
            memset(d + w, pad, io->row_pitch - w);
        }
        return;
    }
    const size_t c2 = io->c2, planes = (c + c2 - 1) / c2;
    for (size_t p = 0; p < planes; p++) {
        const size_t c0 = p * c2, n = c - c0 < c2 ? c - c0 : c2;
        for (size_t y = 0; y < h; y++) {
            uint8_t *d = base + p * io->plane_pitch + y * io->row_pitch;
            const uint8_t *s = host + y * w * c + c0;
            if (n == 16 && c2 == 16) {
                for (size_t i = 0; i < w; i++)
                    for (size_t j = 0; j < 16; j++) /* constant trip count: one vector op */
                        d[i * 16 + j] = s[i * c + j] ^ x;
            } else if (n == c2) {
                for (size_t i = 0; i < w; i++)
                    for (size_t j = 0; j < c2; j++)
                        d[i * c2 + j] = s[i * c + j] ^ x;
            } else {
                for (size_t i = 0; i < w; i++) {
                    for (size_t j = 0; j < n; j++)
                        d[i * c2 + j] = s[i * c + j] ^ x;
                    memset(d + i * c2 + n, pad, c2 - n);
                }
            }
            memset(d + w * c2, pad, io->row_pitch - w * c2);
        }
    }
}

void teflon_layout_from_device(const tp_io *io, const uint8_t *dev, uint8_t *host)
{
    if (io->host_order == TP_HOST_NCHW) {
        nchw_from_device(io, dev, host);
        return;
    }
    const size_t h = (size_t)io->h, w = (size_t)io->w, c = (size_t)io->c;
    const uint8_t x = (uint8_t)io->xor_mask;
    const uint8_t *base = dev + io->offset;

    if (io->layout == TP_LAYOUT_ROWS) {
        for (size_t y = 0; y < h; y++)
            for (size_t i = 0; i < w; i++)
                host[y * w + i] = base[y * io->row_pitch + i] ^ x;
        return;
    }
    const size_t c2 = io->c2, planes = (c + c2 - 1) / c2;
    for (size_t p = 0; p < planes; p++) {
        const size_t c0 = p * c2, n = c - c0 < c2 ? c - c0 : c2;
        for (size_t y = 0; y < h; y++) {
            const uint8_t *s = base + p * io->plane_pitch + y * io->row_pitch;
            uint8_t *d = host + y * w * c + c0;
            if (n == 16 && c2 == 16) {
                for (size_t i = 0; i < w; i++)
                    for (size_t j = 0; j < 16; j++)
                        d[i * c + j] = s[i * 16 + j] ^ x;
            } else {
                for (size_t i = 0; i < w; i++)
                    for (size_t j = 0; j < n; j++)
                        d[i * c + j] = s[i * c2 + j] ^ x;
            }
        }
    }
}
