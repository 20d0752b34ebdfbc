"""Run compiled programs through libteflon.so's runner API (cffi, ABI mode).

    from teflon.native import Device, Runner
    with Device("rk3588", sim=True) as dev:
        runner = Runner(dev, program)          # a teflon.program.Program or its blob
        outputs = runner.run({0: x})            # {tensor index: NHWC array}
        print(runner.stats())                   # {"tasks": ..., "macs": ..., "feature_rd": ...} of the last run
        print(runner.task_counters())           # one dict of counters per program task

The library is `teflon.delegate_path()` ($TEFLON_LIBRARY overrides it). The same runner code serves
the delegate's kernels; on a machine with a rocket device node `sim=None` picks the real NPU.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Self

import cffi
import numpy as np

from teflon import delegate_path, targets
from teflon.program import BUFFER, HEADER, HOST_NCHW, IO, JOB, RELOC, TASK, Program

CDEF = """
void *teflon_native_open(const char *soc, int sim, char *err, size_t errlen);
void *teflon_native_open_cores(const char *soc, int sim, unsigned cores, char *err, size_t errlen);
int   teflon_native_run_info(void *runner, uint64_t *npu_ns, uint32_t *lanes);
void  teflon_native_close(void *dev);
int   teflon_native_is_sim(void *dev);
void *teflon_native_load(void *dev, const uint8_t *blob, uint64_t len, char *err, size_t errlen);
void  teflon_native_unload(void *runner);
int   teflon_native_set_input(void *runner, int32_t tensor, const void *host, uint64_t bytes);
int   teflon_native_run(void *runner, char *err, size_t errlen);
int   teflon_native_get_output(void *runner, int32_t tensor, void *host, uint64_t bytes);
int   teflon_native_stats(void *runner, uint64_t *tasks, uint64_t *macs);
int   teflon_native_task_counters(void *runner, uint64_t *out, uint32_t cap);
int   teflon_check_options(const char *const *keys, const char *const *values, size_t n, char *err, size_t errlen);
int64_t teflon_native_etna_coef_stream(const uint8_t *seq, uint64_t n, const int64_t *flush_pos, uint64_t nflush,
                                       const int64_t *raw_pos, const uint32_t *raw_val, uint64_t nraw, unsigned z,
                                       unsigned zp, unsigned kpc, uint8_t *out, uint64_t cap);
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
int64_t teflon_native_etna_v7_plan(const teflon_etna_v7_job *job, const int64_t *bias, const uint32_t *trailer,
                                   uint64_t ksum, int64_t weight_zp, int64_t input_zp, unsigned zmax, uint8_t *seq,
                                   int64_t *core_len, int64_t *flush_pos, int64_t *core_flush, int64_t *raw_pos,
                                   uint32_t *raw_val, int64_t *tokens);
int64_t teflon_native_etna_v7_buffer(const teflon_etna_v7_job *job, const int64_t *flush_pos,
                                     const int64_t *core_flush, const int64_t *raw_pos, const uint32_t *raw_val,
                                     unsigned header, unsigned z, unsigned zp, unsigned kpc, uint8_t *out,
                                     uint64_t cap);
int64_t teflon_native_etna_v8_stream(const uint8_t *codes, uint64_t n, const uint8_t *part0, const uint8_t *part1,
                                     const uint8_t *part1_w, const uint16_t *payload, const uint8_t *payload_w,
                                     uint8_t *out, uint64_t cap);
void teflon_native_byte_histogram(const uint8_t *w, uint64_t n, unsigned sub, uint64_t *hist);
int64_t teflon_native_etna_v8_buffer(const uint8_t *w, uint64_t wlen, uint64_t oc, uint64_t k, unsigned bs,
                                     unsigned pad, uint64_t nblocks, unsigned weight_zp, unsigned raw,
                                     const int64_t *ch, const int64_t *sb_len, unsigned ncores, unsigned nsb,
                                     uint32_t symbol_map, const uint8_t *part0, const uint8_t *part1,
                                     const uint8_t *part1_w, const uint16_t *payload, const uint8_t *payload_w,
                                     const int64_t *bias, int64_t input_zp, uint8_t *out, uint64_t cap);
int64_t teflon_native_ethosu_mlw_stream(const uint16_t *idx, uint64_t n, const uint32_t *runs, const int64_t *slices,
                                        uint64_t nslices, const uint16_t *palette, unsigned npal, unsigned dirofs,
                                        unsigned palbits, unsigned ub, unsigned zdiv, uint8_t *out, uint64_t cap);
double teflon_native_ethosu_mlw_viterbi(const double *cost, uint64_t nseg, unsigned ncfg, double slice_cost,
                                        int32_t *choice, uint8_t *back);
int64_t teflon_native_ethosu_brick_order(const int16_t *w, int depthwise, int part_kernel, uint32_t ofm_depth,
                                         uint32_t ifm_depth, uint32_t kh, uint32_t kw, uint32_t ofm_block,
                                         uint32_t ifm_block, uint32_t sub_y, uint32_t sub_x, uint32_t tap_round,
                                         int16_t *out, uint64_t cap);
int teflon_native_ethosu_mlw_stats(const int16_t *values, uint64_t n, int64_t *freq, int64_t *run_sums);
int64_t teflon_native_ethosu_mlw_indices(const int16_t *values, uint64_t n, const int32_t *lut, int zero_runs,
                                         uint16_t *idx, uint32_t *runs, float *hist, unsigned seg_shift);
"""

ERRLEN = 1024
# teflon_native_task_counters' words per task, in order (bytes read / written, MACs, simulated nanoseconds, the
# core the task ran on, its simulated start, the MACs whose weight is not the zero point: etnaviv only, else 0)
COUNTERS = ("feature_rd", "weight_rd", "bias_rd", "data_wr", "macs", "ns", "core", "start_ns", "macs_nz")
DTYPES = {3: np.dtype(np.uint8), 9: np.dtype(np.int8)}

_ffi = cffi.FFI()
_ffi.cdef(CDEF)


class NativeError(RuntimeError):
    """A device or runner call failed; the message is the C side's."""


@functools.cache
def _load(path: str) -> Any:
    return _ffi.dlopen(path)


def library() -> Any:
    """The runner API of the library at teflon.delegate_path()."""
    return _load(delegate_path())


@functools.cache
def _compiler_library() -> Any:
    """library(), looked up once: the compiler calls it once per stream it writes."""
    return library()


def etna_coef_stream(seq: np.ndarray, flush_pos: np.ndarray, raw_pos: np.ndarray, raw_val: np.ndarray, z: int,
                     zp: int, kpc: int, nbytes: int) -> bytes:
    """One core's etnaviv v7 coefficient stream of `nbytes` bytes, written by the library
    (teflon_native_etna_coef_stream, delegate/native.h): uint8 weights in stream order, the positions where runs
    are cut (int64, ascending), the raw words' positions (int64, ascending) and values (uint32)."""
    seq = np.ascontiguousarray(seq, dtype=np.uint8)
    flush_pos = np.ascontiguousarray(flush_pos, dtype=np.int64)
    raw_pos = np.ascontiguousarray(raw_pos, dtype=np.int64)
    raw_val = np.ascontiguousarray(raw_val, dtype=np.uint32)
    out = bytearray(nbytes)
    n = _compiler_library().teflon_native_etna_coef_stream(
        _ffi.from_buffer("uint8_t[]", seq), seq.size, _ffi.from_buffer("int64_t[]", flush_pos), flush_pos.size,
        _ffi.from_buffer("int64_t[]", raw_pos), _ffi.from_buffer("uint32_t[]", raw_val), raw_val.size, z, zp, kpc,
        _ffi.from_buffer("uint8_t[]", out), nbytes)
    if n != nbytes:
        raise NativeError(f"coefficient stream of {n} bytes, expected {nbytes}")
    return bytes(out)


class EtnaV7Job:
    """One v7 coefficient buffer's weight order for the library (teflon_etna_v7_job, delegate/native.h): `weights`
    the flat uint8 traversal array [channel][ic][taps] (reads past its end are 0), `writer` 0 sequential /
    1 interleaved / 2 six, `tap` the tap order inside a kernel, `channels` every core's channels superblock after
    superblock with `sb_len` [core][superblock] counting them, each < `nchan`. With `block` = g > 0 the array is
    block-diagonal and `weights` holds its blocks [kernel][g][taps]: kernel o reads input channels
    (o + first) * g .. + g - 1, the zero point `zp` elsewhere (teflon.etnaviv.ops.dense_weights)."""

    def __init__(self, weights: np.ndarray, writer: int, ic: int, tap: np.ndarray, channels: np.ndarray,
                 sb_len: np.ndarray, nchan: int, block: int = 0, first: int = 0, zp: int = 0) -> None:
        # the arrays stay referenced here while the library reads them through the struct
        self.w = np.ascontiguousarray(weights, dtype=np.uint8).reshape(-1)
        self.tap = np.ascontiguousarray(tap, dtype=np.int64)
        self.ch = np.ascontiguousarray(channels, dtype=np.int64)
        self.sb_len = np.ascontiguousarray(sb_len, dtype=np.int64)
        self.ncores, nsb = self.sb_len.shape
        self.ic = ic
        self.core_ch = self.sb_len.sum(axis=1)
        fb = _ffi.from_buffer
        self._keep = [fb("uint8_t[]", self.w), fb("int64_t[]", self.tap), fb("int64_t[]", self.ch),
                      fb("int64_t[]", self.sb_len)]
        self.struct = _ffi.new("teflon_etna_v7_job *", {
            "w": self._keep[0], "wlen": self.w.size, "writer": writer, "ic": ic, "taps": self.tap.size,
            "tap": self._keep[1], "ch": self._keep[2], "sb_len": self._keep[3], "ncores": self.ncores, "nsb": nsb,
            "nchan": nchan, "block": block, "zp": zp, "first": first})


@dataclass(frozen=True)
class EtnaV7Plan:
    """Every used core's v7 stream plan (teflon_native_etna_v7_plan): its weights (core_len each; in stream order,
    cores back to back, in `seq` when asked for); where runs are cut (core_flush each) and the raw words (core_raw
    each), positions relative to the core's first weight; the token count per core and run-length width
    ([core][z])."""

    seq: np.ndarray | None
    core_len: np.ndarray
    flush_pos: np.ndarray
    core_flush: np.ndarray
    raw_pos: np.ndarray
    raw_val: np.ndarray
    core_raw: np.ndarray
    tokens: np.ndarray


def etna_v7_plan(job: EtnaV7Job, bias: np.ndarray, trailer: np.ndarray, ksum: int, weight_zp: int, input_zp: int,
                 zmax: int, keep_seq: bool = False) -> EtnaV7Plan:
    """The v7 stream plan of one coefficient buffer, written by the library: `bias` (int64) and `trailer`
    (uint32) per channel, `ksum` the weights per channel in the bias word's zero-point correction; the weights in
    stream order only with `keep_seq` (the buffer writer orders them again, core by core)."""
    b = np.ascontiguousarray(bias, dtype=np.int64)
    tr = np.ascontiguousarray(trailer, dtype=np.uint32)
    if min(b.size, tr.size) < int(job.struct.nchan):
        raise ValueError(f"{b.size} bias and {tr.size} trailer words for {int(job.struct.nchan)} channels")
    nch = job.ch.size
    n = nch * job.ic * job.tap.size
    seq = np.empty(n, dtype=np.uint8) if keep_seq else None
    core_len = np.empty(job.ncores, dtype=np.int64)
    flush_pos = np.empty(2 * nch + job.ncores * (job.ic + 1), dtype=np.int64)
    core_flush = np.empty(job.ncores, dtype=np.int64)
    raw_pos = np.empty(2 * nch, dtype=np.int64)
    raw_val = np.empty(2 * nch, dtype=np.uint32)
    tokens = np.empty((job.ncores, zmax + 1), dtype=np.int64)
    fb = _ffi.from_buffer
    got = _compiler_library().teflon_native_etna_v7_plan(
        job.struct, fb("int64_t[]", b), fb("uint32_t[]", tr), ksum, weight_zp, input_zp, zmax,
        fb("uint8_t[]", seq) if seq is not None else _ffi.NULL, fb("int64_t[]", core_len),
        fb("int64_t[]", flush_pos), fb("int64_t[]", core_flush), fb("int64_t[]", raw_pos), fb("uint32_t[]", raw_val),
        fb("int64_t[]", tokens))
    if got != n:
        raise NativeError(f"v7 stream plan of {got} weights, expected {n}")
    return EtnaV7Plan(seq, core_len, flush_pos[: int(core_flush.sum())], core_flush, raw_pos, raw_val,
                      2 * job.core_ch, tokens)


def etna_v7_buffer(job: EtnaV7Job, plan: EtnaV7Plan, header: int, z: int, zp: int, kpc: int, nbytes: int) -> bytes:
    """The whole v7 coefficient buffer of `nbytes` bytes from a job and its plan (teflon_native_etna_v7_buffer):
    the `header`-byte table of 64-aligned stream sizes, then every core's stream."""
    out = bytearray(nbytes)
    fb = _ffi.from_buffer
    n = _compiler_library().teflon_native_etna_v7_buffer(
        job.struct, fb("int64_t[]", np.ascontiguousarray(plan.flush_pos, dtype=np.int64)),
        fb("int64_t[]", np.ascontiguousarray(plan.core_flush, dtype=np.int64)),
        fb("int64_t[]", np.ascontiguousarray(plan.raw_pos, dtype=np.int64)),
        fb("uint32_t[]", np.ascontiguousarray(plan.raw_val, dtype=np.uint32)), header, z, zp, kpc,
        fb("uint8_t[]", out), nbytes)
    if n != nbytes:
        raise NativeError(f"v7 coefficient buffer of {n} bytes, expected {nbytes}")
    return bytes(out)


def etna_v8_stream(codes: np.ndarray, part0: np.ndarray, part1: np.ndarray, part1_w: np.ndarray, payload: np.ndarray,
                   payload_w: np.ndarray) -> tuple[bytes, int]:
    """One core's etnaviv v8 coefficient stream, written by the library (teflon_native_etna_v8_stream,
    delegate/native.h) from the codes and the 256-entry code tables: (bytes, bit length)."""
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    tables = [np.ascontiguousarray(t, dtype=d) for t, d in ((part0, np.uint8), (part1, np.uint8), (part1_w, np.uint8),
                                                             (payload, np.uint16), (payload_w, np.uint8))]
    cap = ((codes.size // 2 + 3) * 38 + 7) // 8 + 8
    out = bytearray(cap)
    nbits = _compiler_library().teflon_native_etna_v8_stream(
        _ffi.from_buffer("uint8_t[]", codes), codes.size, _ffi.from_buffer("uint8_t[]", tables[0]),
        _ffi.from_buffer("uint8_t[]", tables[1]), _ffi.from_buffer("uint8_t[]", tables[2]),
        _ffi.from_buffer("uint16_t[]", tables[3]), _ffi.from_buffer("uint8_t[]", tables[4]),
        _ffi.from_buffer("uint8_t[]", out), cap)
    if nbits < 0:
        raise NativeError(f"coefficient stream of {codes.size} codes longer than {cap} bytes")
    return bytes(out[: (nbits + 7) // 8]), int(nbits)


def byte_histogram(data: np.ndarray, sub: int = 0) -> np.ndarray:
    """uint64 [256]: how many bytes of `data` (read flat as uint8) have (byte - sub) mod 256 == v, counted by the
    library (teflon_native_byte_histogram)."""
    data = np.ascontiguousarray(data, dtype=np.uint8).reshape(-1)
    hist = np.empty(256, dtype=np.uint64)
    _compiler_library().teflon_native_byte_histogram(_ffi.from_buffer("uint8_t[]", data), data.size, sub & 0xFF,
                                                     _ffi.from_buffer("uint64_t[]", hist))
    return hist


def etna_v8_buffer(weights: np.ndarray, oc: int, k: int, bs: int, pad: int, nblocks: int, weight_zp: int, raw: bool,
                   channels: np.ndarray, sb_len: np.ndarray, symbol_map: int, part0: np.ndarray, part1: np.ndarray,
                   part1_w: np.ndarray, payload: np.ndarray, payload_w: np.ndarray, bias: np.ndarray,
                   input_zp: int) -> bytes:
    """A whole etnaviv v8 coefficient buffer written by the library (teflon_native_etna_v8_buffer,
    delegate/native.h): oc kernels of k weights in blocks of bs (+ pad) codes, every core's channels superblock
    after superblock (`sb_len` [core][superblock] counting them), the 256-entry code tables of `symbol_map` and
    the int64 bias per kernel."""
    w = np.ascontiguousarray(weights, dtype=np.uint8).reshape(-1)
    ch = np.ascontiguousarray(channels, dtype=np.int64)
    sb = np.ascontiguousarray(sb_len, dtype=np.int64)
    b = np.ascontiguousarray(bias, dtype=np.int64)
    if b.size < oc:
        raise ValueError(f"{b.size} bias values for {oc} kernels")
    tables = [np.ascontiguousarray(t, dtype=d) for t, d in ((part0, np.uint8), (part1, np.uint8), (part1_w, np.uint8),
                                                             (payload, np.uint16), (payload_w, np.uint8))]
    ncores, nsb = sb.shape
    slot = bs + pad
    cap = 64 + 4 * oc + sum(((int(n) * nblocks * slot // 2 + 4) * 38 + 7) // 8 + 72 for n in sb.sum(axis=1))
    out = bytearray(cap)
    fb = _ffi.from_buffer
    n = _compiler_library().teflon_native_etna_v8_buffer(
        fb("uint8_t[]", w), w.size, oc, k, bs, pad, nblocks, weight_zp, int(raw), fb("int64_t[]", ch),
        fb("int64_t[]", sb), ncores, nsb, symbol_map, fb("uint8_t[]", tables[0]), fb("uint8_t[]", tables[1]),
        fb("uint8_t[]", tables[2]), fb("uint16_t[]", tables[3]), fb("uint8_t[]", tables[4]), fb("int64_t[]", b),
        input_zp, fb("uint8_t[]", out), cap)
    if n < 0:
        raise NativeError(f"v8 coefficient buffer of {oc} kernels longer than {cap} bytes, or out of range")
    return bytes(out[:n])


def ethosu_mlw_stream(idx: np.ndarray, runs: np.ndarray | None, slices: np.ndarray, palette: tuple[int, ...],
                      dirofs: int, palbits: int, ub: int, zdiv: int) -> bytes:
    """An Ethos-U weight stream written by the library (teflon_native_ethosu_mlw_stream, delegate/native.h): the
    weight indices (0..511, passed as uint16), the zero runs (uint32; None: none), one {start, end, WDIV, truncated}
    int64 row per slice, the first slice's palette; `ub` the uncompressed index width."""
    idx = np.ascontiguousarray(idx, dtype=np.uint16)
    slices = np.ascontiguousarray(slices, dtype=np.int64)
    pal = np.ascontiguousarray(palette, dtype=np.uint16)
    # at most 16 unary + 16 + 9 bits per weight, a unary chunk and remainder per zero run plus its ones, the
    # headers (palette included), the end marker and the padding
    cap = (idx.size * 41 + 48 * slices.shape[0] + 32 * 9 + 64) // 8 + 32
    runs_ptr = _ffi.NULL
    if runs is not None:
        runs = np.ascontiguousarray(runs, dtype=np.uint32)
        cap += (int(runs.sum(dtype=np.int64)) >> zdiv) // 8 + runs.size * 4
        runs_ptr = _ffi.from_buffer("uint32_t[]", runs)
    out = np.empty(cap, dtype=np.uint8)  # not cleared: the library writes every byte it returns
    n = _compiler_library().teflon_native_ethosu_mlw_stream(
        _ffi.from_buffer("uint16_t[]", idx), idx.size, runs_ptr, _ffi.from_buffer("int64_t[]", slices),
        slices.shape[0], _ffi.from_buffer("uint16_t[]", pal), pal.size, dirofs, palbits, ub, zdiv,
        _ffi.from_buffer("uint8_t[]", out), cap)
    if n < 0:
        raise NativeError(f"weight stream of {idx.size} indices in {slices.shape[0]} slices: bad parameters or more "
                          f"than {cap} bytes")
    return out[:n].tobytes()


def ethosu_brick_order(weights: np.ndarray, depthwise: bool, part_kernel: bool, ofm_depth: int, ifm_depth: int,
                       kernel: tuple[int, int], ofm_block: int, ifm_block: int, sub: tuple[int, int],
                       tap_round: int) -> np.ndarray:
    """One Ethos-U kick-off's OHWI int16 weights in brick order, by the library (teflon_native_ethosu_brick_order,
    delegate/native.h): the int16 values its weight stream carries."""
    w = np.ascontiguousarray(weights, dtype=np.int16).reshape(-1)
    lib = _compiler_library()
    geometry = (int(depthwise), int(part_kernel), ofm_depth, ifm_depth, kernel[0], kernel[1], ofm_block, ifm_block,
                sub[0], sub[1], tap_round)
    count = lib.teflon_native_ethosu_brick_order(_ffi.NULL, *geometry, _ffi.NULL, 0)
    if count < 0:
        raise NativeError(f"brick order of {geometry}: bad geometry")
    out = np.empty(count, dtype=np.int16)
    if lib.teflon_native_ethosu_brick_order(_ffi.from_buffer("int16_t[]", w), *geometry,
                                            _ffi.from_buffer("int16_t[]", out), count) != count:
        raise NativeError(f"brick order of {geometry}: bad geometry")
    return out


def ethosu_mlw_stats(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One pass over an Ethos-U weight stream's int16 values, by the library (teflon_native_ethosu_mlw_stats,
    delegate/native.h): (the 512-bin histogram of their sign-magnitude codes, the sums of run >> d over their zero
    runs for d = 0..3), both int64."""
    values = np.ascontiguousarray(values, dtype=np.int16)
    freq = np.empty(512, dtype=np.int64)
    run_sums = np.empty(4, dtype=np.int64)
    if _compiler_library().teflon_native_ethosu_mlw_stats(
            _ffi.from_buffer("int16_t[]", values), values.size, _ffi.from_buffer("int64_t[]", freq),
            _ffi.from_buffer("int64_t[]", run_sums)) < 0:
        raise ValueError("weight values must be within -255..255 (weight minus zero point)")
    return freq, run_sums


def ethosu_mlw_indices(values: np.ndarray, lut: np.ndarray, zeros: int | None, seg_shift: int | None
                       ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The weight indices (uint16) of an Ethos-U weight stream's int16 values under `lut` (sign-magnitude code ->
    index), by the library (teflon_native_ethosu_mlw_indices): of every value, or when `zeros` (the number of zero
    values) is given of the non-zero ones. Returns (the indices, the zero runs (uint32) or None, and with
    `seg_shift` the (segments, 512) float32 histograms of the indices per 2**seg_shift of them, else None)."""
    values = np.ascontiguousarray(values, dtype=np.int16)
    lut = np.ascontiguousarray(lut, dtype=np.int32)
    zero_runs = zeros is not None
    count = values.size - (zeros or 0)
    spare = int(zero_runs)  # the library's loop writes one slot (and one segment) past the last with zero runs
    idx = np.empty(count + spare, dtype=np.uint16)
    runs = np.empty(count + 1, dtype=np.uint32) if zero_runs else None
    hist = None
    if seg_shift is not None:
        # every row the indices reach is stored whole by the library; the spare one is dropped
        hist = np.empty((((count + (1 << seg_shift) - 1) >> seg_shift) + spare, 512), dtype=np.float32)
    n = _compiler_library().teflon_native_ethosu_mlw_indices(
        _ffi.from_buffer("int16_t[]", values), values.size, _ffi.from_buffer("int32_t[]", lut), int(zero_runs),
        _ffi.from_buffer("uint16_t[]", idx), _ffi.from_buffer("uint32_t[]", runs) if runs is not None else _ffi.NULL,
        _ffi.from_buffer("float[]", hist) if hist is not None else _ffi.NULL, seg_shift or 0)
    if n != count:
        raise ValueError("a weight value is out of range or has no index under the palette")
    if spare:
        idx = idx[:count]
        hist = hist[:-1] if hist is not None else None
    return idx, runs, hist


def ethosu_mlw_viterbi(cost: np.ndarray, slice_cost: float) -> tuple[np.ndarray, float]:
    """The Ethos-U slice plan's dynamic programme over (segments, settings) costs, by the library
    (teflon_native_ethosu_mlw_viterbi, delegate/native.h): (the setting column of each segment (int32), the
    total)."""
    cost = np.ascontiguousarray(cost, dtype=np.float64)
    nseg, ncfg = cost.shape
    choice = np.empty(nseg, dtype=np.int32)
    back = np.empty(max(nseg - 1, 1) * ncfg, dtype=np.uint8)
    total = _compiler_library().teflon_native_ethosu_mlw_viterbi(
        _ffi.from_buffer("double[]", cost), nseg, ncfg, slice_cost, _ffi.from_buffer("int32_t[]", choice),
        _ffi.from_buffer("uint8_t[]", back))
    if total < 0:
        raise NativeError(f"slice plan of {nseg} segments x {ncfg} settings: bad sizes")
    return choice, float(total)


def check_options(options: dict[str, str]) -> None:
    """Raise ValueError with the delegate's message (naming the option) when it would refuse `options`, before a
    runtime loads the library (which reports the refusal more than once and wraps it). A library without
    teflon_check_options leaves the check to the runtime's load."""
    lib = library()
    try:
        check = lib.teflon_check_options
    except AttributeError:
        return
    keys = [_ffi.new("char[]", k.encode()) for k in options]
    values = [_ffi.new("char[]", v.encode()) for v in options.values()]
    err = _ffi.new("char[]", ERRLEN)
    if check(_ffi.new("char *[]", keys), _ffi.new("char *[]", values), len(keys), err, ERRLEN):
        raise ValueError(_ffi.string(err).decode(errors="replace"))


@dataclass(frozen=True)
class Binding:
    tensor: int
    direction: str  # "in" | "out"
    shape: tuple[int, int, int, int]
    dtype: np.dtype


def bindings(blob: bytes) -> list[Binding]:
    """The I/O bindings of a program blob (shapes and dtypes of what run() takes and returns)."""
    (_, _, _, nbuf, nrel, ntask, njob, nbol, nio, *_rest) = HEADER.unpack_from(blob, 0)
    off = HEADER.size + nbuf * BUFFER.size + nrel * RELOC.size + ntask * TASK.size + njob * JOB.size + 4 * nbol
    out = []
    for i in range(nio):
        tensor, direction, _buf, _layout, dtype, h, w, c, _c2, _xor, _pad, order, *_ = IO.unpack_from(
            blob, off + i * IO.size)
        if dtype not in DTYPES:
            raise NativeError(f"I/O binding {i}: unsupported TfLiteType {dtype}")
        shape = (1, c, h, w) if order == HOST_NCHW else (1, h, w, c)
        out.append(Binding(tensor, "in" if direction == 0 else "out", shape, DTYPES[dtype]))
    return out


class Device:
    """An open NPU device: sim=True simulator, False real device node only, None automatic; `cores` as the
    delegate option (1 .. the target's NPU cores)."""

    def __init__(self, soc: str = targets.FALLBACK, sim: bool | None = True, cores: int = 1) -> None:
        self._handle: Any = None
        # Runners loaded on the device and not yet unloaded: the C device must outlive their BOs. Python's cyclic
        # collector runs finalizers in any order (a failed run's traceback holds the frame that holds both), so a
        # close() while runners live only marks the device, and the last runner's close() closes it.
        self._runners = 0
        self._close_pending = False
        self._lib = library()
        err = _ffi.new("char[]", ERRLEN)
        mode = -1 if sim is None else int(bool(sim))
        handle = self._lib.teflon_native_open_cores(soc.encode(), mode, cores, err, ERRLEN)
        if handle == _ffi.NULL:
            raise NativeError(_ffi.string(err).decode(errors="replace"))
        self._handle = handle
        self.soc = soc

    @property
    def handle(self) -> Any:
        if self._handle is None:
            raise NativeError("device is closed")
        return self._handle

    @property
    def is_sim(self) -> bool:
        return bool(self._lib.teflon_native_is_sim(self.handle))

    def close(self) -> None:
        if self._runners:
            self._close_pending = True
            return
        if self._handle is not None:
            self._lib.teflon_native_close(self._handle)
            self._handle = None

    def _runner_closed(self) -> None:
        self._runners -= 1
        if self._close_pending and not self._runners:
            self._close_pending = False
            self.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


class Runner:
    """A program loaded on a device (its BOs created, data uploaded, relocations applied)."""

    def __init__(self, device: Device, program: Program | bytes) -> None:
        self._handle: Any = None
        blob = program.to_blob() if isinstance(program, Program) else bytes(program)
        self.bindings = bindings(blob)
        self._device = device  # keeps the device open while the runner lives
        self._lib = device._lib
        err = _ffi.new("char[]", ERRLEN)
        handle = self._lib.teflon_native_load(device.handle, blob, len(blob), err, ERRLEN)
        if handle == _ffi.NULL:
            raise NativeError(_ffi.string(err).decode(errors="replace"))
        self._handle = handle
        device._runners += 1

    def _binding(self, tensor: int, direction: str) -> Binding:
        for b in self.bindings:
            if b.tensor == tensor and b.direction == direction:
                return b
        raise KeyError(f"tensor {tensor} has no {direction}put binding in this program")

    def run(self, inputs: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        """One inference: host NHWC inputs by tensor index -> NHWC outputs by tensor index."""
        if self._handle is None:
            raise NativeError("runner is unloaded")
        for tensor, value in inputs.items():
            b = self._binding(tensor, "in")
            arr = np.ascontiguousarray(value)
            if arr.dtype != b.dtype or arr.size != int(np.prod(b.shape)):
                raise ValueError(f"tensor {tensor}: expected {b.dtype} {b.shape}, got {arr.dtype} {arr.shape}")
            rc = self._lib.teflon_native_set_input(self._handle, tensor, _ffi.from_buffer(arr), arr.nbytes)
            if rc:
                raise NativeError(f"set_input(tensor {tensor}) failed: {rc}")
        err = _ffi.new("char[]", ERRLEN)
        rc = self._lib.teflon_native_run(self._handle, err, ERRLEN)
        if rc:
            raise NativeError(_ffi.string(err).decode(errors="replace") or f"run failed: {rc}")
        outputs = {}
        for b in self.bindings:
            if b.direction != "out" or b.tensor in outputs:
                continue
            arr = np.empty(b.shape, dtype=b.dtype)
            rc = self._lib.teflon_native_get_output(self._handle, b.tensor, _ffi.from_buffer(arr), arr.nbytes)
            if rc:
                raise NativeError(f"get_output(tensor {b.tensor}) failed: {rc}")
            outputs[b.tensor] = arr
        return outputs

    def stats(self) -> dict[str, int]:
        """Tasks and MACs of the last run, and the byte counters summed over its tasks (MACs and bytes:
        simulator only)."""
        tasks = _ffi.new("uint64_t *")
        macs = _ffi.new("uint64_t *")
        self._lib.teflon_native_stats(self._handle, tasks, macs)
        totals = self.task_counter_array().sum(axis=0)
        return {"tasks": int(tasks[0]), "macs": int(macs[0]),
                **{k: int(v) for k, v in zip(COUNTERS[:4], totals[:4], strict=True)}}

    def npu_time(self) -> tuple[int, int]:
        """(simulated NPU ns of the last run, from its first submit to its last job's end; the files (lanes) the
        program runs on). 0 ns on a real device."""
        ns = _ffi.new("uint64_t *")
        lanes = _ffi.new("uint32_t *")
        self._lib.teflon_native_run_info(self._handle, ns, lanes)
        return int(ns[0]), int(lanes[0])

    def task_counter_array(self) -> np.ndarray:
        """The last run's counters, one row per program task (job order), columns COUNTERS."""
        try:
            fetch = self._lib.teflon_native_task_counters
        except AttributeError:  # an older library without counters
            return np.zeros((0, len(COUNTERS)), dtype=np.uint64)
        n = fetch(self._handle, _ffi.NULL, 0)
        out = np.zeros((n, len(COUNTERS)), dtype=np.uint64)
        if n:
            fetch(self._handle, _ffi.cast("uint64_t *", _ffi.from_buffer(out)), n)
        return out

    def task_counters(self) -> list[dict[str, int]]:
        """The last run's counters of each program task (job order): bytes of features, weights and bias/EW
        operands read, bytes written, MACs, simulated nanoseconds, core and simulated start, as the simulator
        counted them."""
        return [dict(zip(COUNTERS, map(int, row), strict=True)) for row in self.task_counter_array()]

    def close(self) -> None:
        if self._handle is not None:
            self._lib.teflon_native_unload(self._handle)
            self._handle = None
            self._device._runner_closed()

    def __del__(self) -> None:
        self.close()
