/* Host NHWC (batch 1, one byte per element) <-> device layouts described by an I/O binding:
 * NC1HWC2 planes or single-channel rows, stored = host XOR xor_mask, padding bytes filled with
 * pad_value on input. Extents were checked by the program parser. */
#ifndef TEFLON_LAYOUT_H
#define TEFLON_LAYOUT_H

#include <stdint.h>

#include "program.h"

void teflon_layout_to_device(const tp_io *io, const uint8_t *host, uint8_t *dev);
void teflon_layout_from_device(const tp_io *io, const uint8_t *dev, uint8_t *host);

#endif
