"""The zoo suite's post-processing and task judges (teflon.zoo) on synthetic arrays: no model, no ../shared."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from teflon.modelgen import TensorInfo
from teflon.zoo import judge, post
from teflon.zoo.expectations import load_expectations
from teflon.zoo.inputs import make_input
from teflon.zoo.run import output_lsb
from teflon.zoo.spec import Prep, read_spec, spec_for_model

U8 = TensorInfo(0, "out", (1, 10), "uint8", 0.1, 0)


def _dets(boxes: list[list[float]], scores: list[float], classes: list[int], threshold: float = 0.5
          ) -> post.Detections:
    return post.Detections(np.array(boxes, np.float64).reshape(-1, 4), np.array(scores, np.float64),
                           np.array(classes, np.int64), threshold)


# ---------------------------------------------------------------------------------------------------- classification


def test_classification_tie_allows_any_tied_index() -> None:
    ref = np.array([[0, 255, 255, 3]], np.uint8)
    out = np.array([[0, 254, 255, 3]], np.uint8)
    verdict = judge.classification(ref, out, judge.lsb_comparison([ref], [out], [None]))
    assert verdict.passed, verdict


def test_classification_fails_on_changed_top1() -> None:
    ref = np.array([[0, 200, 10]], np.uint8)
    out = np.array([[0, 10, 200]], np.uint8)
    verdict = judge.classification(ref, out, judge.lsb_comparison([ref], [out], [None]))
    assert not verdict.passed and "top-1 changed" in verdict.reason


def test_classification_fails_on_far_outputs_with_same_top1() -> None:
    ref = np.zeros((1, 1000), np.uint8)
    ref[0, 0] = 250
    out = ref.copy()
    out[0, 1:11] = 7  # 1 % of the elements 7 LSB off: top-1 kept, below 99.5 % within 6 LSB
    verdict = judge.classification(ref, out, judge.lsb_comparison([ref], [out], [None]))
    assert not verdict.passed and "within 6 LSB" in verdict.reason


def test_lsb_comparison_counts_float_outputs_in_their_quantized_steps() -> None:
    ref = np.array([0.0, 0.5, 1.0], np.float32)
    out = np.array([0.0, 0.75, 1.0], np.float32)
    cmp = judge.lsb_comparison([ref], [out], [0.125])
    assert cmp.max_abs_diff == 2 and cmp.exact_fraction == pytest.approx(2 / 3)


def test_elements_rule_is_99_percent_within_6_lsb() -> None:
    ref = np.zeros(1000, np.int8)
    out = ref.copy()
    out[:10] = 7
    assert judge.elements(judge.lsb_comparison([ref], [out], [None])).passed
    out[:11] = 7
    assert not judge.elements(judge.lsb_comparison([ref], [out], [None])).passed


def test_dequantize() -> None:
    a = np.array([3, 13], np.uint8)
    assert post.dequantize(a, TensorInfo(0, "o", (2,), "uint8", 0.5, 3)).tolist() == [0.0, 5.0]
    f = np.array([0.25], np.float32)
    assert post.dequantize(f, TensorInfo(0, "o", (1,), "float32")).tolist() == [0.25]


# ---------------------------------------------------------------------------------------------------- detection


def test_iou_and_nms() -> None:
    boxes = np.array([[0, 0, 1, 1], [0, 0, 1, 0.9], [2, 2, 3, 3]], np.float64)
    assert post.iou_matrix(boxes[:1], boxes[1:]).tolist() == [[pytest.approx(0.9), 0.0]]
    keep = post.nms(boxes, np.array([0.8, 0.9, 0.5]), iou=0.5)
    assert keep.tolist() == [1, 2]


def test_detections_match_one_to_one() -> None:
    ref = _dets([[0, 0, 0.5, 0.5], [0.5, 0.5, 1, 1]], [0.9, 0.8], [1, 2])
    out = _dets([[0.51, 0.5, 1, 1], [0, 0, 0.5, 0.49]], [0.85, 0.95], [2, 1])
    verdict = judge.detection(ref, out)
    assert verdict.passed, verdict
    assert "2 matched" in verdict.figures


@pytest.mark.parametrize(("change", "passes"), [
    ("none", True), ("class", False), ("iou", False), ("score", False), ("missing", False)])
def test_detection_rules(change: str, passes: bool) -> None:
    ref = _dets([[0, 0, 0.5, 0.5]], [0.9], [1])
    box, score, cls = [0, 0, 0.5, 0.5], 0.9, 1
    if change == "class":
        cls = 2
    elif change == "iou":
        box = [0, 0, 0.5, 0.35]  # IoU 0.7
    elif change == "score":
        score = 0.75
    out = _dets([] if change == "missing" else [box], [] if change == "missing" else [score],
                [] if change == "missing" else [cls])
    assert judge.detection(ref, out).passed is passes


@pytest.mark.parametrize(("score", "passes"), [(0.45, True), (0.55, True), (0.61, False)])
def test_detection_near_threshold_may_go_either_way(score: float, passes: bool) -> None:
    ref = _dets([[0, 0, 0.5, 0.5]], [score], [0], threshold=0.5)
    out = _dets([], [], [], threshold=0.5)
    assert judge.detection(ref, out).passed is passes
    assert judge.detection(out, ref).passed is passes


def test_yolov5_decode_scores_and_nms() -> None:
    y = np.zeros((1, 4, 7), np.float64)  # cx, cy, w, h, obj, two classes
    y[0, 0] = [0.5, 0.5, 0.2, 0.2, 1.0, 0.9, 0.1]
    y[0, 1] = [0.51, 0.5, 0.2, 0.2, 1.0, 0.8, 0.1]  # suppressed by the first (same class, IoU ~0.9)
    y[0, 2] = [0.51, 0.5, 0.2, 0.2, 1.0, 0.1, 0.7]  # other class: kept
    y[0, 3] = [0.2, 0.2, 0.1, 0.1, 0.2, 0.9, 0.0]  # score 0.18: dropped
    info = TensorInfo(0, "out", y.shape, "float32")
    d = post.yolov5([y.astype(np.float32)], [info], threshold=0.4)
    assert d.classes.tolist() == [0, 1]
    assert d.boxes[0] == pytest.approx([0.4, 0.4, 0.6, 0.6])
    assert d.scores == pytest.approx([0.9, 0.7])


def test_ultraface_picks_face_scores_and_threshold_margin() -> None:
    boxes = np.array([[[0, 0, 0.2, 0.2], [0.5, 0.5, 0.7, 0.7], [0.8, 0.8, 0.9, 0.9]]], np.float32)
    scores = np.array([[[0.1, 0.9], [0.35, 0.65], [0.5, 0.5]]], np.float32)
    infos = [TensorInfo(0, "scores", scores.shape, "float32"), TensorInfo(1, "boxes", boxes.shape, "float32")]
    d = post.ultraface([scores, boxes], infos, threshold=0.7)
    assert d.scores == pytest.approx([0.9, 0.65])  # 0.65 is within the 0.1 margin, 0.5 is not
    assert len(d.confident()) == 1


def test_ssd_reorders_to_x1y1x2y2_and_counts() -> None:
    boxes = np.array([[[0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1]]], np.float32)
    classes = np.array([[3, 4]], np.float32)
    scores = np.array([[0.9, 0.8]], np.float32)
    d = post.ssd([boxes, classes, scores, np.array([1], np.float32)])
    assert d.boxes.tolist() == [pytest.approx([0.2, 0.1, 0.4, 0.3])] and d.classes.tolist() == [3]


def test_retinaface_priors_and_zero_offsets() -> None:
    pri = post.retinaface_priors(32, 32)
    assert pri.shape == ((4 * 4 + 2 * 2 + 1) * 2, 4)
    assert pri[0] == pytest.approx([4 / 32, 4 / 32, 16 / 32, 16 / 32])
    assert pri[1] == pytest.approx([4 / 32, 4 / 32, 1.0, 1.0])
    assert pri[2] == pytest.approx([12 / 32, 4 / 32, 0.5, 0.5])  # cells row-major, x fastest
    loc = np.zeros((1, pri.shape[0], 4), np.float32)
    conf = np.zeros((1, pri.shape[0], 2), np.float32)
    conf[0, 0, 1] = 0.99
    infos = [TensorInfo(0, "loc", loc.shape, "float32"), TensorInfo(1, "conf", conf.shape, "float32")]
    d = post.retinaface([loc, conf], infos, (32, 32))
    assert len(d) == 1 and d.boxes[0] == pytest.approx([-0.125, -0.125, 0.375, 0.375])


# ---------------------------------------------------------------------------------------------------- segmentation, pose


def test_segmentation_labels_and_rule() -> None:
    scores = np.zeros((1, 10, 10, 3), np.uint8)
    scores[0, :, :, 2] = 5
    assert (post.segment_labels(scores) == 2).all()
    ref = np.zeros((1, 10, 10), np.int64)
    out = ref.copy()
    out[0, 0, :2] = 1  # 98 % equal
    assert judge.segmentation(post.segment_labels(ref), post.segment_labels(out)).passed
    out[0, 0, 2] = 1
    assert not judge.segmentation(post.segment_labels(ref), post.segment_labels(out)).passed


def test_pose_rules() -> None:
    info = TensorInfo(0, "kp", (1, 1, 2, 3), "float32")
    ref = post.movenet([np.array([[[[0.5, 0.5, 0.9], [0.1, 0.1, 0.1]]]], np.float32)], [info])
    near = post.movenet([np.array([[[[0.52, 0.5, 0.8], [0.5, 0.5, 0.2]]]], np.float32)], [info])
    assert judge.pose(ref, near).passed  # the moved keypoint is scored below 0.3
    moved = post.movenet([np.array([[[[0.54, 0.5, 0.9], [0.1, 0.1, 0.1]]]], np.float32)], [info])
    assert not judge.pose(ref, moved).passed
    rescored = post.movenet([np.array([[[[0.5, 0.5, 0.7], [0.1, 0.1, 0.1]]]], np.float32)], [info])
    assert not judge.pose(ref, rescored).passed


# ---------------------------------------------------------------------------------------------------- spec, inputs, file


def test_spec_resolves_paths_and_prep(tmp_path: Path) -> None:
    (tmp_path / "spec.json").write_text(json.dumps([
        {"model": "m.tflite", "image": "a.bmp", "task": "classify", "prep": {"layout": "nchw", "norm": "unit"},
         "labels": "l.txt", "label_offset": 1},
        {"model": "n.tflite", "image": "x.bin", "inputs": ["x.bin", "y.bin"], "task": "other"}]))
    m, n = read_spec(tmp_path / "spec.json")
    assert m.name == "m" and m.inputs == (tmp_path / "a.bmp",) and m.prep == Prep("nchw", "rgb", "unit")
    assert m.labels == tmp_path / "l.txt" and m.label_offset == 1 and m.post == "classify"
    assert [p.name for p in n.inputs] == ["x.bin", "y.bin"] and n.prep == Prep()
    (tmp_path / "spec.json").write_text(json.dumps([{"model": "m.tflite", "image": "a", "task": "juggle"}]))
    with pytest.raises(ValueError, match="unknown task"):
        read_spec(tmp_path / "spec.json")


def test_spec_for_model_reads_only_its_own_directory(tmp_path: Path) -> None:
    """compare's judge: the spec.json next to the model (a broken one is a reason, never an error; nothing below the
    directory is read), and the classifier rule only for a model whose one output is a score vector."""
    for name in ("det.tflite", "cls.tflite", "a.bmp"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "spec.json").write_text(json.dumps([{"model": "x.tflite", "image": "a", "task": "juggle"}]))
    assert spec_for_model(tmp_path / "det.tflite", [(1, 10, 4), (1, 10)]) == (None, "no spec.json entry")
    spec, why = spec_for_model(tmp_path / "cls.tflite", [(1, 1001)])
    assert spec is not None and spec.task == "classify" and spec.inputs == (tmp_path / "a.bmp",) and why == ""
    assert spec_for_model(tmp_path / "cls.tflite", [(1, 1)])[0] is None  # one score (a wake word): no classes
    (tmp_path / "spec.json").write_text(json.dumps([{"model": "det.tflite", "image": "a.bmp", "task": "detect"}]))
    spec, _ = spec_for_model(tmp_path / "det.tflite", [(1, 10, 4), (1, 10)])
    assert spec is not None and spec.task == "detect"
    (tmp_path / "spec.json").write_text(json.dumps([{"model": "det.tflite", "image": "a", "task": "juggle"}]))
    spec, why = spec_for_model(tmp_path / "det.tflite", [(1, 10, 4)])
    assert spec is None and "unknown task" in why


def test_make_input_layouts_norms_and_grey(tmp_path: Path) -> None:
    from PIL import Image

    rgb = np.zeros((4, 6, 3), np.uint8)
    rgb[..., 0], rgb[..., 1], rgb[..., 2] = 10, 20, 30
    Image.fromarray(rgb).save(tmp_path / "img.bmp")
    nchw = make_input(tmp_path / "img.bmp", TensorInfo(0, "in", (1, 3, 4, 6), "uint8", 1 / 255, 0), Prep("nchw"))
    assert nchw.shape == (1, 3, 4, 6) and nchw[0, :, 0, 0].tolist() == [10, 20, 30]
    unit = make_input(tmp_path / "img.bmp", TensorInfo(0, "in", (1, 4, 6, 3), "int8", 1 / 255, -128),
                      Prep(norm="unit"))
    assert unit[0, 0, 0].tolist() == [-118, -108, -98]
    flt = make_input(tmp_path / "img.bmp", TensorInfo(0, "in", (1, 4, 6, 3), "float32"), Prep(norm="unit"))
    assert flt.dtype == np.float32 and flt[0, 0, 0, 0] == pytest.approx(10 / 255)
    grey = make_input(tmp_path / "img.bmp", TensorInfo(0, "in", (1, 4, 6), "uint8", 1 / 255, 0), Prep())
    assert grey.shape == (1, 4, 6) and 10 < int(grey[0, 0, 0]) < 30
    raw = np.arange(24, dtype=np.int8)
    raw.tofile(tmp_path / "x.bin")
    assert make_input(tmp_path / "x.bin", TensorInfo(0, "in", (1, 4, 6), "int8"), Prep()).ravel().tolist() \
        == raw.tolist()


def test_expectations_need_a_measured_cause(tmp_path: Path) -> None:
    path = tmp_path / "e.toml"
    path.write_text('["m".rk3588]\ninputs = ["cat"]\ncause = "node 3 CONV_2D 1 LSB low"\n'
                    '["m".a311d]\ncause = "9 partitions: TRANSPOSE"\n')
    exp = load_expectations(path)
    assert exp.expected("m", "cat", "rk3588") is not None
    assert exp.expected("m", "dog", "rk3588") is None
    assert exp.expected("m", "dog", "a311d") is not None
    assert exp.expected("m", "cat", "imx8mp") is None
    path.write_text('["m".rk3588]\ncause = "unknown"\n')
    with pytest.raises(ValueError, match="measured cause"):
        load_expectations(path)
    assert not load_expectations(tmp_path / "absent.toml").entries


@pytest.mark.parametrize(("listed", "passed", "kind", "says"), [
    (False, True, "pass", "ok"), (True, False, "xfail", "expected (node 3"), (False, False, "fail", "new failure"),
    (True, True, "fail", "now passes")])
def test_expectations_are_strict_both_ways(tmp_path: Path, listed: bool, passed: bool, kind: str, says: str) -> None:
    path = tmp_path / "e.toml"
    path.write_text('["m".rk3588]\ncause = "node 3 CONV_2D 1 LSB low"\n' if listed else "")
    outcome = load_expectations(path).outcome("m", "cat", "rk3588", passed, "ok")
    assert outcome.kind == kind and says in outcome.message


def test_output_lsb_of_a_dequantized_output_and_scalar_tensors() -> None:
    from tflite.BuiltinOperator import BuiltinOperator

    from teflon.modelgen import GraphBuilder, QParams, graph_outputs, operators, tensor_infos

    g = GraphBuilder()
    x = g.tensor("x", (1, 4), "int8", QParams.make(0.25, 3))
    y = g.tensor("y", (1, 4), "float32")
    q = g.tensor("q", (1, 4), "int8", QParams.make(0.5, 0))
    g.op(BuiltinOperator.DEQUANTIZE, 1, [x], [y])
    g.op(BuiltinOperator.QUANTIZE, 1, [y], [q])
    scalar = g.constant("scalar", np.array(2, np.int32))  # shape []: a scalar
    model = g.build([x], [y, q])
    assert output_lsb(model) == [0.25, None]
    assert tensor_infos(model)[scalar].shape == ()
    assert [o.index for o in graph_outputs(model)] == [y, q] and graph_outputs(model)[1].scale == 0.5
    assert operators(model)[0].name == "DEQUANTIZE"


@pytest.mark.parametrize(("entry", "partitions", "kind"), [
    ("", 12, "pass"), ("", 13, "fail"),
    ('partitions = 20\nsplit_by = "TRANSPOSE"', 20, "pass"),
    ('partitions = 20\nsplit_by = "TRANSPOSE"', 21, "fail"),
    ('partitions = 20\nsplit_by = "TRANSPOSE"', 12, "fail"),
], ids=["unlisted-12", "unlisted-13", "allowed-20", "above-allowance", "allowance-no-longer-needed"])
def test_partitions_above_twelve_need_an_entry(tmp_path: Path, entry: str, partitions: int, kind: str) -> None:
    path = tmp_path / "exp.toml"
    path.write_text(f'["m".rk3588]\n{entry}\n' if entry else "")
    exp = load_expectations(path)
    assert exp.partition_outcome("m", "rk3588", partitions).kind == kind
    assert exp.expected("m", "cat", "rk3588") is None  # a partitions-only entry expects no failure


@pytest.mark.parametrize("entry", ['partitions = 20', 'partitions = 20\nsplit_by = "unknown"',
                                   'partitions = 10\nsplit_by = "TRANSPOSE"'],
                         ids=["no-split-by", "vague-split-by", "allowance-not-above-twelve"])
def test_partition_entries_name_the_ops(tmp_path: Path, entry: str) -> None:
    path = tmp_path / "exp.toml"
    path.write_text(f'["m".rk3588]\n{entry}\n')
    with pytest.raises(ValueError):
        load_expectations(path)
