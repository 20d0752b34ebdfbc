/* Own declarations of the Linux accel/ethosu UAPI (include/uapi/drm/ethosu_accel.h, MIT, driver version 1.0): the
 * six ioctls of the initial interface, their argument structs and ioctl numbers, restated from the header's
 * documented layout (docs/hardware/ethosu-kernel.md "UAPI"). Every struct is naturally aligned with no hidden
 * padding (checked by the static asserts). The perfmon ioctls a later kernel adds after these are not used. */
#ifndef ETHOSU_UAPI_H
#define ETHOSU_UAPI_H

#include <stdint.h>
#include <sys/ioctl.h>

#include "../drm_uapi.h"
#include "ethosu_task.h"

#define ETHOSU_DRIVER_NAME "ethosu" /* drm_driver.name, what DRM_IOCTL_VERSION answers */

/* DEV_QUERY types */
#define ETHOSU_DEV_QUERY_NPU_INFO 0u

/* The NPU's ID and CONFIG registers as read at probe, and the bytes of SRAM the kernel took from the devicetree
 * `sram` pool (0: none). A later kernel appends pmu_counters; the client asks for these 12 bytes only. */
struct ethosu_drm_npu_info {
    uint32_t id;
    uint32_t config;
    uint32_t sram_size;
};

struct ethosu_drm_dev_query {
    uint32_t type;
    uint32_t size;    /* in: bytes at pointer; out (pointer 0): the struct's size */
    uint64_t pointer; /* struct ethosu_drm_npu_info * */
};

#define ETHOSU_BO_NO_MMAP 0x1u

struct ethosu_drm_bo_create {
    uint64_t size;   /* in: bytes; out: the page-aligned size allocated */
    uint32_t flags;  /* ETHOSU_BO_NO_MMAP or 0 */
    uint32_t handle; /* out, nonzero */
};

struct ethosu_drm_bo_mmap_offset {
    uint32_t handle;
    uint32_t pad;
    uint64_t offset; /* out: the fake offset to mmap */
};

struct ethosu_drm_bo_wait {
    uint32_t handle;
    uint32_t pad;
    int64_t timeout_ns; /* absolute CLOCK_MONOTONIC */
};

struct ethosu_drm_cmdstream_bo_create {
    uint32_t size;  /* bytes of command words at data */
    uint32_t flags; /* 0 */
    uint64_t data;  /* const uint32_t * */
    uint32_t handle; /* out */
    uint32_t pad;
};

/* One job: a validated command-stream BO, the SRAM bytes it uses as region 2, and a BO handle per region (0: none). */
struct ethosu_drm_job {
    uint32_t cmd_bo;
    uint32_t sram_size;
    uint32_t region_bo_handles[ETHOSU_MAX_REGIONS];
};

struct ethosu_drm_submit {
    uint64_t jobs; /* struct ethosu_drm_job * */
    uint32_t job_count;
    uint32_t pad; /* 0 (a later kernel: perfmon_id, 0 = none) */
};

_Static_assert(sizeof(struct ethosu_drm_npu_info) == 12, "drm_ethosu_npu_info layout");
_Static_assert(sizeof(struct ethosu_drm_dev_query) == 16, "drm_ethosu_dev_query layout");
_Static_assert(sizeof(struct ethosu_drm_bo_create) == 16, "drm_ethosu_bo_create layout");
_Static_assert(sizeof(struct ethosu_drm_bo_mmap_offset) == 16, "drm_ethosu_bo_mmap_offset layout");
_Static_assert(sizeof(struct ethosu_drm_bo_wait) == 16, "drm_ethosu_bo_wait layout");
_Static_assert(sizeof(struct ethosu_drm_cmdstream_bo_create) == 24, "drm_ethosu_cmdstream_bo_create layout");
_Static_assert(sizeof(struct ethosu_drm_job) == 40, "drm_ethosu_job layout");
_Static_assert(sizeof(struct ethosu_drm_submit) == 16, "drm_ethosu_submit layout");

/* enum drm_ethosu_ioctl_id; every ioctl is _IOWR */
#define ETHOSU_DRM_DEV_QUERY 0x00
#define ETHOSU_DRM_BO_CREATE 0x01
#define ETHOSU_DRM_BO_WAIT 0x02
#define ETHOSU_DRM_BO_MMAP_OFFSET 0x03
#define ETHOSU_DRM_CMDSTREAM_BO_CREATE 0x04
#define ETHOSU_DRM_SUBMIT 0x05

#define ETHOSU_IOCTL_DEV_QUERY TEFLON_DRM_IOWR(ETHOSU_DRM_DEV_QUERY, struct ethosu_drm_dev_query)
#define ETHOSU_IOCTL_BO_CREATE TEFLON_DRM_IOWR(ETHOSU_DRM_BO_CREATE, struct ethosu_drm_bo_create)
#define ETHOSU_IOCTL_BO_WAIT TEFLON_DRM_IOWR(ETHOSU_DRM_BO_WAIT, struct ethosu_drm_bo_wait)
#define ETHOSU_IOCTL_BO_MMAP_OFFSET TEFLON_DRM_IOWR(ETHOSU_DRM_BO_MMAP_OFFSET, struct ethosu_drm_bo_mmap_offset)
#define ETHOSU_IOCTL_CMDSTREAM_BO_CREATE \
    TEFLON_DRM_IOWR(ETHOSU_DRM_CMDSTREAM_BO_CREATE, struct ethosu_drm_cmdstream_bo_create)
#define ETHOSU_IOCTL_SUBMIT TEFLON_DRM_IOWR(ETHOSU_DRM_SUBMIT, struct ethosu_drm_submit)

/* The region the kernel reserves for the NPU's SRAM when a job sets sram_size (ETHOSU_SRAM_REGION, "matching Vela"). */
#define ETHOSU_SRAM_REGION 2

/* The ID register's architecture major revision (bits 31:28): 1 for the U55/U65 command set, 2 for the U85. */
#define ETHOSU_ID_ARCH_MAJOR(id) ((id) >> 28)

#endif
