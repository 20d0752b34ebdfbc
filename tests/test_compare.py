"""`python -m teflon compare`: per-layer figures checked against independently computed intermediates.

CPU intermediates: TFLite's builtin kernels with experimental_preserve_all_tensors (the models here have no ADD,
so tflite_runtime 2.14's in-place ADD does not touch them; `test_cpu_tensors_survive_in_place_add` covers that).
NPU intermediates: the first partition compiled directly by `teflon.compiler` with every tensor it produces as a
program output and run by the runner (no TFLite, no model rewrite); later partitions through
`teflon.reference.run_delegate` on the rewritten model. compare's rows, its first differing layer and its first
layer beyond 1 LSB must match figures computed from those.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import teflon
from conftest import sim_options
from teflon import bridge, compiler, fbedit
from teflon.cli import main
from teflon.cli.compare import Figures, cpu_tensors, image_inputs
from teflon.modelgen import (
    ConvCase,
    GraphBuilder,
    QParams,
    add_conv,
    conv_params,
    graph_inputs,
    operators,
    random_inputs,
)
from teflon.native import Device, Runner
from teflon.reference import invoke, run_delegate
from teflon.runtime import interpreter_module, make_interpreter

DEVICES = ["rk3588", "a311d"]
MOBILENET = "mobilenet_v1_0.25_128_quant"


def chain_model(dtype: str = "uint8") -> bytes:
    """conv 3x3 (RELU6) -> depthwise 3x3 stride 2 -> conv 1x1: one partition, three observable layers."""
    cases = [ConvCase("conv2d", 16, 16, 8, out_c=16, kernel=3, activation="relu6", dtype=dtype, seed=1),
             ConvCase("dwconv", 16, 16, 16, kernel=3, stride=2, dtype=dtype, seed=2),
             ConvCase("conv2d", 8, 8, 16, out_c=8, kernel=1, dtype=dtype, seed=3)]
    rng = np.random.default_rng(7)
    g = GraphBuilder("teflon test_compare chain")
    x = g.tensor("input", (1, 16, 16, 8), dtype, QParams.make(0.05, 3 if dtype == "uint8" else -5))
    t = x
    for i, case in enumerate(cases):
        t = add_conv(g, case, t, conv_params(case, rng, g.quant(t)), f"layer{i}")
    return g.build([x], [t])


def run_compare(model: Path, device: str, *extra: str, tmp_path: Path,
                capsys: pytest.CaptureFixture[str]) -> tuple[dict, str]:
    out = tmp_path / "compare.json"
    rc = main(["compare", "--model", str(model), "--device", device, "--sim", "1", "--json", str(out), *extra])
    text = capsys.readouterr().out
    assert rc == 0, text
    return json.loads(out.read_text()), text


def npu_intermediates(model: bytes, x: np.ndarray, device: str) -> tuple[dict[int, np.ndarray], list[int]]:
    """Every tensor the first partition produces, from a program compiled with all of them as outputs."""
    with bridge.capture() as cap:
        make_interpreter(model, [teflon.load_delegate(**sim_options(device))], reference=True)
    graph, nodes = cap.support[0][0], cap.programs[0][0]
    ops = {op.index: op for op in graph.operations}
    produced = [t for n in nodes for t in ops[n].outputs]
    inputs = sorted({t for n in nodes for t in ops[n].inputs
                     if t >= 0 and graph.tensors[t].data is None and t not in produced})
    program = compiler.compile(graph, nodes, inputs, produced, device)
    (graph_input,) = graph_inputs(model)
    assert inputs == [graph_input.index], "the first partition must read the graph input"
    with Device(device, sim=True) as dev:
        runner = Runner(dev, program)
        try:
            return runner.run({graph_input.index: x}), nodes
        finally:
            runner.close()


def expected_rows(model: bytes, x: np.ndarray, device: str) -> dict[int, Figures]:
    """Figures per delegated node (single-output nodes), computed without teflon.cli.compare."""
    ops = operators(model)
    cpu = make_interpreter(model, reference=True, preserve_all_tensors=True)
    invoke(cpu, [x])
    first, first_nodes = npu_intermediates(model, x, device)
    plain = run_delegate(model, [x], **sim_options(device))
    watched = [ops[n].outputs[0] for n in sorted(plain.delegated)]
    rewritten = run_delegate(fbedit.with_outputs(model, watched), [x], **sim_options(device))
    assert rewritten.delegated == plain.delegated
    assert all(np.array_equal(a, b) for a, b in zip(plain.outputs, rewritten.outputs, strict=False)), \
        "the extra outputs changed the model's own outputs"
    out_index = {t: i for i, t in enumerate(fbedit.graph_outputs(fbedit.with_outputs(model, watched)))}
    rows = {}
    for n in sorted(plain.delegated):
        t = ops[n].outputs[0]
        ref = cpu.get_tensor(t)
        via_rewrite = rewritten.outputs[out_index[t]]
        if n in first_nodes:
            direct = first[t].reshape(ref.shape)
            assert np.array_equal(direct, via_rewrite), f"node {n}: rewritten model and direct program differ"
        rows[n] = Figures.of(ref, via_rewrite)
    return rows


def check_report(doc: dict, text: str, expected: dict[int, Figures]) -> None:
    layers = doc["layers"]
    assert [layer["node"] for layer in layers] == sorted(expected)
    for layer in layers:
        fig, want = layer["accumulated"], expected[layer["node"]]
        assert fig["max_abs_diff"] == want.max_abs_diff, layer
        assert fig["exact_fraction"] == pytest.approx(want.exact_fraction), layer
        assert fig["mean_abs_diff"] == pytest.approx(want.mean_abs_diff), layer
        # the node alone, fed the CPU's inputs: the per-op contract of at most 1 LSB
        assert layer["isolated"] is not None and layer["isolated"]["max_abs_diff"] <= 1, layer
    first_node = layers[0]["node"]
    assert layers[0]["isolated"] == layers[0]["accumulated"]  # same input (the graph's) either way, same numbers
    differing = [n for n in sorted(expected) if expected[n].max_abs_diff > 0]
    beyond = [n for n in sorted(expected) if expected[n].max_abs_diff > 1]
    if differing:
        k = differing[0]
        assert doc["first_differing"]["node"] == k
        assert f"first layer whose output differs: node {k} (" in text, text
    else:
        assert doc["first_differing"] is None and "no layer differs" in text
    assert (doc["first_beyond_1_lsb"] or {}).get("node") == (beyond[0] if beyond else None)
    assert "the model's own outputs are identical" in doc["rewrite_check"]
    assert first_node == min(expected)


# ---- fbedit ---------------------------------------------------------------------------------------------------


def test_with_outputs_appends_outputs_and_keeps_every_other_byte() -> None:
    model = chain_model()
    ops = operators(model)
    extra = [ops[0].outputs[0], ops[1].outputs[0], ops[0].outputs[0]]  # a duplicate is skipped
    out = fbedit.with_outputs(model, extra)
    assert fbedit.graph_outputs(out) == fbedit.graph_outputs(model) + [ops[0].outputs[0], ops[1].outputs[0]]
    differing = np.flatnonzero(np.frombuffer(out[:len(model)], np.uint8) != np.frombuffer(model, np.uint8))
    assert differing.size <= 4 and (differing.size == 0 or differing.max() - differing.min() < 4)  # the one field
    assert operators(out) == ops
    assert fbedit.with_outputs(model, fbedit.graph_outputs(model)) == model
    with pytest.raises(ValueError):
        fbedit.with_outputs(model, [10_000])
    interp = make_interpreter(out, reference=True)
    assert len(interp.get_output_details()) == 3


# ---- a generated chain (no ../shared needed) ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("device", DEVICES)
def test_compare_chain(device: str, dtype: str, delegate_library: None, tmp_path: Path,
                       capsys: pytest.CaptureFixture[str]) -> None:
    model = chain_model(dtype)
    path = tmp_path / f"chain-{dtype}.tflite"
    path.write_bytes(model)
    doc, text = run_compare(path, device, "--random", "1", tmp_path=tmp_path, capsys=capsys)
    check_report(doc, text, expected_rows(model, random_inputs(model, 0)[0], device))
    assert len(doc["layers"]) == 3 and doc["partitions"] == 1


def test_compare_random_is_worst_over_inputs(delegate_library: None, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    model = chain_model()
    path = tmp_path / "chain.tflite"
    path.write_bytes(model)
    doc, _ = run_compare(path, "a311d", "--random", "3", "--seed", "5", tmp_path=tmp_path, capsys=capsys)
    per_input = [expected_rows(model, random_inputs(model, seed)[0], "a311d") for seed in (5, 6, 7)]
    for layer in doc["layers"]:
        figs = [rows[layer["node"]] for rows in per_input]
        assert layer["accumulated"]["max_abs_diff"] == max(f.max_abs_diff for f in figs)
        assert layer["accumulated"]["exact_fraction"] == pytest.approx(min(f.exact_fraction for f in figs))
        assert layer["accumulated"]["mean_abs_diff"] == pytest.approx(max(f.mean_abs_diff for f in figs))
    assert doc["inputs"] == 3


# ---- MobileNetV1 ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mobilenet(shared_dir: Path) -> Path:
    path = shared_dir / "models" / f"{MOBILENET}.tflite"
    if not path.is_file() or not (shared_dir / "models" / "grace_hopper.bmp").is_file():
        pytest.skip(f"{MOBILENET}.tflite or grace_hopper.bmp not in {path.parent}")
    return path


@pytest.mark.parametrize("device", DEVICES)
def test_compare_mobilenet_v1(device: str, mobilenet: Path, delegate_library: None, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    image = mobilenet.parent / "grace_hopper.bmp"
    doc, text = run_compare(mobilenet, device, "--image", str(image), tmp_path=tmp_path, capsys=capsys)
    model = mobilenet.read_bytes()
    (x,) = image_inputs(model, image)
    expected = expected_rows(model, x, device)
    check_report(doc, text, expected)
    # every convolution of MobileNetV1, its average pool and the reshape (a view on both families)
    assert len(doc["layers"]) == 30
    assert doc["first_differing"] is not None  # one rounding per layer: the NPU is not bit-exact end to end
    # the published classifiers' directory rule (teflon.zoo.spec): judged as a classifier, top-1 kept
    assert doc["verdicts"] and doc["verdicts"][0].startswith("pass (classify): top-1"), doc["verdicts"]
    assert "task-level verdict" in text
    print(text)


def _single_add(model: bytes, node: int) -> bytes:
    """Node `node` (an ADD of two activations) of `model` alone, with the same shapes and quantization."""
    import tflite
    from tflite.BuiltinOperator import BuiltinOperator
    from tflite.BuiltinOptions import BuiltinOptions

    sg = tflite.Model.GetRootAs(model, 0).Subgraphs(0)
    op = operators(model)[node]
    g = GraphBuilder("teflon test_compare add")

    def tensor(t: int, name: str) -> int:
        q = sg.Tensors(t).Quantization()
        return g.tensor(name, sg.Tensors(t).ShapeAsNumpy(), "uint8",
                        QParams.make(q.ScaleAsNumpy(), q.ZeroPointAsNumpy()))

    a, b, y = tensor(op.inputs[0], "a"), tensor(op.inputs[1], "b"), tensor(op.outputs[0], "y")

    def options(fb: object) -> int:
        tflite.AddOptionsStart(fb)
        return tflite.AddOptionsEnd(fb)

    g.op(BuiltinOperator.ADD, 1, [a, b], [y], BuiltinOptions.AddOptions, options)
    return g.build([a, b], [y])


@pytest.mark.parametrize("runtime", ["tflite_runtime", "ai_edge_litert"])
def test_cpu_tensors_survive_in_place_add(runtime: str, shared_dir: Path) -> None:
    """tflite_runtime 2.14 lets an ADD overwrite an input in place despite preserve_all_tensors. cpu_tensors must
    return the inputs themselves: TFLite's ADD applied to the two inputs it returns gives the ADD output it
    returns, for every ADD of MobileNetV2."""
    path = shared_dir / "models" / "mobilenet_v2_1.0_224_quant.tflite"
    if not path.is_file():
        pytest.skip(f"{path.name} not in {path.parent}")
    try:
        interpreter_module(runtime)
    except ImportError as exc:
        pytest.skip(f"{runtime} not installed: {exc}")
    model = path.read_bytes()
    ops = operators(model)
    adds = [i for i, op in enumerate(ops) if op.name == "ADD"]
    assert len(adds) == 10
    x = random_inputs(model, 0)
    values = cpu_tensors(model, x, [t for i in adds for t in (*ops[i].inputs, *ops[i].outputs)], runtime)
    for i in adds:
        a, b = ops[i].inputs
        again = invoke(make_interpreter(_single_add(model, i), reference=True, runtime=runtime),
                       [values[a], values[b]])[0]
        assert np.array_equal(again, values[ops[i].outputs[0]]), f"ADD node {i}"


def test_compare_reports_not_observable(delegate_library: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A compiler refusing the extra outputs leaves that partition on the CPU: rows say so, nothing crashes."""
    real = compiler.compile

    def single_output_only(graph: object, nodes: list[int], inputs: list[int], outputs: list[int], *a: object,
                           **kw: object) -> object:
        if len(outputs) > 1:
            raise ValueError("test: one output per partition")
        return real(graph, nodes, inputs, outputs, *a, **kw)

    monkeypatch.setattr(compiler, "compile", single_output_only)
    path = tmp_path / "chain.tflite"
    path.write_bytes(chain_model())
    doc, text = run_compare(path, "rk3588", tmp_path=tmp_path, capsys=capsys)
    assert len(doc["layers"]) == 3
    for layer in doc["layers"]:
        assert layer["accumulated"] is None and layer["isolated"] is not None
        assert "accumulated not observable" in layer["notes"][0] and "one output per partition" in layer["notes"][0]
    assert doc["first_differing"] is None and "no observed layer differs (3 of 3 not observable: 3 its partition did not compile" in text


@pytest.mark.parametrize("device", DEVICES)
def test_compare_reports_a_folded_pad_and_compares_its_convolution(device: str, delegate_library: None,
                                                                   tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """PAD -> conv: on rocket the PAD folds into the convolution's padding (compiler.internal_tensors names its
    output), its row says so and the convolution's row has both columns; etnaviv folds nothing."""
    from teflon import targets
    from teflon.modelgen import PadConvCase

    path = tmp_path / "padconv.tflite"
    path.write_bytes(PadConvCase("conv2d", 16, 16, 16, 32, pads=(1, 1, 1, 1)).build())
    doc, text = run_compare(path, device, tmp_path=tmp_path, capsys=capsys)
    pad, conv = doc["layers"]
    assert conv["accumulated"] is not None and conv["isolated"] is not None
    assert conv["accumulated"]["max_abs_diff"] <= 1 and conv["isolated"]["max_abs_diff"] <= 1
    if targets.get(device).family == "rocket":
        assert pad["folded_into"] == conv["node"] and pad["accumulated"] is None
        assert f"folded into node {conv['node']}" in text
    else:
        assert pad["folded_into"] is None
    assert "not observable" not in text and len(doc["outputs"]) == 1


def test_compare_image_takes_the_spec_preprocessing(delegate_library: None, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """--image on a model its spec.json names feeds the input the conformance suites feed (teflon.zoo.inputs: here
    [-1, 1] quantized with the input's scale), not the raw-pixel default: else compare's figures and verdict are
    about another input than the failing suite case's."""
    from PIL import Image

    from teflon.cli.compare import model_spec
    from teflon.zoo.inputs import make_input
    from teflon.zoo.spec import Prep

    case = ConvCase("conv2d", 16, 16, 3, out_c=8, kernel=3, dtype="int8", seed=4)
    g = GraphBuilder("teflon test_compare spec input")
    x = g.tensor("input", (1, 16, 16, 3), "int8", QParams.make(2.0 / 255.0, 0))
    model = g.build([x], [add_conv(g, case, x, conv_params(case, np.random.default_rng(4), g.quant(x)), "conv")])
    path = tmp_path / "pm1.tflite"
    path.write_bytes(model)
    image = tmp_path / "ramp.bmp"
    ramp = np.arange(24 * 24 * 3, dtype=np.uint32).reshape(24, 24, 3) * 7 % 256
    Image.fromarray(ramp.astype(np.uint8)).save(image)
    assert model_spec(path, model) is None
    assert image_inputs(model, image)[0].min() < -100  # the default: pixels - 128
    (tmp_path / "spec.json").write_text(json.dumps([{"model": "pm1.tflite", "inputs": ["ramp.bmp"], "task": "other",
                                                     "prep": {"norm": "pm1"}}]))
    spec = model_spec(path, model)
    assert spec is not None and spec.prep == Prep(norm="pm1")
    (fed,) = image_inputs(model, image, spec.prep)
    np.testing.assert_array_equal(fed, make_input(image, graph_inputs(model)[0], spec.prep))
    assert not np.array_equal(fed, image_inputs(model, image)[0])
    _, text = run_compare(path, "rk3588", "--image", str(image), tmp_path=tmp_path, capsys=capsys)
    assert "(its spec.json preprocessing)" in text
