/* Own declarations of the Linux etnaviv DRM UAPI and of the generic DRM ioctls the client needs.
 *
 * Source for every layout and number: include/uapi/drm/etnaviv_drm.h (Linux; read at loongson-gfx/drm-tip
 * eef05e2db0a4, which has SOFTPIN_START_ADDR 0x1b and ETNA_SUBMIT_SOFTPIN 0x8) and include/uapi/drm/drm.h
 * (DRM_IOCTL_VERSION, DRM_IOCTL_GEM_CLOSE, DRM_COMMAND_BASE); restated in ../shared/docs/etnaviv.md §7 and
 * docs/hardware/etnaviv-kernel.md. Written from those facts, not copied. Every struct is naturally aligned
 * with no hidden padding except where the kernel header has it too (checked by the static asserts).
 */
#ifndef ETNA_UAPI_H
#define ETNA_UAPI_H

#include <stdint.h>
#include <sys/ioctl.h>

#include "../drm_uapi.h"

/* ---- etnaviv (etnaviv_drm.h) ---- */
struct etna_drm_timespec { /* absolute CLOCK_MONOTONIC */
    int64_t tv_sec;
    int64_t tv_nsec;
};

#define ETNA_PARAM_GPU_MODEL 0x01
#define ETNA_PARAM_GPU_REVISION 0x02
#define ETNA_PARAM_SOFTPIN_START_ADDR 0x1b /* ~0 when the MMU cannot softpin (MMUv1) */
#define ETNA_PARAM_GPU_PRODUCT_ID 0x1c
#define ETNA_PARAM_GPU_CUSTOMER_ID 0x1d
#define ETNA_PARAM_GPU_ECO_ID 0x1e
#define ETNA_MAX_PIPES 4

struct etna_drm_param {
    uint32_t pipe;
    uint32_t param;
    uint64_t value;
};

#define ETNA_BO_WC 0x00020000u

struct etna_drm_gem_new {
    uint64_t size;
    uint32_t flags;
    uint32_t handle; /* out */
};

struct etna_drm_gem_info {
    uint32_t handle;
    uint32_t pad;
    uint64_t offset; /* out: fake mmap offset */
};

#define ETNA_PREP_READ 0x01u
#define ETNA_PREP_WRITE 0x02u
#define ETNA_PREP_NOSYNC 0x04u

struct etna_drm_gem_cpu_prep {
    uint32_t handle;
    uint32_t op;
    struct etna_drm_timespec timeout;
};

struct etna_drm_gem_cpu_fini {
    uint32_t handle;
    uint32_t flags; /* no defined values: 0 */
};

#define ETNA_SUBMIT_BO_READ 0x0001u
#define ETNA_SUBMIT_BO_WRITE 0x0002u

struct etna_drm_gem_submit_bo {
    uint32_t flags;
    uint32_t handle;
    uint64_t presumed; /* with ETNA_SUBMIT_SOFTPIN: the VA the kernel must map the BO at */
};

#define ETNA_SUBMIT_NO_IMPLICIT 0x0001u
#define ETNA_SUBMIT_FENCE_FD_IN 0x0002u
#define ETNA_SUBMIT_FENCE_FD_OUT 0x0004u
#define ETNA_SUBMIT_SOFTPIN 0x0008u
#define ETNA_SUBMIT_FLAGS (ETNA_SUBMIT_NO_IMPLICIT | ETNA_SUBMIT_FENCE_FD_IN | ETNA_SUBMIT_FENCE_FD_OUT | \
                           ETNA_SUBMIT_SOFTPIN)
#define ETNA_PIPE_3D 0x00u

struct etna_drm_gem_submit {
    uint32_t fence; /* out */
    uint32_t pipe;
    uint32_t exec_state;
    uint32_t nr_bos;
    uint32_t nr_relocs;
    uint32_t stream_size; /* bytes */
    uint64_t bos;         /* struct etna_drm_gem_submit_bo * */
    uint64_t relocs;      /* struct drm_etnaviv_gem_submit_reloc *; none with softpin */
    uint64_t stream;      /* uint32_t *, user memory */
    uint32_t flags;
    int32_t fence_fd;
    uint64_t pmrs;
    uint32_t nr_pmrs;
    uint32_t pad;
};

#define ETNA_WAIT_NONBLOCK 0x01u

struct etna_drm_wait_fence {
    uint32_t pipe;
    uint32_t fence;
    uint32_t flags;
    uint32_t pad;
    struct etna_drm_timespec timeout;
};

#define ETNA_IOCTL_GET_PARAM TEFLON_DRM_IOWR(0x00, struct etna_drm_param)
#define ETNA_IOCTL_GEM_NEW TEFLON_DRM_IOWR(0x02, struct etna_drm_gem_new)
#define ETNA_IOCTL_GEM_INFO TEFLON_DRM_IOWR(0x03, struct etna_drm_gem_info)
#define ETNA_IOCTL_GEM_CPU_PREP TEFLON_DRM_IOW(0x04, struct etna_drm_gem_cpu_prep)
#define ETNA_IOCTL_GEM_CPU_FINI TEFLON_DRM_IOW(0x05, struct etna_drm_gem_cpu_fini)
#define ETNA_IOCTL_GEM_SUBMIT TEFLON_DRM_IOWR(0x06, struct etna_drm_gem_submit)
#define ETNA_IOCTL_WAIT_FENCE TEFLON_DRM_IOW(0x07, struct etna_drm_wait_fence)

/* The layouts the kernel expects (sizes from the kernel header's field list). */
_Static_assert(sizeof(struct etna_drm_param) == 16, "drm_etnaviv_param layout");
_Static_assert(sizeof(struct etna_drm_gem_new) == 16, "drm_etnaviv_gem_new layout");
_Static_assert(sizeof(struct etna_drm_gem_info) == 16, "drm_etnaviv_gem_info layout");
_Static_assert(sizeof(struct etna_drm_gem_cpu_prep) == 24, "drm_etnaviv_gem_cpu_prep layout");
_Static_assert(sizeof(struct etna_drm_gem_submit_bo) == 16, "drm_etnaviv_gem_submit_bo layout");
_Static_assert(sizeof(struct etna_drm_gem_submit) == 72, "drm_etnaviv_gem_submit layout");
_Static_assert(sizeof(struct etna_drm_wait_fence) == 32, "drm_etnaviv_wait_fence layout");

#endif
