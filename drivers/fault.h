/* NPU faults: the kinds a board produces (job timeout, DMA read/write error, IOMMU page fault, lost interrupt),
 * their one-line descriptions, the errno each family's kernel returns for them, and the simulated kernels'
 * injection of them ($TEFLON_SIM_FAULT, docs/faults.md). Shared by both families' simulated kernels, their real
 * kernel clients (errno -> the same words) and the etnaviv ioctl shim.
 */
#ifndef TEFLON_FAULT_H
#define TEFLON_FAULT_H

#include <stddef.h>
#include <stdint.h>

#define TEFLON_SIM_FAULT_ENV "TEFLON_SIM_FAULT"

enum teflon_fault_kind {
    TEFLON_FAULT_NONE = 0,
    TEFLON_FAULT_TIMEOUT,   /* the job never completes: the wait ends at the kernel's job timeout */
    TEFLON_FAULT_DMA_READ,  /* a bus error on a read: the job fails */
    TEFLON_FAULT_DMA_WRITE, /* a bus error on a write: the job ran, its output is not valid */
    TEFLON_FAULT_IOMMU,     /* a page fault at an unmapped device address: the kernel reports it and resets */
    TEFLON_FAULT_LOST_IRQ,  /* the job completes but its interrupt never comes: the wait times out */
};

/* One device's injection: which kind fires on which submit (1-based), and the submits counted so far. */
struct teflon_sim_fault {
    enum teflon_fault_kind kind;
    uint32_t at;
    uint32_t submits;
};

/* `spec` is "kind[@N]" (NULL or "" = no fault); -EINVAL with a message naming the variable otherwise. */
int teflon_sim_fault_parse(const char *spec, struct teflon_sim_fault *f, char *err, size_t errlen);
/* The same from $TEFLON_SIM_FAULT: what a simulated device calls when it is opened. */
int teflon_sim_fault_from_env(struct teflon_sim_fault *f, char *err, size_t errlen);
/* Counts one submit; the kind that fires on it (once), else TEFLON_FAULT_NONE. */
enum teflon_fault_kind teflon_sim_fault_tick(struct teflon_sim_fault *f);

/* "timeout", "dma_read", ... (the spelling $TEFLON_SIM_FAULT takes). */
const char *teflon_fault_name(enum teflon_fault_kind k);
/* The negative errno a submit or wait ends with for this fault (ETIMEDOUT, EIO, EFAULT). */
int teflon_fault_errno(enum teflon_fault_kind k);
/* What a failed kernel call means for the job, for the errno (negative) a submit or wait returned: "NPU job
 * timed out" for -ETIMEDOUT/-EBUSY, ... ; strerror otherwise. */
const char *teflon_fault_errno_text(int rc);

#endif
