/* etnaviv DRM shim: an LD_PRELOAD library, in the spirit of Mesa's drm-shim, that lets the real etnaviv client
 * (etna_kernel.c) run without hardware. The shared half (../shim_core.c: interposed libc calls, fake files, BOs,
 * mmap, VERSION, GEM_CLOSE, the fake sysfs) serves a fake render node; this half answers the etnaviv ioctls from
 * the simulated NPU (etna_sim.h). Test-only: built, never installed (docs/shim.md).
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
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../fault.h"
#include "../sim_rules.h"
#include "../shim_core.h"
#include "../targets.h"
#include "etna_family.h"
#include "etna_sim.h"
#include "etna_uapi.h"

#define ETNA_SHIM_MAX_PIPES 2

struct etna_shim_pipe {
    uint32_t model, revision;
    int npu;
};

/* The etnaviv device behind one open fake node. */
struct etna_shim_dev {
    const teflon_target *t;
    etna_sim *sim;
    struct etna_shim_pipe pipes[ETNA_SHIM_MAX_PIPES];
    uint32_t npipes;
    int no_softpin;
    uint32_t next_handle;
    uint32_t fence;      /* last fence handed out */
    uint32_t hang_fence; /* first fence whose stream the simulator refused (0: none) */
    struct teflon_sim_fault fault;
    uint32_t fault_fence; /* the fence of an injected fault not yet reported by a WAIT_FENCE (0: none) */
    int fault_rc;
};

/* Seconds from now to an absolute CLOCK_MONOTONIC deadline (logged: a relative timeout shows as negative). */
static double etna_shim_secs_to(struct etna_drm_timespec t)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(t.tv_sec - now.tv_sec) + (double)(t.tv_nsec - now.tv_nsec) * 1e-9;
}

/* ---- the ioctls ----------------------------------------------------------------------------------------- */

static int etna_shim_get_param(const struct etna_shim_dev *f, struct etna_drm_param *p)
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
    teflon_shim_log("GET_PARAM pipe=%u param=0x%x = %s0x%llx", p->pipe, p->param, rc ? "error " : "",
                  rc ? (unsigned long long)-rc : (unsigned long long)p->value);
    return rc;
}

static int etna_shim_gem_new(struct teflon_shim_file *sf, struct etna_drm_gem_new *n)
{
    struct etna_shim_dev *f = sf->dev;
    const uint64_t size = (n->size + ETNA_VA_PAGE - 1) / ETNA_VA_PAGE * ETNA_VA_PAGE;
    int rc = 0;
    if (n->size == 0 || n->size > UINT32_MAX || !(n->flags & 0x000f0000u) /* ETNA_BO_CACHE_MASK */)
        rc = -EINVAL;
    uint8_t *mem = rc ? NULL : aligned_alloc(ETNA_VA_PAGE, size);
    if (!rc && !mem)
        rc = -ENOMEM;
    if (!rc) {
        memset(mem, 0, size);
        uint64_t offset;
        const teflon_bo bo = {.handle = f->next_handle + 1, .size = size, .map = mem};
        rc = teflon_shim_bo_add(sf, &bo, &offset);
        if (rc)
            free(mem);
        else
            n->handle = ++f->next_handle;
    }
    teflon_shim_log("GEM_NEW size=%llu flags=0x%x = %s%u", (unsigned long long)n->size, n->flags, rc ? "error " : "",
                  rc ? (unsigned)-rc : n->handle);
    return rc;
}

static int etna_shim_gem_info(struct teflon_shim_file *sf, struct etna_drm_gem_info *i)
{
    const struct teflon_shim_bo *b = teflon_shim_bo_of(sf, i->handle);
    if (b)
        i->offset = b->offset;
    teflon_shim_log("GEM_INFO handle=%u%s", i->handle, b ? "" : " = error ENOENT");
    return b ? 0 : -ENOENT;
}

static int etna_shim_cpu_prep(struct teflon_shim_file *f, const struct etna_drm_gem_cpu_prep *p)
{
    const int rc = !teflon_shim_bo_of(f, p->handle) ? -ENOENT
                   : !p->op || p->op & ~(ETNA_PREP_READ | ETNA_PREP_WRITE | ETNA_PREP_NOSYNC) ? -EINVAL : 0;
    teflon_shim_log("GEM_CPU_PREP handle=%u op=0x%x timeout=%.1fs%s", p->handle, p->op, etna_shim_secs_to(p->timeout),
                  rc ? " = error" : "");
    return rc; /* execution is synchronous: never busy */
}

static int etna_shim_cpu_fini(struct teflon_shim_file *f, const struct etna_drm_gem_cpu_fini *p)
{
    const int rc = !teflon_shim_bo_of(f, p->handle) ? -ENOENT : p->flags ? -EINVAL : 0;
    teflon_shim_log("GEM_CPU_FINI handle=%u%s", p->handle, rc ? " = error" : "");
    return rc;
}

/* ---- GEM_SUBMIT -------------------------------------------------------------------------------------------- */

/* What the kernel checks before it queues a softpin submit (the message goes to the log, like its DRM_ERRORs). */
static const char *etna_shim_submit_refusal(const struct etna_shim_dev *f, const struct etna_drm_gem_submit *s)
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

static const char *etna_shim_check_bo(struct teflon_shim_file *f, const struct etna_drm_gem_submit_bo *sb, uint32_t i)
{
    const struct teflon_shim_bo *sbo = teflon_shim_bo_of(f, sb[i].handle);
    const teflon_bo *b = sbo ? &sbo->bo : NULL;
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
static int etna_shim_run(struct teflon_shim_file *f, const struct etna_drm_gem_submit_bo *sb, uint32_t n,
                         const uint32_t *stream, uint32_t nwords, char *msg, size_t msglen)
{
    etna_sim *sim = ((struct etna_shim_dev *)f->dev)->sim;
    void **dev = calloc(n ? n : 1, sizeof(*dev));
    if (!dev) {
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    uint32_t bound = 0;
    int rc = 0;
    for (; bound < n && !rc; bound++) {
        const teflon_bo *b = &teflon_shim_bo_of(f, sb[bound].handle)->bo;
        rc = etna_sim_bo_create_at(sim, (uint32_t)sb[bound].presumed, b->size, &dev[bound], msg, msglen);
        if (rc)
            break;
        memcpy(dev[bound], b->map, b->size);
    }
    if (!rc)
        rc = etna_sim_submit(sim, stream, nwords, msg, msglen);
    for (uint32_t i = 0; i < bound; i++) {
        const teflon_bo *b = &teflon_shim_bo_of(f, sb[i].handle)->bo;
        memcpy(b->map, dev[i], b->size);
        etna_sim_bo_destroy(sim, (uint32_t)sb[i].presumed);
    }
    free(dev);
    return rc;
}

static int etna_shim_submit(struct teflon_shim_file *sf, struct etna_drm_gem_submit *s)
{
    struct etna_shim_dev *f = sf->dev;
    const struct etna_drm_gem_submit_bo *sb = (const struct etna_drm_gem_submit_bo *)(uintptr_t)s->bos;
    const char *why = etna_shim_submit_refusal(f, s);
    for (uint32_t i = 0; !why && i < s->nr_bos; i++)
        why = etna_shim_check_bo(sf, sb, i);
    if (why) {
        teflon_shim_log("GEM_SUBMIT pipe=%u bos=%u bytes=%u flags=0x%x = error EINVAL (%s)", s->pipe, s->nr_bos,
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
    const int rc = runs ? etna_shim_run(sf, sb, s->nr_bos, stream, s->stream_size / 4, msg, sizeof(msg)) : 0;
    free(stream);
    s->fence = ++f->fence;
    if (fault) {
        f->fault_fence = s->fence;
        f->fault_rc = teflon_fault_errno(fault);
        teflon_shim_log("FAULT %s on fence %u", teflon_fault_name(fault), s->fence);
    }
    if (rc) {
        if (!f->hang_fence)
            f->hang_fence = s->fence;
        fprintf(stderr, "[etna-shim] GPU hang on fence %u: %s\n", s->fence, msg);
    }
    teflon_shim_log("GEM_SUBMIT pipe=%u bos=%u bytes=%u flags=0x%x = fence %u%s%s", s->pipe, s->nr_bos, s->stream_size,
                  s->flags, s->fence, rc ? " HANG: " : "", rc ? msg : "");
    return 0;
}

static int etna_shim_wait_fence(struct etna_shim_dev *f, const struct etna_drm_wait_fence *w)
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
    teflon_shim_log("WAIT_FENCE pipe=%u fence=%u timeout=%.1fs%s", w->pipe, w->fence, etna_shim_secs_to(w->timeout),
                  rc ? " = error" : "");
    return rc;
}

/* ---- the family row of the shim --------------------------------------------------------------------------- */

static int etna_shim_ioctl(struct teflon_shim_file *f, unsigned long req, void *arg)
{
    struct etna_shim_dev *d = f->dev;
    switch (req) {
    case ETNA_IOCTL_GET_PARAM:
        return etna_shim_get_param(d, arg);
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
        return etna_shim_wait_fence(d, arg);
    default:
        return teflon_shim_unknown_ioctl(req);
    }
}

static void *etna_shim_open(const teflon_target *t, char *msg, size_t msglen)
{
    struct etna_chip chip;
    uint32_t model, revision;
    struct teflon_sim_fault fault;
    struct teflon_sim_rules rules;
    if (etna_chip_of(t, &chip, msg, msglen) || etna_ids_of(t, &model, &revision, msg, msglen) ||
        teflon_sim_fault_from_env(&fault, msg, msglen) || teflon_sim_rules_from_env(&rules, msg, msglen))
        return NULL;
    struct etna_shim_dev *d = calloc(1, sizeof(*d));
    if (!d) {
        snprintf(msg, msglen, "out of memory");
        return NULL;
    }
    d->fault = fault;
    d->sim = etna_sim_create(&chip, msg, msglen);
    if (!d->sim) {
        free(d);
        return NULL;
    }
    etna_sim_set_rules(d->sim, &rules);
    d->t = t;
    const char *gpu = getenv("TEFLON_ETNA_SHIM_GPU"), *nosp = getenv("TEFLON_ETNA_SHIM_NO_SOFTPIN");
    if (gpu && strcmp(gpu, "1") == 0) /* a GC7000-class 3D core; IDs illustrative, never an NPU row's */
        d->pipes[d->npipes++] = (struct etna_shim_pipe){0x7000, 0x6204, 0};
    d->pipes[d->npipes++] = (struct etna_shim_pipe){model, revision, 1};
    d->no_softpin = nosp && strcmp(nosp, "1") == 0;
    return d;
}

static void etna_shim_close(void *dev)
{
    struct etna_shim_dev *d = dev;
    etna_sim_destroy(d->sim);
    free(d);
}

static void etna_shim_bo_release(void *dev, teflon_bo *bo)
{
    (void)dev;
    free(bo->map);
}

/* device=auto (etna_detect.c): the render node bound to the etnaviv driver, on an SoC the row names */
static int etna_shim_tree(const teflon_target *t, const char *node, struct teflon_shim_tree *tree)
{
    const char *name = strrchr(node, '/');
    char path[256], compatible[256];
    snprintf(path, sizeof(path), "/sys/class/drm/%s/device/driver", name ? name + 1 : node);
    int rc = teflon_shim_tree_link(tree, path, "../../../bus/platform/drivers/etnaviv");
    size_t n = 0;
    for (const char *const *c = t->compatibles; *c && n < sizeof(compatible); c++)
        n += (size_t)snprintf(compatible + n, sizeof(compatible) - n, "%s", *c) + 1; /* NUL-separated */
    return rc ? rc : teflon_shim_tree_file(tree, "/proc/device-tree/compatible", compatible,
                                           n < sizeof(compatible) ? n : sizeof(compatible));
}

static const char *const etna_shim_faked[] = {"/sys/class/drm", "/proc/device-tree", NULL};

const struct teflon_shim_family teflon_shim_family = {
    .family = "etnaviv",
    .tag = "etna-shim",
    .env_prefix = "TEFLON_ETNA_SHIM",
    .default_target = NULL,
    .default_node = "/dev/dri/renderD128", /* the first render minor */
    .driver_name = "etnaviv",
    .version = {1, 4, 0}, /* the driver version with PRODUCT_ID / CUSTOMER_ID / ECO_ID (etnaviv.md §7.1) */
    .faked_prefixes = etna_shim_faked,
    .tree = etna_shim_tree,
    .open = etna_shim_open,
    .close = etna_shim_close,
    .ioctl = etna_shim_ioctl,
    .bo_release = etna_shim_bo_release,
};
