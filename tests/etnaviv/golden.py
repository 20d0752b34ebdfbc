"""Golden etnaviv files (../shared/golden/etnaviv-v7|v8/*.json) as teflon IR graphs.

`load(path) -> (dict, ir.Graph)`: the parsed JSON and the graph a TFLite model would give teflon: exact float32
scales from `scale_f32_hex`, constant data from `data_b64` (conv weights OHWI, depthwise [1,KH,KW,C], FC weights
as TFLite's 2-D [OUT, N], biases 1-D int32), options named as `teflon.ir.decode_options` names them. A PAD's
paddings become a constant int32 [4, 2] tensor numbered after the golden tensors.
"""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path
from typing import Any

import numpy as np

from teflon.ir import Graph, Operation, Quant, Tensor

VERSIONS = (7, 8)


def golden_dir(shared: Path, version: int) -> Path:
    return shared / "golden" / f"etnaviv-v{version}"


def golden_files(shared: Path | None, version: int) -> list[Path]:
    if shared is None:
        return []
    return sorted(golden_dir(shared, version).glob("*.json"))


def f32_hex(h: str) -> float:
    return float(np.frombuffer(struct.pack("<I", int(h, 16)), "<f4")[0])


def _tensor(idx: int, t: dict[str, Any], fc_weight: bool, bias: bool) -> Tensor:
    quant = Quant(np.array([f32_hex(t["scale_f32_hex"])], np.float32), np.array([t["zero_point"]], np.int32))
    data = None
    shape = tuple(t["shape"])
    if "data_b64" in t:
        raw = base64.b64decode(t["data_b64"])
        data = np.frombuffer(raw, np.dtype(t["dtype"]).newbyteorder("<")).astype(t["dtype"])
        if fc_weight:
            shape = (shape[-2], shape[-1])
        elif bias:
            shape = (int(np.prod(shape)),)
        data = data.reshape(shape)
    return Tensor(index=idx, dtype=t["dtype"], shape=shape, quant=quant, data=data)


def _options(o: dict[str, Any]) -> dict[str, object]:
    kind = o["type"]
    act = "RELU" if o.get("relu") else "NONE"
    if kind in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        sh, sw = o.get("stride", [1, 1])
        opts: dict[str, object] = {"padding": o["padding"], "stride_h": sh, "stride_w": sw, "activation": act,
                                   "dilation_h": 1, "dilation_w": 1}
        if kind == "DEPTHWISE_CONV_2D":
            opts["depth_multiplier"] = 1
        return opts
    if kind in ("FULLY_CONNECTED", "ADD", "SUB"):
        return {"activation": act}
    return {}


def load(path: Path | str) -> tuple[dict[str, Any], Graph]:
    d = json.loads(Path(path).read_text())
    g = d["graph"]
    ops = g["operations"]
    fc_w = {o["inputs"][1] for o in ops if o["type"] == "FULLY_CONNECTED"}
    biases = {o["inputs"][2] for o in ops if o["type"] in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")
              and len(o["inputs"]) > 2}
    tensors = {int(k): _tensor(int(k), t, int(k) in fc_w, int(k) in biases) for k, t in g["tensors"].items()}
    operations = []
    for i, o in enumerate(ops):
        inputs = list(o["inputs"])
        if o["type"] == "PAD":
            idx = max(tensors) + 1
            pads = np.array([[0, 0], o["pad_x"], o["pad_y"], o["pad_z"]], np.int32)
            tensors[idx] = Tensor(index=idx, dtype="int32", shape=(4, 2), data=pads)
            inputs.append(idx)
        operations.append(Operation(index=i, kind=o["type"], inputs=inputs, outputs=list(o["outputs"]),
                                    options=_options(o)))
    return d, Graph(tensors=tensors, operations=operations)


def nn_jobs(d: dict[str, Any]) -> list[dict[str, Any]]:
    return [j for j in d["outputs"]["jobs"] if j["kind"] == "NN"]


def coef_cache_size(job: dict[str, Any], version: int) -> int:
    """The coefficient bytes Mesa's tiler counts: v7 the largest 64-aligned core stream times the cores used,
    v8 the used buffer length (bias table included)."""
    c = job["coefficients"]
    if version == 7:
        sizes = [s for s in c["layout"]["core_stream_bytes"] if s]
        return max(sizes) * len(sizes)
    return int(c["used_len"])


def nn_addresses(job: dict[str, Any]) -> tuple[int, int, int]:
    """(coefficient VA, input VA, output VA) the golden descriptor words carry."""
    aw = {a["word"]: int(a["base"], 16) + int(a["offset"]) for a in job["descriptors"][0]["address_words"]}
    return aw[5], aw[6], aw[7]


def words(job: dict[str, Any]) -> list[int]:
    return [int(w, 16) for w in job["descriptors"][0]["words_hex"]]
