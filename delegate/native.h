/* The runner API exported from libteflon.so for Python tools and tests (docs/architecture.md
 * "Runner API"). A device handle is a teflon_dev *, a runner handle a teflon_runner *. */
#ifndef TEFLON_NATIVE_H
#define TEFLON_NATIVE_H

#include <stddef.h>
#include <stdint.h>

#define TEFLON_EXPORT __attribute__((visibility("default")))

TEFLON_EXPORT void *teflon_native_open(const char *soc, int sim, char *err, size_t errlen);
/* As teflon_native_open with the delegate option `cores` (1 .. the target's NPU cores). */
TEFLON_EXPORT void *teflon_native_open_cores(const char *soc, int sim, unsigned cores, char *err, size_t errlen);
TEFLON_EXPORT void teflon_native_close(void *dev);
TEFLON_EXPORT int teflon_native_is_sim(void *dev);
TEFLON_EXPORT void *teflon_native_load(void *dev, const uint8_t *blob, uint64_t len, char *err, size_t errlen);
TEFLON_EXPORT void teflon_native_unload(void *runner);
TEFLON_EXPORT int teflon_native_set_input(void *runner, int32_t tensor, const void *host, uint64_t bytes);
TEFLON_EXPORT int teflon_native_run(void *runner, char *err, size_t errlen);
TEFLON_EXPORT int teflon_native_get_output(void *runner, int32_t tensor, void *host, uint64_t bytes);
TEFLON_EXPORT int teflon_native_stats(void *runner, uint64_t *tasks, uint64_t *macs);
/* The last run's counters of each program task, TEFLON_NATIVE_COUNTERS words per task (feature, weight and
 * bias/EW bytes read, bytes written, MACs, simulated ns, the core it ran on, simulated start ns, MACs with a
 * non-zero weight) into out, which has room for `cap` tasks; returns the number of tasks. */
#define TEFLON_NATIVE_COUNTERS 9
TEFLON_EXPORT int teflon_native_task_counters(void *runner, uint64_t *out, uint32_t cap);
/* The last run's simulated NPU time (ns, 0 on a real device) and the files (lanes) the program runs on. */
TEFLON_EXPORT int teflon_native_run_info(void *runner, uint64_t *npu_ns, uint32_t *lanes);

/* One core's etnaviv v7 coefficient stream (teflon.etnaviv.coefs_v7): the header, the zero-run-length tokens of
 * the n weights `seq` (a run ends at a literal or at each of the nflush ascending positions flush_pos) and the
 * nraw 32-bit raw words, each after the token ending at raw_pos (ascending), packed LSB first into whole 32-bit
 * words. Returns the bytes written, or -1 when they exceed cap. */
TEFLON_EXPORT int64_t teflon_native_etna_coef_stream(const uint8_t *seq, uint64_t n, const int64_t *flush_pos,
                                                     uint64_t nflush, const int64_t *raw_pos, const uint32_t *raw_val,
                                                     uint64_t nraw, unsigned z, unsigned zp, unsigned kpc,
                                                     uint8_t *out, uint64_t cap);

/* The etnaviv v7 writers' weight orders (teflon.etnaviv.coefs_v7.core_plans): kernel after kernel; input channel
 * rounds over every kernel; 1x1 kernels in blocks of up to six input channels. */
#define TEFLON_V7_SEQUENTIAL 0
#define TEFLON_V7_INTERLEAVED 1
#define TEFLON_V7_SIX 2

/* One etnaviv v7 coefficient buffer's weight order (teflon.etnaviv.coefs_v7.core_plans): the traversal array w
 * ([channel][ic][taps], reads past wlen are 0), the writer (TEFLON_V7_*), the tap order inside a kernel, and the
 * channels of core c, superblock s: the next sb_len[c * nsb + s] entries of ch, each < nchan. With block = g > 0
 * the traversal array is block-diagonal and w holds only its blocks ([kernel][g][taps]): kernel o reads input
 * channels (o + first) * g .. + g - 1 from w and the zero point zp everywhere else (teflon.etnaviv.ops
 * dense_weights); its kernels are wlen / (g * taps). */
typedef struct {
    const uint8_t *w;
    uint64_t wlen;
    unsigned writer, ic, taps;
    const int64_t *tap, *ch, *sb_len;
    unsigned ncores, nsb;
    uint64_t nchan;
    unsigned block, zp;
    uint64_t first;
} teflon_etna_v7_job;

/* Every used core's etnaviv v7 stream plan: where runs are cut (flush_pos: ascending, unique, relative to the
 * core's first weight, core_flush[c] each; room for 2 * channels + ncores * (ic + 1)); the raw words (2 per
 * channel, core after core, raw_pos relative to the core's first weight, ascending): the bias word bias[ch] -
 * (sum of the ksum weights from ch * ksum - ksum * weight_zp) * input_zp, and trailer[ch] (both nchan long); per
 * core its weights (core_len) and the token count at each run-length width 0..zmax (tokens[c * (zmax + 1) + z]);
 * with seq != NULL the weights in stream order, cores back to back. Returns the weights of all cores, or -1 when
 * a parameter is out of range. */
TEFLON_EXPORT int64_t teflon_native_etna_v7_plan(const teflon_etna_v7_job *job, const int64_t *bias,
                                                 const uint32_t *trailer, uint64_t ksum, int64_t weight_zp,
                                                 int64_t input_zp, unsigned zmax, uint8_t *seq, int64_t *core_len,
                                                 int64_t *flush_pos, int64_t *core_flush, int64_t *raw_pos,
                                                 uint32_t *raw_val, int64_t *tokens);

/* A whole etnaviv v7 coefficient buffer from a job and its plan (teflon_native_etna_v7_plan): a header of `header`
 * bytes holding each core stream's 64-aligned size (u32), then the streams (teflon_native_etna_coef_stream), each
 * zero-padded to 64 bytes. Returns the bytes written, or -1 when they exceed cap. */
TEFLON_EXPORT int64_t teflon_native_etna_v7_buffer(const teflon_etna_v7_job *job, const int64_t *flush_pos,
                                                   const int64_t *core_flush, const int64_t *raw_pos,
                                                   const uint32_t *raw_val, unsigned header, unsigned z, unsigned zp,
                                                   unsigned kpc, uint8_t *out, uint64_t cap);

/* One core's etnaviv v8 coefficient stream (teflon.etnaviv.coefs_v8): the n codes, coded in pairs with the
 * 256-entry per-byte tables of one symbol map, packed LSB first into ceil(bits / 8) bytes. Returns the stream's
 * bit length, or -1 when the bytes exceed cap. */
TEFLON_EXPORT int64_t teflon_native_etna_v8_stream(const uint8_t *codes, uint64_t n, const uint8_t *part0,
                                                   const uint8_t *part1, const uint8_t *part1_w, const uint16_t *payload,
                                                   const uint8_t *payload_w, uint8_t *out, uint64_t cap);

/* hist[v] = how many of the n bytes w[i] have (w[i] - sub) mod 256 == v (teflon.etnaviv.coefs_v8 symbol maps). */
TEFLON_EXPORT void teflon_native_byte_histogram(const uint8_t *w, uint64_t n, unsigned sub, uint64_t *hist);

/* A whole etnaviv v8 coefficient buffer (teflon.etnaviv.coefs_v8.encode): the 64-byte header (version, the
 * symbol map word, each core stream's bit length), every used core's stream (teflon_native_etna_v8_stream over
 * the tables of the symbol map) zero-padded to 64 bytes, then the oc u32 bias table. The weights w are oc kernels
 * of k bytes; a kernel is coded in nblocks blocks of bs bytes, each followed by pad codes; past the kernel and in
 * the padding the code is 0 (raw: the zero point). Coded bytes are w - weight_zp, or w itself when raw. Core c
 * codes its kernel count, then for each superblock s block j of each of its next sb_len[c * nsb + s] channels
 * ch, then block j + 1. The bias table word of kernel o is bias[o] + sum(w - weight_zp) * (128 - input_zp).
 * Returns the bytes written, or -1 when they exceed cap or a parameter is out of range. */
TEFLON_EXPORT int64_t teflon_native_etna_v8_buffer(const uint8_t *w, uint64_t wlen, uint64_t oc, uint64_t k,
                                                   unsigned bs, unsigned pad, uint64_t nblocks, unsigned weight_zp,
                                                   unsigned raw, const int64_t *ch, const int64_t *sb_len,
                                                   unsigned ncores, unsigned nsb, uint32_t symbol_map,
                                                   const uint8_t *part0, const uint8_t *part1, const uint8_t *part1_w,
                                                   const uint16_t *payload, const uint8_t *payload_w,
                                                   const int64_t *bias, int64_t input_zp, uint8_t *out, uint64_t cap);

/* An Ethos-U weight stream (teflon.ethosu.mlw; docs/hardware/ethosu-weights.md §2): the slices of the n weight
 * indices idx, each slices row {start, end, WDIV (0..5, 7 uncompressed), truncated}, the first with the palette
 * (npal codes of palbits bits, dirofs), uncompressed indices ub bits wide; with runs (n + 1 zero runs) every slice
 * interleaves its zero runs (divisor zdiv). Then the end-of-stream marker, ones to the byte and 0xFF bytes to a
 * multiple of 16. Returns the bytes written, or -1 when they exceed cap or a parameter is out of range. */
TEFLON_EXPORT int64_t teflon_native_ethosu_mlw_stream(const uint16_t *idx, uint64_t n, const uint32_t *runs,
                                                      const int64_t *slices, uint64_t nslices,
                                                      const uint16_t *palette, unsigned npal, unsigned dirofs,
                                                      unsigned palbits, unsigned ub, unsigned zdiv, uint8_t *out,
                                                      uint64_t cap);

/* One pass over an Ethos-U weight stream's n values (-255..255, teflon.ethosu.mlw.plan): the histogram of their
 * sign-magnitude codes into freq[512], and over the zero runs between the non-zero values (one before the first,
 * one after each) the sums of run >> d into run_sums[d], d = 0..3. Returns 0, or -1 for a value out of range. */
TEFLON_EXPORT int teflon_native_ethosu_mlw_stats(const int16_t *values, uint64_t n, int64_t *freq, int64_t *run_sums);

/* The weight indices idx of the n values under lut (sign-magnitude code -> index, 512 entries): every value, or
 * with zero_runs the non-zero ones, then runs[] holds the count + 1 zero runs as stats counts them (with zero_runs
 * idx and runs need count + 1 entries, and hist one segment more). When hist is not NULL,
 * hist[(k >> seg_shift) * 512 + idx[k]] counts each index k (zeroed by the caller; float, exact below 2^24, for
 * the cost products). Returns the number of
 * indices, or -1 for a value out of range or a code without an index. */
TEFLON_EXPORT int64_t teflon_native_ethosu_mlw_indices(const int16_t *values, uint64_t n, const int32_t *lut,
                                                       int zero_runs, uint16_t *idx, uint32_t *runs, float *hist,
                                                       unsigned seg_shift);

/* The Ethos-U slice plan's dynamic programme (teflon.ethosu.mlw.plan_slices): per segment the setting (a column
 * of the nseg x ncfg row-major costs, ncfg <= 16) minimising the total with slice_cost per change of setting, in
 * double as the Python reference adds them, the first cheapest on a tie. Writes choice[nseg], uses back
 * ((nseg - 1) x ncfg bytes) as scratch; returns the total, or -1 for bad sizes. */
TEFLON_EXPORT double teflon_native_ethosu_mlw_viterbi(const double *cost, uint64_t nseg, unsigned ncfg,
                                                      double slice_cost, int32_t *choice, uint8_t *back);

/* The OHWI weights w of one Ethos-U kick-off in the order the weight decoder hands them to the MAC array
 * (teflon.ethosu.bricks, docs/hardware/ethosu-weights.md §3): OFM blocks of ofm_block channels, IFM blocks of
 * ifm_block, sub-kernels of at most sub_y x sub_x taps padded to a multiple of tap_round, padding as zeros.
 * Writes at most cap values to out; with out NULL only counts them. Returns the count, or -1. */
TEFLON_EXPORT int64_t teflon_native_ethosu_brick_order(const int16_t *w, int depthwise, int part_kernel,
                                                       uint32_t ofm_depth, uint32_t ifm_depth, uint32_t kh,
                                                       uint32_t kw, uint32_t ofm_block, uint32_t ifm_block,
                                                       uint32_t sub_y, uint32_t sub_x, uint32_t tap_round,
                                                       int16_t *out, uint64_t cap);

#endif
