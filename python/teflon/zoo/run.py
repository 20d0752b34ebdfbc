"""One conformance case: a model and one input on the CPU reference and through the delegate on one target's
simulated NPU, post-processed and judged by the model's task."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from teflon.modelgen import TensorInfo, graph_inputs, graph_outputs, operators, tensor_infos
from teflon.reference import Comparison, DelegateRun, run_cpu, run_delegate
from teflon.zoo import judge, post
from teflon.zoo.inputs import make_input
from teflon.zoo.spec import ModelSpec


@dataclass(frozen=True)
class CaseResult:
    model: str
    input: str
    target: str
    verdict: judge.Verdict
    lsb: Comparison
    delegated: int
    nodes: int
    partitions: int
    run: DelegateRun

    @property
    def passed(self) -> bool:
        return self.verdict.passed

    def summary(self) -> str:
        state = "pass" if self.passed else f"FAIL ({self.verdict.reason})"
        return (f"{self.model} {self.input} on {self.target}: {state}; {self.delegated}/{self.nodes} nodes "
                f"delegated in {self.partitions} partition(s); {self.verdict.figures}; {self.lsb}")

    def properties(self) -> dict[str, object]:
        """The case's figures by name, as the suites record them (JUnit XML properties)."""
        return {"delegated_nodes": self.delegated, "nodes": self.nodes, "partitions": self.partitions,
                "verdict": "pass" if self.passed else self.verdict.reason, "task_figures": self.verdict.figures,
                "max_abs_diff": self.lsb.max_abs_diff, "mean_abs_diff": round(self.lsb.mean_abs_diff, 6),
                "exact_fraction": round(self.lsb.exact_fraction, 6),
                "within_model_lsb": round(self.lsb.within_model_lsb, 6)}


def output_lsb(model: bytes) -> list[float | None]:
    """Per graph output, the LSB its values are counted in: None for a quantized output (its integers are LSB);
    for a float output produced by DEQUANTIZE, the scale of the quantized tensor it came from."""
    infos = tensor_infos(model)
    producer = {t: op for op in operators(model) for t in op.outputs}
    lsb: list[float | None] = []
    for out in graph_outputs(model):
        op = producer.get(out.index)
        if out.dtype.startswith("float") and op is not None and op.name == "DEQUANTIZE":
            lsb.append(infos[op.inputs[0]].scale or None)
        else:
            lsb.append(None)
    return lsb


def _post_detections(spec: ModelSpec, outputs: Sequence[np.ndarray], infos: Sequence[TensorInfo],
                     input_info: TensorInfo) -> post.Detections:
    if spec.post == "yolov5":
        return post.yolov5(outputs, infos)
    if spec.post == "ultraface":
        return post.ultraface(outputs, infos)
    if spec.post == "ssd":
        return post.ssd(outputs)
    if spec.post == "retinaface":
        _, _, h, w = input_info.shape  # RetinaFace exports take NCHW
        return post.retinaface(outputs, infos, (h, w))
    raise ValueError(f"{spec.name}: no detection post-processing {spec.post!r}")


def judge_outputs(spec: ModelSpec, ref: Sequence[np.ndarray], out: Sequence[np.ndarray],
                  infos: Sequence[TensorInfo], input_info: TensorInfo, cmp: Comparison) -> judge.Verdict:
    """The task's verdict on the delegate's outputs against the CPU's."""
    if spec.task == "classify":
        return judge.classification(post.dequantize(ref[0], infos[0]), post.dequantize(out[0], infos[0]), cmp)
    if spec.task == "detect":
        return judge.detection(_post_detections(spec, ref, infos, input_info),
                               _post_detections(spec, out, infos, input_info))
    if spec.task == "segment":
        return judge.segmentation(post.segment_labels(ref[0]), post.segment_labels(out[0]))
    if spec.task == "pose":
        return judge.pose(post.movenet(ref, infos), post.movenet(out, infos))
    return judge.elements(cmp)


def run_case(spec: ModelSpec, input_path: Path, target: str, **options: str) -> CaseResult:
    """Run `spec`'s model on `input_path` on the CPU (cached reference) and on `target`'s simulated NPU."""
    model = spec.path.read_bytes()
    input_infos = graph_inputs(model)
    if len(input_infos) != 1:
        raise ValueError(f"{spec.name}: {len(input_infos)} inputs; the suite feeds single-input models")
    x = make_input(input_path, input_infos[0], spec.prep)
    ref = run_cpu(model, [x])
    run = run_delegate(model, [x], device=target, sim=options.pop("sim", "1"), **options)
    infos = graph_outputs(model)
    cmp = judge.lsb_comparison(ref, run.outputs, output_lsb(model))
    verdict = judge_outputs(spec, ref, run.outputs, infos, input_infos[0], cmp)
    return CaseResult(spec.name, input_path.stem, target, verdict, cmp, len(run.delegated), len(run.ops),
                      run.partitions, run)
