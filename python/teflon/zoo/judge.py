"""The task-level rules: is the delegate's answer the CPU's, as the model's user would judge it?

- classification: top-1 equal (ties allowed) and >= 99.5 % of the output elements within 6 LSB
- detection: the CPU's and the delegate's confident detections match one to one (same class, IoU >= 0.8, score
  within 0.1); a detection within 0.1 of the threshold may go either way
- segmentation: >= 98 % of the pixel labels equal
- pose: keypoints the CPU scores >= 0.3 within 0.03 (normalised), every keypoint score within 0.15
- anything else: >= 99 % of the output elements within 6 LSB
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from teflon.reference import MODEL_LSB, Comparison, compare
from teflon.zoo.post import Detections, Keypoints, iou_matrix, top1

CLASSIFY_MIN_WITHIN = 0.995
OTHER_MIN_WITHIN = 0.99
DETECT_MIN_IOU = 0.8
DETECT_SCORE_TOLERANCE = 0.1
DETECT_THRESHOLD_MARGIN = 0.1
SEGMENT_MIN_EQUAL = 0.98
POSE_MIN_SCORE = 0.3
POSE_POSITION_TOLERANCE = 0.03
POSE_SCORE_TOLERANCE = 0.15


@dataclass(frozen=True)
class Verdict:
    passed: bool
    figures: str  # the task-level figures, pass or fail
    reason: str = ""  # why it failed


def lsb_comparison(ref: Sequence[np.ndarray], out: Sequence[np.ndarray],
                   lsb: Sequence[float | None]) -> Comparison:
    """teflon.reference.compare over every output, float outputs first counted in units of `lsb` (the scale of
    the quantized tensor they were dequantized from; None: compared as they are)."""
    def units(a: np.ndarray, step: float | None) -> np.ndarray:
        if a.dtype.kind != "f":
            return a
        return np.round(a.astype(np.float64) / step).astype(np.int64) if step else a.astype(np.int64)

    return compare([units(r, s) for r, s in zip(ref, lsb, strict=True)],
                   [units(o, s) for o, s in zip(out, lsb, strict=True)])


def _within(cmp: Comparison, minimum: float) -> tuple[bool, str]:
    ok = cmp.within_model_lsb >= minimum
    return ok, "" if ok else (f"{100 * cmp.within_model_lsb:.2f} % of the outputs within {MODEL_LSB} LSB "
                              f"(needs {100 * minimum:.1f} %)")


def classification(ref_scores: np.ndarray, npu_scores: np.ndarray, cmp: Comparison) -> Verdict:
    cpu_top = top1(ref_scores)
    npu_top = int(np.argmax(npu_scores.reshape(-1)))
    figures = f"top-1 cpu {sorted(cpu_top)} npu {npu_top}"
    if npu_top not in cpu_top:
        return Verdict(False, figures, f"top-1 changed: CPU {sorted(cpu_top)}, delegate {npu_top}")
    ok, why = _within(cmp, CLASSIFY_MIN_WITHIN)
    return Verdict(ok, figures, why)


def elements(cmp: Comparison) -> Verdict:
    ok, why = _within(cmp, OTHER_MIN_WITHIN)
    return Verdict(ok, f"{100 * cmp.within_model_lsb:.2f} % within {MODEL_LSB} LSB", why)


def segmentation(ref_labels: np.ndarray, npu_labels: np.ndarray) -> Verdict:
    equal = float(np.count_nonzero(ref_labels == npu_labels) / ref_labels.size)
    figures = f"{100 * equal:.2f} % of {ref_labels.size} pixel labels equal"
    ok = equal >= SEGMENT_MIN_EQUAL
    return Verdict(ok, figures, "" if ok else f"only {figures} (needs {100 * SEGMENT_MIN_EQUAL:.0f} %)")


def match_detections(ref: Detections, npu: Detections) -> list[tuple[int, int]]:
    """One-to-one pairs (cpu index, npu index): same class, IoU >= 0.8, scores within 0.1; the best IoU first."""
    if not len(ref) or not len(npu):
        return []
    iou = iou_matrix(ref.boxes, npu.boxes)
    ok = ((ref.classes[:, None] == npu.classes[None, :]) & (iou >= DETECT_MIN_IOU)
          & (np.abs(ref.scores[:, None] - npu.scores[None, :]) <= DETECT_SCORE_TOLERANCE))
    cand_i, cand_j = np.nonzero(ok)
    pairs, used_i, used_j = [], set(), set()
    for k in np.argsort(-iou[cand_i, cand_j], kind="stable"):  # greedy over the few candidate pairs
        i, j = int(cand_i[k]), int(cand_j[k])
        if i not in used_i and j not in used_j:
            pairs.append((i, j))
            used_i.add(i)
            used_j.add(j)
    return pairs


def _must_match(d: Detections, unmatched: np.ndarray) -> np.ndarray:
    """Unmatched detections that are not within the margin of the threshold (those may go either way)."""
    return unmatched[d.scores[unmatched] >= d.threshold + DETECT_THRESHOLD_MARGIN]


def detection(ref: Detections, npu: Detections) -> Verdict:
    pairs = match_detections(ref, npu)
    lone_ref = np.setdiff1d(np.arange(len(ref)), [i for i, _ in pairs])
    lone_npu = np.setdiff1d(np.arange(len(npu)), [j for _, j in pairs])
    if pairs:
        iou = iou_matrix(ref.boxes, npu.boxes)
        worst_iou = min(float(iou[i, j]) for i, j in pairs)
        worst_score = max(abs(float(ref.scores[i] - npu.scores[j])) for i, j in pairs)
        pair_figures = f", worst IoU {worst_iou:.3f}, worst score diff {worst_score:.3f}"
    else:
        pair_figures = ""
    figures = (f"{len(ref.confident())} cpu / {len(npu.confident())} npu confident detections, {len(pairs)} "
               f"matched{pair_figures}")
    missing, extra = _must_match(ref, lone_ref), _must_match(npu, lone_npu)
    if not len(missing) and not len(extra):
        return Verdict(True, figures)
    why = "; ".join([f"cpu class {ref.classes[i]} score {ref.scores[i]:.3f} box "
                     f"{np.round(ref.boxes[i], 3).tolist()} unmatched" for i in missing]
                    + [f"npu class {npu.classes[j]} score {npu.scores[j]:.3f} box "
                       f"{np.round(npu.boxes[j], 3).tolist()} unmatched" for j in extra])
    return Verdict(False, figures, why)


def pose(ref: Keypoints, npu: Keypoints) -> Verdict:
    seen = ref.scores >= POSE_MIN_SCORE
    position = float(np.abs(ref.yx[seen] - npu.yx[seen]).max()) if seen.any() else 0.0
    score = float(np.abs(ref.scores - npu.scores).max()) if ref.scores.size else 0.0
    figures = (f"{int(seen.sum())} keypoints scored >= {POSE_MIN_SCORE}: worst position diff {position:.4f}, "
               f"worst score diff {score:.3f}")
    why = []
    if position > POSE_POSITION_TOLERANCE:
        why.append(f"a keypoint moved {position:.4f} (allowed {POSE_POSITION_TOLERANCE})")
    if score > POSE_SCORE_TOLERANCE:
        why.append(f"a keypoint score changed {score:.3f} (allowed {POSE_SCORE_TOLERANCE})")
    return Verdict(not why, figures, "; ".join(why))
