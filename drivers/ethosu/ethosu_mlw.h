/* The Ethos-U55/U65 weight stream for the simulated NPU: the compressed-stream decoder ("mlw") and the brick
 * order that maps decoded values back to OHWI weights. Format and order: docs/hardware/ethosu-weights.md; the
 * Python encoder that writes them is python/teflon/ethosu/mlw.py and bricks.py.
 *
 * Both entry points are bounds-checked: a corrupt or truncated stream, or a geometry the order does not cover,
 * returns a negative errno and a message in err (when err is not NULL); nothing is read or written outside the
 * buffers given. No global state; the decoder allocates two scratch arrays per call and frees them. */
#ifndef ETHOSU_MLW_H
#define ETHOSU_MLW_H

#include <stddef.h>
#include <stdint.h>

/* Decode one weight stream (what NPU_SET_WEIGHT_BASE / NPU_SET_WEIGHT_LENGTH point at) into signed values
 * (-255..255, weight minus zero point, in brick order). Writes at most max_out values to out and their count to
 * *n_out. Returns 0, or -EINVAL (malformed or truncated stream), -ENOSPC (more than max_out values), -ENOMEM. */
int ethosu_mlw_decode(const uint8_t *stream, size_t len, int16_t *out, size_t max_out, size_t *n_out, char *err,
                      size_t errlen);

/* What the brick order of one kick-off depends on, all from its command stream. */
struct ethosu_brick_geom {
   int depthwise;             /* NPU_OP_DEPTHWISE (else NPU_OP_CONV, fully connected included) */
   int part_kernel;           /* NPU_SET_KERNEL_STRIDE bit 2 (weight_order): 1 part-kernel first, 0 depth first */
   uint32_t ofm_depth;        /* NPU_SET_OFM_DEPTH_M1 + 1 */
   uint32_t ifm_depth;        /* NPU_SET_IFM_DEPTH_M1 + 1 (depthwise: not used) */
   uint32_t kernel_h;         /* taps, un-dilated: (NPU_SET_KERNEL_HEIGHT_M1) / dilation_y + 1 */
   uint32_t kernel_w;
   uint32_t ofm_block_depth;  /* NPU_SET_OFM_BLK_DEPTH_M1 + 1 */
   uint32_t dilation_x;       /* 1 or 2 (NPU_SET_KERNEL_STRIDE bit 3 + 1) */
   uint32_t dilation_y;       /* 1 or 2 (bit 4 + 1) */
   uint32_t ifm_bits;         /* 8 or 16 (NPU_SET_IFM_PRECISION) */
};

/* Number of values the kick-off's weight stream must decode to (weights plus padding zeros); 0 when the
 * geometry is invalid (then ethosu_brick_unorder says why). */
size_t ethosu_brick_count(const struct ethosu_brick_geom *g);

/* For each of the n = ethosu_brick_count(g) decoded positions, the flat OHWI index of the weight it carries
 * (((o * kernel_h + ky) * kernel_w + kx) * I + i, I = 1 for depthwise), or -1 for a padding zero. */
int ethosu_brick_index(const struct ethosu_brick_geom *g, int32_t *index, size_t n, char *err, size_t errlen);

/* Decoded values -> int16 OHWI weights (ohwi_len = O * kernel_h * kernel_w * I, I = 1 for depthwise): the
 * weight for (ofm channel o, ky, kx, ifm channel i). n_values must equal ethosu_brick_count(g); -EINVAL
 * otherwise, or when a padding position carries a non-zero value (a stream that does not fit the geometry). */
int ethosu_brick_unorder(const struct ethosu_brick_geom *g, const int16_t *values, size_t n_values, int16_t *ohwi,
                         size_t ohwi_len, char *err, size_t errlen);

#endif /* ETHOSU_MLW_H */
