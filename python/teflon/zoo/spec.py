"""Model specs: the `spec.json` files under ../shared/models (a list of entries; paths relative to the file).

Each entry names a .tflite model, its test inputs (images, or raw tensor files `*.bin` fed as-is), the
preprocessing of images (`prep`: layout, colour order, normalisation), the task (classify, detect, segment, pose,
other), the post-processing (`post`) and optionally a label file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Task = Literal["classify", "detect", "segment", "pose", "other"]
TASKS = ("classify", "detect", "segment", "pose", "other")
NORMS = ("rawq", "raw", "unit", "pm1", "ultraface", "imagenet")


@dataclass(frozen=True)
class Prep:
    """How an image becomes the input tensor."""

    layout: str = "nhwc"  # nhwc | nchw
    color: str = "rgb"  # rgb | bgr | gray
    norm: str = "rawq"  # rawq: the uint8 pixels are the quantized input; else a float x, quantized with the input


@dataclass(frozen=True)
class ModelSpec:
    path: Path
    task: Task
    post: str
    inputs: tuple[Path, ...]
    prep: Prep
    labels: Path | None = None
    label_offset: int = 0
    notes: str = ""

    @property
    def name(self) -> str:
        return self.path.stem


def _entry(base: Path, raw: dict[str, object]) -> ModelSpec:
    where = f"{base / 'spec.json'}: entry {raw.get('model')!r}"
    task = str(raw.get("task", "other"))
    if task not in TASKS:
        raise ValueError(f"{where}: unknown task {task!r}; expected one of {', '.join(TASKS)}")
    prep_raw = raw.get("prep") or {}
    if not isinstance(prep_raw, dict):
        raise TypeError(f"{where}: prep must be an object")
    prep = Prep(**{k: str(v) for k, v in prep_raw.items() if k in ("layout", "color", "norm")})
    if prep.norm not in NORMS:
        raise ValueError(f"{where}: unknown norm {prep.norm!r}; expected one of {', '.join(NORMS)}")
    inputs = raw.get("inputs") or [raw["image"]]
    if not isinstance(inputs, list):
        raise TypeError(f"{where}: inputs must be a list")
    labels = raw.get("labels")
    return ModelSpec(path=(base / str(raw["model"])).resolve(), task=task,  # type: ignore[arg-type]
                     post=str(raw.get("post", task)), inputs=tuple((base / str(p)).resolve() for p in inputs),
                     prep=prep, labels=(base / str(labels)).resolve() if labels else None,
                     label_offset=int(str(raw.get("label_offset", 0))), notes=str(raw.get("notes", "")))


def read_spec(path: Path) -> list[ModelSpec]:
    """The entries of one spec.json."""
    entries = json.loads(path.read_text())
    if not isinstance(entries, list):
        raise TypeError(f"{path}: expected a JSON list of model entries")
    return [_entry(path.parent, e) for e in entries]


IMAGE_SUFFIXES = (".bmp", ".jpg", ".jpeg", ".png")


def unlisted_classifiers(models_dir: Path, listed: set[Path]) -> list[ModelSpec]:
    """The .tflite files directly in `models_dir` that no spec.json names: image classifiers fed every image of
    that directory as raw uint8 pixels (../shared/models/README.md: the published MobileNets)."""
    images = tuple(sorted(p.resolve() for p in models_dir.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES))
    return [ModelSpec(path=p.resolve(), task="classify", post="classify", inputs=images, prep=Prep())
            for p in sorted(models_dir.glob("*.tflite")) if p.resolve() not in listed]


def load_specs(models_dir: Path) -> list[ModelSpec]:
    """Every entry of every spec.json under `models_dir` (sorted by file, then in file order), then the unlisted
    classifiers directly in `models_dir`."""
    specs = [s for p in sorted(models_dir.rglob("spec.json")) for s in read_spec(p)]
    return specs + unlisted_classifiers(models_dir, {s.path for s in specs})


def spec_for_model(model_path: Path, output_shapes: list[tuple[int, ...]]) -> tuple[ModelSpec | None, str]:
    """(the spec entry of one model, "") or (None, why not): the entry of the spec.json in the model's own directory
    that names it (never a search below it, and a broken file is a reason, not an error), else the published
    classifiers' rule (unlisted_classifiers) for a model whose one output is a score vector (1 x classes, classes > 1)
    next to images — a detector next to an image, or a one-score wake-word model, is not judged as a classifier."""
    path = model_path.resolve()
    spec_file = path.parent / "spec.json"
    listed: set[Path] = set()
    if spec_file.is_file():
        try:
            specs = read_spec(spec_file)
        except (ValueError, TypeError, KeyError) as e:
            return None, f"{spec_file} unreadable ({e})"
        found = next((s for s in specs if s.path == path), None)
        if found is not None:
            return found, ""
        listed = {s.path for s in specs}
    if len(output_shapes) == 1 and len(output_shapes[0]) == 2 and output_shapes[0][0] == 1 and output_shapes[0][1] > 1:
        found = next((s for s in unlisted_classifiers(path.parent, listed) if s.path == path and s.inputs), None)
        if found is not None:
            return found, ""
    return None, "no spec.json entry"
