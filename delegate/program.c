/* Program blob parser (docs/architecture.md "Program blob"). Every field is checked here. */
#include "program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "errmsg.h"

#define HEADER_SIZE 48
#define BUFFER_SIZE 32
#define RELOC_SIZE 24
#define TASK_SIZE 16
#define JOB_SIZE 32
#define IO_SIZE 72

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* a + b <= limit without overflow */
static int fits(uint64_t a, uint64_t b, uint64_t limit)
{
    return a <= limit && b <= limit - a;
}

unsigned tp_reloc_word_bytes(const tp_reloc *r)
{
    return r->pos + r->width <= 32 ? 4 : 8;
}

uint64_t teflon_io_host_bytes(const tp_io *io)
{
    return (uint64_t)io->h * (uint64_t)io->w * (uint64_t)io->c;
}

void teflon_program_free(teflon_program *p)
{
    if (!p)
        return;
    free(p->buffers);
    free(p->relocs);
    free(p->tasks);
    free(p->jobs);
    free(p->bolist);
    free(p->io);
    free(p->blob);
    free(p);
}

/* Largest device byte offset (exclusive) an I/O binding touches, 0 if the geometry is invalid. */
static uint64_t io_extent(const tp_io *io)
{
    if (io->h <= 0 || io->w <= 0 || io->c <= 0 || io->h > 65536 || io->w > 65536 || io->c > 65536)
        return 0;
    const uint64_t h = (uint64_t)io->h, w = (uint64_t)io->w, c = (uint64_t)io->c;
    if (io->layout == TP_LAYOUT_ROWS) {
        if (c != 1 || io->row_pitch < w)
            return 0;
        return io->offset + (h - 1) * io->row_pitch + io->row_pitch;
    }
    if (io->layout != TP_LAYOUT_NC1HWC2 || io->c2 == 0 || io->c2 > 65536 || io->row_pitch < w * io->c2)
        return 0;
    const uint64_t planes = (c + io->c2 - 1) / io->c2;
    if (planes > 1 && io->plane_pitch < h * io->row_pitch)
        return 0;
    return io->offset + (planes - 1) * io->plane_pitch + (h - 1) * io->row_pitch + io->row_pitch;
}

/* Where the header puts the strings and the data, and the tables' cursor. */
typedef struct blob_layout {
    uint64_t len, strings_offset, strings_size, data_offset;
    const uint8_t *q; /* next table row */
} blob_layout;

/* Checks the blob's magic. */
static int check_magic(const uint8_t *blob, uint64_t len, char *err, size_t errlen)
{
    if (!blob || len < HEADER_SIZE || memcmp(blob, "TFLP", 4) != 0) {
        teflon_errf(err, errlen, "not a teflon program (bad magic or %llu bytes)", (unsigned long long)len);
        return -1;
    }
    return 0;
}

/* Version, target, table counts; the tables, strings and data must lie in the blob in that order. */
static int parse_header(teflon_program *p, blob_layout *l, char *err, size_t errlen)
{
    const uint8_t *b = p->blob;
    const uint32_t version = rd32(b + 4), target = rd32(b + 8);
    if (version != TP_VERSION) {
        teflon_errf(err, errlen, "program version %u not supported (%u)", version, TP_VERSION);
        return -1;
    }
    p->target = teflon_target_by_blob_id(target);
    if (!p->target) {
        teflon_errf(err, errlen, "program for unknown target id %u", target);
        return -1;
    }
    p->nbuffers = rd32(b + 12);
    p->nrelocs = rd32(b + 16);
    p->ntasks = rd32(b + 20);
    p->njobs = rd32(b + 24);
    p->nbolist = rd32(b + 28);
    p->nio = rd32(b + 32);
    l->strings_offset = rd32(b + 36);
    l->strings_size = rd32(b + 40);
    l->data_offset = rd32(b + 44);
    l->q = b + HEADER_SIZE;
    const uint64_t body = (uint64_t)p->nbuffers * BUFFER_SIZE + (uint64_t)p->nrelocs * RELOC_SIZE +
                          (uint64_t)p->ntasks * TASK_SIZE + (uint64_t)p->njobs * JOB_SIZE + (uint64_t)p->nbolist * 4 +
                          (uint64_t)p->nio * IO_SIZE;
    if (!fits(HEADER_SIZE, body, l->strings_offset) || !fits(l->strings_offset, l->strings_size, l->len) ||
        l->data_offset > l->len || l->data_offset < l->strings_offset + l->strings_size) {
        teflon_errf(err, errlen, "program tables do not fit the blob (%llu bytes)", (unsigned long long)l->len);
        return -1;
    }
    return 0;
}

static int alloc_tables(teflon_program *p, char *err, size_t errlen)
{
    if ((p->nbuffers && !(p->buffers = calloc(p->nbuffers, sizeof(*p->buffers)))) ||
        (p->nrelocs && !(p->relocs = calloc(p->nrelocs, sizeof(*p->relocs)))) ||
        (p->ntasks && !(p->tasks = calloc(p->ntasks, sizeof(*p->tasks)))) ||
        (p->njobs && !(p->jobs = calloc(p->njobs, sizeof(*p->jobs)))) ||
        (p->nbolist && !(p->bolist = calloc(p->nbolist, sizeof(*p->bolist)))) ||
        (p->nio && !(p->io = calloc(p->nio, sizeof(*p->io))))) {
        teflon_errf(err, errlen, "out of memory parsing the program");
        return -1;
    }
    return 0;
}

/* Buffer i: its name inside the strings, its initial data inside the data section. */
static int parse_buffer(teflon_program *p, blob_layout *l, uint32_t i, char *err, size_t errlen)
{
    const uint8_t *q = l->q;
    const char *strings = (const char *)p->blob + l->strings_offset;
    tp_buffer *bf = &p->buffers[i];
    const uint32_t name = rd32(q);
    if (name >= l->strings_size || !memchr(strings + name, 0, l->strings_size - name)) {
        teflon_errf(err, errlen, "buffer %u: bad name offset %u", i, name);
        return -1;
    }
    bf->name = strings + name;
    bf->flags = rd32(q + 4);
    bf->size = rd64(q + 8);
    const uint64_t doff = rd64(q + 16);
    bf->data_size = rd64(q + 24);
    if (bf->size == 0 || bf->data_size > bf->size || (bf->flags & ~3u)) {
        teflon_errf(err, errlen, "buffer %u (%s): size %llu, data %llu bytes, flags 0x%x not valid", i, bf->name,
                    (unsigned long long)bf->size, (unsigned long long)bf->data_size, bf->flags);
        return -1;
    }
    if (bf->flags & TP_BUF_HAS_DATA) {
        if (!fits(l->data_offset, doff, l->len) || !fits(l->data_offset + doff, bf->data_size, l->len)) {
            teflon_errf(err, errlen, "buffer %u (%s): initial data outside the blob", i, bf->name);
            return -1;
        }
        bf->data = p->blob + l->data_offset + doff;
    } else if (bf->data_size) {
        teflon_errf(err, errlen, "buffer %u (%s): data size without the has-data flag", i, bf->name);
        return -1;
    }
    return 0;
}

/* Relocation i: buffers in range, a field of 1..32 bits inside a u32 or u64 word that lies in its buffer. */
static int parse_reloc(teflon_program *p, blob_layout *l, uint32_t i, char *err, size_t errlen)
{
    const uint8_t *q = l->q;
    tp_reloc *r = &p->relocs[i];
    r->buffer = rd32(q);
    r->target = rd32(q + 4);
    r->offset = rd64(q + 8);
    r->width = q[16];
    r->pos = q[17];
    r->shift = q[18];
    if (r->buffer >= p->nbuffers || r->target >= p->nbuffers) {
        teflon_errf(err, errlen, "relocation %u: buffer %u or target %u out of range", i, r->buffer, r->target);
        return -1;
    }
    if (r->width == 0 || r->width > 32 || r->pos + r->width > 64 || r->shift >= 64) {
        teflon_errf(err, errlen, "relocation %u: a %u-bit field at bit %u (shift %u) is not valid (1..32 bits, inside "
                    "64, shift below 64)", i, r->width, r->pos, r->shift);
        return -1;
    }
    if (!fits(r->offset, tp_reloc_word_bytes(r), p->buffers[r->buffer].size)) {
        teflon_errf(err, errlen, "relocation %u: the %u-byte word at offset %llu is outside buffer %s", i,
                    tp_reloc_word_bytes(r), (unsigned long long)r->offset, p->buffers[r->buffer].name);
        return -1;
    }
    return 0;
}

/* Task i: a non-empty byte range inside its buffer (what the bytes must look like is the family's check). */
static int parse_task(teflon_program *p, blob_layout *l, uint32_t i, char *err, size_t errlen)
{
    const uint8_t *q = l->q;
    tp_task *t = &p->tasks[i];
    t->buffer = rd32(q);
    t->bytes = rd32(q + 4);
    t->offset = rd64(q + 8);
    if (t->buffer >= p->nbuffers || t->bytes == 0 || !fits(t->offset, t->bytes, p->buffers[t->buffer].size)) {
        teflon_errf(err, errlen, "task %u: buffer %u offset %llu, %u bytes not valid (a non-empty range inside the "
                    "buffer)", i, t->buffer, (unsigned long long)t->offset, t->bytes);
        return -1;
    }
    return 0;
}

/* Job i: its tasks and its in/out ranges of the buffer list in bounds. */
static int parse_job(teflon_program *p, blob_layout *l, uint32_t i, char *err, size_t errlen)
{
    const uint8_t *q = l->q;
    tp_job *j = &p->jobs[i];
    j->first_task = rd32(q);
    j->ntasks = rd32(q + 4);
    j->first_in = rd32(q + 8);
    j->nin = rd32(q + 12);
    j->first_out = rd32(q + 16);
    j->nout = rd32(q + 20);
    j->flags = rd32(q + 24);
    if (j->flags & ~(uint32_t)TP_JOB_JOIN || rd32(q + 28)) {
        teflon_errf(err, errlen, "job %u: unknown flags 0x%x or non-zero padding", i, j->flags);
        return -1;
    }
    if (j->ntasks == 0 || !fits(j->first_task, j->ntasks, p->ntasks) || !fits(j->first_in, j->nin, p->nbolist) ||
        !fits(j->first_out, j->nout, p->nbolist)) {
        teflon_errf(err, errlen, "job %u: task or buffer-list range out of bounds", i);
        return -1;
    }
    return 0;
}

static int parse_bolist_entry(teflon_program *p, blob_layout *l, uint32_t i, char *err, size_t errlen)
{
    p->bolist[i] = rd32(l->q);
    if (p->bolist[i] >= p->nbuffers) {
        teflon_errf(err, errlen, "buffer list entry %u: buffer %u out of range", i, p->bolist[i]);
        return -1;
    }
    return 0;
}

/* I/O binding i: its geometry must address bytes inside its buffer. */
static int parse_io(teflon_program *p, blob_layout *l, uint32_t i, char *err, size_t errlen)
{
    const uint8_t *q = l->q;
    tp_io *io = &p->io[i];
    io->tensor = (int32_t)rd32(q);
    io->direction = rd32(q + 4);
    io->buffer = rd32(q + 8);
    io->layout = rd32(q + 12);
    io->dtype = rd32(q + 16);
    io->h = (int32_t)rd32(q + 20);
    io->w = (int32_t)rd32(q + 24);
    io->c = (int32_t)rd32(q + 28);
    io->c2 = rd32(q + 32);
    io->xor_mask = rd32(q + 36);
    io->pad_value = (int32_t)rd32(q + 40);
    io->host_order = rd32(q + 44);
    io->offset = rd64(q + 48);
    io->row_pitch = rd64(q + 56);
    io->plane_pitch = rd64(q + 64);
    const uint64_t ext = io_extent(io);
    if (io->buffer >= p->nbuffers || io->direction > TP_DIR_OUT || io->xor_mask > 0xFF || io->pad_value < -128 ||
        io->pad_value > 255 || (io->dtype != TP_DTYPE_UINT8 && io->dtype != TP_DTYPE_INT8) || ext == 0 ||
        ext > p->buffers[io->buffer].size || io->host_order > TP_HOST_NCHW ||
        (io->host_order == TP_HOST_NCHW && io->layout != TP_LAYOUT_NC1HWC2)) {
        teflon_errf(err, errlen, "I/O binding %u (tensor %d): buffer %u, layout %u (host order %u), %dx%dx%d, c2 %u, "
                    "pitches %llu/%llu, offset %llu not valid for its buffer", i, io->tensor, io->buffer, io->layout,
                    io->host_order, io->h, io->w, io->c,
                    io->c2, (unsigned long long)io->row_pitch, (unsigned long long)io->plane_pitch,
                    (unsigned long long)io->offset);
        return -1;
    }
    return 0;
}

typedef int (*row_parser)(teflon_program *p, blob_layout *l, uint32_t i, char *err, size_t errlen);

/* Parses `n` rows of `size` bytes with `parse`, advancing the cursor. */
static int parse_rows(teflon_program *p, blob_layout *l, uint32_t n, uint32_t size, row_parser parse, char *err,
                      size_t errlen)
{
    for (uint32_t i = 0; i < n; i++, l->q += size)
        if (parse(p, l, i, err, errlen))
            return -1;
    return 0;
}

/* Parses p->blob (`len` bytes, magic checked); frees p on failure. */
static teflon_program *parse_blob(teflon_program *p, uint64_t len, char *err, size_t errlen)
{
    blob_layout l = {.len = len};
    /* the tables follow the header back to back, in this order */
    if (parse_header(p, &l, err, errlen) || alloc_tables(p, err, errlen) ||
        parse_rows(p, &l, p->nbuffers, BUFFER_SIZE, parse_buffer, err, errlen) ||
        parse_rows(p, &l, p->nrelocs, RELOC_SIZE, parse_reloc, err, errlen) ||
        parse_rows(p, &l, p->ntasks, TASK_SIZE, parse_task, err, errlen) ||
        parse_rows(p, &l, p->njobs, JOB_SIZE, parse_job, err, errlen) ||
        parse_rows(p, &l, p->nbolist, 4, parse_bolist_entry, err, errlen) ||
        parse_rows(p, &l, p->nio, IO_SIZE, parse_io, err, errlen)) {
        teflon_program_free(p);
        return NULL;
    }
    return p;
}

teflon_program *teflon_program_parse(const uint8_t *blob, uint64_t len, char *err, size_t errlen)
{
    if (check_magic(blob, len, err, errlen))
        return NULL;
    teflon_program *p = calloc(1, sizeof(*p));
    if (p)
        p->blob = malloc(len);
    if (!p || !p->blob) {
        teflon_errf(err, errlen, "out of memory copying a %llu-byte program", (unsigned long long)len);
        free(p);
        return NULL;
    }
    memcpy(p->blob, blob, len);
    return parse_blob(p, len, err, errlen);
}

teflon_program *teflon_program_adopt(uint8_t *blob, uint64_t len, char *err, size_t errlen)
{
    if (check_magic(blob, len, err, errlen)) {
        free(blob);
        return NULL;
    }
    teflon_program *p = calloc(1, sizeof(*p));
    if (!p) {
        teflon_errf(err, errlen, "out of memory");
        free(blob);
        return NULL;
    }
    p->blob = blob;
    return parse_blob(p, len, err, errlen);
}
