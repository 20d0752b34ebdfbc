"""`inspect` and `compare` on every real model of ../shared (models/*.tflite and models/zoo/*.tflite) on every
target: no traceback, every op named by its schema name, every delegated node's row either compared or saying why
not (folded into another layer, or its partition refused the extra outputs), and a summary of the model's outputs.

compare is fed the model's own input from zoo/spec.json where there is one (`--image`: NCHW, grey, raw `.bin`
inputs), else grace_hopper.bmp for the published MobileNets. Small models run by default, the rest under
`-m slow`; everything skips without ../shared (TEFLON_SHARED).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import shared_path
from teflon import targets
from teflon.cli import main

QUICK = ("pretrainedResnet_quant", "kws_ref_model", "keras_lstm_mnist_ptq", "vww_96_int8",
         "mobilenet_v1_0.25_128_quant")
STORED = ("mobilenet_v1_0.25_128_quant", "mobilenet_v1_0.75_192_quant", "mobilenet_v2_1.0_224_quant",
          "tf2_mobilenet_v2_1.0_224_ptq")
ZOO = ("deeplab_mobilenet_edgetpu_slim_cityscapes_quant", "keras_lstm_mnist_ptq", "kws_ref_model",
       "lightface_slim_quant", "pretrainedResnet_quant", "shufflenet_quant", "v3-small_224_1.0_uint8", "vww_96_int8",
       "yamnet_spectra_in", "yolov5n-int8", "zero_dce_quant")


def _params() -> list[object]:
    out = []
    for where, names in (("models", STORED), ("models/zoo", ZOO)):
        for name in names:
            marks = () if name in QUICK else (pytest.mark.slow,)
            out.extend(pytest.param(f"{where}/{name}.tflite", device, id=f"{device}-{name}", marks=marks)
                       for device in DRIVABLE)
    return out


# The tools run on one drivable row per generation (rk3566 shares rk3568's); regcmd on rk3568 compiles every node
# its encoder writes as its own partition (the form Rockchip's single-layer programs are compared in), pools included.
DRIVABLE = [t.name for t in targets.drivable_generations()]


def test_regcmd_compiles_every_encodable_node_on_rk3568(delegate_library: None, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = _model("models/mobilenet_v1_0.25_128_quant.tflite")
    out = tmp_path / "regcmd.json"
    rc = main(["regcmd", "--model", str(path), "--device", "rk3568", "--json", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "each compiled as its own partition" in captured.err
    doc = json.loads(out.read_text())
    assert doc["device"] == "rk3568" and doc["operations"]
    kinds = {op["kind"] for op in doc["operations"]}
    assert {"CONV_2D", "DEPTHWISE_CONV_2D"} <= kinds, kinds


def _model(relative: str) -> Path:
    root = shared_path()
    if root is None or not (root / relative).is_file():
        pytest.skip(f"{relative} not found (set TEFLON_SHARED)")
    return root / relative


def _model_input(model: Path) -> list[str]:
    """compare's input option: the spec's input for a zoo model, grace_hopper.bmp for the others."""
    spec = model.parent / "spec.json"
    if spec.is_file():
        entry = next((e for e in json.loads(spec.read_text()) if e["model"] == model.name), None)
        if entry is not None and entry.get("image"):
            return ["--image", str(model.parent / entry["image"])]
    image = model.parent / "grace_hopper.bmp"
    return ["--image", str(image)] if image.is_file() else []


@pytest.mark.parametrize(("model", "device"), _params())
def test_inspect_names_every_op(model: str, device: str, delegate_library: None,
                                capsys: pytest.CaptureFixture[str]) -> None:
    path = _model(model)
    rc = main(["inspect", "--model", str(path), "--device", device, "--sim", "1"])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "BUILTIN_" not in text, "an op without its schema name"
    assert "nodes delegated in" in text


@pytest.mark.parametrize(("model", "device"), _params())
def test_compare_runs_and_accounts_for_every_row(model: str, device: str, delegate_library: None, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = _model(model)
    out = tmp_path / "compare.json"
    rc = main(["compare", "--model", str(path), "--device", device, "--sim", "1", "--json", str(out),
               *_model_input(path)])
    text = capsys.readouterr().out
    assert rc == 0, text
    doc = json.loads(out.read_text())
    nodes = {layer["node"] for layer in doc["layers"]}
    for layer in doc["layers"]:
        if layer["accumulated"] is None:
            assert layer["notes"], f"node {layer['node']}: no figures and no reason"
        if layer["folded_into"] is not None:
            assert layer["folded_into"] in nodes, f"node {layer['node']} folded into an undelegated node"
    if doc["layers"]:
        assert len(doc["outputs"]) >= 1 and "the model's outputs, NPU against CPU" in text
        assert "not observable)" not in text, "a not-observable count without its reason"
    print(text)
