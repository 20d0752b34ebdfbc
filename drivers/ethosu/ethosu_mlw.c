/* The Ethos-U55/U65 weight stream: decoder and brick order (docs/hardware/ethosu-weights.md §2, §3). */
#include "ethosu_mlw.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Slice header values (§2.2). */
#define MLW_ZDIV_DISABLE 6
#define MLW_ZDIV_EOS 7
#define MLW_WDIV_UNCOMPRESSED 7
#define MLW_SLICELEN_BITS 15
#define MLW_MAX_SLICE (1u << MLW_SLICELEN_BITS)
#define MLW_INDEX_MAX 511
#define MLW_CHUNK 12
#define MLW_Q_LIMIT 4096 /* far above any codable quotient: stops a corrupt unary run early */

/* Micro-block and sub-kernel sizes of Ethos-U65-256 (§3.1). */
#define BRICK_OFM_UBLOCK 8
#define BRICK_IFM_UBLOCK 8
#define BRICK_SUBKERNEL 8
#define BRICK_DIM_MAX 65536u

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
   if (err && errlen) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(err, errlen, fmt, ap);
      va_end(ap);
   }
   return code;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Bit reader: LSB first, stream bit k is bit k % 8 of byte k / 8. */

struct mlw_bits {
   const uint8_t *data;
   size_t nbits;
   size_t pos;
   int short_read; /* set when a read ran past the end; the value read is then 0 */
};

static uint32_t bits_read(struct mlw_bits *b, unsigned width)
{
   uint32_t v = 0;
   if (width == 0)
      return 0;
   if (b->pos + width > b->nbits) {
      b->short_read = 1;
      b->pos = b->nbits;
      return 0;
   }
   for (unsigned k = 0; k < width;) {
      size_t byte = (b->pos + k) >> 3;
      unsigned off = (unsigned)((b->pos + k) & 7);
      unsigned take = 8 - off < width - k ? 8 - off : width - k;
      v |= (uint32_t)((b->data[byte] >> off) & ((1u << take) - 1)) << k;
      k += take;
   }
   b->pos += width;
   return v;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Slices */

struct mlw_palette {
   int defined;
   unsigned size;
   unsigned bits;
   unsigned dirofs;
   uint16_t entries[32];
};

struct mlw_slice {
   unsigned zdiv, w_cnt, z_cnt, div;
   int trunc, unary, newpal;
};

/* Scratch shared by the slices of one stream: a slice's weight indices and zero runs. */
struct mlw_scratch {
   uint32_t *w;
   uint32_t *z;
};

static int read_header(struct mlw_bits *b, unsigned zdiv, struct mlw_palette *pal, struct mlw_slice *s, char *err,
                       size_t errlen)
{
   unsigned wdiv;
   if (zdiv > 3 && zdiv != MLW_ZDIV_DISABLE)
      return fail(err, errlen, -EINVAL, "weight stream: bad ZDIV %u at bit %zu", zdiv, b->pos - 3);
   s->zdiv = zdiv;
   s->w_cnt = bits_read(b, MLW_SLICELEN_BITS) + 1;
   wdiv = bits_read(b, 3);
   s->trunc = (int)bits_read(b, 1);
   s->newpal = (int)bits_read(b, 1);
   if (s->newpal) {
      pal->dirofs = bits_read(b, 5);
      pal->size = bits_read(b, 5);
      pal->size = pal->size ? pal->size + 1 : 0;
      pal->bits = bits_read(b, 3) + 2;
      for (unsigned i = 0; i < pal->size; i++)
         pal->entries[i] = (uint16_t)bits_read(b, pal->bits);
      pal->defined = 1;
   }
   if (b->short_read)
      return fail(err, errlen, -EINVAL, "weight stream: truncated slice header");
   if (!pal->defined)
      return fail(err, errlen, -EINVAL, "weight stream: first slice defines no palette");
   if (wdiv == MLW_WDIV_UNCOMPRESSED) {
      unsigned ub = 0;
      while (pal->size && (1u << ub) < pal->size)
         ub++;
      s->div = pal->size ? ub : pal->bits;
      s->unary = 0;
   } else if (wdiv > 5) {
      return fail(err, errlen, -EINVAL, "weight stream: bad WDIV %u", wdiv);
   } else {
      s->div = wdiv;
      s->unary = 1;
   }
   s->z_cnt = zdiv == MLW_ZDIV_DISABLE ? 0 : s->w_cnt + (unsigned)s->newpal;
   return 0;
}

/* The chunk loop (§2.6): weight unary chunks and zero-run unary chunks in lock step, each chunk's remainders one
 * step later. Fills sc->w (w_cnt indices) and sc->z (z_cnt runs). */
static int read_body(struct mlw_bits *b, const struct mlw_slice *s, struct mlw_scratch *sc, char *err,
                     size_t errlen)
{
   unsigned w_pos = 0, z_pos = 0, w_done = 0, z_done = 0; /* symbols with quotient / with remainder */
   uint32_t wq = 0, zq = 0, w_q[MLW_CHUNK], z_q[MLW_CHUNK], pw_q[MLW_CHUNK], pz_q[MLW_CHUNK];
   unsigned pw_n = 0, pz_n = 0;
   unsigned width = (!s->unary && s->div > 5) ? 8 : MLW_CHUNK;
   unsigned zwidth = s->zdiv < 3 ? MLW_CHUNK : 8;
   int w_on, z_on;
   do {
      int balance = s->z_cnt ? (int)w_pos - (int)z_pos : 0;
      unsigned w_n = 0, z_n = 0;
      uint32_t u0 = 0, u1 = 0;
      w_on = (balance < 8 || !s->z_cnt) && w_pos < s->w_cnt;
      z_on = s->z_cnt && balance >= 0 && z_pos < s->z_cnt;
      if (w_on && s->unary)
         u0 = bits_read(b, MLW_CHUNK);
      if (z_on) {
         uint32_t zu = bits_read(b, zwidth);
         for (unsigned i = 0; i < zwidth; i++) {
            if (zu >> i & 1) {
               if (++zq > (1u << 24))
                  return fail(err, errlen, -EINVAL, "weight stream: zero run too long");
            } else {
               z_q[z_n++] = zq;
               zq = 0;
            }
         }
      }
      if (w_on) {
         unsigned n1 = 0;
         for (unsigned i = 0; i < width; i++)
            n1 += u0 >> i & 1;
         u1 = bits_read(b, n1);
         for (unsigned i = 0; i < width && w_n < s->w_cnt - w_pos; i++) {
            uint32_t code = 0;
            if (u0 >> i & 1) {
               code = 1 + (u1 & 1);
               u1 >>= 1;
            }
            wq += code;
            if (wq > MLW_Q_LIMIT)
               return fail(err, errlen, -EINVAL, "weight stream: weight quotient too large");
            if (code < 2 || s->trunc) {
               w_q[w_n++] = wq;
               wq = 0;
            }
         }
      }
      for (unsigned i = 0; i < pw_n; i++)
         sc->w[w_done++] = (pw_q[i] << s->div) + bits_read(b, s->div);
      for (unsigned i = 0; i < pz_n; i++)
         sc->z[z_done++] = (pz_q[i] << s->zdiv) + bits_read(b, s->zdiv);
      if (b->short_read)
         return fail(err, errlen, -EINVAL, "weight stream: truncated in a slice body");
      /* The next step sends these chunks' remainders (zero runs past z_cnt are chunk padding). */
      pw_n = w_n;
      pz_n = z_pos + z_n > s->z_cnt ? (z_pos < s->z_cnt ? s->z_cnt - z_pos : 0) : z_n;
      for (unsigned i = 0; i < w_n; i++)
         pw_q[i] = w_q[i];
      for (unsigned i = 0; i < pz_n; i++)
         pz_q[i] = z_q[i];
      w_pos += w_n;
      z_pos += z_n;
   } while (w_on || z_on);
   return 0;
}

/* Indices and zero runs of one slice -> values appended to out. */
static int emit_slice(const struct mlw_slice *s, const struct mlw_palette *pal, const struct mlw_scratch *sc,
                      int16_t *out, size_t max_out, size_t *n, char *err, size_t errlen)
{
   for (unsigned k = 0; k <= s->w_cnt; k++) {
      /* zero run k: before the first weight (new palette only), then after each weight */
      size_t zeros = 0;
      if (s->z_cnt) {
         if (s->newpal)
            zeros = sc->z[k];
         else if (k > 0)
            zeros = sc->z[k - 1];
      }
      if (zeros > max_out - *n)
         return fail(err, errlen, -ENOSPC, "weight stream: more than %zu values", max_out);
      for (size_t j = 0; j < zeros; j++)
         out[(*n)++] = 0;
      if (k == s->w_cnt)
         break;
      uint32_t idx = sc->w[k];
      uint32_t code = idx < pal->size ? pal->entries[idx] : idx - pal->size + pal->dirofs;
      if (idx > MLW_INDEX_MAX || code > MLW_INDEX_MAX)
         return fail(err, errlen, -EINVAL, "weight stream: weight index %u past 9 bits", idx);
      if (*n >= max_out)
         return fail(err, errlen, -ENOSPC, "weight stream: more than %zu values", max_out);
      out[(*n)++] = (int16_t)((code & 1) ? -(int)(code >> 1) : (int)(code >> 1));
   }
   return 0;
}

int ethosu_mlw_decode(const uint8_t *stream, size_t len, int16_t *out, size_t max_out, size_t *n_out, char *err,
                      size_t errlen)
{
   struct mlw_bits b = {stream, len * 8, 0, 0};
   struct mlw_palette pal = {0};
   struct mlw_scratch sc;
   int slices = 0, rc = 0;
   size_t n = 0;
   if (n_out)
      *n_out = 0;
   if (!stream || (!out && max_out) || len > (SIZE_MAX >> 4))
      return fail(err, errlen, -EINVAL, "weight stream: bad arguments");
   sc.w = malloc(MLW_MAX_SLICE * sizeof(*sc.w));
   sc.z = malloc((MLW_MAX_SLICE + 1) * sizeof(*sc.z));
   if (!sc.w || !sc.z) {
      rc = fail(err, errlen, -ENOMEM, "weight stream: out of memory");
      goto done;
   }
   while (b.nbits - b.pos >= 3) { /* the end marker may be cut short by the end of the buffer */
      unsigned zdiv = bits_read(&b, 3);
      struct mlw_slice s = {0};
      if (zdiv == MLW_ZDIV_EOS) {
         b.pos = (b.pos + 7) & ~(size_t)7; /* byte align; 0xFF padding reads as further end markers */
         if (b.pos > b.nbits)
            b.pos = b.nbits;
         continue;
      }
      rc = read_header(&b, zdiv, &pal, &s, err, errlen);
      if (!rc)
         rc = read_body(&b, &s, &sc, err, errlen);
      if (!rc)
         rc = emit_slice(&s, &pal, &sc, out, max_out, &n, err, errlen);
      if (rc)
         goto done;
      slices++;
   }
   if (!slices)
      rc = fail(err, errlen, -EINVAL, "weight stream: no slice");
done:
   free(sc.w);
   free(sc.z);
   if (n_out)
      *n_out = n;
   return rc;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Brick order (§3) */

static int geom_check(const struct ethosu_brick_geom *g, char *err, size_t errlen)
{
   if (!g)
      return fail(err, errlen, -EINVAL, "bricks: no geometry");
   if (!g->ofm_depth || !g->kernel_h || !g->kernel_w || !g->ofm_block_depth || (!g->depthwise && !g->ifm_depth))
      return fail(err, errlen, -EINVAL, "bricks: zero dimension");
   if (g->ofm_depth > BRICK_DIM_MAX || g->ifm_depth > BRICK_DIM_MAX || g->kernel_h > 256 || g->kernel_w > 256 ||
       g->ofm_block_depth > BRICK_DIM_MAX)
      return fail(err, errlen, -EINVAL, "bricks: dimension out of range");
   if ((size_t)g->ofm_depth * g->kernel_h * g->kernel_w * (g->depthwise ? 1 : g->ifm_depth) > INT32_MAX)
      return fail(err, errlen, -EINVAL, "bricks: more than 2^31 weights");
   if ((g->dilation_x != 1 && g->dilation_x != 2) || (g->dilation_y != 1 && g->dilation_y != 2))
      return fail(err, errlen, -EINVAL, "bricks: dilation must be 1 or 2");
   if (g->ifm_bits != 8 && g->ifm_bits != 16)
      return fail(err, errlen, -EINVAL, "bricks: IFM precision must be 8 or 16 bits");
   if (g->depthwise && g->part_kernel)
      return fail(err, errlen, -EINVAL, "bricks: depthwise has no part-kernel-first order");
   return 0;
}

static uint32_t ceil_div(uint32_t a, uint32_t b)
{
   return (a + b - 1) / b;
}

/* One brick's loop limits (§3.1). */
struct brick {
   uint32_t o0, i0, sy, sx, sub_h, sub_w, taps, outer, inner, n_ou, iz_len;
};

static void brick_limits(const struct ethosu_brick_geom *g, uint32_t o0, uint32_t i0, uint32_t sy, uint32_t sx,
                         struct brick *k)
{
   uint32_t dy = BRICK_SUBKERNEL / g->dilation_y, dx = BRICK_SUBKERNEL / g->dilation_x;
   uint32_t ifm_block = (g->part_kernel || g->ifm_bits == 16) ? 16 : 32;
   uint32_t round = g->depthwise ? 4 : g->part_kernel ? (g->ifm_bits == 16 ? 2 : 4) : 1;
   uint32_t ofm_len = g->ofm_depth - o0 < g->ofm_block_depth ? g->ofm_depth - o0 : g->ofm_block_depth;
   uint32_t ifm_len;
   k->o0 = o0;
   k->i0 = i0;
   k->sy = sy;
   k->sx = sx;
   k->sub_h = g->kernel_h - sy < dy ? g->kernel_h - sy : dy;
   k->sub_w = g->kernel_w - sx < dx ? g->kernel_w - sx : dx;
   k->taps = ceil_div(k->sub_h * k->sub_w, round) * round;
   if (g->depthwise)
      ifm_len = BRICK_IFM_UBLOCK;
   else if (g->part_kernel)
      ifm_len = g->ifm_depth - i0 < ifm_block ? g->ifm_depth - i0 : ifm_block;
   else
      ifm_len = ifm_block; /* depth first walks the whole IFM block */
   k->outer = g->part_kernel ? ceil_div(ifm_len, BRICK_IFM_UBLOCK) : 1;
   k->inner = g->part_kernel ? 1 : ceil_div(ifm_len, BRICK_IFM_UBLOCK);
   k->n_ou = ceil_div(ofm_len, BRICK_OFM_UBLOCK);
   k->iz_len = g->depthwise ? 1 : BRICK_IFM_UBLOCK;
}

/* Calls visit(ctx, position, flat OHWI index or -1) for every decoded position, in order; stops on non-zero. */
typedef int (*brick_visit)(void *ctx, size_t pos, int32_t flat);

static int brick_walk(const struct ethosu_brick_geom *g, brick_visit visit, void *ctx)
{
   uint32_t dy = BRICK_SUBKERNEL / g->dilation_y, dx = BRICK_SUBKERNEL / g->dilation_x;
   uint32_t ifm_block = (g->part_kernel || g->ifm_bits == 16) ? 16 : 32;
   uint32_t ifm = g->depthwise ? 1 : g->ifm_depth, ifm_stop = g->depthwise ? 1 : g->ifm_depth;
   size_t pos = 0;
   for (uint32_t o0 = 0; o0 < g->ofm_depth; o0 += g->ofm_block_depth)
      for (uint32_t i0 = 0; i0 < ifm_stop; i0 += ifm_block)
         for (uint32_t sy = 0; sy < g->kernel_h; sy += dy)
            for (uint32_t sx = 0; sx < g->kernel_w; sx += dx) {
               struct brick k;
               brick_limits(g, o0, i0, sy, sx, &k);
               for (uint32_t a = 0; a < k.outer; a++)
                  for (uint32_t ou = 0; ou < k.n_ou; ou++)
                     for (uint32_t t = 0; t < k.taps; t++)
                        for (uint32_t c = 0; c < k.inner; c++)
                           for (uint32_t oz = 0; oz < BRICK_OFM_UBLOCK; oz++)
                              for (uint32_t iz = 0; iz < k.iz_len; iz++) {
                                 uint32_t ky = t / k.sub_w, kx = t % k.sub_w;
                                 uint32_t o = o0 + ou * BRICK_OFM_UBLOCK + oz;
                                 uint32_t i = g->depthwise ? 0 : i0 + (a + c) * BRICK_IFM_UBLOCK + iz;
                                 int32_t flat = -1;
                                 if (o < g->ofm_depth && i < ifm && ky < k.sub_h)
                                    flat = (int32_t)((((size_t)o * g->kernel_h + sy + ky) * g->kernel_w + sx + kx) *
                                                     ifm + i);
                                 int rc = visit(ctx, pos++, flat);
                                 if (rc)
                                    return rc;
                              }
            }
   return 0;
}

size_t ethosu_brick_count(const struct ethosu_brick_geom *g)
{
   uint32_t dy, dx, ifm_block, ifm_stop;
   size_t n = 0;
   if (geom_check(g, NULL, 0))
      return 0;
   dy = BRICK_SUBKERNEL / g->dilation_y;
   dx = BRICK_SUBKERNEL / g->dilation_x;
   ifm_block = (g->part_kernel || g->ifm_bits == 16) ? 16 : 32;
   ifm_stop = g->depthwise ? 1 : g->ifm_depth;
   for (uint32_t o0 = 0; o0 < g->ofm_depth; o0 += g->ofm_block_depth)
      for (uint32_t i0 = 0; i0 < ifm_stop; i0 += ifm_block)
         for (uint32_t sy = 0; sy < g->kernel_h; sy += dy)
            for (uint32_t sx = 0; sx < g->kernel_w; sx += dx) {
               struct brick k;
               brick_limits(g, o0, i0, sy, sx, &k);
               n += (size_t)k.outer * k.n_ou * k.taps * k.inner * BRICK_OFM_UBLOCK * k.iz_len;
            }
   return n;
}

struct index_ctx {
   int32_t *index;
   size_t n;
};

static int index_visit(void *ctx, size_t pos, int32_t flat)
{
   struct index_ctx *c = ctx;
   if (pos >= c->n)
      return -ENOSPC;
   c->index[pos] = flat;
   return 0;
}

int ethosu_brick_index(const struct ethosu_brick_geom *g, int32_t *index, size_t n, char *err, size_t errlen)
{
   struct index_ctx c = {index, n};
   int rc = geom_check(g, err, errlen);
   if (rc)
      return rc;
   if (n != ethosu_brick_count(g) || !index)
      return fail(err, errlen, -EINVAL, "bricks: %zu positions, the geometry has %zu", n, ethosu_brick_count(g));
   return brick_walk(g, index_visit, &c);
}

struct unorder_ctx {
   const int16_t *values;
   int16_t *ohwi;
   size_t ohwi_len;
   size_t bad_pos;
};

static int unorder_visit(void *ctx, size_t pos, int32_t flat)
{
   struct unorder_ctx *c = ctx;
   if (flat < 0) {
      if (c->values[pos] != 0) {
         c->bad_pos = pos;
         return -EINVAL;
      }
      return 0;
   }
   if ((size_t)flat >= c->ohwi_len)
      return -ENOSPC;
   c->ohwi[flat] = c->values[pos];
   return 0;
}

int ethosu_brick_unorder(const struct ethosu_brick_geom *g, const int16_t *values, size_t n_values, int16_t *ohwi,
                         size_t ohwi_len, char *err, size_t errlen)
{
   struct unorder_ctx c = {values, ohwi, ohwi_len, 0};
   size_t want, ifm;
   int rc = geom_check(g, err, errlen);
   if (rc)
      return rc;
   want = ethosu_brick_count(g);
   ifm = g->depthwise ? 1 : g->ifm_depth;
   if (n_values != want || !values)
      return fail(err, errlen, -EINVAL, "bricks: the weight stream decodes to %zu values, the kick-off needs %zu",
                  n_values, want);
   if (!ohwi || ohwi_len != (size_t)g->ofm_depth * g->kernel_h * g->kernel_w * ifm)
      return fail(err, errlen, -EINVAL, "bricks: OHWI buffer of %zu weights, the kick-off has %zu", ohwi_len,
                  (size_t)g->ofm_depth * g->kernel_h * g->kernel_w * ifm);
   rc = brick_walk(g, unorder_visit, &c);
   if (rc == -EINVAL)
      return fail(err, errlen, rc, "bricks: padding position %zu holds %d, not 0", c.bad_pos, values[c.bad_pos]);
   if (rc)
      return fail(err, errlen, rc, "bricks: index out of range");
   return 0;
}
