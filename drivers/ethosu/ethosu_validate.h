/* The command-stream validator of the simulated accel/ethosu kernel (docs/hardware/ethosu-kernel.md "Validator"):
 * what DRM_IOCTL_ETHOSU_CMDSTREAM_BO_CREATE does to the words before it keeps them. The NPU has no MMU, so the
 * kernel walks every cmd0/cmd1 word, tracks the feature-map, weight, scale and DMA state the operations will use,
 * and records per region the highest byte an operation touches and whether it writes there; SUBMIT then checks
 * each region's BO against that extent. */
#ifndef ETHOSU_VALIDATE_H
#define ETHOSU_VALIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "ethosu_task.h"

struct ethosu_cmd_info {
    uint64_t region_size[ETHOSU_MAX_REGIONS]; /* one past the highest byte touched (0: region unused) */
    uint8_t output_region[ETHOSU_MAX_REGIONS]; /* an OFM or a DMA destination lies there */
    uint32_t cmd_bytes;                        /* QSIZE */
};

/* Walks words[0..nwords). Returns 0 with *info filled, or -EINVAL with a message naming the word (an operation
 * whose geometry or buffer was never set, an IFM padded past its extent, a cmd1 without its payload word). */
int ethosu_validate(const uint32_t *words, size_t nwords, struct ethosu_cmd_info *info, char *err, size_t errlen);

#endif
