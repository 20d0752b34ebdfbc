"""Golden check of the etnaviv TP descriptors and PWL LUTs (teflon.etnaviv.tp / .pwl) against Mesa's.

For every TP job of every golden file (../shared/golden/etnaviv-v7 and -v8), built from the job's own
`mesa_lowered_operation` with the golden fake addresses, in `mesa_compat` mode: the number of descriptors (TP
cores used), every word of every descriptor, and the LUT words. The default (non-compat) mode must give the same
words whenever the tensors are square and PAD does not pad along the z axis of its view, which holds for every
golden job. Run directly (`python tests/etnaviv/test_golden_tp.py`) for counts per directory and TP type.

Also: the reference model `tp_execute` reproduces numpy's transpose / pad / space-to-depth on random data with
the descriptors of square and non-square shapes (default mode).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import shared_path
from teflon.etnaviv.desc import TP
from teflon.etnaviv.ops import KIND_TP, TP_TYPES, EtnaOp
from teflon.etnaviv.pwl import f32_to_fp21, logistic_lut, pwl_lut, tp_requant
from teflon.etnaviv.tp import tp_descriptors, tp_execute, tp_run

SHARED = shared_path()
CHIP_DIRS = ("etnaviv-v7", "etnaviv-v8")


def _golden_tp_jobs() -> list[Any]:
    if SHARED is None:
        return [pytest.param(None, id="no-shared-data", marks=pytest.mark.skip(reason="../shared is absent"))]
    params = []
    for d in CHIP_DIRS:
        for f in sorted((SHARED / "golden" / d).glob("*.json")):
            jobs = json.loads(f.read_text())["outputs"]["jobs"]
            for j, job in enumerate(jobs):
                if job["kind"] == "TP":
                    pid = f"{d.split('-')[1]}-{f.stem}-job{j}-{job['tp_type'].lower()}-{len(job['descriptors'])}cores"
                    params.append(pytest.param((f, j), id=pid))
    return params


_CACHE: dict[Path, dict[str, Any]] = {}


def _load(f: Path) -> dict[str, Any]:
    if f not in _CACHE:
        _CACHE.clear()  # files are visited in order; keep one
        _CACHE[f] = json.loads(f.read_text())
    return _CACHE[f]


def _addr(ref: dict[str, Any]) -> int:
    return int(ref["base"], 16) + int(ref["offset"])


def _input_planar(doc: dict[str, Any], op: EtnaOp) -> bool:
    """Whether the job's input tensor holds planar ("NCHW") data, from the golden buffer table."""
    for buf in doc["fake_addresses"]["buffers"]:
        for t in buf.get("mesa_tensors", []):
            if t["idx"] == op.input_tensor:
                return bool(t["actual_layout"] == "NCHW")
    return False


def _chip_tp_cores(doc: dict[str, Any]) -> int:
    return int(doc["chip"]["tp_core_count"])


def compare_job(f: Path, j: int, mesa_compat: bool = True) -> list[str]:
    """Mismatch descriptions for one golden TP job (empty when everything matches)."""
    doc = _load(f)
    job = doc["outputs"]["jobs"][j]
    op = EtnaOp.from_golden(job["mesa_lowered_operation"])
    assert op.type == KIND_TP and TP_TYPES[op.tp_type] == job["tp_type"]
    lut_addr = int(job["pwl_lut"]["addr"], 16) if job.get("pwl_lut") else None
    got = tp_descriptors(op, _chip_tp_cores(doc), _addr(job["input"]), _addr(job["output"]), lut_addr,
                         mesa_compat, in_planar=_input_planar(doc, op))
    want = [[int(w, 16) for w in d["words_hex"]] for d in job["descriptors"]]
    errs = []
    if len(got) != len(want):
        errs.append(f"{len(got)} descriptors, golden {len(want)}")
    for c, (g, w) in enumerate(zip(got, want)):
        for i, (a, b) in enumerate(zip(g, w)):
            if a != b:
                fields = {k: (TP.get(g, k), TP.get(w, k)) for k in (fl.name for fl in TP.fields)
                          if any(p[0] == i for p in TP.field(k).parts) and TP.get(g, k) != TP.get(w, k)}
                errs.append(f"core {c} word {i}: {a:#010x} != golden {b:#010x} {fields}")
    lut = pwl_lut(op)
    if job.get("pwl_lut"):
        want_lut = np.array([int(x, 16) for x in job["pwl_lut"]["words_hex"]], np.uint32)
        if lut is None:
            errs.append("no LUT built")
        elif not np.array_equal(lut, want_lut):
            bad = np.flatnonzero(lut != want_lut)
            errs.append(f"LUT differs at {len(bad)} entries, first {bad[:8].tolist()}")
    elif lut is not None:
        errs.append("LUT built for a job without one")
    return errs


@pytest.mark.parametrize("case", _golden_tp_jobs())
def test_golden_tp_mesa_compat(case: tuple[Path, int]) -> None:
    f, j = case
    errs = compare_job(f, j, mesa_compat=True)
    assert not errs, "\n".join(errs)


@pytest.mark.parametrize("case", _golden_tp_jobs())
def test_golden_tp_default_mode_same_on_square(case: tuple[Path, int]) -> None:
    f, j = case
    errs = compare_job(f, j, mesa_compat=False)
    assert not errs, "\n".join(errs)


# ---- reference model vs numpy ---------------------------------------------------------------------------------

IN_VA, OUT_VA, LUT_VA = 0x10000000, 0x20000000, 0x60000000
RNG = np.random.default_rng(20250612)


def _tp_op(name: str, h: int, w: int, c: int, **kw: Any) -> EtnaOp:
    base: dict[str, Any] = {"type": KIND_TP, "tp_type": TP_TYPES.index(name), "input_width": h, "input_height": w,
                            "input_channels": c, "output_width": h, "output_height": w, "output_channels": c,
                            "input_zero_point": kw.pop("zp", 77), "input_scale": 0.05, "output_scale": 0.05}
    base["output_zero_point"] = base["input_zero_point"]
    base.update(kw)
    return EtnaOp(**base)


SHAPES = [(8, 8, 3), (14, 14, 16), (96, 160, 3), (7, 12, 5), (12, 7, 2), (5, 5, 1)]


@pytest.mark.parametrize("shape", SHAPES, ids=[f"h{h}-w{w}-c{c}" for h, w, c in SHAPES])
def test_model_transpose(shape: tuple[int, int, int]) -> None:
    h, w, c = shape
    x = RNG.integers(0, 256, (h, w, c), dtype=np.uint8)
    descs = tp_descriptors(_tp_op("TRANSPOSE", h, w, c), 4, IN_VA, OUT_VA, None)
    out = tp_run(descs, IN_VA, x, OUT_VA, x.size)
    np.testing.assert_array_equal(out.reshape(c, h, w), x.transpose(2, 0, 1))


@pytest.mark.parametrize("shape", SHAPES, ids=[f"h{h}-w{w}-c{c}" for h, w, c in SHAPES])
def test_model_detranspose(shape: tuple[int, int, int]) -> None:
    h, w, c = shape
    x = RNG.integers(0, 256, (c, h, w), dtype=np.uint8)
    descs = tp_descriptors(_tp_op("DETRANSPOSE", h, w, c), 4, IN_VA, OUT_VA, None)
    out = tp_run(descs, IN_VA, x, OUT_VA, x.size)
    np.testing.assert_array_equal(out.reshape(h, w, c), x.transpose(1, 2, 0))


def _space_to_depth_ref(x: np.ndarray, pad_before: tuple[int, int], oy: int, ox: int, zp: int) -> np.ndarray:
    """[C][H][W] -> [4C][oy][ox]: channel 4c + 2*(row parity) + column parity, zero point outside the image."""
    c, h, w = x.shape
    canvas = np.full((c, 2 * oy, 2 * ox), zp, np.uint8)
    pt, pl = pad_before
    canvas[:, pt:pt + h, pl:pl + w] = x[:, : 2 * oy - pt, : 2 * ox - pl]
    r = canvas.reshape(c, oy, 2, ox, 2)  # c, y2, ry, x2, rx
    return r.transpose(0, 2, 4, 1, 3).reshape(4 * c, oy, ox)


RESHUFFLE_CASES = [  # h, w, c, kernel, same, cores
    (28, 28, 16, 3, True, 4), (28, 28, 16, 3, False, 3), (14, 14, 1, 3, True, 4), (112, 112, 3, 5, True, 4),
    (56, 56, 32, 5, True, 4), (8, 8, 120, 3, True, 3), (96, 160, 3, 3, True, 4), (96, 160, 3, 5, True, 3),
    (15, 9, 4, 3, True, 4), (9, 15, 40, 5, True, 4), (13, 20, 12, 3, False, 4), (20, 13, 30, 3, True, 4),
    (30, 11, 20, 5, True, 3), (11, 30, 3, 3, True, 1),
    (40, 10, 8, 3, True, 4), (50, 20, 12, 5, True, 3), (51, 21, 12, 3, True, 4),  # split along y
]


@pytest.mark.parametrize("case", RESHUFFLE_CASES,
                         ids=[f"h{h}-w{w}-c{c}-k{k}-{'same' if s else 'valid'}-tp{n}"
                              for h, w, c, k, s, n in RESHUFFLE_CASES])
def test_model_reshuffle(case: tuple[int, int, int, int, bool, int]) -> None:
    h, w, c, k, same, ncores = case
    # the lowering's output size: ceil(dim/2) + p (p = 2 for 5x5 SAME, 1 other SAME, 0 VALID)
    p = (2 if k == 5 else 1) if same else 0
    oy, ox = _ceil(h, 2) + p, _ceil(w, 2) + p
    op = _tp_op("RESHUFFLE", h, w, c, output_width=oy, output_height=ox, output_channels=4 * c,
                padding_same=same, weight_width=k, weight_height=k, stride=2, zp=128)
    x = RNG.integers(0, 256, (c, h, w), dtype=np.uint8)
    descs = tp_descriptors(op, ncores, IN_VA, OUT_VA, None)
    out = tp_run(descs, IN_VA, x, OUT_VA, 4 * c * oy * ox)
    # SAME: TensorFlow's pad before the image, which is what the conv after the reshuffle expects
    before = tuple(max((_ceil(d, 2) - 1) * 2 + k - d, 0) // 2 if same else 0 for d in (h, w))
    ref = _space_to_depth_ref(x, before, oy, ox, 128)  # type: ignore[arg-type]
    np.testing.assert_array_equal(out.reshape(4 * c, oy, ox), ref)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


PAD_CASES = [  # h, w, c, (hb, ha, wb, wa, cb, ca), planar, cores
    (28, 28, 16, (1, 1, 1, 1, 0, 0), False, 4), (28, 28, 16, (1, 1, 1, 1, 0, 0), False, 3),
    (10, 6, 5, (0, 2, 2, 0, 0, 0), False, 4), (6, 10, 5, (2, 0, 0, 2, 1, 2), False, 3),
    (9, 7, 3, (1, 2, 0, 1, 2, 1), True, 4), (7, 9, 12, (2, 2, 1, 0, 0, 0), True, 1),
    (1, 9, 4, (0, 0, 1, 2, 2, 0), False, 4),
]


@pytest.mark.parametrize("case", PAD_CASES,
                         ids=[f"h{h}-w{w}-c{c}-p{''.join(map(str, p))}-{'planar' if pl else 'nhwc'}-tp{n}"
                              for h, w, c, p, pl, n in PAD_CASES])
def test_model_pad(case: tuple[int, int, int, tuple[int, ...], bool, int]) -> None:
    h, w, c, pads, planar, ncores = case
    hb, ha, wb, wa, cb, ca = pads
    oh, ow, oc = h + hb + ha, w + wb + wa, c + cb + ca
    op = _tp_op("PAD", h, w, c, output_width=oh, output_height=ow, output_channels=oc, pad=pads, zp=99)
    x = RNG.integers(0, 256, (h, w, c), dtype=np.uint8)
    ref = np.pad(x, ((hb, ha), (wb, wa), (cb, ca)), constant_values=99)
    src = x.transpose(2, 0, 1) if planar else x
    descs = tp_descriptors(op, ncores, IN_VA, OUT_VA, None, in_planar=planar)
    out = tp_run(descs, IN_VA, src, OUT_VA, ref.size)
    got = out.reshape(oc, oh, ow).transpose(1, 2, 0) if planar else out.reshape(oh, ow, oc)
    np.testing.assert_array_equal(got, ref)


PWL_CASES = [("RELU", 28, 28, 32, 4), ("RELU", 4, 4, 8, 4), ("ABSOLUTE", 14, 14, 64, 4), ("ABSOLUTE", 7, 20, 70, 3)]


@pytest.mark.parametrize("case", PWL_CASES, ids=[f"{t.lower()}-h{h}-w{w}-c{c}-tp{n}" for t, h, w, c, n in PWL_CASES])
def test_model_pwl(case: tuple[str, int, int, int, int]) -> None:
    name, h, w, c, ncores = case
    s_in, s_out, zi, zo = 0.07, 0.09, 61, 117
    op = _tp_op(name, h, w, c, input_scale=s_in, output_scale=s_out, zp=zi)
    op.output_zero_point = zo
    x = RNG.integers(0, 256, (h, w, c), dtype=np.uint8)
    lut = pwl_lut(op)
    descs = tp_descriptors(op, ncores, IN_VA, OUT_VA, LUT_VA)
    out = tp_run(descs, IN_VA, x, OUT_VA, x.size, lut).reshape(h, w, c)
    real = (x.astype(np.float64) - zi) * s_in
    real = np.maximum(real, 0) if name == "RELU" else np.abs(real)
    ref = np.clip(np.rint(real / s_out) + zo, 0, 255)
    # the 15-bit multiplier: off by at most one step
    assert np.abs(out.astype(int) - ref).max() <= 1


def test_model_logistic_close() -> None:
    h, w, c = 8, 8, 16
    op = _tp_op("LOGISTIC", h, w, c, input_scale=0.05, output_scale=1 / 256, zp=128)
    op.output_zero_point = 0
    x = RNG.integers(0, 256, (h, w, c), dtype=np.uint8)
    out = tp_run(tp_descriptors(op, 4, IN_VA, OUT_VA, LUT_VA), IN_VA, x, OUT_VA, x.size, pwl_lut(op))
    ref = np.clip(np.rint(256 / (1 + np.exp(-(x.astype(np.float64) - 128) * 0.05))), 0, 255)
    assert np.abs(out.astype(int) - ref.ravel()).max() <= 2


def test_logistic_lut_structure() -> None:
    """The LOGISTIC table layout of etnaviv.md §5.7 (no golden LOGISTIC job is stored locally)."""
    lut = logistic_lut(0.0078125)
    half, one = 0x70000, 0x78000  # fp21(0.5), fp21(1.0)
    assert (lut[:16] == half).all() and (lut[496:512] == one).all()
    assert (lut[512:529] == half).all() and (lut[1008:] == 0).all()
    assert (np.diff(lut[16:496].astype(np.int64)) >= 0).all()  # rising towards 1 for positive inputs
    assert (np.diff(lut[529:1008].astype(np.int64)) <= 0).all()  # falling towards 0 for negative ones
    assert f32_to_fp21(np.float32(1.0)) == one and f32_to_fp21(np.float32(-0.75)) == 0x100000 | 0x74000


def test_tp_requant_logistic_negative_shift() -> None:
    """1/output_scale = 256 needs a left shift: postshift 127 - 135 = -8, written as 7-bit 0x78."""
    op = _tp_op("LOGISTIC", 8, 8, 8, output_scale=1 / 256)
    assert tp_requant(op) == (0, 0x78)


def main() -> None:  # pragma: no cover - report for humans
    for d in CHIP_DIRS:
        jobs: Counter[str] = Counter()
        ok_jobs: Counter[str] = Counter()
        descs = ok_descs = 0
        for param in _golden_tp_jobs():
            f, j = param.values[0]
            if f.parent.name != d:
                continue
            job = _load(f)["outputs"]["jobs"][j]
            key = f"{job['tp_type']}x{len(job['descriptors'])}"
            errs = compare_job(f, j)
            jobs[key] += 1
            descs += len(job["descriptors"])
            ok_jobs[key] += not errs
            ok_descs += len(job["descriptors"]) if not errs else 0
            for e in errs:
                print(f"  MISMATCH {f.stem} job {j}: {e}")
        print(d, f"descriptors {ok_descs}/{descs}",
              ", ".join(f"{k}: {ok_jobs[k]}/{v}" for k, v in sorted(jobs.items())))


if __name__ == "__main__":  # pragma: no cover
    main()


def _maxpool_ref(x: np.ndarray, k: tuple[int, int], s: int, pads: tuple[int, int, int, int]) -> np.ndarray:
    """numpy max pool of an (H, W, C) uint8 map, padding with 0 (the lowest stored value)."""
    (kh, kw), (t, b, left, r) = k, pads
    p = np.pad(x, ((t, b), (left, r), (0, 0)))
    oh, ow = (p.shape[0] - kh) // s + 1, (p.shape[1] - kw) // s + 1
    win = np.lib.stride_tricks.sliding_window_view(p, (kh, kw), axis=(0, 1))
    return win[: (oh - 1) * s + 1 : s, : (ow - 1) * s + 1 : s].max(axis=(-2, -1))


MAXPOOL_CASES = [((114, 114, 24), (3, 3), 2, (0, 0, 0, 0), 4), ((20, 20, 16), (3, 3), 1, (1, 1, 1, 1), 3),
                 ((9, 70, 5), (3, 2), 2, (0, 1, 0, 0), 4), ((13, 17, 8), (2, 2), 1, (0, 1, 0, 1), 1),
                 ((16, 16, 2), (2, 2), 2, (0, 0, 0, 0), 3)]


@pytest.mark.parametrize("case", MAXPOOL_CASES,
                         ids=[f"h{h}-w{w}-c{c}-k{kh}x{kw}-s{s}-tp{n}" for (h, w, c), (kh, kw), s, _, n in MAXPOOL_CASES])
def test_model_maxpool(case: tuple[tuple[int, int, int], tuple[int, int], int, tuple[int, int, int, int], int]) -> None:
    """The MAXPOOL descriptors (overlapping tiles, pooled out loops) give numpy's max pool in the reference model."""
    (h, w, c), (kh, kw), s, pads, ncores = case
    x = RNG.integers(0, 256, (h, w, c), dtype=np.uint8)
    ref = _maxpool_ref(x, (kh, kw), s, pads)
    oh, ow = ref.shape[:2]
    op = _tp_op("MAXPOOL", h, w, c, output_width=oh, output_height=ow, stride=s, weight_width=kh, weight_height=kw,
                pad=(*pads, 0, 0))
    descs = tp_descriptors(op, ncores, IN_VA, OUT_VA, None)
    out = tp_run(descs, IN_VA, x.transpose(2, 0, 1), OUT_VA, ref.size)
    np.testing.assert_array_equal(out.reshape(c, oh, ow).transpose(1, 2, 0), ref)


UPSAMPLE_CASES = [((20, 20, 16), True, 4), ((7, 9, 3), False, 3), ((5, 1, 4), True, 4), ((1, 6, 1), False, 1)]


@pytest.mark.parametrize("case", UPSAMPLE_CASES,
                         ids=[f"h{h}-w{w}-c{c}-{'planar' if p else 'nhwc'}-tp{n}" for (h, w, c), p, n in UPSAMPLE_CASES])
def test_model_upsample(case: tuple[tuple[int, int, int], bool, int]) -> None:
    """The four UPSAMPLE phases together write numpy's nearest-neighbour x2 repeat, in either layout."""
    (h, w, c), planar, ncores = case
    x = RNG.integers(0, 256, (h, w, c), dtype=np.uint8)
    ref = x.repeat(2, axis=0).repeat(2, axis=1)
    mem = {IN_VA: (x.transpose(2, 0, 1) if planar else x).ravel().copy(), OUT_VA: np.zeros(ref.size, np.uint8)}
    for phase in range(4):
        op = _tp_op("UPSAMPLE", h, w, c, output_width=2 * h, output_height=2 * w, phase=phase)
        tp_execute(tp_descriptors(op, ncores, IN_VA, OUT_VA, None, in_planar=planar), mem)
    got = mem[OUT_VA].reshape(c, 2 * h, 2 * w).transpose(1, 2, 0) if planar else mem[OUT_VA].reshape(2 * h, 2 * w, c)
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("shape", [(400, 3, 85), (1, 40000, 1), (300, 2, 130)], ids=["h400-w3-c85", "h1-w40000-c1",
                                                                                      "h300-w2-c130"])
def test_model_detranspose_tall(shape: tuple[int, int, int]) -> None:
    """More planar rows (H * C) than the 16-bit window fields hold: the default mode reads k rows as one (YOLOv5n's
    head, DeepLab's output) and still writes the NHWC bytes; the descriptor stays inside every field's range."""
    h, w, c = shape
    x = RNG.integers(0, 256, (h, w, c), dtype=np.uint8)
    op = _tp_op("DETRANSPOSE", h, w, c)
    descs = tp_descriptors(op, 1, IN_VA, OUT_VA, None)
    d = TP.decode(list(descs[0]))
    assert d["in_window_y_end"] <= 0x7FFF and d["in_window_x_end"] <= 0x7FFF
    out = tp_run(descs, IN_VA, x.transpose(2, 0, 1), OUT_VA, x.size)
    np.testing.assert_array_equal(out.reshape(h, w, c), x)
