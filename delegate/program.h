/* Parsed program blob (layout: docs/architecture.md "Program blob"; writer python/teflon/program.py).
 * The parser copies (or adopts) the blob and checks every index, offset and extent, so later stages can index
 * without re-checking. */
#ifndef TEFLON_PROGRAM_H
#define TEFLON_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "targets.h"

enum { TP_VERSION = 3 };
enum { TP_BUF_HAS_DATA = 1, TP_BUF_TENSOR = 2 };
enum { TP_LAYOUT_NC1HWC2 = 0, TP_LAYOUT_ROWS = 1 };
enum { TP_DIR_IN = 0, TP_DIR_OUT = 1 };
/* The host tensor's element order: (y, x, c), or (c, y, x) for an NCHW tensor whose device copy is its NHWC twin. */
enum { TP_HOST_NHWC = 0, TP_HOST_NCHW = 1 };
enum { TP_DTYPE_UINT8 = 3, TP_DTYPE_INT8 = 9 };

typedef struct tp_buffer {
    const char *name;
    uint32_t flags;
    uint64_t size;
    const uint8_t *data; /* initial bytes (inside the program's copy of the blob), or NULL */
    uint64_t data_size;
} tp_buffer;

/* The `width`-bit field at bit `pos` of the little-endian word at `offset` in `buffer` gets (device address of
 * `target`) >> `shift` added; the word is a u32 when pos + width <= 32, else a u64 (tp_reloc_word_bytes). */
typedef struct tp_reloc {
    uint32_t buffer, target;
    uint64_t offset;
    uint8_t width, pos, shift;
} tp_reloc;

/* A byte range of a buffer that the family's driver submits as one unit. */
typedef struct tp_task {
    uint32_t buffer, bytes;
    uint64_t offset;
} tp_task;

/* TP_JOB_JOIN: the job may run inside the kernel job of the job submitted right before it on the same file
 * (runner.c merges them; docs/architecture.md "Program blob"). */
enum { TP_JOB_JOIN = 1 };

typedef struct tp_job {
    uint32_t first_task, ntasks, first_in, nin, first_out, nout, flags;
} tp_job;

typedef struct tp_io {
    int32_t tensor;
    uint32_t direction, buffer, layout, dtype;
    int32_t h, w, c;
    uint32_t c2, xor_mask;
    int32_t pad_value;
    uint32_t host_order;
    uint64_t offset, row_pitch, plane_pitch;
} tp_io;

typedef struct teflon_program {
    const teflon_target *target; /* the registry row of the header's blob id */
    uint32_t nbuffers, nrelocs, ntasks, njobs, nbolist, nio;
    tp_buffer *buffers;
    tp_reloc *relocs;
    tp_task *tasks;
    tp_job *jobs;
    uint32_t *bolist;
    tp_io *io;
    uint8_t *blob; /* owned copy */
} teflon_program;

teflon_program *teflon_program_parse(const uint8_t *blob, uint64_t len, char *err, size_t errlen);
/* teflon_program_parse without the copy: takes a malloc'd blob, freed with the program (or at once on failure). */
teflon_program *teflon_program_adopt(uint8_t *blob, uint64_t len, char *err, size_t errlen);
void teflon_program_free(teflon_program *p);
/* Bytes of the word a relocation patches: 4 when its field ends by bit 32, else 8. */
unsigned tp_reloc_word_bytes(const tp_reloc *r);
/* Host bytes of an I/O binding's tensor (batch 1, NHWC, one byte per element). */
uint64_t teflon_io_host_bytes(const tp_io *io);

#endif
