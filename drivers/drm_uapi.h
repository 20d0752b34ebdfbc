/* The generic DRM UAPI every kernel client needs (own declarations of include/uapi/drm/drm.h: DRM_IOCTL_VERSION,
 * DRM_IOCTL_GEM_CLOSE, DRM_COMMAND_BASE; 64-bit clients only), shared by the families' UAPI headers, and the
 * ioctl call every client makes: retried on EINTR/EAGAIN, -errno on failure. */
#ifndef TEFLON_DRM_UAPI_H
#define TEFLON_DRM_UAPI_H

#include <errno.h>
#include <stdint.h>
#include <sys/ioctl.h>

#define TEFLON_DRM_IOCTL_BASE 'd'
#define TEFLON_DRM_COMMAND_BASE 0x40

struct teflon_drm_version {
    int32_t version_major;
    int32_t version_minor;
    int32_t version_patchlevel;
    uint64_t name_len; /* size_t in the kernel header: these clients are 64-bit only */
    uint64_t name;     /* char * */
    uint64_t date_len;
    uint64_t date;
    uint64_t desc_len;
    uint64_t desc;
};

struct teflon_drm_gem_close {
    uint32_t handle;
    uint32_t pad;
};

_Static_assert(sizeof(struct teflon_drm_version) == 64, "drm_version layout");
_Static_assert(sizeof(struct teflon_drm_gem_close) == 8, "drm_gem_close layout");

#define TEFLON_DRM_IOCTL_VERSION _IOWR(TEFLON_DRM_IOCTL_BASE, 0x00, struct teflon_drm_version)
#define TEFLON_DRM_IOCTL_GEM_CLOSE _IOW(TEFLON_DRM_IOCTL_BASE, 0x09, struct teflon_drm_gem_close)
/* A driver-specific ioctl number nr (DRM_COMMAND_BASE + nr). */
#define TEFLON_DRM_IOWR(nr, type) _IOWR(TEFLON_DRM_IOCTL_BASE, TEFLON_DRM_COMMAND_BASE + (nr), type)
#define TEFLON_DRM_IOW(nr, type) _IOW(TEFLON_DRM_IOCTL_BASE, TEFLON_DRM_COMMAND_BASE + (nr), type)

static inline int teflon_drm_ioctl(int fd, unsigned long req, void *arg)
{
    int rc;
    do {
        rc = ioctl(fd, req, arg);
    } while (rc == -1 && (errno == EINTR || errno == EAGAIN));
    return rc == -1 ? -errno : 0;
}

#endif
