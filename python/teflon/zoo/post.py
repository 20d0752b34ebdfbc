"""Each task's post-processing, in numpy, from a model's output arrays (and their quantization).

- classification: the scores (dequantized, so a float and a quantized output read alike)
- detection: `Detections` (boxes x1, y1, x2, y2 normalised, scores, classes) after the model's own decoding:
  TFLite_Detection_PostProcess outputs (ssd), YOLOv5's [1, N, 5 + classes] (yolov5), the Ultra-Light face
  detector's decoded boxes and softmax scores (ultraface), RetinaFace's anchor offsets (retinaface)
- segmentation: one label per pixel (an in-graph ArgMax, or the argmax of a class axis)
- pose: `Keypoints` from a MoveNet-style [1, 1, K, 3] (y, x, score) output
Detections are kept down to `threshold - margin`, so a judge sees the ones near the threshold on both sides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from teflon.modelgen import TensorInfo


def dequantize(a: np.ndarray, info: TensorInfo) -> np.ndarray:
    """Real values of an output: (q - zero point) * scale, or the array itself when it is not quantized."""
    if info.scale == 0.0 or a.dtype.kind == "f":
        return a.astype(np.float64)
    return (a.astype(np.float64) - info.zero_point) * info.scale


# --------------------------------------------------------------------------------------------------------------
# Classification, segmentation
# --------------------------------------------------------------------------------------------------------------


def top1(scores: np.ndarray) -> set[int]:
    """Every index holding the highest score (ties are all acceptable answers)."""
    flat = scores.reshape(-1)
    return {int(i) for i in np.flatnonzero(flat == flat.max())}


def segment_labels(output: np.ndarray) -> np.ndarray:
    """One label per pixel: an ArgMax output ([1, H, W] integers) as-is, else the argmax of the last axis."""
    if output.ndim == 4:
        return np.argmax(output[0], axis=-1)
    if output.ndim == 3:
        return output[0]
    raise ValueError(f"a segmentation output needs [1, H, W] labels or [1, H, W, classes] scores, not {output.shape}")


# --------------------------------------------------------------------------------------------------------------
# Detection
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Detections:
    boxes: np.ndarray  # [n, 4] x1, y1, x2, y2 (normalised)
    scores: np.ndarray  # [n]
    classes: np.ndarray  # [n] int
    threshold: float  # the task's confidence threshold (the arrays also hold those down to threshold - margin)

    def __len__(self) -> int:
        return int(self.scores.shape[0])

    def confident(self) -> Detections:
        keep = self.scores >= self.threshold
        return Detections(self.boxes[keep], self.scores[keep], self.classes[keep], self.threshold)


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of every box of `a` [n, 4] with every box of `b` [m, 4] (x1, y1, x2, y2)."""
    x1 = np.maximum(a[:, None, 0], b[None, :, 0])
    y1 = np.maximum(a[:, None, 1], b[None, :, 1])
    x2 = np.minimum(a[:, None, 2], b[None, :, 2])
    y2 = np.minimum(a[:, None, 3], b[None, :, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    area_a = np.clip(a[:, 2] - a[:, 0], 0, None) * np.clip(a[:, 3] - a[:, 1], 0, None)
    area_b = np.clip(b[:, 2] - b[:, 0], 0, None) * np.clip(b[:, 3] - b[:, 1], 0, None)
    union = area_a[:, None] + area_b[None, :] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)


def nms(boxes: np.ndarray, scores: np.ndarray, iou: float) -> np.ndarray:
    """Indices kept by greedy non-maximum suppression, best score first (ties in input order)."""
    order = np.argsort(-scores, kind="stable")
    overlaps = iou_matrix(boxes[order], boxes[order])
    alive = np.ones(order.size, bool)
    for i in range(order.size):  # greedy over the (few, thresholded) candidates: each step depends on the last
        if alive[i]:
            alive[i + 1:] &= overlaps[i, i + 1:] < iou
    return order[alive]


def _select(boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray, threshold: float, margin: float,
            iou: float, classwise: bool, top: int) -> Detections:
    """Candidates at or above threshold - margin, NMS (per class when `classwise`), the `top` best."""
    keep = np.flatnonzero(scores >= threshold - margin)
    boxes, scores, classes = boxes[keep], scores[keep], classes[keep]
    if classwise:
        kept = np.concatenate([np.flatnonzero(classes == c)[nms(boxes[classes == c], scores[classes == c], iou)]
                               for c in np.unique(classes)] or [np.zeros(0, np.int64)])
    else:
        kept = nms(boxes, scores, iou)
    kept = kept[np.argsort(-scores[kept], kind="stable")][:top]
    return Detections(boxes[kept], scores[kept], classes[kept].astype(np.int64), threshold)


def xywh_to_xyxy(b: np.ndarray) -> np.ndarray:
    half = b[:, 2:4] / 2
    return np.concatenate([b[:, 0:2] - half, b[:, 0:2] + half], axis=1)


def ssd(outputs: Sequence[np.ndarray], threshold: float = 0.3, margin: float = 0.1) -> Detections:
    """TFLite_Detection_PostProcess outputs: boxes [1, N, 4] (ymin, xmin, ymax, xmax), classes [1, N], scores [1, N],
    count [1] (NMS already done in the graph)."""
    boxes, classes, scores, count = (np.asarray(o, np.float64) for o in outputs[:4])
    n = int(count.reshape(-1)[0])
    yx = boxes[0, :n]
    keep = scores[0, :n] >= threshold - margin
    return Detections(yx[keep][:, [1, 0, 3, 2]], scores[0, :n][keep], classes[0, :n][keep].astype(np.int64),
                      threshold)


def yolov5(outputs: Sequence[np.ndarray], infos: Sequence[TensorInfo], threshold: float = 0.4,
           margin: float = 0.1, iou: float = 0.45, top: int = 100) -> Detections:
    """YOLOv5's [1, N, 5 + classes] output: cx, cy, w, h, objectness, class probabilities; score = obj * cls,
    class-wise NMS."""
    y = dequantize(outputs[0], infos[0])[0]
    scores_all = y[:, 4:5] * y[:, 5:]
    classes, scores = scores_all.argmax(axis=1), scores_all.max(axis=1)
    return _select(xywh_to_xyxy(y[:, :4]), scores, classes, threshold, margin, iou, True, top)


def _by_last_axis(outputs: Sequence[np.ndarray], infos: Sequence[TensorInfo]) -> dict[int, np.ndarray]:
    return {int(o.shape[-1]): dequantize(o, info)[0] for o, info in zip(outputs, infos, strict=True)}


def ultraface(outputs: Sequence[np.ndarray], infos: Sequence[TensorInfo], threshold: float = 0.7,
              margin: float = 0.1, iou: float = 0.3, top: int = 100) -> Detections:
    """Decoded boxes [1, N, 4] (x1, y1, x2, y2) and softmax scores [1, N, 2] (index 1 = face); NMS outside."""
    by_last = _by_last_axis(outputs, infos)
    boxes, scores = by_last[4], by_last[2][:, 1]
    return _select(boxes, scores, np.zeros(scores.shape, np.int64), threshold, margin, iou, False, top)


def retinaface_priors(height: int, width: int) -> np.ndarray:
    """RetinaFace's anchors (cx, cy, w, h normalised): two sizes per cell at strides 8, 16, 32."""
    rows = []
    for sizes, step in (((16, 32), 8), ((64, 128), 16), ((256, 512), 32)):
        fh, fw = -(-height // step), -(-width // step)
        cy, cx = np.meshgrid((np.arange(fh) + 0.5) * step / height, (np.arange(fw) + 0.5) * step / width,
                             indexing="ij")
        cells = np.stack([cx.ravel(), cy.ravel()], axis=1)
        for_cell = [np.concatenate([cells, np.tile([s / width, s / height], (cells.shape[0], 1))], axis=1)
                    for s in sizes]
        rows.append(np.stack(for_cell, axis=1).reshape(-1, 4))  # cell-major, sizes inner
    return np.concatenate(rows)


def retinaface(outputs: Sequence[np.ndarray], infos: Sequence[TensorInfo], input_hw: tuple[int, int],
               threshold: float = 0.85, margin: float = 0.1, iou: float = 0.4, top: int = 100) -> Detections:
    """RetinaFace's raw heads: loc [1, N, 4] offsets from the anchors (variances 0.1, 0.2), conf [1, N, 2]."""
    by_last = _by_last_axis(outputs, infos)
    loc, conf = by_last[4], by_last[2]
    pri = retinaface_priors(*input_hw)
    centre = pri[:, :2] + loc[:, :2] * 0.1 * pri[:, 2:]
    size = pri[:, 2:] * np.exp(loc[:, 2:] * 0.2)
    boxes = np.concatenate([centre - size / 2, centre + size / 2], axis=1)
    scores = conf[:, 1]
    return _select(boxes, scores, np.zeros(scores.shape, np.int64), threshold, margin, iou, False, top)


# --------------------------------------------------------------------------------------------------------------
# Pose
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Keypoints:
    yx: np.ndarray  # [k, 2] normalised
    scores: np.ndarray  # [k]


def movenet(outputs: Sequence[np.ndarray], infos: Sequence[TensorInfo]) -> Keypoints:
    """MoveNet-style keypoints [1, 1, K, 3] = y, x, score."""
    k = dequantize(outputs[0], infos[0]).reshape(-1, 3)
    return Keypoints(k[:, :2], k[:, 2])
