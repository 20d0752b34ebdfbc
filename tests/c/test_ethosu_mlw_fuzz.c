/* The Ethos-U weight stream decoder (drivers/ethosu/ethosu_mlw.c) on hostile input, built with the sanitizers by
 * tests/ethos_u/test_mlw.py: every file named on the command line is decoded into an output buffer of exactly
 * MAX_OUT values (so any write past it is a heap overflow ASan reports), then, when it decodes, un-ordered for a
 * small convolution geometry whatever the count. Prints "<rc> <count>" per file; exit 0 unless a call breaks
 * its contract (rc out of range, count past the buffer, no message on error).
 *
 * usage: test_ethosu_mlw_fuzz FILE...
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ethosu_mlw.h"

#define MAX_OUT 4096

static int decode_file(const char *path)
{
   FILE *f = fopen(path, "rb");
   uint8_t *data;
   long size;
   int16_t *out = malloc(MAX_OUT * sizeof(*out));
   int16_t ohwi[16 * 3 * 3 * 8];
   char err[256] = "";
   size_t n = 0;
   int rc;
   struct ethosu_brick_geom g = {0, 1, 16, 8, 3, 3, 16, 1, 1, 8};
   if (!f || !out) {
      free(out);
      return 2;
   }
   fseek(f, 0, SEEK_END);
   size = ftell(f);
   fseek(f, 0, SEEK_SET);
   data = malloc(size > 0 ? (size_t)size : 1); /* exactly sized: a read past it is reported */
   if (!data || fread(data, 1, (size_t)size, f) != (size_t)size) {
      fclose(f);
      free(data);
      free(out);
      return 2;
   }
   fclose(f);
   rc = ethosu_mlw_decode(data, (size_t)size, out, MAX_OUT, &n, err, sizeof(err));
   printf("%d %zu\n", rc, n);
   if (rc > 0 || n > MAX_OUT || (rc < 0 && err[0] == '\0') ||
       (rc < 0 && rc != -EINVAL && rc != -ENOSPC && rc != -ENOMEM)) {
      fprintf(stderr, "%s: contract broken: rc %d n %zu err '%s'\n", path, rc, n, err);
      rc = 1;
   } else {
      int urc = ethosu_brick_unorder(&g, out, n, ohwi, sizeof(ohwi) / sizeof(ohwi[0]), err, sizeof(err));
      rc = (urc < 0 && err[0] == '\0') ? 1 : 0;
   }
   free(data);
   free(out);
   return rc;
}

int main(int argc, char **argv)
{
   int bad = 0;
   for (int i = 1; i < argc; i++)
      bad |= decode_file(argv[i]);
   return bad;
}
