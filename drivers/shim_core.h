/* The shared half of the test-only ioctl shims (drivers/<family>/<prefix>_shim.c, docs/shim.md): LD_PRELOAD libraries,
 * in the spirit of Mesa's drm-shim, that let a family's real kernel client run without hardware.
 *
 * This half interposes the libc entry points (open, close, ioctl, mmap, munmap, and fopen, opendir, readlink
 * for the faked sysfs / devicetree paths), keeps the table of open fake device files and of their buffer
 * objects, answers the generic DRM ioctls (VERSION, GEM_CLOSE) and serves mmap of a BO's fake offset. The
 * family half (one `teflon_shim_family` row, defined once per shim library) answers its driver's ioctls from
 * that family's simulated kernel and says which files the shim shows under /sys and /proc/device-tree.
 *
 * Environment, <P> being the family's prefix (TEFLON_ROCKET_SHIM, TEFLON_ETNA_SHIM):
 *   <P>_TARGET  the target row the fake device is (default: the family's default_target; without one the
 *               shim passes every call on to libc)
 *   <P>_NODE    the fake device node's path (default: the family's default_node)
 *   <P>_LOG     a file that gets one line per served call (the order tests check)
 *
 * Global state: an LD_PRELOAD library has no other place for the open fake files and the libc entry points;
 * all of it is in shim_core.c's one struct, guarded by one mutex (held while a family callback runs).
 */
#ifndef TEFLON_SHIM_CORE_H
#define TEFLON_SHIM_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "driver.h"

/* A buffer object of a fake file. GEM_CLOSE of a mapped BO only marks it closed: the kernel keeps mapped
 * pages, so it is released at munmap. */
struct teflon_shim_bo {
    teflon_bo bo;    /* handle, device address, size, and map = the memory mmap hands out */
    uint64_t offset; /* fake mmap offset */
    int mapped, closed;
};

/* One open fake device node. */
struct teflon_shim_file {
    int fd;                   /* a real descriptor (of /dev/null), so the number is unique */
    const teflon_target *t;
    void *dev;                /* the family's state of this file (its open() result) */
    struct teflon_shim_bo *bos;
    size_t nbos, cap;
    struct teflon_shim_file *next;
};

/* The directory tree of fake sysfs / devicetree files a family shows (built once per process, on the first
 * access below one of the family's faked prefixes, in a private temporary directory removed at exit). */
struct teflon_shim_tree;
/* A file at absolute `path` (parents created) holding `len` bytes of `data`; 0 or -errno. */
int teflon_shim_tree_file(struct teflon_shim_tree *tree, const char *path, const void *data, size_t len);
/* A symbolic link at absolute `path` pointing to `target` (as written, usually relative); 0 or -errno. */
int teflon_shim_tree_link(struct teflon_shim_tree *tree, const char *path, const char *target);

/* What a family's shim defines (exactly one per shim library: `teflon_shim_family`). Callbacks run with the
 * shim's lock held. */
struct teflon_shim_family {
    const char *family;          /* the target rows' family ("rocket") */
    const char *tag;             /* stderr prefix ("rocket-shim") */
    const char *env_prefix;      /* "TEFLON_ROCKET_SHIM" */
    const char *default_target;  /* NULL: inactive until <P>_TARGET is set */
    const char *default_node;    /* "/dev/accel/accel0" */
    const char *driver_name;     /* DRM_IOCTL_VERSION's name */
    int32_t version[3];          /* DRM_IOCTL_VERSION's major, minor, patchlevel */
    /* Absolute paths (NULL-terminated list) whose whole subtree is served from the fake tree instead. */
    const char *const *faked_prefixes;
    /* Fill the tree for target `t`, whose node is at `node`; 0 or -errno. */
    int (*tree)(const teflon_target *t, const char *node, struct teflon_shim_tree *tree);
    /* A new fake device of target `t`: the family's state, or NULL with a message. */
    void *(*open)(const teflon_target *t, char *msg, size_t msglen);
    void (*close)(void *dev);
    /* A driver ioctl (not VERSION / GEM_CLOSE): 0 or -errno; unknown requests: teflon_shim_unknown_ioctl. */
    int (*ioctl)(struct teflon_shim_file *f, unsigned long req, void *arg);
    /* Free a BO the family added (closed and unmapped, or its file closed). */
    void (*bo_release)(void *dev, teflon_bo *bo);
};

extern const struct teflon_shim_family teflon_shim_family;

/* One line to <P>_LOG (when set). */
void teflon_shim_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Add a BO the family created to file f, at the fake mmap offset it returns in *offset; 0 or -ENOMEM. */
int teflon_shim_bo_add(struct teflon_shim_file *f, const teflon_bo *bo, uint64_t *offset);
/* The live (not GEM_CLOSEd) BO `handle` of file f, or NULL. The pointer is valid until the next add. */
struct teflon_shim_bo *teflon_shim_bo_of(struct teflon_shim_file *f, uint32_t handle);
/* The live BO of file f whose device range [iova, iova + size) holds `iova`, or NULL. */
struct teflon_shim_bo *teflon_shim_bo_at(struct teflon_shim_file *f, uint64_t iova);

/* Log an ioctl the family does not model and return -ENOTTY. */
int teflon_shim_unknown_ioctl(unsigned long req);

#endif
