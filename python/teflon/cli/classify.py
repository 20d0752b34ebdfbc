"""Classify one image with a model running on the NPU (or its simulator)."""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from teflon.cli.session import delegate_options, open_interpreter, positive_int
from teflon.images import load_image, load_labels

HELP = "classify an image: top-k with scores, compile and invoke times"


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--image", required=True)
    p.add_argument("--labels", default=None, help="one label per line (without it, class indices are printed)")
    p.add_argument("--top-k", type=positive_int, default=5, help="classes to print (default 5)")
    p.add_argument("--runs", type=positive_int, default=3, help="invocations to time (default 3)")
    p.add_argument("--threads", type=positive_int, default=1, help="CPU threads for TFLite's kernels (default 1)")
    p.add_argument("--mean", type=float, default=127.5, help="float inputs: (pixel - mean) / std (default 127.5)")
    p.add_argument("--std", type=float, default=127.5, help="float inputs: (pixel - mean) / std (default 127.5)")
    p.add_argument("--cpu", action="store_true", help="run on TFLite's CPU kernels instead of the delegate")
    p.add_argument("--no-cache", action="store_true",
                   help="compile every partition again instead of reading the program cache (default: the cache "
                        "under $XDG_CACHE_HOME/teflon/programs; -o cache_dir=DIR picks another)")


def top_k(scores: np.ndarray, k: int) -> list[int]:
    return [int(i) for i in np.argsort(-scores, kind="stable")[:k]]


def dequantize(raw: np.ndarray, detail: dict) -> np.ndarray:
    scale, zero = detail.get("quantization", (0.0, 0))
    if not scale:
        return raw.astype(np.float32)
    return (raw.astype(np.float32) - zero) * scale


def model_input(image: np.ndarray, dtype: np.dtype, mean: float, std: float) -> np.ndarray:
    """RGB uint8 pixels as the model's input type: uint8 as is, int8 shifted by -128, float (pixel - mean) / std."""
    if dtype == np.uint8:
        return image
    if dtype == np.int8:
        return (image.astype(np.int16) - 128).astype(np.int8)
    if np.issubdtype(dtype, np.floating):
        return ((image.astype(np.float32) - mean) / std).astype(dtype)
    raise ValueError(f"input type {np.dtype(dtype)} is not an image (uint8, int8 or float expected)")


def run(args: argparse.Namespace) -> int:
    if args.std == 0:
        raise ValueError("--std must not be 0")
    labels = load_labels(args.labels) if args.labels else []
    opts = None if args.cpu else delegate_options(args)
    if opts is not None and not args.no_cache:
        from teflon.cache import default_dir

        opts.setdefault("cache_dir", str(default_dir()))
    session = open_interpreter(args.model, opts, runtime=args.runtime, num_threads=args.threads)
    interp = session.interpreter
    inp = interp.get_input_details()[0]
    if len(inp["shape"]) != 4 or inp["shape"][3] != 3:
        raise ValueError(f"input shape {list(inp['shape'])} is not an NHWC RGB image")
    _, h, w, _ = inp["shape"]
    interp.set_tensor(inp["index"], model_input(load_image(args.image, int(h), int(w)), inp["dtype"],
                                                args.mean, args.std)[None])
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        interp.invoke()
        times.append((time.perf_counter() - t0) * 1e3)
    out = interp.get_output_details()[0]
    scores = dequantize(interp.get_tensor(out["index"])[0], out).reshape(-1)
    print(f"model: {args.model}")
    print(f"running on: {session.describe()}")
    print(f"compile: {session.compile_ms:.1f} ms")
    print(f"invoke: {times[0]:.1f} ms first, {statistics.median(times):.1f} ms median of {len(times)}")
    for i in top_k(scores, args.top_k):
        if labels:
            print(f"{scores[i]:.4f}  {labels[i] if i < len(labels) else '?'} ({i})")
        else:
            print(f"{scores[i]:.4f}  {i}")
    return 0
