/* NHWC <-> device layout conversion (see layout.h). The per-pixel channel loops are plain byte
 * loops over a fixed-size atom so the compiler vectorizes them. */
#include "layout.h"

#include <string.h>

void teflon_layout_to_device(const tp_io *io, const uint8_t *host, uint8_t *dev)
{
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
