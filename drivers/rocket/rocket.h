/* The rocket family's entry points: the row of drivers/driver.c's family table (see ../backend.h). */
#ifndef TEFLON_ROCKET_H
#define TEFLON_ROCKET_H

#include "../backend.h"

/* The real accel/rocket client (rocket_kernel.c). */
int rkt_kernel_open(const teflon_target *t, void **impl, const struct teflon_backend **ops, char *err, size_t errlen);
/* The simulated kernel + NPU cores (sim_kernel.c). */
int rkt_sim_open(const teflon_target *t, void **impl, const struct teflon_backend **ops, char *err, size_t errlen);
/* The rocket target from the devicetree compatible of the NPU cores under `root` (rocket_kernel.c). */
int rkt_detect(const struct teflon_family *f, const char *root, char *out, size_t len);

#endif
