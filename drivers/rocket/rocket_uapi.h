/* Own declarations of the Linux accel/rocket UAPI (include/uapi/drm/rocket_accel.h) and of the
 * two generic DRM ioctls the client needs. Layouts and numbers per ../shared/docs/rocket.md §5.1;
 * every struct is naturally aligned with no hidden padding (checked by the static asserts). */
#ifndef TEFLON_ROCKET_UAPI_H
#define TEFLON_ROCKET_UAPI_H

#include <stdint.h>
#include <sys/ioctl.h>

#include "../drm_uapi.h"

/* accel/rocket */
struct drm_rocket_create_bo {
    uint32_t size;        /* in */
    uint32_t handle;      /* out */
    uint64_t dma_address; /* out: NPU IOVA */
    uint64_t offset;      /* out: fake mmap offset */
};

struct drm_rocket_prep_bo {
    uint32_t handle;
    uint32_t reserved;
    int64_t timeout_ns; /* absolute */
};

struct drm_rocket_fini_bo {
    uint32_t handle;
    uint32_t reserved;
};

struct drm_rocket_task {
    uint32_t regcmd;       /* IOVA of the first regcmd word */
    uint32_t regcmd_count; /* 64-bit words */
};

struct drm_rocket_job {
    uint64_t tasks;          /* struct drm_rocket_task * */
    uint64_t in_bo_handles;  /* uint32_t * */
    uint64_t out_bo_handles; /* uint32_t * */
    uint32_t task_count;
    uint32_t task_struct_size;
    uint32_t in_bo_handle_count;
    uint32_t out_bo_handle_count;
};

struct drm_rocket_submit {
    uint64_t jobs; /* struct drm_rocket_job * */
    uint32_t job_count;
    uint32_t job_struct_size;
    uint64_t reserved;
};

_Static_assert(sizeof(struct drm_rocket_create_bo) == 24, "drm_rocket_create_bo layout");
_Static_assert(sizeof(struct drm_rocket_prep_bo) == 16, "drm_rocket_prep_bo layout");
_Static_assert(sizeof(struct drm_rocket_fini_bo) == 8, "drm_rocket_fini_bo layout");
_Static_assert(sizeof(struct drm_rocket_task) == 8, "drm_rocket_task layout");
_Static_assert(sizeof(struct drm_rocket_job) == 40, "drm_rocket_job layout");
_Static_assert(sizeof(struct drm_rocket_submit) == 24, "drm_rocket_submit layout");

#define DRM_ROCKET_CREATE_BO 0x00
#define DRM_ROCKET_SUBMIT 0x01
#define DRM_ROCKET_PREP_BO 0x02
#define DRM_ROCKET_FINI_BO 0x03

#define DRM_IOCTL_ROCKET_CREATE_BO \
    TEFLON_DRM_IOWR(DRM_ROCKET_CREATE_BO, struct drm_rocket_create_bo)
#define DRM_IOCTL_ROCKET_SUBMIT \
    TEFLON_DRM_IOW(DRM_ROCKET_SUBMIT, struct drm_rocket_submit)
#define DRM_IOCTL_ROCKET_PREP_BO \
    TEFLON_DRM_IOW(DRM_ROCKET_PREP_BO, struct drm_rocket_prep_bo)
#define DRM_IOCTL_ROCKET_FINI_BO \
    TEFLON_DRM_IOW(DRM_ROCKET_FINI_BO, struct drm_rocket_fini_bo)

#endif
