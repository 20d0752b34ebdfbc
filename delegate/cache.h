/* The compiled-program cache: entries on disk under a directory, keyed by SHA-256 digests of everything a
 * compile depends on (docs/architecture.md, "Program cache").
 *
 * Two kinds of entries: the support decisions of a whole graph (supported[] and the debug table) and the
 * program blob of each partition. A lookup that hits never involves Python. Entries are written to a
 * temporary file and renamed into place, so concurrent processes only ever see whole entries; every load
 * is verified (magic, format, key, length, payload SHA-256) and anything wrong is a miss. Nothing here
 * fails the delegate: an unusable directory means compiling without the cache.
 */
#ifndef TEFLON_CACHE_H
#define TEFLON_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "sha256.h"
#include "teflon_graph.h"

/* Entry file layout (little-endian on the machines we run on; native order): */
#define TEFLON_CACHE_MAGIC "TFLC"
#define TEFLON_CACHE_FORMAT 2u      /* bump when the entry layout or any key's contents change */
#define TEFLON_CACHE_HEADER 80      /* magic[4], u32 format, key[32], u64 payload length, payload checksum[32] */

enum teflon_cache_kind {
    TEFLON_CACHE_SUPPORT = 's',     /* s-<key>.tfc: one graph's support decisions */
    TEFLON_CACHE_PROGRAM = 'p',     /* p-<key>.tfc: one partition's program blob */
};

typedef struct teflon_cache {
    char *dir;              /* NULL: the cache is off */
    uint64_t max_bytes;     /* eviction threshold over all entries in dir */
    int debug;
    int unusable;           /* the directory could not be created or written: said once, then no stores */
} teflon_cache;

/* 0 and a malloc'd payload (free() it; a NUL follows its len bytes) on a verified hit; -1 on a miss. A damaged entry is a miss,
 * reported under debug; the next store replaces it. A hit marks the entry recently used. */
int teflon_cache_load(teflon_cache *c, enum teflon_cache_kind kind, const uint8_t key[TEFLON_SHA256_BYTES],
                      uint8_t **payload, size_t *len);

/* Writes the entry atomically, then evicts the least recently used entries above max_bytes. 0 when
 * stored; -1 otherwise (reported under debug, once, when the directory is unusable). */
int teflon_cache_store(teflon_cache *c, enum teflon_cache_kind kind, const uint8_t key[TEFLON_SHA256_BYTES],
                       const void *payload, size_t len);

/* Key derivation for one Prepare: per-tensor digests are computed once and shared by the graph key and
 * every partition key. `settings` is the text of the compile-relevant delegate options. */
typedef struct teflon_keyer {
    const teflon_graph *g;
    uint8_t (*tensor_digest)[TEFLON_SHA256_BYTES];
    uint8_t *have;                          /* tensor_digest[i] is computed */
    uint8_t context[TEFLON_SHA256_BYTES];   /* format, build id, settings, compile-relevant environment */
} teflon_keyer;

int teflon_keyer_init(teflon_keyer *k, const teflon_graph *g, const char *settings);
void teflon_keyer_free(teflon_keyer *k);

/* Every node of the graph and every tensor they touch. */
void teflon_key_graph(teflon_keyer *k, uint8_t key[TEFLON_SHA256_BYTES]);

/* The partition's nodes in the given order (by node index), the tensors they touch, its inputs and outputs. */
void teflon_key_partition(teflon_keyer *k, const int32_t *nodes, int nnodes, const int32_t *inputs, int ninputs,
                          const int32_t *outputs, int noutputs, uint8_t key[TEFLON_SHA256_BYTES]);

/* The build id keys are made with (teflon version + digest of the compiler's Python sources). */
const char *teflon_cache_build_id(void);

#endif
