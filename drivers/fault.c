#include "fault.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "errmsg.h"

static const char *const names[] = {
    [TEFLON_FAULT_NONE] = "none",
    [TEFLON_FAULT_TIMEOUT] = "timeout",
    [TEFLON_FAULT_DMA_READ] = "dma_read",
    [TEFLON_FAULT_DMA_WRITE] = "dma_write",
    [TEFLON_FAULT_IOMMU] = "iommu",
    [TEFLON_FAULT_LOST_IRQ] = "lost_irq",
};

#define NKINDS (sizeof(names) / sizeof(names[0]))
#define KINDS "timeout, dma_read, dma_write, iommu, lost_irq"

const char *teflon_fault_name(enum teflon_fault_kind k)
{
    return (size_t)k < NKINDS ? names[k] : "?";
}

int teflon_fault_errno(enum teflon_fault_kind k)
{
    switch (k) {
    case TEFLON_FAULT_TIMEOUT:
    case TEFLON_FAULT_LOST_IRQ:
        return -ETIMEDOUT;
    case TEFLON_FAULT_IOMMU:
        return -EFAULT;
    case TEFLON_FAULT_DMA_READ:
    case TEFLON_FAULT_DMA_WRITE:
        return -EIO;
    default:
        return 0;
    }
}

const char *teflon_fault_errno_text(int rc)
{
    switch (-rc) {
    case ETIMEDOUT:
    case EBUSY:
        return "NPU job timed out";
    case EIO:
        return "NPU job failed with an I/O error (bus/DMA error or a hang the kernel recovered from)";
    case EFAULT:
        return "NPU job failed: bad device address (IOMMU page fault)";
    case ECANCELED:
        return "NPU job cancelled (the kernel reset the NPU)";
    case ENODEV:
        return "NPU device gone (unbound, or its reset failed)";
    default:
        return strerror(-rc);
    }
}

int teflon_sim_fault_parse(const char *spec, struct teflon_sim_fault *f, char *err, size_t errlen)
{
    *f = (struct teflon_sim_fault){TEFLON_FAULT_NONE, 1, 0};
    if (!spec || !*spec)
        return 0;
    const char *at = strchr(spec, '@');
    const size_t klen = at ? (size_t)(at - spec) : strlen(spec);
    for (size_t k = 1; k < NKINDS; k++)
        if (strlen(names[k]) == klen && strncmp(spec, names[k], klen) == 0)
            f->kind = (enum teflon_fault_kind)k;
    if (f->kind == TEFLON_FAULT_NONE) {
        teflon_errf(err, errlen, TEFLON_SIM_FAULT_ENV "=\"%s\": unknown fault kind \"%.*s\" (kinds: " KINDS
                    "; form kind[@N], N >= 1 the submit that fails)", spec, (int)klen, spec);
        return -EINVAL;
    }
    if (at) {
        char *end;
        errno = 0;
        const unsigned long long n = at[1] >= '0' && at[1] <= '9' ? strtoull(at + 1, &end, 10) : 0;
        if (n < 1 || n > UINT32_MAX || errno || *end) {
            f->kind = TEFLON_FAULT_NONE;
            teflon_errf(err, errlen, TEFLON_SIM_FAULT_ENV "=\"%s\": \"@%s\" is not a submit number (1-based decimal,"
                        " at most %u)", spec, at + 1, UINT32_MAX);
            return -EINVAL;
        }
        f->at = (uint32_t)n;
    }
    return 0;
}

int teflon_sim_fault_from_env(struct teflon_sim_fault *f, char *err, size_t errlen)
{
    return teflon_sim_fault_parse(getenv(TEFLON_SIM_FAULT_ENV), f, err, errlen);
}

enum teflon_fault_kind teflon_sim_fault_tick(struct teflon_sim_fault *f)
{
    if (f->kind == TEFLON_FAULT_NONE || f->submits >= f->at)
        return TEFLON_FAULT_NONE;
    return ++f->submits == f->at ? f->kind : TEFLON_FAULT_NONE;
}
