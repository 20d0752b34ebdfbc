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
#define JOB_SIZE 24
#define IO_SIZE 72 /* the field list of docs/architecture.md (its "64 B" is a typo); program.py IO */

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

const char *teflon_program_soc_name(uint32_t soc)
{
    static const char *const names[] = {NULL, "rk3588", "rk3576", "a311d", "imx8mp"};
    return soc < sizeof(names) / sizeof(names[0]) ? names[soc] : NULL;
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
    if (io->layout != TP_LAYOUT_NC1HWC2 || io->c2 == 0 || io->c2 > 64 || io->row_pitch < w * io->c2)
        return 0;
    const uint64_t planes = (c + io->c2 - 1) / io->c2;
    if (planes > 1 && io->plane_pitch < h * io->row_pitch)
        return 0;
    return io->offset + (planes - 1) * io->plane_pitch + (h - 1) * io->row_pitch + io->row_pitch;
}

teflon_program *teflon_program_parse(const uint8_t *blob, uint64_t len, char *err, size_t errlen)
{
    teflon_program *p = calloc(1, sizeof(*p));
    if (!p) {
        teflon_errf(err, errlen, "out of memory");
        return NULL;
    }
    if (!blob || len < HEADER_SIZE || memcmp(blob, "TFLP", 4) != 0) {
        teflon_errf(err, errlen, "not a teflon program (bad magic or %llu bytes)", (unsigned long long)len);
        goto fail;
    }
    p->blob = malloc(len);
    if (!p->blob) {
        teflon_errf(err, errlen, "out of memory copying a %llu-byte program", (unsigned long long)len);
        goto fail;
    }
    memcpy(p->blob, blob, len);
    const uint8_t *b = p->blob;
    const uint32_t version = rd32(b + 4);
    if (version != 1) {
        teflon_errf(err, errlen, "program version %u not supported (1)", version);
        goto fail;
    }
    p->soc = rd32(b + 8);
    p->nbuffers = rd32(b + 12);
    p->nrelocs = rd32(b + 16);
    p->ntasks = rd32(b + 20);
    p->njobs = rd32(b + 24);
    p->nbolist = rd32(b + 28);
    p->nio = rd32(b + 32);
    const uint64_t strings_offset = rd32(b + 36), strings_size = rd32(b + 40), data_offset = rd32(b + 44);
    if (!teflon_program_soc_name(p->soc)) {
        teflon_errf(err, errlen, "program for unknown SoC id %u", p->soc);
        goto fail;
    }
    const uint64_t body = (uint64_t)p->nbuffers * BUFFER_SIZE + (uint64_t)p->nrelocs * RELOC_SIZE +
                          (uint64_t)p->ntasks * TASK_SIZE + (uint64_t)p->njobs * JOB_SIZE + (uint64_t)p->nbolist * 4 +
                          (uint64_t)p->nio * IO_SIZE;
    if (!fits(HEADER_SIZE, body, strings_offset) || !fits(strings_offset, strings_size, len) || data_offset > len ||
        data_offset < strings_offset + strings_size) {
        teflon_errf(err, errlen, "program tables do not fit the blob (%llu bytes)", (unsigned long long)len);
        goto fail;
    }
    if ((p->nbuffers && !(p->buffers = calloc(p->nbuffers, sizeof(*p->buffers)))) ||
        (p->nrelocs && !(p->relocs = calloc(p->nrelocs, sizeof(*p->relocs)))) ||
        (p->ntasks && !(p->tasks = calloc(p->ntasks, sizeof(*p->tasks)))) ||
        (p->njobs && !(p->jobs = calloc(p->njobs, sizeof(*p->jobs)))) ||
        (p->nbolist && !(p->bolist = calloc(p->nbolist, sizeof(*p->bolist)))) ||
        (p->nio && !(p->io = calloc(p->nio, sizeof(*p->io))))) {
        teflon_errf(err, errlen, "out of memory parsing the program");
        goto fail;
    }

    const uint8_t *q = b + HEADER_SIZE;
    const char *strings = (const char *)b + strings_offset;
    for (uint32_t i = 0; i < p->nbuffers; i++, q += BUFFER_SIZE) {
        tp_buffer *bf = &p->buffers[i];
        const uint32_t name = rd32(q);
        if (name >= strings_size || !memchr(strings + name, 0, strings_size - name)) {
            teflon_errf(err, errlen, "buffer %u: bad name offset %u", i, name);
            goto fail;
        }
        bf->name = strings + name;
        bf->flags = rd32(q + 4);
        bf->size = rd64(q + 8);
        const uint64_t doff = rd64(q + 16);
        bf->data_size = rd64(q + 24);
        if (bf->size == 0 || bf->data_size > bf->size || (bf->flags & ~3u)) {
            teflon_errf(err, errlen, "buffer %u (%s): size %llu, data %llu bytes, flags 0x%x not valid", i, bf->name,
                (unsigned long long)bf->size, (unsigned long long)bf->data_size, bf->flags);
            goto fail;
        }
        if (bf->flags & TP_BUF_HAS_DATA) {
            if (!fits(data_offset, doff, len) || !fits(data_offset + doff, bf->data_size, len)) {
                teflon_errf(err, errlen, "buffer %u (%s): initial data outside the blob", i, bf->name);
                goto fail;
            }
            bf->data = b + data_offset + doff;
        } else if (bf->data_size) {
            teflon_errf(err, errlen, "buffer %u (%s): data size without the has-data flag", i, bf->name);
            goto fail;
        }
    }
    for (uint32_t i = 0; i < p->nrelocs; i++, q += RELOC_SIZE) {
        tp_reloc *r = &p->relocs[i];
        r->buffer = rd32(q);
        r->kind = rd32(q + 4);
        r->offset = rd64(q + 8);
        r->target = rd32(q + 16);
        const uint64_t width = r->kind == TP_RELOC_REGCMD ? 8 : 4;
        if (r->buffer >= p->nbuffers || r->target >= p->nbuffers || r->kind > TP_RELOC_U32 ||
            !fits(r->offset, width, p->buffers[r->buffer].size) || r->offset % width) {
            teflon_errf(err, errlen, "relocation %u: buffer %u kind %u offset %llu target %u not valid", i, r->buffer, r->kind,
                (unsigned long long)r->offset, r->target);
            goto fail;
        }
    }
    for (uint32_t i = 0; i < p->ntasks; i++, q += TASK_SIZE) {
        tp_task *t = &p->tasks[i];
        t->buffer = rd32(q);
        t->count = rd32(q + 4);
        t->offset = rd64(q + 8);
        if (t->buffer >= p->nbuffers || t->count == 0 || t->offset % 16 ||
            !fits(t->offset, (uint64_t)t->count * 8, p->buffers[t->buffer].size)) {
            teflon_errf(err, errlen, "task %u: buffer %u offset %llu count %u not valid (16-byte aligned, inside the buffer)", i,
                t->buffer, (unsigned long long)t->offset, t->count);
            goto fail;
        }
    }
    for (uint32_t i = 0; i < p->njobs; i++, q += JOB_SIZE) {
        tp_job *j = &p->jobs[i];
        j->first_task = rd32(q);
        j->ntasks = rd32(q + 4);
        j->first_in = rd32(q + 8);
        j->nin = rd32(q + 12);
        j->first_out = rd32(q + 16);
        j->nout = rd32(q + 20);
        if (j->ntasks == 0 || !fits(j->first_task, j->ntasks, p->ntasks) || !fits(j->first_in, j->nin, p->nbolist) ||
            !fits(j->first_out, j->nout, p->nbolist)) {
            teflon_errf(err, errlen, "job %u: task or buffer-list range out of bounds", i);
            goto fail;
        }
    }
    for (uint32_t i = 0; i < p->nbolist; i++, q += 4) {
        p->bolist[i] = rd32(q);
        if (p->bolist[i] >= p->nbuffers) {
            teflon_errf(err, errlen, "buffer list entry %u: buffer %u out of range", i, p->bolist[i]);
            goto fail;
        }
    }
    for (uint32_t i = 0; i < p->nio; i++, q += IO_SIZE) {
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
        io->offset = rd64(q + 48);
        io->row_pitch = rd64(q + 56);
        io->plane_pitch = rd64(q + 64);
        const uint64_t ext = io_extent(io);
        if (io->buffer >= p->nbuffers || io->direction > TP_DIR_OUT || io->xor_mask > 0xFF || io->pad_value < -128 ||
            io->pad_value > 255 || (io->dtype != TP_DTYPE_UINT8 && io->dtype != TP_DTYPE_INT8) || ext == 0 ||
            ext > p->buffers[io->buffer].size) {
            teflon_errf(err, errlen, "I/O binding %u (tensor %d): buffer %u, layout %u, %dx%dx%d, c2 %u, pitches %llu/%llu, "
                "offset %llu not valid for its buffer", i, io->tensor, io->buffer, io->layout, io->h, io->w, io->c, io->c2,
                (unsigned long long)io->row_pitch, (unsigned long long)io->plane_pitch, (unsigned long long)io->offset);
            goto fail;
        }
    }
    return p;
fail:
    teflon_program_free(p);
    return NULL;
}
