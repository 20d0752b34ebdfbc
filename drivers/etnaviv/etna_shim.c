/* etnaviv DRM shim: an LD_PRELOAD library, in the spirit of Mesa's drm-shim, that lets the real etnaviv client
 * (etna_kernel.c) run without hardware. It answers open/ioctl/mmap/munmap/close on a fake render node from the
 * simulated NPU (etna_sim.h) and passes every other call to libc. Test-only: built, never installed.
 *
 *   TEFLON_ETNA_SHIM_TARGET  target row to impersonate (a311d, imx8mp); unset: the shim passes everything on
 *   TEFLON_ETNA_SHIM_NODE    the fake node's path (default /dev/dri/renderD128, the first render minor)
 *   TEFLON_ETNA_SHIM_LOG     file that gets one line per served call (the order tests check)
 *   TEFLON_ETNA_SHIM_GPU=1   put a GPU core on pipe 0 and the NPU on pipe 1 (one etnaviv device holding the
 *                            3D core and the NPU, as on i.MX8MP); the GPU's IDs are illustrative
 *   TEFLON_ETNA_SHIM_NO_SOFTPIN=1  GET_PARAM SOFTPIN_START_ADDR answers ~0 (an MMUv1 kernel)
 *   TEFLON_SIM_FAULT         kind[@N] (docs/faults.md), read when the node is opened: the Nth GEM_SUBMIT of the file
 *                            (counted from 1, one per task) faults, and the WAIT_FENCE covering it fails once with
 *                            the errno the client maps (ETIMEDOUT at once, standing for the client's deadline
 *                            passing; EIO for a DMA error; EFAULT for an IOMMU fault); a malformed value fails the open
 *
 * The UAPI semantics modelled (docs/hardware/etnaviv-kernel.md, sources there): DRM_IOCTL_VERSION "etnaviv";
 * GET_PARAM (-ENXIO for a pipe without a core, -EINVAL for an unknown param); GEM_NEW / GEM_INFO / mmap of the
 * fake offset / GEM_CLOSE; GEM_CPU_PREP / GEM_CPU_FINI argument checks; GEM_SUBMIT with softpin only (every BO
 * once, READ/WRITE flags, presumed = a 4 KiB aligned VA at or above the softpin start; no relocs, no perf
 * monitors), run synchronously: the listed BOs are mapped at their VAs in the simulator, the stream (copied from
 * user memory, as the kernel does) executes, and the device's view is copied back. A stream the simulator
 * refuses is a GPU hang; the kernel would only log it, the shim also fails the WAIT_FENCE covering it with -EIO
 * so that tests see it (a shim choice).
 *
 * Global state: an LD_PRELOAD library has no other place for the open fake files and the libc entry points;
 * all of it is in `etna_shim`, guarded by one mutex.
 */
#undef _FORTIFY_SOURCE /* the fortified inline open() would clash with the definition below */
/* Each of open/open64 and mmap/mmap64 is defined below under its own name; with _FILE_OFFSET_BITS=64 the headers
 * would rename open to open64 (64-bit targets: off_t is 64-bit either way). */
#undef _FILE_OFFSET_BITS
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../fault.h"
#include "../targets.h"
#include "etna_family.h"
#include "etna_sim.h"
#include "etna_uapi.h"

#define ETNA_SHIM_EXPORT __attribute__((visibility("default")))
#define ETNA_SHIM_MAX_PIPES 2

struct etna_shim_bo {
    uint32_t handle;
    int mapped, closed;  /* GEM_CLOSE while mapped: freed at munmap, as the kernel keeps mapped pages */
    uint64_t size;       /* page-rounded */
    uint64_t offset;     /* fake mmap offset */
    uint8_t *mem;        /* the CPU's view */
};

struct etna_shim_pipe {
    uint32_t model, revision;
    int npu;
};

struct etna_shim_file {
    int fd;
    const teflon_target *t;
    etna_sim *sim;
    struct etna_shim_pipe pipes[ETNA_SHIM_MAX_PIPES];
    uint32_t npipes;
    int no_softpin;
    struct etna_shim_bo *bos;
    size_t nbos, cap;
    uint32_t next_handle;
    uint32_t fence;      /* last fence handed out */
    uint32_t hang_fence; /* first fence whose stream the simulator refused (0: none) */
    struct teflon_sim_fault fault;
    uint32_t fault_fence; /* the fence of an injected fault not yet reported by a WAIT_FENCE (0: none) */
    int fault_rc;
    struct etna_shim_file *next;
};

static struct {
    pthread_mutex_t lock;
    pthread_once_t once;
    int (*open)(const char *, int, ...);
    int (*close)(int);
    int (*ioctl)(int, unsigned long, ...);
    void *(*mmap)(void *, size_t, int, int, int, off_t);
    int (*munmap)(void *, size_t);
    struct etna_shim_file *files;
} etna_shim = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_ONCE_INIT, NULL, NULL, NULL, NULL, NULL, NULL};

static void etna_shim_resolve(void)
{
    etna_shim.open = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
    etna_shim.close = (int (*)(int))dlsym(RTLD_NEXT, "close");
    etna_shim.ioctl = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
    etna_shim.mmap = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
    etna_shim.munmap = (int (*)(void *, size_t))dlsym(RTLD_NEXT, "munmap");
}

static void etna_shim_init(void)
{
    pthread_once(&etna_shim.once, etna_shim_resolve);
}

static void etna_shim_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void etna_shim_log(const char *fmt, ...)
{
    const char *path = getenv("TEFLON_ETNA_SHIM_LOG");
    FILE *f = path && *path ? fopen(path, "a") : NULL; /* libc's internal open: not interposed */
    if (!f)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

/* Seconds from now to an absolute CLOCK_MONOTONIC deadline (logged: a relative timeout shows as negative). */
static double etna_shim_secs_to(struct etna_drm_timespec t)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(t.tv_sec - now.tv_sec) + (double)(t.tv_nsec - now.tv_nsec) * 1e-9;
}

static struct etna_shim_file *etna_shim_file_of(int fd)
{
    for (struct etna_shim_file *f = etna_shim.files; f; f = f->next)
        if (f->fd == fd)
            return f;
    return NULL;
}

static struct etna_shim_bo *etna_shim_bo_of(struct etna_shim_file *f, uint32_t handle)
{
    for (size_t i = 0; i < f->nbos; i++)
        if (f->bos[i].handle == handle && !f->bos[i].closed)
            return &f->bos[i];
    return NULL;
}

static void etna_shim_bo_drop(struct etna_shim_file *f, struct etna_shim_bo *b)
{
    free(b->mem);
    *b = f->bos[--f->nbos];
}

/* ---- the ioctls ----------------------------------------------------------------------------------------- */

static int etna_shim_version(struct teflon_drm_version *v)
{
    static const char name[] = "etnaviv";
    if (v->name && v->name_len)
        memcpy((void *)(uintptr_t)v->name, name, v->name_len < sizeof(name) - 1 ? v->name_len : sizeof(name) - 1);
    v->name_len = sizeof(name) - 1;
    v->date_len = 0;
    v->desc_len = 0;
    /* 1.4: the driver version with PRODUCT_ID / CUSTOMER_ID / ECO_ID (etnaviv.md §7.1) */
    v->version_major = 1;
    v->version_minor = 4;
    v->version_patchlevel = 0;
    etna_shim_log("VERSION");
    return 0;
}

static int etna_shim_get_param(struct etna_shim_file *f, struct etna_drm_param *p)
{
    int rc = 0;
    uint32_t v = 0;
    if (p->pipe >= ETNA_MAX_PIPES)
        rc = -EINVAL;
    else if (p->pipe >= f->npipes)
        rc = -ENXIO; /* no core on this pipe */
    else if (p->param == ETNA_PARAM_GPU_MODEL)
        p->value = f->pipes[p->pipe].model;
    else if (p->param == ETNA_PARAM_GPU_REVISION)
        p->value = f->pipes[p->pipe].revision;
    else if (p->param == ETNA_PARAM_SOFTPIN_START_ADDR)
        p->value = f->no_softpin ? ~0ull : ETNA_SOFTPIN_START;
    else if (p->param == ETNA_PARAM_GPU_CUSTOMER_ID && f->pipes[p->pipe].npu &&
             !teflon_target_param_get(f->t, "customer_id", &v))
        p->value = v;
    else
        rc = -EINVAL; /* a param this shim does not model */
    etna_shim_log("GET_PARAM pipe=%u param=0x%x = %s0x%llx", p->pipe, p->param, rc ? "error " : "",
                  rc ? (unsigned long long)-rc : (unsigned long long)p->value);
    return rc;
}

static int etna_shim_gem_new(struct etna_shim_file *f, struct etna_drm_gem_new *n)
{
    const uint64_t size = (n->size + ETNA_VA_PAGE - 1) / ETNA_VA_PAGE * ETNA_VA_PAGE;
    int rc = 0;
    if (n->size == 0 || n->size > UINT32_MAX || !(n->flags & 0x000f0000u) /* ETNA_BO_CACHE_MASK */)
        rc = -EINVAL;
    if (!rc && f->nbos == f->cap) {
        const size_t cap = f->cap ? 2 * f->cap : 64;
        struct etna_shim_bo *b = realloc(f->bos, cap * sizeof(*b));
        rc = b ? 0 : -ENOMEM;
        if (b) {
            f->bos = b;
            f->cap = cap;
        }
    }
    uint8_t *mem = rc ? NULL : aligned_alloc(ETNA_VA_PAGE, size);
    if (!rc && !mem)
        rc = -ENOMEM;
    if (!rc) {
        memset(mem, 0, size);
        n->handle = ++f->next_handle;
        f->bos[f->nbos++] = (struct etna_shim_bo){.handle = n->handle, .size = size,
                                                  .offset = (uint64_t)n->handle << 32, .mem = mem};
    }
    etna_shim_log("GEM_NEW size=%llu flags=0x%x = %s%u", (unsigned long long)n->size, n->flags, rc ? "error " : "",
                  rc ? (unsigned)-rc : n->handle);
    return rc;
}

static int etna_shim_gem_info(struct etna_shim_file *f, struct etna_drm_gem_info *i)
{
    const struct etna_shim_bo *b = etna_shim_bo_of(f, i->handle);
    if (b)
        i->offset = b->offset;
    etna_shim_log("GEM_INFO handle=%u%s", i->handle, b ? "" : " = error ENOENT");
    return b ? 0 : -ENOENT;
}

static int etna_shim_cpu_prep(struct etna_shim_file *f, const struct etna_drm_gem_cpu_prep *p)
{
    const int rc = !etna_shim_bo_of(f, p->handle) ? -ENOENT
                   : !p->op || p->op & ~(ETNA_PREP_READ | ETNA_PREP_WRITE | ETNA_PREP_NOSYNC) ? -EINVAL : 0;
    etna_shim_log("GEM_CPU_PREP handle=%u op=0x%x timeout=%.1fs%s", p->handle, p->op, etna_shim_secs_to(p->timeout),
                  rc ? " = error" : "");
    return rc; /* execution is synchronous: never busy */
}

static int etna_shim_cpu_fini(struct etna_shim_file *f, const struct etna_drm_gem_cpu_fini *p)
{
    const int rc = !etna_shim_bo_of(f, p->handle) ? -ENOENT : p->flags ? -EINVAL : 0;
    etna_shim_log("GEM_CPU_FINI handle=%u%s", p->handle, rc ? " = error" : "");
    return rc;
}

static int etna_shim_gem_close(struct etna_shim_file *f, const struct teflon_drm_gem_close *c)
{
    struct etna_shim_bo *b = etna_shim_bo_of(f, c->handle);
    etna_shim_log("GEM_CLOSE handle=%u%s", c->handle, b ? "" : " = error");
    if (!b)
        return -EINVAL;
    if (b->mapped)
        b->closed = 1;
    else
        etna_shim_bo_drop(f, b);
    return 0;
}

/* ---- GEM_SUBMIT -------------------------------------------------------------------------------------------- */

/* What the kernel checks before it queues a softpin submit (the message goes to the log, like its DRM_ERRORs). */
static const char *etna_shim_submit_refusal(struct etna_shim_file *f, const struct etna_drm_gem_submit *s)
{
    if (s->flags & ~ETNA_SUBMIT_FLAGS)
        return "unknown flags";
    if (!(s->flags & ETNA_SUBMIT_SOFTPIN))
        return "not a softpin submit (relocations are not modelled)";
    if (s->flags & (ETNA_SUBMIT_FENCE_FD_IN | ETNA_SUBMIT_FENCE_FD_OUT))
        return "fence fds are not modelled";
    if (s->pipe >= f->npipes || !f->pipes[s->pipe].npu)
        return "pipe is not the NPU";
    if (s->exec_state != ETNA_PIPE_3D)
        return "exec_state is not ETNA_PIPE_3D";
    if (s->nr_relocs || s->nr_pmrs)
        return "relocs / perf monitors with softpin";
    if (s->stream_size == 0 || s->stream_size % 4 || !s->stream)
        return "stream size not a positive multiple of 4";
    if (s->nr_bos && !s->bos)
        return "no BO array";
    return NULL;
}

static const char *etna_shim_check_bo(struct etna_shim_file *f, const struct etna_drm_gem_submit_bo *sb, uint32_t i)
{
    const struct etna_shim_bo *b = etna_shim_bo_of(f, sb[i].handle);
    if (!b)
        return "unknown BO handle";
    if (!sb[i].flags || sb[i].flags & ~(ETNA_SUBMIT_BO_READ | ETNA_SUBMIT_BO_WRITE))
        return "BO flags not READ/WRITE";
    for (uint32_t k = 0; k < i; k++)
        if (sb[k].handle == sb[i].handle)
            return "BO listed twice";
    if (sb[i].presumed % ETNA_VA_PAGE || sb[i].presumed < ETNA_SOFTPIN_START ||
        sb[i].presumed + b->size > ETNA_VA_END)
        return "presumed VA not a 4 KiB aligned address in [softpin start, 4 GiB)";
    return NULL;
}

/* Map the listed BOs at their VAs, run the stream, copy the device's view back, unmap. */
static int etna_shim_run(struct etna_shim_file *f, const struct etna_drm_gem_submit_bo *sb, uint32_t n,
                         const uint32_t *stream, uint32_t nwords, char *msg, size_t msglen)
{
    void **dev = calloc(n ? n : 1, sizeof(*dev));
    if (!dev) {
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    uint32_t bound = 0;
    int rc = 0;
    for (; bound < n && !rc; bound++) {
        const struct etna_shim_bo *b = etna_shim_bo_of(f, sb[bound].handle);
        rc = etna_sim_bo_create_at(f->sim, (uint32_t)sb[bound].presumed, b->size, &dev[bound], msg, msglen);
        if (rc)
            break;
        memcpy(dev[bound], b->mem, b->size);
    }
    if (!rc)
        rc = etna_sim_submit(f->sim, stream, nwords, msg, msglen);
    for (uint32_t i = 0; i < bound; i++) {
        memcpy(etna_shim_bo_of(f, sb[i].handle)->mem, dev[i], etna_shim_bo_of(f, sb[i].handle)->size);
        etna_sim_bo_destroy(f->sim, (uint32_t)sb[i].presumed);
    }
    free(dev);
    return rc;
}

static int etna_shim_submit(struct etna_shim_file *f, struct etna_drm_gem_submit *s)
{
    const struct etna_drm_gem_submit_bo *sb = (const struct etna_drm_gem_submit_bo *)(uintptr_t)s->bos;
    const char *why = etna_shim_submit_refusal(f, s);
    for (uint32_t i = 0; !why && i < s->nr_bos; i++)
        why = etna_shim_check_bo(f, sb, i);
    if (why) {
        etna_shim_log("GEM_SUBMIT pipe=%u bos=%u bytes=%u flags=0x%x = error EINVAL (%s)", s->pipe, s->nr_bos,
                      s->stream_size, s->flags, why);
        return -EINVAL;
    }
    /* the kernel copies the stream from user memory into its own command buffer */
    uint32_t *stream = malloc(s->stream_size);
    if (!stream)
        return -ENOMEM;
    memcpy(stream, (const void *)(uintptr_t)s->stream, s->stream_size);
    char msg[512];
    /* an injected fault: a hang or a bus/MMU error never runs the stream; a lost interrupt or a failed write
     * does (the NPU ran, the kernel never learnt it or the output is bad) */
    const enum teflon_fault_kind fault = teflon_sim_fault_tick(&f->fault);
    const int runs = fault == TEFLON_FAULT_NONE || fault == TEFLON_FAULT_LOST_IRQ || fault == TEFLON_FAULT_DMA_WRITE;
    const int rc = runs ? etna_shim_run(f, sb, s->nr_bos, stream, s->stream_size / 4, msg, sizeof(msg)) : 0;
    free(stream);
    s->fence = ++f->fence;
    if (fault) {
        f->fault_fence = s->fence;
        f->fault_rc = teflon_fault_errno(fault);
        etna_shim_log("FAULT %s on fence %u", teflon_fault_name(fault), s->fence);
    }
    if (rc) {
        if (!f->hang_fence)
            f->hang_fence = s->fence;
        fprintf(stderr, "[etna-shim] GPU hang on fence %u: %s\n", s->fence, msg);
    }
    etna_shim_log("GEM_SUBMIT pipe=%u bos=%u bytes=%u flags=0x%x = fence %u%s%s", s->pipe, s->nr_bos, s->stream_size,
                  s->flags, s->fence, rc ? " HANG: " : "", rc ? msg : "");
    return 0;
}

static int etna_shim_wait_fence(struct etna_shim_file *f, const struct etna_drm_wait_fence *w)
{
    int rc = 0;
    if (w->flags & ~ETNA_WAIT_NONBLOCK || w->pipe >= f->npipes)
        rc = -EINVAL;
    else if ((int32_t)(w->fence - f->fence) > 0)
        rc = -EINVAL; /* the kernel: "waiting on invalid fence" */
    else if (f->fault_fence && (int32_t)(w->fence - f->fault_fence) >= 0) {
        rc = f->fault_rc; /* reported once: the kernel recovered the core, later fences signal normally */
        f->fault_fence = 0;
    } else if (f->hang_fence && (int32_t)(w->fence - f->hang_fence) >= 0)
        rc = -EIO; /* shim choice: make the hang visible */
    etna_shim_log("WAIT_FENCE pipe=%u fence=%u timeout=%.1fs%s", w->pipe, w->fence, etna_shim_secs_to(w->timeout),
                  rc ? " = error" : "");
    return rc;
}

/* ---- dispatch -------------------------------------------------------------------------------------------- */

static int etna_shim_ioctl(struct etna_shim_file *f, unsigned long req, void *arg)
{
    switch (req) {
    case TEFLON_DRM_IOCTL_VERSION:
        return etna_shim_version(arg);
    case ETNA_IOCTL_GET_PARAM:
        return etna_shim_get_param(f, arg);
    case ETNA_IOCTL_GEM_NEW:
        return etna_shim_gem_new(f, arg);
    case ETNA_IOCTL_GEM_INFO:
        return etna_shim_gem_info(f, arg);
    case ETNA_IOCTL_GEM_CPU_PREP:
        return etna_shim_cpu_prep(f, arg);
    case ETNA_IOCTL_GEM_CPU_FINI:
        return etna_shim_cpu_fini(f, arg);
    case ETNA_IOCTL_GEM_SUBMIT:
        return etna_shim_submit(f, arg);
    case ETNA_IOCTL_WAIT_FENCE:
        return etna_shim_wait_fence(f, arg);
    case TEFLON_DRM_IOCTL_GEM_CLOSE:
        return etna_shim_gem_close(f, arg);
    default:
        etna_shim_log("UNKNOWN ioctl 0x%lx = error ENOTTY", req);
        return -ENOTTY;
    }
}

/* ---- the fake file ---------------------------------------------------------------------------------------- */

static struct etna_shim_file *etna_shim_file_new(int fd, const teflon_target *t)
{
    struct etna_chip chip;
    uint32_t model, revision;
    char msg[256];
    if (etna_chip_of(t, &chip, msg, sizeof(msg)) || etna_ids_of(t, &model, &revision, msg, sizeof(msg))) {
        fprintf(stderr, "[etna-shim] %s\n", msg);
        return NULL;
    }
    struct teflon_sim_fault fault;
    if (teflon_sim_fault_from_env(&fault, msg, sizeof(msg))) {
        fprintf(stderr, "[etna-shim] %s\n", msg);
        return NULL;
    }
    struct etna_shim_file *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->fault = fault;
    f->sim = etna_sim_create(&chip, msg, sizeof(msg));
    if (!f->sim) {
        fprintf(stderr, "[etna-shim] %s\n", msg);
        free(f);
        return NULL;
    }
    f->fd = fd;
    f->t = t;
    const char *gpu = getenv("TEFLON_ETNA_SHIM_GPU"), *nosp = getenv("TEFLON_ETNA_SHIM_NO_SOFTPIN");
    if (gpu && strcmp(gpu, "1") == 0) /* a GC7000-class 3D core; IDs illustrative, never an NPU row's */
        f->pipes[f->npipes++] = (struct etna_shim_pipe){0x7000, 0x6204, 0};
    f->pipes[f->npipes++] = (struct etna_shim_pipe){model, revision, 1};
    f->no_softpin = nosp && strcmp(nosp, "1") == 0;
    return f;
}

static void etna_shim_file_free(struct etna_shim_file *f)
{
    for (size_t i = 0; i < f->nbos; i++)
        free(f->bos[i].mem);
    free(f->bos);
    etna_sim_destroy(f->sim);
    free(f);
}

/* The fake node: a real fd (of /dev/null) so the number is unique, with the simulated device behind it. */
static int etna_shim_open_node(const char *path, int flags)
{
    const teflon_target *t = teflon_target_named(getenv("TEFLON_ETNA_SHIM_TARGET"));
    if (!t || strcmp(t->family, "etnaviv") != 0) {
        errno = ENOENT;
        return -1;
    }
    const int fd = etna_shim.open("/dev/null", O_RDWR | (flags & O_CLOEXEC));
    if (fd < 0)
        return -1;
    struct etna_shim_file *f = etna_shim_file_new(fd, t);
    if (!f) {
        etna_shim.close(fd);
        errno = ENOMEM;
        return -1;
    }
    pthread_mutex_lock(&etna_shim.lock);
    f->next = etna_shim.files;
    etna_shim.files = f;
    pthread_mutex_unlock(&etna_shim.lock);
    etna_shim_log("OPEN %s (%s)", path, t->name);
    return fd;
}

static int etna_shim_is_node(const char *path)
{
    const char *node = getenv("TEFLON_ETNA_SHIM_NODE");
    return path && getenv("TEFLON_ETNA_SHIM_TARGET") && strcmp(path, node && *node ? node : "/dev/dri/renderD128") == 0;
}

/* ---- the interposed libc entry points --------------------------------------------------------------------- */

static int etna_shim_do_open(const char *path, int flags, mode_t mode)
{
    etna_shim_init();
    if (etna_shim_is_node(path))
        return etna_shim_open_node(path, flags);
    return etna_shim.open(path, flags, mode);
}

ETNA_SHIM_EXPORT int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    return etna_shim_do_open(path, flags, mode);
}

ETNA_SHIM_EXPORT int open64(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    return etna_shim_do_open(path, flags, mode);
}

/* glibc's fortified open() without a mode */
ETNA_SHIM_EXPORT int __open_2(const char *path, int flags)
{
    return etna_shim_do_open(path, flags, 0);
}

ETNA_SHIM_EXPORT int __open64_2(const char *path, int flags)
{
    return etna_shim_do_open(path, flags, 0);
}

ETNA_SHIM_EXPORT int close(int fd)
{
    etna_shim_init();
    pthread_mutex_lock(&etna_shim.lock);
    for (struct etna_shim_file **p = &etna_shim.files; *p; p = &(*p)->next)
        if ((*p)->fd == fd) {
            struct etna_shim_file *f = *p;
            *p = f->next;
            etna_shim_file_free(f);
            etna_shim_log("CLOSE");
            break;
        }
    pthread_mutex_unlock(&etna_shim.lock);
    return etna_shim.close(fd);
}

ETNA_SHIM_EXPORT int ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    etna_shim_init();
    pthread_mutex_lock(&etna_shim.lock);
    struct etna_shim_file *f = etna_shim_file_of(fd);
    const int rc = f ? etna_shim_ioctl(f, req, arg) : 0;
    pthread_mutex_unlock(&etna_shim.lock);
    if (!f)
        return etna_shim.ioctl(fd, req, arg);
    if (rc) {
        errno = -rc;
        return -1;
    }
    return 0;
}

static void *etna_shim_map(struct etna_shim_file *f, size_t len, off_t off)
{
    for (size_t i = 0; i < f->nbos; i++) {
        struct etna_shim_bo *b = &f->bos[i];
        if (!b->closed && b->offset == (uint64_t)off && len <= b->size) {
            b->mapped = 1;
            etna_shim_log("MMAP handle=%u", b->handle);
            return b->mem;
        }
    }
    etna_shim_log("MMAP offset=0x%llx = error EINVAL", (unsigned long long)off);
    errno = EINVAL;
    return MAP_FAILED;
}

ETNA_SHIM_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    etna_shim_init();
    pthread_mutex_lock(&etna_shim.lock);
    struct etna_shim_file *f = etna_shim_file_of(fd);
    void *p = f ? etna_shim_map(f, len, off) : NULL;
    pthread_mutex_unlock(&etna_shim.lock);
    return f ? p : etna_shim.mmap(addr, len, prot, flags, fd, off);
}

ETNA_SHIM_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return mmap(addr, len, prot, flags, fd, off);
}

/* 1 when `addr` is a BO mapping the shim handed out (then unmapped, and freed if already closed). */
static int etna_shim_unmap(void *addr)
{
    for (struct etna_shim_file *f = etna_shim.files; f; f = f->next)
        for (size_t i = 0; i < f->nbos; i++)
            if (f->bos[i].mem == addr && f->bos[i].mapped) {
                f->bos[i].mapped = 0;
                if (f->bos[i].closed)
                    etna_shim_bo_drop(f, &f->bos[i]);
                return 1;
            }
    return 0;
}

ETNA_SHIM_EXPORT int munmap(void *addr, size_t len)
{
    etna_shim_init();
    pthread_mutex_lock(&etna_shim.lock);
    const int mine = etna_shim_unmap(addr);
    pthread_mutex_unlock(&etna_shim.lock);
    return mine ? 0 : etna_shim.munmap(addr, len);
}
