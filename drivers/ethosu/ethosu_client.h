/* The accel/ethosu client (ethosu_kernel.c) over a transport: the kernel's device node (ioctl + mmap of the fd), or
 * the simulated kernel (ethosu_kernel_sim.c) called directly. One client, so the simulator backend exercises the
 * very code that drives a board. */
#ifndef ETHOSU_CLIENT_H
#define ETHOSU_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "../backend.h"
#include "ethosu_npu.h"

struct ethosu_transport {
    const char *name; /* the backend's name ("ethosu", "ethosu-sim") */
    int is_sim;
    int (*ioctl)(void *t, unsigned long req, void *arg); /* 0 or -errno */
    void *(*map)(void *t, uint64_t offset, uint64_t size, int *err);
    void (*unmap)(void *t, void *p, uint64_t size);
    void (*close)(void *t);
    /* Optional (simulator): the last job's outcome, its NPU counters and what happened, right after SUBMIT. */
    int (*last_job)(void *t, struct ethosu_npu_stats *stats, char *msg, size_t msglen);
};

/* A client of target t over transport tp (state t_impl, closed with the client): queries the NPU and checks it is
 * the row's (architecture, SRAM). */
int ethosu_client_open(const teflon_target *t, const struct ethosu_transport *tp, void *t_impl, void **impl,
                       const struct teflon_backend **ops, char *err, size_t errlen);

#endif
