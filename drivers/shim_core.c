/* The shared half of the ioctl shims: interposed libc entry points, the fake file and BO tables, the generic DRM
 * ioctls, mmap of fake offsets, and the fake sysfs / devicetree tree (shim_core.h, docs/shim.md). */
#undef _FORTIFY_SOURCE /* the fortified inline open() would clash with the definitions below */
/* Each of open/open64, mmap/mmap64 and fopen/fopen64 is defined below under its own name; with
 * _FILE_OFFSET_BITS=64 the headers would rename open to open64 (64-bit targets: off_t is 64-bit either way). */
#undef _FILE_OFFSET_BITS
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drm_uapi.h"
#include "shim_core.h"
#include "targets.h"

#define SHIM_EXPORT __attribute__((visibility("default")))
#define SHIM_PAGE 4096u

struct teflon_shim_tree {
    char dir[PATH_MAX];
};

static struct {
    pthread_mutex_t lock;
    pthread_once_t once;
    int (*open)(const char *, int, ...);
    int (*close)(int);
    int (*ioctl)(int, unsigned long, ...);
    void *(*mmap)(void *, size_t, int, int, int, off_t);
    int (*munmap)(void *, size_t);
    FILE *(*fopen)(const char *, const char *);
    DIR *(*opendir)(const char *);
    ssize_t (*readlink)(const char *, char *, size_t);
    const teflon_target *t; /* the row the fake device is; NULL: inactive */
    char node[PATH_MAX];
    struct teflon_shim_tree tree; /* dir "" until built */
    int tree_state;               /* 0 not built, 1 built, -1 failed */
    pid_t tree_owner;             /* the process that removes it */
    struct teflon_shim_file *files;
} shim = {.lock = PTHREAD_MUTEX_INITIALIZER, .once = PTHREAD_ONCE_INIT};

/* Set while this thread holds the lock: the backend's own mmap/munmap (the simulated kernel maps its BOs'
 * memory) then go straight to libc instead of re-entering the interposed entry points and the lock. */
static _Thread_local int shim_locked;

static void shim_lock(void)
{
    pthread_mutex_lock(&shim.lock);
    shim_locked = 1;
}

static void shim_unlock(void)
{
    shim_locked = 0;
    pthread_mutex_unlock(&shim.lock);
}

static const char *shim_env(const char *suffix)
{
    char name[96];
    snprintf(name, sizeof(name), "%s_%s", teflon_shim_family.env_prefix, suffix);
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static void shim_resolve(void)
{
    shim.open = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
    shim.close = (int (*)(int))dlsym(RTLD_NEXT, "close");
    shim.ioctl = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
    shim.mmap = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
    shim.munmap = (int (*)(void *, size_t))dlsym(RTLD_NEXT, "munmap");
    shim.fopen = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, "fopen");
    shim.opendir = (DIR * (*)(const char *)) dlsym(RTLD_NEXT, "opendir");
    shim.readlink = (ssize_t(*)(const char *, char *, size_t))dlsym(RTLD_NEXT, "readlink");
    const struct teflon_shim_family *fam = &teflon_shim_family;
    const char *name = shim_env("TARGET");
    if (!name)
        name = fam->default_target;
    const teflon_target *t = name ? teflon_target_named(name) : NULL;
    if (name && (!t || strcmp(t->family, fam->family) != 0))
        fprintf(stderr, "[%s] %s_TARGET=%s is not a %s target row: passing every call on\n", fam->tag,
                fam->env_prefix, name, fam->family);
    else
        shim.t = t;
    const char *node = shim_env("NODE");
    snprintf(shim.node, sizeof(shim.node), "%s", node ? node : fam->default_node);
}

static void shim_init(void)
{
    pthread_once(&shim.once, shim_resolve);
}

void teflon_shim_log(const char *fmt, ...)
{
    const char *path = shim_env("LOG");
    FILE *f = path ? shim.fopen(path, "a") : NULL;
    if (!f)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

int teflon_shim_unknown_ioctl(unsigned long req)
{
    teflon_shim_log("UNKNOWN ioctl 0x%lx = error ENOTTY", req);
    return -ENOTTY;
}

/* ---- the fake sysfs / devicetree tree ---------------------------------------------------------------------- */

/* mkdir -p of the parent directories of `full` (a path inside the tree). */
static int shim_mkparents(char *full)
{
    for (char *s = strchr(full + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        const int rc = mkdir(full, 0755) && errno != EEXIST ? -errno : 0;
        *s = '/';
        if (rc)
            return rc;
    }
    return 0;
}

int teflon_shim_tree_file(struct teflon_shim_tree *tree, const char *path, const void *data, size_t len)
{
    char full[PATH_MAX];
    snprintf(full, sizeof(full), "%s%s", tree->dir, path);
    int rc = shim_mkparents(full);
    FILE *f = rc ? NULL : shim.fopen(full, "wb");
    if (!rc && !f)
        rc = -errno;
    if (f) {
        if (fwrite(data, 1, len, f) != len)
            rc = -EIO;
        if (fclose(f))
            rc = rc ? rc : -errno;
    }
    return rc;
}

int teflon_shim_tree_link(struct teflon_shim_tree *tree, const char *path, const char *target)
{
    char full[PATH_MAX];
    snprintf(full, sizeof(full), "%s%s", tree->dir, path);
    int rc = shim_mkparents(full);
    if (!rc && symlink(target, full))
        rc = -errno;
    return rc;
}

static int shim_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* The tree goes with the process that built it (a forked child exiting leaves it to the parent). */
__attribute__((destructor)) static void shim_tree_remove(void)
{
    if (shim.tree_state == 1 && shim.tree_owner == getpid())
        nftw(shim.tree.dir, shim_rm, 16, FTW_DEPTH | FTW_PHYS);
}

static void shim_tree_build(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(shim.tree.dir, sizeof(shim.tree.dir), "%s/teflon-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp",
             teflon_shim_family.tag);
    int rc = mkdtemp(shim.tree.dir) ? 0 : -errno;
    shim.tree_state = 1;
    shim.tree_owner = getpid();
    if (!rc)
        rc = teflon_shim_family.tree(shim.t, shim.node, &shim.tree);
    if (rc) {
        fprintf(stderr, "[%s] cannot build the fake sysfs tree in %s: %s\n", teflon_shim_family.tag, shim.tree.dir,
                strerror(-rc));
        shim_tree_remove();
        shim.tree_state = -1;
    }
}

/* `path`, or its copy inside the fake tree (in buf) when it lies below one of the family's faked prefixes. */
static const char *shim_redirect(const char *path, char *buf, size_t len)
{
    shim_init();
    if (!shim.t || !path || path[0] != '/')
        return path;
    const char *const *p = teflon_shim_family.faked_prefixes;
    for (; p && *p; p++) {
        const size_t n = strlen(*p);
        if (strncmp(path, *p, n) == 0 && (path[n] == '\0' || path[n] == '/'))
            break;
    }
    if (!p || !*p)
        return path;
    shim_lock();
    if (shim.tree_state == 0)
        shim_tree_build();
    const int ok = shim.tree_state == 1;
    shim_unlock();
    if (!ok)
        return path;
    snprintf(buf, len, "%s%s", shim.tree.dir, path);
    return buf;
}

/* ---- BOs --------------------------------------------------------------------------------------------------- */

int teflon_shim_bo_add(struct teflon_shim_file *f, const teflon_bo *bo, uint64_t *offset)
{
    if (f->nbos == f->cap) {
        const size_t cap = f->cap ? 2 * f->cap : 64;
        struct teflon_shim_bo *b = realloc(f->bos, cap * sizeof(*b));
        if (!b)
            return -ENOMEM;
        f->bos = b;
        f->cap = cap;
    }
    /* handles are unique per file, so are these offsets; each leaves room for a 4 GiB BO */
    *offset = (uint64_t)bo->handle << 32;
    f->bos[f->nbos++] = (struct teflon_shim_bo){.bo = *bo, .offset = *offset};
    return 0;
}

struct teflon_shim_bo *teflon_shim_bo_of(struct teflon_shim_file *f, uint32_t handle)
{
    for (size_t i = 0; i < f->nbos; i++)
        if (f->bos[i].bo.handle == handle && !f->bos[i].closed)
            return &f->bos[i];
    return NULL;
}

struct teflon_shim_bo *teflon_shim_bo_at(struct teflon_shim_file *f, uint64_t iova)
{
    for (size_t i = 0; i < f->nbos; i++)
        if (!f->bos[i].closed && iova >= f->bos[i].bo.iova && iova - f->bos[i].bo.iova < f->bos[i].bo.size)
            return &f->bos[i];
    return NULL;
}

static void shim_bo_drop(struct teflon_shim_file *f, struct teflon_shim_bo *b)
{
    teflon_shim_family.bo_release(f->dev, &b->bo);
    *b = f->bos[--f->nbos];
}

/* ---- the generic DRM ioctls and dispatch --------------------------------------------------------------------- */

static int shim_version(struct teflon_drm_version *v)
{
    const char *name = teflon_shim_family.driver_name;
    const size_t n = strlen(name);
    if (v->name && v->name_len)
        memcpy((void *)(uintptr_t)v->name, name, v->name_len < n ? v->name_len : n);
    v->name_len = n;
    v->date_len = 0;
    v->desc_len = 0;
    v->version_major = teflon_shim_family.version[0];
    v->version_minor = teflon_shim_family.version[1];
    v->version_patchlevel = teflon_shim_family.version[2];
    teflon_shim_log("VERSION");
    return 0;
}

static int shim_gem_close(struct teflon_shim_file *f, const struct teflon_drm_gem_close *c)
{
    struct teflon_shim_bo *b = teflon_shim_bo_of(f, c->handle);
    teflon_shim_log("GEM_CLOSE handle=%u%s", c->handle, b ? "" : " = error");
    if (!b)
        return -EINVAL;
    if (b->mapped)
        b->closed = 1;
    else
        shim_bo_drop(f, b);
    return 0;
}

static int shim_dispatch(struct teflon_shim_file *f, unsigned long req, void *arg)
{
    if (req == TEFLON_DRM_IOCTL_VERSION)
        return shim_version(arg);
    if (req == TEFLON_DRM_IOCTL_GEM_CLOSE)
        return shim_gem_close(f, arg);
    return teflon_shim_family.ioctl(f, req, arg);
}

/* ---- the fake files ---------------------------------------------------------------------------------------- */

static struct teflon_shim_file *shim_file_of(int fd)
{
    for (struct teflon_shim_file *f = shim.files; f; f = f->next)
        if (f->fd == fd)
            return f;
    return NULL;
}

static void shim_file_free(struct teflon_shim_file *f)
{
    for (size_t i = 0; i < f->nbos; i++)
        teflon_shim_family.bo_release(f->dev, &f->bos[i].bo);
    free(f->bos);
    teflon_shim_family.close(f->dev);
    free(f);
}

static int shim_open_node(const char *path, int flags)
{
    char msg[256] = "out of memory";
    struct teflon_shim_file *f = calloc(1, sizeof(*f));
    shim_lock();
    void *dev = f ? teflon_shim_family.open(shim.t, msg, sizeof(msg)) : NULL;
    const int fd = dev ? shim.open("/dev/null", O_RDWR | (flags & O_CLOEXEC)) : -1;
    if (fd >= 0) {
        *f = (struct teflon_shim_file){.fd = fd, .t = shim.t, .dev = dev, .next = shim.files};
        shim.files = f;
        teflon_shim_log("OPEN %s (%s)", path, shim.t->name);
    }
    shim_unlock();
    if (fd >= 0)
        return fd;
    const int err = dev ? errno : ENOMEM;
    if (dev)
        teflon_shim_family.close(dev);
    else
        fprintf(stderr, "[%s] %s\n", teflon_shim_family.tag, msg);
    free(f);
    errno = err;
    return -1;
}

/* ---- the interposed libc entry points --------------------------------------------------------------------- */

static int shim_do_open(const char *path, int flags, mode_t mode)
{
    shim_init();
    if (shim.t && path && strcmp(path, shim.node) == 0)
        return shim_open_node(path, flags);
    char buf[PATH_MAX];
    const char *p = shim_redirect(path, buf, sizeof(buf));
    return shim.open(p, flags, mode);
}

static mode_t shim_mode(int flags, va_list ap)
{
    return flags & (O_CREAT | O_TMPFILE) ? (mode_t)va_arg(ap, int) : 0;
}

SHIM_EXPORT int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    const mode_t mode = shim_mode(flags, ap);
    va_end(ap);
    return shim_do_open(path, flags, mode);
}

/* the large-file names: the same calls on 64-bit targets */
SHIM_EXPORT int open64(const char *path, int flags, ...) __attribute__((alias("open")));

/* glibc's fortified open() without a mode */
SHIM_EXPORT int __open_2(const char *path, int flags)
{
    return shim_do_open(path, flags, 0);
}

SHIM_EXPORT int __open64_2(const char *path, int flags) __attribute__((alias("__open_2")));

SHIM_EXPORT int close(int fd)
{
    shim_init();
    shim_lock();
    for (struct teflon_shim_file **p = &shim.files; *p; p = &(*p)->next)
        if ((*p)->fd == fd) {
            struct teflon_shim_file *f = *p;
            *p = f->next;
            shim_file_free(f);
            teflon_shim_log("CLOSE");
            break;
        }
    shim_unlock();
    return shim.close(fd);
}

SHIM_EXPORT int ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    shim_init();
    shim_lock();
    struct teflon_shim_file *f = shim_file_of(fd);
    const int rc = f ? shim_dispatch(f, req, arg) : 0;
    shim_unlock();
    if (!f)
        return shim.ioctl(fd, req, arg);
    if (rc) {
        errno = -rc;
        return -1;
    }
    return 0;
}

static void *shim_map(struct teflon_shim_file *f, size_t len, off_t off)
{
    for (size_t i = 0; i < f->nbos; i++) {
        struct teflon_shim_bo *b = &f->bos[i];
        if (!b->closed && b->offset == (uint64_t)off && len <= (b->bo.size + SHIM_PAGE - 1) / SHIM_PAGE * SHIM_PAGE) {
            b->mapped = 1;
            teflon_shim_log("MMAP handle=%u", b->bo.handle);
            return b->bo.map;
        }
    }
    teflon_shim_log("MMAP offset=0x%llx = error EINVAL", (unsigned long long)off);
    errno = EINVAL;
    return MAP_FAILED;
}

SHIM_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    shim_init();
    if (shim_locked)
        return shim.mmap(addr, len, prot, flags, fd, off);
    shim_lock();
    struct teflon_shim_file *f = shim_file_of(fd);
    void *p = f ? shim_map(f, len, off) : NULL;
    shim_unlock();
    return f ? p : shim.mmap(addr, len, prot, flags, fd, off);
}

SHIM_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) __attribute__((alias("mmap")));

/* 1 when `addr` is a BO mapping the shim handed out (then unmapped, and released if already closed). */
static int shim_unmap(void *addr)
{
    for (struct teflon_shim_file *f = shim.files; f; f = f->next)
        for (size_t i = 0; i < f->nbos; i++)
            if (f->bos[i].bo.map == addr && f->bos[i].mapped) {
                f->bos[i].mapped = 0;
                if (f->bos[i].closed)
                    shim_bo_drop(f, &f->bos[i]);
                return 1;
            }
    return 0;
}

SHIM_EXPORT int munmap(void *addr, size_t len)
{
    shim_init();
    if (shim_locked)
        return shim.munmap(addr, len);
    shim_lock();
    const int mine = shim_unmap(addr);
    shim_unlock();
    return mine ? 0 : shim.munmap(addr, len);
}

/* Device discovery reads sysfs and the devicetree through these (a directory scan, compatible files, driver
 * symlinks); below a faked prefix they see the fake tree. */
SHIM_EXPORT FILE *fopen(const char *path, const char *mode)
{
    char buf[PATH_MAX];
    const char *p = shim_redirect(path, buf, sizeof(buf)); /* resolves shim.fopen first */
    return shim.fopen(p, mode);
}

SHIM_EXPORT FILE *fopen64(const char *path, const char *mode) __attribute__((alias("fopen")));

SHIM_EXPORT DIR *opendir(const char *path)
{
    char buf[PATH_MAX];
    const char *p = shim_redirect(path, buf, sizeof(buf));
    return shim.opendir(p);
}

SHIM_EXPORT ssize_t readlink(const char *restrict path, char *restrict out, size_t len)
{
    char buf[PATH_MAX];
    const char *p = shim_redirect(path, buf, sizeof(buf));
    return shim.readlink(p, out, len);
}

/* glibc's fortified readlink() */
SHIM_EXPORT ssize_t __readlink_chk(const char *path, char *out, size_t len, size_t outlen)
{
    if (len > outlen)
        abort(); /* what the fortified call does on an overflow */
    return readlink(path, out, len);
}
