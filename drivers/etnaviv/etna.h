/* The etnaviv family's entry points: the row of drivers/driver.c's family table (see ../backend.h). */
#ifndef ETNA_H
#define ETNA_H

#include "../backend.h"

/* The real etnaviv DRM client (etna_kernel.c): the render node whose NPU core matches the row's chip. */
int etna_kernel_open(const teflon_target *t, void **impl, const struct teflon_backend **ops, char *err,
                     size_t errlen);
/* The simulated kernel + NPU (etna_kernel_sim.c). */
int etna_simulated_open(const teflon_target *t, void **impl, const struct teflon_backend **ops, char *err,
                        size_t errlen);
/* device=auto: an etnaviv render node on an SoC whose devicetree root one of the rows names (etna_detect.c). */
int etna_detect(const struct teflon_family *f, const char *root, char *out, size_t len);

#endif
