/* The simulated accel/ethosu kernel (ethosu_kernel_sim.c) at the UAPI level: one open file of the device, answering
 * the six ioctls (and GEM_CLOSE) with the argument structs of ethosu_uapi.h, as the kernel does
 * (docs/hardware/ethosu-kernel.md). Used by the simulator backend (the real client over this "transport") and by
 * the LD_PRELOAD shim (ethosu_shim.c), so both run the same validator, job checks and NPU. */
#ifndef ETHOSU_KSIM_H
#define ETHOSU_KSIM_H

#include <stddef.h>
#include <stdint.h>

#include "../driver.h"
#include "ethosu_npu.h"

typedef struct ethosu_ksim ethosu_ksim;

/* A device of target t (params id, config, sram_size), faults from $TEFLON_SIM_FAULT; NULL with a message. */
ethosu_ksim *ethosu_ksim_create(const teflon_target *t, char *err, size_t errlen);
void ethosu_ksim_destroy(ethosu_ksim *k);

/* One ioctl (ETHOSU_IOCTL_*, TEFLON_DRM_IOCTL_GEM_CLOSE): 0 or the kernel's -errno; -ENOTTY for anything else. */
int ethosu_ksim_ioctl(ethosu_ksim *k, unsigned long req, void *arg);

/* The memory behind BO `handle` (the device's view is the CPU's: execution is synchronous), or NULL. */
void *ethosu_ksim_bo_map(ethosu_ksim *k, uint32_t handle, uint64_t *size);
/* The BO whose fake mmap offset (BO_MMAP_OFFSET) is `offset`, when it may be mapped; NULL otherwise. */
void *ethosu_ksim_map_offset(ethosu_ksim *k, uint64_t offset, uint64_t *size);

/* The outcome of the last job SUBMIT ran: 0 or the errno its waiter gets, what happened, and the NPU's counters. The
 * kernel reports none of this synchronously; the simulator backend uses it for exact errors and counters. */
int ethosu_ksim_last_job(const ethosu_ksim *k, struct ethosu_npu_stats *stats, char *msg, size_t msglen);

#endif
