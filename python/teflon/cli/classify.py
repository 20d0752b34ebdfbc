"""Classify one image with a model running on the NPU (or its simulator)."""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from teflon.cli.session import delegate_options, open_interpreter
from teflon.images import load_image, load_labels

HELP = "classify an image: top-5 with scores, compile and invoke times"


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--image", required=True)
    p.add_argument("--labels", required=True)
    p.add_argument("--runs", type=int, default=3, help="invocations to time (default 3)")
    p.add_argument("--cpu", action="store_true", help="run on TFLite's CPU kernels instead of the delegate")


def top_k(scores: np.ndarray, k: int) -> list[int]:
    return [int(i) for i in np.argsort(-scores, kind="stable")[:k]]


def dequantize(raw: np.ndarray, detail: dict) -> np.ndarray:
    scale, zero = detail.get("quantization", (0.0, 0))
    if not scale:
        return raw.astype(np.float32)
    return (raw.astype(np.float32) - zero) * scale


def run(args: argparse.Namespace) -> int:
    opts = None if args.cpu else delegate_options(args)
    session = open_interpreter(args.model, opts, runtime=args.runtime)
    interp = session.interpreter
    inp = interp.get_input_details()[0]
    _, h, w, _ = inp["shape"]
    image = load_image(args.image, int(h), int(w))
    if inp["dtype"] == np.int8:
        image = (image.astype(np.int16) - 128).astype(np.int8)
    interp.set_tensor(inp["index"], image[None])
    times = []
    for _ in range(max(1, args.runs)):
        t0 = time.perf_counter()
        interp.invoke()
        times.append((time.perf_counter() - t0) * 1e3)
    out = interp.get_output_details()[0]
    scores = dequantize(interp.get_tensor(out["index"])[0], out)
    labels = load_labels(args.labels)
    where = "CPU (TFLite builtin kernels)" if args.cpu else session.describe()
    print(f"model: {args.model}")
    print(f"running on: {where}")
    print(f"compile: {session.compile_ms:.1f} ms")
    print(f"invoke: {times[0]:.1f} ms first, {statistics.median(times):.1f} ms median of {len(times)}")
    for i in top_k(scores, 5):
        name = labels[i] if i < len(labels) else f"#{i}"
        print(f"{scores[i]:.4f}  {name} ({i})")
    return 0
