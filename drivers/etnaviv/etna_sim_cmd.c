/* The front end: parses the command stream of a submit and kicks NN/TP jobs (etnaviv.md §7.3).
 *
 * Only LOAD_STATE commands (opcode 1) and the zero filler words Mesa emits are understood. Registers are
 * the ones of the NPU path; any other register, or a value of a known register whose meaning is not
 * modelled, is an error.
 */
#include <stdio.h>
#include <string.h>

#include "etna_sim_priv.h"

/* Register byte offsets (rnndb; etnaviv.md §7.3). */
#define ETNA_PA_SYSTEM_MODE     0x0A28u
#define ETNA_PS_NN_INST_ADDR    0x10A0u
#define ETNA_PS_UNK10A4         0x10A4u
#define ETNA_PS_TP_INST_ADDR    0x10B8u
#define ETNA_GL_FLUSH_CACHE     0x380Cu
#define ETNA_GL_API_MODE        0x384Cu
#define ETNA_GL_NN_CONFIG       0x3930u
#define ETNA_GL_OCB_REMAP_START 0x393Cu
#define ETNA_GL_OCB_REMAP_END   0x3940u
#define ETNA_GL_TP_CONFIG       0x394Cu
#define ETNA_GL_UNK03950        0x3950u

/* FLUSH_CACHE bits known from rnndb: DEPTH, COLOR, SHADER_L1, UNK10, UNK11 (a flush has no visible effect
 * here: the simulator runs every job synchronously). */
#define ETNA_FLUSH_KNOWN (0x1u | 0x2u | 0x20u | 0x400u | 0x800u)
/* NN_CONFIG: SMALL_BATCH (serial execution) alone, or 0 (Mesa's "parallel" debug mode); jobs run in order
 * either way in the simulator. */
#define ETNA_NN_CONFIG_SMALL_BATCH 0x10u

static int etna_write_state(etna_sim *sim, uint32_t reg, uint32_t value)
{
    switch (reg) {
    case ETNA_PA_SYSTEM_MODE:
        if (value != 0x11)
            return etna_fail(sim, "PA.SYSTEM_MODE = 0x%x: only 0x11 is modelled", value);
        return 0;
    case ETNA_GL_API_MODE:
        if (value != 2)
            return etna_fail(sim, "GL.API_MODE = 0x%x: only 2 (OpenCL) is modelled", value);
        return 0;
    case ETNA_GL_FLUSH_CACHE:
        if (value & ~ETNA_FLUSH_KNOWN)
            return etna_fail(sim, "GL.FLUSH_CACHE = 0x%x sets unknown bits", value);
        return 0;
    case ETNA_GL_NN_CONFIG:
        if (value != ETNA_NN_CONFIG_SMALL_BATCH && value != 0)
            return etna_fail(sim, "GL.NN_CONFIG = 0x%x: only 0x10 (small batch) and 0 are modelled", value);
        sim->nn_config = value;
        return 0;
    case ETNA_GL_OCB_REMAP_START:
    case ETNA_GL_OCB_REMAP_END:
        if (value != 0)
            return etna_fail(sim, "GL.OCB_REMAP_%s = 0x%x: on-chip buffer remapping is not modelled",
                             reg == ETNA_GL_OCB_REMAP_START ? "START" : "END", value);
        return 0;
    case ETNA_GL_TP_CONFIG:
        if (value != 0)
            return etna_fail(sim, "GL.TP_CONFIG = 0x%x: only 0 is modelled", value);
        return 0;
    case ETNA_GL_UNK03950:
        if (value != 0 && value != 8)
            return etna_fail(sim, "GL.UNK03950 = 0x%x: only 0 and 8 are known", value);
        sim->unk3950 = value;
        return 0;
    case ETNA_PS_UNK10A4:
        if (value > 0xFF)
            return etna_fail(sim, "PS.UNK10A4 = 0x%x: tags above 0xff are not known", value);
        return 0;
    case ETNA_PS_NN_INST_ADDR: {
        /* Descriptor address (256-byte aligned per rnndb) plus a job tag in the low bits. */
        if (sim->tp_desc_pending)
            return etna_fail(sim, "NN job kicked in the middle of a multi-core TP job");
        if (etna_nn_run(sim, value & ~0xFFu))
            return -1;
        sim->stats.nn_jobs++;
        return 0;
    }
    case ETNA_PS_TP_INST_ADDR: {
        int last = 0;
        if (etna_tp_run(sim, value & ~0xFFu, &last))
            return -1;
        sim->stats.tp_descriptors++;
        sim->tp_desc_pending++;
        if (last) {
            sim->stats.tp_jobs++;
            sim->tp_desc_pending = 0;
        }
        return 0;
    }
    default:
        return etna_fail(sim, "LOAD_STATE to unknown register 0x%04x (value 0x%08x)", reg, value);
    }
}

static int etna_parse(etna_sim *sim, const uint32_t *s, uint32_t n)
{
    uint32_t i = 0;
    while (i < n) {
        uint32_t h = s[i];
        if (h == 0) {
            /* Mesa's filler words around a batch (copied from the vendor's streams, meaning unknown);
             * executed as no-ops. */
            i++;
            continue;
        }
        uint32_t op = h >> 27;
        if (op != 1)
            return etna_fail(sim, "command word %u: 0x%08x: opcode %u is not modelled (only LOAD_STATE)", i, h, op);
        if (h & (1u << 26))
            return etna_fail(sim, "command word %u: LOAD_STATE with fixed-point conversion is not modelled", i);
        uint32_t count = (h >> 16) & 0x3FF;
        if (count == 0)
            count = 1024;
        uint32_t reg = (h & 0xFFFF) << 2;
        if ((uint64_t)i + 1 + count > n)
            return etna_fail(sim, "command word %u: LOAD_STATE of %u values runs past the end of the stream", i, count);
        for (uint32_t k = 0; k < count; k++) {
            if (etna_write_state(sim, reg + 4 * k, s[i + 1 + k])) {
                char tmp[sizeof(sim->err)];
                memcpy(tmp, sim->err, sizeof(tmp));
                snprintf(sim->err, sizeof(sim->err), "command word %u: %.480s", i + 1 + k, tmp);
                return -1;
            }
        }
        i += 1 + count;
        /* Commands are 64-bit aligned: an even value count leaves one padding word. */
        if (!(count & 1))
            i++;
    }
    if (sim->tp_desc_pending)
        return etna_fail(sim, "stream ends inside a multi-core TP job (no descriptor with no_flush = 0)");
    return 0;
}

int etna_sim_submit(etna_sim *sim, const uint32_t *stream, uint32_t nwords, char *err, size_t errlen)
{
    sim->err[0] = 0;
    sim->tp_desc_pending = 0;
    sim->stats.submits++;
    int r = etna_parse(sim, stream, nwords);
    if (r && err && errlen)
        snprintf(err, errlen, "%s", sim->err);
    return r;
}
