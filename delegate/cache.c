/* The compiled-program cache (see cache.h and docs/architecture.md, "Program cache"). */
#define _GNU_SOURCE /* environ, mkstemps-free mkstemp, utimensat, fstatat */

#include "cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "teflon_build_id.h"

extern char **environ;

#define ENTRY_SUFFIX ".tfc"
#define ENTRY_NAME_LEN (2 + 2 * TEFLON_SHA256_BYTES + 4) /* "p-" + hex + ".tfc" */
#define TMP_PREFIX ".tmp-"
#define STALE_TMP_SECONDS 3600  /* a temporary file this old belongs to a writer that died */
#define MAX_ENTRY_BYTES ((uint64_t)1 << 32)

const char *teflon_cache_build_id(void)
{
    return TEFLON_BUILD_ID;
}

/* ---------------------------------------------------------------------------------------------- */
/* Keys                                                                                           */

static void put(teflon_sha256_ctx *h, const void *p, size_t n)
{
    teflon_sha256_update(h, p, n);
}

static void put_i32(teflon_sha256_ctx *h, int32_t v)
{
    put(h, &v, sizeof(v));
}

static void put_str(teflon_sha256_ctx *h, const char *s)
{
    const size_t n = strlen(s);
    put_i32(h, (int32_t)n);
    put(h, s, n);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A TEFLON_* variable the compiler read would change programs without any option changing (none is read
 * today), so all of them are part of the key, except these, which never reach a compile. */
static int env_irrelevant(const char *entry)
{
    static const char *const skip[] = {
        "TEFLON_DEBUG=", "TEFLON_CACHE_DIR=", "TEFLON_LIBRARY=", "TEFLON_SYSFS_ROOT=", "TEFLON_REFERENCE_CACHE=",
        "TEFLON_SHARED=", "TEFLON_REQUIRE_DELEGATE=", "TEFLON_RESULTS_DIR=", "TEFLON_SKIP_ASAN=",
    };
    for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
        if (strncmp(entry, skip[i], strlen(skip[i])) == 0)
            return 1;
    return 0;
}

/* TEFLON_HW_FACTS names a report whose proved facts change programs (python/teflon/hw_facts.py): its bytes are part
 * of the key, not only its path, so a report rewritten in place (a later board run) compiles afresh. An unreadable
 * file keys as such (the compiler then enables nothing). */
static int put_hw_facts(teflon_sha256_ctx *h)
{
    const char *path = getenv("TEFLON_HW_FACTS");
    if (!path || !path[0])
        return 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        put_str(h, "unreadable");
        return 0;
    }
    uint8_t buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        put(h, buf, n);
    fclose(f);
    return 0;
}

static int put_environment(teflon_sha256_ctx *h)
{
    size_t n = 0;
    for (char **e = environ; e && *e; e++)
        n += strncmp(*e, "TEFLON_", 7) == 0 && !env_irrelevant(*e);
    const char **list = malloc(sizeof(*list) * (n + 1));
    if (!list)
        return -1;
    n = 0;
    for (char **e = environ; e && *e; e++)
        if (strncmp(*e, "TEFLON_", 7) == 0 && !env_irrelevant(*e))
            list[n++] = *e;
    qsort(list, n, sizeof(*list), cmp_str);  /* the key must not depend on the environment's order */
    put_i32(h, (int32_t)n);
    for (size_t i = 0; i < n; i++)
        put_str(h, list[i]);
    free(list);
    return put_hw_facts(h);
}

int teflon_keyer_init(teflon_keyer *k, const teflon_graph *g, const char *settings)
{
    const size_t n = (size_t)(g->ntensors > 0 ? g->ntensors : 0) + 1;
    memset(k, 0, sizeof(*k));
    k->g = g;
    k->tensor_digest = malloc(n * sizeof(*k->tensor_digest));
    k->have = calloc(n, 1);
    teflon_sha256_ctx h;
    teflon_sha256_init(&h);
    put_str(&h, TEFLON_CACHE_MAGIC);
    put_i32(&h, (int32_t)TEFLON_CACHE_FORMAT);
    put_str(&h, TEFLON_BUILD_ID);
    put_str(&h, settings);
    const uint64_t alloc_bytes = g->offline_alloc ? g->offline_alloc_bytes : 0;
    put(&h, &alloc_bytes, sizeof(alloc_bytes));
    if (alloc_bytes)
        put(&h, g->offline_alloc, (size_t)alloc_bytes);
    if (!k->tensor_digest || !k->have || put_environment(&h)) {
        teflon_keyer_free(k);
        return -1;
    }
    teflon_sha256_final(&h, k->context);
    return 0;
}

void teflon_keyer_free(teflon_keyer *k)
{
    free(k->tensor_digest);
    free(k->have);
    k->tensor_digest = NULL;
    k->have = NULL;
}

/* Everything about a tensor the compiler reads; names are left out (they never change a program). */
static const uint8_t *tensor_digest(teflon_keyer *k, int32_t t)
{
    if (t < 0 || t >= k->g->ntensors) {
        static const uint8_t absent[TEFLON_SHA256_BYTES];
        return absent;
    }
    if (k->have[t])
        return k->tensor_digest[t];
    const teflon_tensor *x = &k->g->tensors[t];
    teflon_sha256_ctx h;
    teflon_sha256_init(&h);
    const int32_t head[] = {x->index, x->type, x->ndim, x->is_constant, x->is_variable, x->nscales,
                            x->nzero_points, x->quantized_dimension};
    put(&h, head, sizeof(head));
    put(&h, x->dims, sizeof(x->dims));
    const uint64_t bytes = x->bytes;
    put(&h, &bytes, sizeof(bytes));
    if (x->scales && x->nscales > 0)
        put(&h, x->scales, sizeof(float) * (size_t)x->nscales);
    if (x->zero_points && x->nzero_points > 0)
        put(&h, x->zero_points, sizeof(int32_t) * (size_t)x->nzero_points);
    const int32_t has_data = x->is_constant && x->data && x->bytes > 0;
    put_i32(&h, has_data);
    if (has_data)
        put(&h, x->data, (size_t)x->bytes);
    teflon_sha256_final(&h, k->tensor_digest[t]);
    k->have[t] = 1;
    return k->tensor_digest[t];
}

static void put_tensors(teflon_keyer *k, teflon_sha256_ctx *h, const int32_t *list, int n)
{
    put_i32(h, n);
    for (int i = 0; i < n; i++) {
        put_i32(h, list[i]);
        put(h, tensor_digest(k, list[i]), TEFLON_SHA256_BYTES);
    }
}

static void put_node(teflon_keyer *k, teflon_sha256_ctx *h, const teflon_node *node)
{
    const int32_t head[] = {node->index, node->builtin_code, node->version, node->has_options};
    put(h, head, sizeof(head));
    put(h, node->options, sizeof(node->options));
    put_tensors(k, h, node->inputs, node->ninputs);
    put_tensors(k, h, node->outputs, node->noutputs);
}

static const teflon_node *node_named(const teflon_graph *g, int32_t index)
{
    /* The execution plan usually numbers nodes by position; fall back to a search when it does not. */
    if (index >= 0 && index < g->nnodes && g->nodes[index].index == index)
        return &g->nodes[index];
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].index == index)
            return &g->nodes[i];
    return NULL;
}

void teflon_key_graph(teflon_keyer *k, uint8_t key[TEFLON_SHA256_BYTES])
{
    teflon_sha256_ctx h;
    teflon_sha256_init(&h);
    put(&h, k->context, sizeof(k->context));
    put_str(&h, "graph");
    put_i32(&h, k->g->nnodes);
    for (int i = 0; i < k->g->nnodes; i++)
        put_node(k, &h, &k->g->nodes[i]);
    teflon_sha256_final(&h, key);
}

void teflon_key_partition(teflon_keyer *k, const int32_t *nodes, int nnodes, const int32_t *inputs, int ninputs,
                          const int32_t *outputs, int noutputs, uint8_t key[TEFLON_SHA256_BYTES])
{
    teflon_sha256_ctx h;
    teflon_sha256_init(&h);
    put(&h, k->context, sizeof(k->context));
    put_str(&h, "partition");
    put_i32(&h, nnodes);
    for (int i = 0; i < nnodes; i++) {
        const teflon_node *node = node_named(k->g, nodes[i]);
        put_i32(&h, node ? 1 : 0);
        if (node)
            put_node(k, &h, node);
        else
            put_i32(&h, nodes[i]);
    }
    put_tensors(k, &h, inputs, ninputs);
    put_tensors(k, &h, outputs, noutputs);
    teflon_sha256_final(&h, key);
}

/* ---------------------------------------------------------------------------------------------- */
/* Entries                                                                                        */

static char *entry_path(const teflon_cache *c, enum teflon_cache_kind kind, const uint8_t key[TEFLON_SHA256_BYTES])
{
    char hex[2 * TEFLON_SHA256_BYTES + 1];
    teflon_sha256_hex(key, hex);
    const size_t n = strlen(c->dir) + 1 + ENTRY_NAME_LEN + 1;
    char *path = malloc(n);
    if (path)
        snprintf(path, n, "%s/%c-%s" ENTRY_SUFFIX, c->dir, (char)kind, hex);
    return path;
}

static int read_all(int fd, uint8_t *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t r = read(fd, buf + done, len - done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        done += (size_t)r;
    }
    return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* The payload checksum (TEFLON_CACHE_FORMAT 2): Fletcher's two running sums over little-endian 64-bit words (the
 * tail zero-padded), mod 2^64, as 16 bytes (s1, s2) followed by 16 zero bytes. It only has to catch torn,
 * truncated or damaged files (the key, a SHA-256, names the content), and it runs at memory speed: SHA-256 of a
 * MobileNetV2's 3.5 MB of programs was a third of the time a cached model takes to load. */
static void payload_sum(const uint8_t *p, size_t len, uint8_t out[TEFLON_SHA256_BYTES])
{
    uint64_t s1 = 0, s2 = 0, w;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        memcpy(&w, p + i, 8);
        s1 += w;
        s2 += s1;
    }
    if (i < len) {
        w = 0;
        memcpy(&w, p + i, len - i);
        s1 += w;
        s2 += s1;
    }
    memset(out, 0, TEFLON_SHA256_BYTES);
    memcpy(out, &s1, 8);
    memcpy(out + 8, &s2, 8);
}

/* NULL when the file holds a valid entry for `key`, else why not. */
static const char *check_entry(const uint8_t *file, size_t size, const uint8_t key[TEFLON_SHA256_BYTES])
{
    uint32_t format;
    uint64_t len;
    uint8_t digest[TEFLON_SHA256_BYTES];
    if (size < TEFLON_CACHE_HEADER)
        return "shorter than the header";
    if (memcmp(file, TEFLON_CACHE_MAGIC, 4) != 0)
        return "bad magic";
    memcpy(&format, file + 4, sizeof(format));
    if (format != TEFLON_CACHE_FORMAT)
        return "unknown format version";
    if (memcmp(file + 8, key, TEFLON_SHA256_BYTES) != 0)
        return "key mismatch";
    memcpy(&len, file + 40, sizeof(len));
    if (len != size - TEFLON_CACHE_HEADER)
        return len > size - TEFLON_CACHE_HEADER ? "truncated" : "longer than its payload";
    payload_sum(file + TEFLON_CACHE_HEADER, (size_t)len, digest);
    if (memcmp(file + 48, digest, TEFLON_SHA256_BYTES) != 0)
        return "checksum mismatch";
    return NULL;
}

int teflon_cache_load(teflon_cache *c, enum teflon_cache_kind kind, const uint8_t key[TEFLON_SHA256_BYTES],
                      uint8_t **payload, size_t *len)
{
    *payload = NULL;
    *len = 0;
    if (!c->dir)
        return -1;
    char *path = entry_path(c, kind, key);
    if (!path)
        return -1;
    uint8_t *file = NULL;
    const char *why = NULL;
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT && c->debug)
            fprintf(stderr, "teflon: cannot read cache entry %s (%s); compiling\n", path, strerror(errno));
        free(path);
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        why = "not a regular file";
    else if ((uint64_t)st.st_size > MAX_ENTRY_BYTES + TEFLON_CACHE_HEADER)
        why = "too large";
    else if (!(file = malloc((size_t)st.st_size + 1)))
        why = "out of memory";
    else if (read_all(fd, file, (size_t)st.st_size))
        why = "read error";
    else
        why = check_entry(file, (size_t)st.st_size, key);
    close(fd);
    if (why) {
        if (c->debug)
            fprintf(stderr, "teflon: cache entry %s is corrupt (%s); recompiling\n", path, why);
        free(file);
        free(path);
        return -1;
    }
    (void)utimensat(AT_FDCWD, path, NULL, 0); /* recently used: eviction goes by mtime */
    *len = (size_t)st.st_size - TEFLON_CACHE_HEADER;
    memmove(file, file + TEFLON_CACHE_HEADER, *len);
    file[*len] = '\0';  /* text payloads (the support table) can be used as strings */
    *payload = file;
    free(path);
    return 0;
}

/* mkdir -p; 0 when the directory exists afterwards. */
static int make_dirs(const char *dir)
{
    char *p = strdup(dir);
    if (!p)
        return -1;
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            free(p);
            return -1;
        }
        *s = '/';
    }
    int rc = mkdir(p, 0777) != 0 && errno != EEXIST ? -1 : 0;
    free(p);
    return rc;
}

static int is_entry_name(const char *name)
{
    if (strlen(name) != ENTRY_NAME_LEN || (name[0] != TEFLON_CACHE_SUPPORT && name[0] != TEFLON_CACHE_PROGRAM) ||
        name[1] != '-' || strcmp(name + ENTRY_NAME_LEN - 4, ENTRY_SUFFIX) != 0)
        return 0;
    for (int i = 2; i < 2 + 2 * TEFLON_SHA256_BYTES; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return 0;
    return 1;
}

typedef struct entry_info {
    struct timespec mtime;
    uint64_t size;
    char name[ENTRY_NAME_LEN + 1];
} entry_info;

static int older_first(const void *a, const void *b)
{
    const struct timespec *x = &((const entry_info *)a)->mtime, *y = &((const entry_info *)b)->mtime;
    if (x->tv_sec != y->tv_sec)
        return x->tv_sec < y->tv_sec ? -1 : 1;
    return (x->tv_nsec > y->tv_nsec) - (x->tv_nsec < y->tv_nsec);
}

/* Deletes least recently used entries until the directory's entries fit in max_bytes, and temporary
 * files left by writers that died. Races with other processes doing the same are harmless: a file
 * that vanished is skipped, and a reader holding an unlinked entry open still reads it whole. */
static void evict(teflon_cache *c)
{
    int dfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return;
    }
    entry_info *list = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    const time_t now = time(NULL);
    for (struct dirent *e; (e = readdir(d));) {
        struct stat st;
        const int tmp = strncmp(e->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0;
        if ((!tmp && !is_entry_name(e->d_name)) || fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        if (tmp) {
            if (now - st.st_mtim.tv_sec > STALE_TMP_SECONDS)
                (void)unlinkat(dfd, e->d_name, 0);
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            entry_info *grown = realloc(list, cap * sizeof(*list));
            if (!grown)
                goto done;
            list = grown;
        }
        list[n].mtime = st.st_mtim;
        list[n].size = (uint64_t)st.st_size;
        snprintf(list[n].name, sizeof(list[n].name), "%s", e->d_name);
        total += list[n].size;
        n++;
    }
    if (total > c->max_bytes) {
        qsort(list, n, sizeof(*list), older_first);
        for (size_t i = 0; i < n && total > c->max_bytes; i++) {
            if (unlinkat(dfd, list[i].name, 0) == 0 && c->debug)
                fprintf(stderr, "teflon: cache over its limit of %llu bytes: evicted %s\n",
                        (unsigned long long)c->max_bytes, list[i].name);
            total -= list[i].size;
        }
    }
done:
    free(list);
    closedir(d);
}

static void unusable(teflon_cache *c, const char *what)
{
    if (c->debug && !c->unusable)
        fprintf(stderr, "teflon: program cache %s unusable (%s: %s); compiling without storing\n", c->dir, what,
                strerror(errno));
    c->unusable = 1;
}

int teflon_cache_store(teflon_cache *c, enum teflon_cache_kind kind, const uint8_t key[TEFLON_SHA256_BYTES],
                       const void *payload, size_t len)
{
    if (!c->dir || c->unusable || (uint64_t)len > MAX_ENTRY_BYTES)
        return -1;
    if (make_dirs(c->dir) != 0) {
        unusable(c, "cannot create it");
        return -1;
    }
    char *path = entry_path(c, kind, key);
    const size_t n = strlen(c->dir) + sizeof("/" TMP_PREFIX "XXXXXX");
    char *tmp = malloc(n);
    if (!path || !tmp) {
        free(path);
        free(tmp);
        return -1;
    }
    snprintf(tmp, n, "%s/" TMP_PREFIX "XXXXXX", c->dir);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        unusable(c, "cannot create a file in it");
        free(path);
        free(tmp);
        return -1;
    }
    uint8_t header[TEFLON_CACHE_HEADER];
    const uint32_t format = TEFLON_CACHE_FORMAT;
    const uint64_t len64 = len;
    memcpy(header, TEFLON_CACHE_MAGIC, 4);
    memcpy(header + 4, &format, sizeof(format));
    memcpy(header + 8, key, TEFLON_SHA256_BYTES);
    memcpy(header + 40, &len64, sizeof(len64));
    payload_sum(payload, len, header + 48);
    int rc = write_all(fd, header, sizeof(header)) || write_all(fd, payload, len) ? -1 : 0;
    (void)fchmod(fd, 0644);  /* mkstemp makes it 0600; entries are no secret */
    if (close(fd) != 0)
        rc = -1;
    /* rename() replaces any entry of the same name atomically: readers see the old or the new file whole. */
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -1;
    if (rc != 0) {
        unusable(c, "cannot write in it");
        (void)unlink(tmp);
    }
    free(tmp);
    free(path);
    if (rc == 0)
        evict(c);
    return rc;
}
