/* The ethosu family's entry points: the row of drivers/driver.c's family table (see ../backend.h). */
#ifndef ETHOSU_H
#define ETHOSU_H

#include "../backend.h"

/* The real accel/ethosu client (ethosu_kernel.c): /dev/accel/accelN whose DRM driver is "ethosu". */
int ethosu_kernel_open(const teflon_target *t, void **impl, const struct teflon_backend **ops, char *err,
                       size_t errlen);
/* The same client over the simulated kernel (ethosu_kernel_sim.c) and NPU. */
int ethosu_sim_open(const teflon_target *t, void **impl, const struct teflon_backend **ops, char *err, size_t errlen);
/* device=auto: an accel device bound to "ethosu" whose devicetree node names a row's compatible (ethosu_kernel.c). */
int ethosu_detect(const struct teflon_family *f, const char *root, char *out, size_t len);

#endif
