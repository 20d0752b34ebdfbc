"""Per-layer accuracy: every delegated node's output on the NPU next to TFLite's CPU kernels for the same input.

Two columns per layer, as RKNN's accuracy analysis reports them:

- accumulated: the whole model runs with the delegate; each delegated node's output is compared with the CPU's
  output of the same node. Errors of earlier layers propagate, so this is what the model's outputs inherit.
- isolated: the node alone is compiled for the NPU and fed the CPU's values of its inputs; this is the node's own
  error (the per-op contract: at most 1 LSB, >= 99.5 % exact).

How the NPU's intermediate tensors are obtained (accumulated): a delegate partition only writes its outputs, and
TFLite never materialises tensors inside a partition. So the model is rewritten (`teflon.fbedit.with_outputs`:
the first subgraph's output list is appended, every other byte stays) so that every tensor a delegated node
produces is also a graph output. TFLite then makes each of them an output of its partition, the delegate's
compiler binds it as a program output, and the runtime hands it back after invoke. Nothing on the C side changes
and the numbers come from the real delegate path (Prepare, partitioning, compile, the runner).

What the rewrite changes and how that is checked on every run: the model is first run unmodified (which nodes are
delegated, and the model's own outputs), then rewritten. Partitioning does not change (TFLite groups claimed
nodes; extra outputs only add partition outputs; MobileNetV1/V2 keep their partition count on rk3588 and a311d,
see docs/tools.md), and the model's own outputs must stay byte-identical ("rewrite check" line). A compiler that
cannot take some tensor as a partition output makes its partition fail; the delegate then leaves those nodes on
the CPU, and their rows say "not observable" instead of figures. The isolated column does not need the rewrite:
it compiles each node as its own one-node partition through `teflon.compiler` and runs it with the same runner
the delegate uses (`teflon.native`); a node that does not compile alone is "not observable" there.

The CPU side is TFLite's builtin kernels (`make_interpreter(..., reference=True)`) on the same rewritten model, with
`experimental_preserve_all_tensors`: the rewrite is needed there too, because tflite_runtime 2.14 lets an ADD
overwrite its input in place even with that flag (see `cpu_tensors`).

With `--random N` the figures are the worst over the N inputs: the largest max and mean |diff|, the smallest exact
fraction.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import tflite

import teflon
from teflon import bridge, compiler, fbedit
from teflon.cli.session import delegate_options
from teflon.images import load_image
from teflon.ir import Graph
from teflon.modelgen import graph_inputs, operators, random_inputs
from teflon.native import Device, Runner
from teflon.reference import compare, delegated_nodes, invoke
from teflon.runtime import make_interpreter

if TYPE_CHECKING:
    from teflon.zoo.spec import ModelSpec, Prep

HELP = "per-layer NPU vs CPU figures (max/mean |diff|, exact fraction) and the first layer whose output differs"


def add_args(p: argparse.ArgumentParser) -> None:
    source = p.add_mutually_exclusive_group()
    source.add_argument("--image", help="input image (resized like classify; NHWC or NCHW, RGB or grey) or a raw .bin "
                        "of the input tensor's bytes; default --random 1")
    source.add_argument("--random", type=int, metavar="N", help="N random inputs (fixed seed), worst figures over N")
    p.add_argument("--seed", type=int, default=0, help="seed of the first random input (default 0)")
    p.add_argument("--no-isolated", action="store_true", help="skip the isolated (one node at a time) column")
    p.add_argument("--json", metavar="FILE", help="also write the rows as JSON")


# ---- figures --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figures:
    """Difference of one tensor against the CPU's, in LSB of the tensor's own quantization."""

    max_abs_diff: int
    mean_abs_diff: float
    exact_fraction: float

    @classmethod
    def of(cls, ref: np.ndarray, out: np.ndarray) -> Figures:
        c = compare(ref, out.reshape(ref.shape))
        return cls(c.max_abs_diff, c.mean_abs_diff, c.exact_fraction)

    def worst(self, other: Figures | None) -> Figures:
        if other is None:
            return self
        return Figures(max(self.max_abs_diff, other.max_abs_diff), max(self.mean_abs_diff, other.mean_abs_diff),
                       min(self.exact_fraction, other.exact_fraction))


@dataclass
class Layer:
    """One output tensor of one delegated node."""

    node: int
    op: str
    tensor: int
    name: str
    shape: tuple[int, ...]
    accumulated: Figures | None = None
    isolated: Figures | None = None
    notes: list[str] = field(default_factory=list)  # why a column is missing ("not observable: ...")
    folded_into: int | None = None  # the node whose output holds this one (the program never writes it)


@dataclass
class Output:
    """One of the model's own outputs: NPU (the unmodified model with the delegate) against the CPU. Differences in
    the output's stored unit: LSB of an integer tensor, plain values of a float one."""

    tensor: int
    name: str
    dtype: str
    max_abs_diff: float = 0.0
    mean_abs_diff: float = 0.0
    exact_fraction: float = 1.0

    def worst(self, ref: np.ndarray, out: np.ndarray) -> None:
        diff = np.abs(ref.astype(np.float64) - out.reshape(ref.shape).astype(np.float64)).ravel()
        if diff.size:
            self.max_abs_diff = max(self.max_abs_diff, float(diff.max()))
            self.mean_abs_diff = max(self.mean_abs_diff, float(diff.mean()))
            self.exact_fraction = min(self.exact_fraction, float(np.count_nonzero(diff == 0) / diff.size))


@dataclass
class Report:
    device: str
    partitions: int
    inputs: int
    layers: list[Layer]
    rewrite_check: str  # how the model's own outputs compare with and without the extra outputs
    outputs: list[Output] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)  # the task-level verdict per input (TaskJudge)

    def first_differing(self, above: int = 0, column: str = "accumulated") -> Layer | None:
        """The first layer (execution order) whose `column` max |diff| exceeds `above` LSB."""
        for layer in self.layers:
            fig = getattr(layer, column)
            if fig is not None and fig.max_abs_diff > above:
                return layer
        return None

    def to_json(self) -> dict[str, Any]:
        def name(layer: Layer | None) -> dict[str, Any] | None:
            return None if layer is None else {"node": layer.node, "op": layer.op, "tensor": layer.name}

        return {"device": self.device, "partitions": self.partitions, "inputs": self.inputs,
                "rewrite_check": self.rewrite_check, "layers": [asdict(layer) for layer in self.layers],
                "outputs": [asdict(o) for o in self.outputs], "verdicts": self.verdicts,
                "first_differing": name(self.first_differing()),
                "first_beyond_1_lsb": name(self.first_differing(1))}


# ---- inputs ---------------------------------------------------------------------------------------------------


def image_inputs(model: bytes, image: str | Path, prep: Prep | None = None) -> list[np.ndarray]:
    """The model's single input from a file.

    A `.bin` file is the input tensor's raw bytes (its dtype and element count must match). With `prep` (the
    model's spec.json entry) an image becomes the input exactly as the conformance suites feed it
    (teflon.zoo.inputs.make_input). Without, an image is resized like classify to the input's height and width, as
    RGB or, for a one-channel or (1, H, W) input, grey, and laid out NHWC or NCHW (a 4-D input whose last dimension
    is not 1 or 3 but whose second is); a uint8 input takes the raw pixels, an int8 input the pixels shifted by 128,
    a float input the pixels scaled to [0, 1]."""
    infos = graph_inputs(model)
    if len(infos) != 1:
        raise ValueError(f"--image needs a model with one input, this one has {len(infos)}")
    info = infos[0]
    if prep is not None and Path(image).suffix != ".bin":
        from teflon.zoo.inputs import make_input

        return [make_input(Path(image), info, prep)]
    if Path(image).suffix == ".bin":
        raw = np.frombuffer(Path(image).read_bytes(), dtype=info.dtype)
        if raw.size != int(np.prod(info.shape)):
            raise ValueError(f"{image}: {raw.size} {info.dtype} values, the input {info.shape} takes "
                             f"{int(np.prod(info.shape))}")
        return [raw.reshape(info.shape).copy()]
    if len(info.shape) == 3 and info.shape[0] == 1:  # (1, H, W): one grey image, rows by columns (an MNIST LSTM)
        nchw, (c, h, w) = True, (1, info.shape[1], info.shape[2])
    elif len(info.shape) == 4:
        nchw = info.shape[3] not in (1, 3) and info.shape[1] in (1, 3)
        c, h, w = (info.shape[1], info.shape[2], info.shape[3]) if nchw else (info.shape[3], info.shape[1],
                                                                               info.shape[2])
    else:
        raise ValueError(f"--image needs an image input (1xHxW or 4-D), this one is {info.shape} (give a raw .bin)")
    if c not in (1, 3):
        raise ValueError(f"--image needs 1 or 3 channels, the input {info.shape} has {c} (give a raw .bin instead)")
    pixels = load_image(image, h, w, "gray" if c == 1 else "rgb").reshape(h, w, c)
    if nchw:
        pixels = pixels.transpose(2, 0, 1)
    if info.dtype == "int8":
        values: np.ndarray = (pixels.astype(np.int16) - 128).astype(np.int8)
    elif info.dtype == "uint8":
        values = pixels
    elif info.dtype == "float32":
        values = pixels.astype(np.float32) / np.float32(255.0)
    else:
        raise ValueError(f"--image needs a uint8, int8 or float32 input, this one is {info.dtype}")
    return [np.ascontiguousarray(values).reshape(info.shape)]


def random_input_sets(model: bytes, n: int, seed: int = 0) -> list[list[np.ndarray]]:
    return [random_inputs(model, seed + i) for i in range(n)]


# ---- the two runs ---------------------------------------------------------------------------------------------


def cpu_tensors(model: bytes, inputs: Sequence[np.ndarray], tensors: Sequence[int],
                runtime: str | None = None) -> dict[int, np.ndarray]:
    """Values of `tensors` after one run on TFLite's builtin kernels.

    `experimental_preserve_all_tensors` alone is not enough: tflite_runtime 2.14 still lets ADD write its result
    over an input it consumes last (MobileNetV2's projection convolutions then read back as the residual sum;
    ai_edge_litert 2.3 keeps them). A graph output is never overwritten, so the tensors are made outputs of the
    model the CPU runs, as on the NPU side.
    """
    produced = {t for op in operators(model) for t in op.outputs}
    cpu_model = fbedit.with_outputs(model, [t for t in tensors if t in produced])
    interp = make_interpreter(cpu_model, reference=True, runtime=runtime, preserve_all_tensors=True)
    invoke(interp, inputs)
    return {t: np.array(interp.get_tensor(t)) for t in tensors}


@dataclass
class _DelegatedModel:
    interpreter: Any
    taken: frozenset[int]
    partitions: int
    capture: bridge.Capture


def _delegated(model: bytes, options: dict[str, str], runtime: str | None) -> _DelegatedModel:
    with bridge.capture() as cap:
        delegate = teflon.load_delegate(runtime=runtime, **options)
        interp = make_interpreter(model, [delegate], reference=True, runtime=runtime)
    taken, partitions = delegated_nodes(interp, len(operators(model)))
    return _DelegatedModel(interp, taken, partitions, cap)


def _invoke_tensors(interp: Any, inputs: Sequence[np.ndarray], tensors: Sequence[int]) -> dict[int, np.ndarray]:
    invoke(interp, inputs)
    return {t: np.array(interp.get_tensor(t)) for t in tensors}


def _device_name(run: _DelegatedModel, requested: str) -> str:
    devices = sorted({program.device for _, program in run.capture.programs})
    return devices[0] if devices else requested


class _Isolated:
    """Each delegated node compiled alone and run by the delegate's runner, fed the CPU's inputs. A node that other
    nodes are folded into (a convolution and its PAD, an ADD and the convolution fused into it) is compiled together
    with them, as the model runs it."""

    def __init__(self, graph: Graph, device: str, sim: str, folded: dict[int, int]) -> None:
        self.ops = {op.index: op for op in graph.operations}
        self.graph = graph
        self.device = device
        self.folded = folded  # node -> the node it is folded into
        self._dev = Device(device, sim={"1": True, "0": False}.get(sim))
        self._runners: dict[int, Runner | str] = {}

    def group(self, node: int) -> list[int]:
        """`node` and every node folded into it (directly or through another), in execution order."""
        members = {node}
        while True:
            more = {n for n, k in self.folded.items() if k in members} - members
            if not more:
                return sorted(members)
            members |= more

    def inputs_of(self, node: int) -> list[int]:
        """The group's non-constant inputs: what a one-layer partition takes from the host."""
        nodes = self.group(node)
        produced = {t for n in nodes for t in self.ops[n].outputs}
        return list(dict.fromkeys(t for n in nodes for t in self.ops[n].inputs
                                  if t >= 0 and self.graph.tensors[t].data is None and t not in produced))

    def runner(self, node: int) -> Runner | str:
        """The node's runner, or why it cannot run alone."""
        if node not in self._runners:
            try:
                program = compiler.compile(self.graph, self.group(node), self.inputs_of(node),
                                           list(self.ops[node].outputs), self.device)
                self._runners[node] = Runner(self._dev, program)
            except Exception as exc:  # noqa: BLE001 -- any compiler or loader refusal is reported per layer
                self._runners[node] = f"{type(exc).__name__}: {exc}"
        return self._runners[node]

    def figures(self, layer: Layer, ref: dict[int, np.ndarray]) -> None:
        if layer.folded_into is not None:
            return
        runner = self.runner(layer.node)
        if isinstance(runner, str):
            note = f"isolated not observable: {runner}"
            if note not in layer.notes:
                layer.notes.append(note)
            return
        out = runner.run({t: ref[t] for t in self.inputs_of(layer.node)})
        layer.isolated = Figures.of(ref[layer.tensor], out[layer.tensor]).worst(layer.isolated)

    def close(self) -> None:
        for r in self._runners.values():
            if isinstance(r, Runner):
                r.close()
        self._dev.close()


def _folded(run: _DelegatedModel, device: str) -> tuple[dict[int, int], dict[int, int]]:
    """What the compiler says of each partition of `run`: ({tensor: holder node} of the tensors its program cannot
    hand out, {node: holder node} of the nodes whose every output is such a tensor)."""
    if not run.capture.support:
        return {}, {}
    graph = run.capture.support[0][0]
    internal: dict[int, int] = {}
    for nodes, _ in run.capture.programs:
        internal.update(compiler.internal_tensors(graph, list(nodes), device))
    nodes_folded = {op.index: internal[op.outputs[0]] for op in graph.operations
                    if op.outputs and all(t in internal for t in op.outputs)}
    return internal, nodes_folded


STATE_OPS = ("VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "CALL_ONCE")


def layer_report(model: bytes, input_sets: Sequence[Sequence[np.ndarray]], options: dict[str, str], *,
                 runtime: str | None = None, isolated: bool = True, judge: TaskJudge | None = None) -> Report:
    """Per delegated node output: accumulated (and isolated) figures, worst over `input_sets`; and the model's own
    outputs, NPU against CPU (with `judge`, the task-level verdict of each input)."""
    ops = operators(model)
    original = _delegated(model, options, runtime)
    device = _device_name(original, options.get("device", "auto"))
    own_outputs = fbedit.graph_outputs(model)
    names = _tensor_names(model)
    internal, folded = _folded(original, device)
    layers = [Layer(node, ops[node].name, t, names[t], shape, folded_into=internal.get(t))
              for node in sorted(original.taken) for t, shape in zip(ops[node].outputs, ops[node].output_shapes,
                                                                     strict=True)]
    for layer in layers:
        if layer.folded_into is not None:
            layer.notes.append(f"folded into node {layer.folded_into}: the NPU never writes this tensor, node "
                               f"{layer.folded_into}'s row covers it")
    watched = [layer.tensor for layer in layers if layer.folded_into is None]
    rewritten = _delegated(fbedit.with_outputs(model, watched), options, runtime) if watched else original
    lost = original.taken - rewritten.taken
    for layer in layers:
        if layer.node in lost and layer.folded_into is None:
            failures = "; ".join(msg for nodes, msg in rewritten.capture.failures if layer.node in nodes)
            layer.notes.append("accumulated not observable: its partition did not compile with the extra outputs"
                               + (f" ({failures})" if failures else ""))
    iso = None
    if isolated and layers and original.capture.support:
        iso = _Isolated(original.capture.support[0][0], device, options.get("sim", "auto"), folded)
    needed = list(dict.fromkeys(watched + own_outputs + [t for layer in layers if iso is not None
                                                         for t in iso.inputs_of(layer.node)]))
    outputs = [Output(t, names[t], ops_dtype) for t, ops_dtype in _output_dtypes(model, own_outputs)]
    worst_own = 0
    verdicts: list[str] = []
    # A stateful model (resource variables: streaming audio models) answers each input from its history; the CPU
    # side runs every input on a fresh interpreter, so the delegated ones must start fresh too.
    stateful = any(op.name in STATE_OPS for op in ops)
    try:
        for k, inputs in enumerate(input_sets):
            if stateful and k:
                original = _delegated(model, options, runtime)
                rewritten = _delegated(fbedit.with_outputs(model, watched), options, runtime) if watched else original
            ref = cpu_tensors(model, inputs, needed, runtime)
            plain = _invoke_tensors(original.interpreter, inputs, own_outputs)
            npu = _invoke_tensors(rewritten.interpreter, inputs, watched + own_outputs)
            for t, out in zip(own_outputs, outputs, strict=True):
                worst_own = max(worst_own, Figures.of(plain[t], npu[t]).max_abs_diff)
                out.worst(ref[t], plain[t])
            if judge is not None:
                verdicts.append(judge([ref[t] for t in own_outputs], [plain[t] for t in own_outputs]))
            for layer in layers:
                if layer.node not in lost and layer.folded_into is None:
                    layer.accumulated = Figures.of(ref[layer.tensor], npu[layer.tensor]).worst(layer.accumulated)
                if iso is not None:
                    iso.figures(layer, ref)
    finally:
        if iso is not None:
            iso.close()
    check = ("the model's own outputs are identical with and without the extra outputs" if worst_own == 0 else
             f"the extra outputs changed the model's own outputs (max |diff| {worst_own} LSB): accumulated figures "
             "describe the rewritten model")
    return Report(device, original.partitions, len(input_sets), layers, check, outputs, verdicts)


def _output_dtypes(model: bytes, tensors: Sequence[int]) -> list[tuple[int, str]]:
    from tflite.TensorType import TensorType

    sg = tflite.Model.GetRootAs(model, 0).Subgraphs(0)
    types = {v: k.lower() for k, v in vars(TensorType).items() if not k.startswith("_")}
    return [(t, types.get(sg.Tensors(t).Type(), "?")) for t in tensors]


def _tensor_names(model: bytes) -> dict[int, str]:
    sg = tflite.Model.GetRootAs(model, 0).Subgraphs(0)
    return {i: sg.Tensors(i).Name().decode(errors="replace") for i in range(sg.TensorsLength())}


# ---- printing -------------------------------------------------------------------------------------------------


def _cells(fig: Figures | None) -> str:
    if fig is None:
        return f"{'-':>7} {'-':>9} {'-':>8}"
    return f"{fig.max_abs_diff:>7} {fig.mean_abs_diff:>9.4f} {100.0 * fig.exact_fraction:>7.2f}%"


def short_name(name: str) -> str:
    """The first of the names the converter joins with ';' for a fused tensor (the full one is in --json)."""
    return name.split(";", 1)[0]


def _named(layer: Layer, column: str) -> str:
    fig = getattr(layer, column)
    return f"node {layer.node} ({layer.op}, {short_name(layer.name)}): max |diff| {fig.max_abs_diff}"


def format_report(report: Report, isolated: bool = True) -> str:
    head = f"{'node':>4}  {'op':<18} {'shape':<16} {'acc max':>7} {'acc mean':>9} {'acc exact':>8}"
    if isolated:
        head += f"  {'iso max':>7} {'iso mean':>9} {'iso exact':>8}"
    lines = [head + "  tensor"]
    for layer in report.layers:
        row = f"{layer.node:>4}  {layer.op:<18} {'x'.join(map(str, layer.shape)):<16} {_cells(layer.accumulated)}"
        if isolated:
            row += f"  {_cells(layer.isolated)}"
        lines.append(f"{row}  {short_name(layer.name)}")
        lines.extend(f"      ({note})" for note in layer.notes)
    lines.append("")
    first = report.first_differing()
    hidden = unobserved(report)
    if first is not None:
        lines.append(f"first layer whose output differs: {_named(first, 'accumulated')}")
    else:
        count = sum(hidden.values())
        lines.append("no layer differs" if not count else
                     f"no observed layer differs ({count} of {len(report.layers)} not observable: "
                     + "; ".join(f"{n} {why}" for why, n in hidden.items()) + ")")
    beyond = report.first_differing(1)
    if beyond is not None and beyond is not first:
        lines.append(f"first layer beyond 1 LSB: {_named(beyond, 'accumulated')}")
    if isolated:
        measured = [layer.isolated.max_abs_diff for layer in report.layers if layer.isolated is not None]
        worst = report.first_differing(max(measured) - 1, "isolated") if measured else None
        if worst is not None:
            lines.append(f"isolated, the worst layer: {_named(worst, 'isolated')}")
        elif measured:
            lines.append("isolated: no layer differs")
    if report.outputs:
        lines.append("")
        lines.append("the model's outputs, NPU against CPU (LSB; plain values for a float output):")
        for o in report.outputs:
            lines.append(f"  tensor {o.tensor} ({o.dtype}, {short_name(o.name)}): exact {100.0 * o.exact_fraction:.2f}%, "
                         f"worst {o.max_abs_diff:g}, mean {o.mean_abs_diff:.4g}")
    if report.verdicts:
        lines.append("")
        lines.append("task-level verdict, as the model's user judges it (docs/zoo.md rules):")
        lines.extend(f"  input {k}: {v}" for k, v in enumerate(report.verdicts))
    return "\n".join(lines)


TaskJudge = Callable[[list[np.ndarray], list[np.ndarray]], str]


def model_spec(model_path: Path, model: bytes) -> ModelSpec | None:
    """The model's spec.json entry (teflon.zoo.spec.spec_for_model), None without one."""
    from teflon.modelgen import graph_outputs
    from teflon.zoo.spec import spec_for_model

    return spec_for_model(model_path, [tuple(int(d) for d in i.shape) for i in graph_outputs(model)])[0]


def task_judge(model_path: Path, model: bytes) -> TaskJudge:
    """The task-level judge of a model: its spec.json entry's task and post-processing when the spec.json next to it
    (or the published classifiers' directory rule) names it (teflon.zoo.spec.spec_for_model), else the element rule
    (>= 99 % of the outputs within 6 LSB)."""
    from teflon.modelgen import graph_inputs, graph_outputs
    from teflon.zoo.judge import elements, lsb_comparison
    from teflon.zoo.run import judge_outputs, output_lsb
    from teflon.zoo.spec import spec_for_model

    infos, inputs, lsb = graph_outputs(model), graph_inputs(model), output_lsb(model)
    spec, why = spec_for_model(model_path, [tuple(int(d) for d in i.shape) for i in infos])

    def judge(ref: list[np.ndarray], out: list[np.ndarray]) -> str:
        cmp = lsb_comparison(ref, out, lsb)
        v = (judge_outputs(spec, ref, out, infos, inputs[0], cmp) if spec is not None and len(inputs) == 1
             else elements(cmp))
        task = spec.task if spec is not None else f"{why}: element rule"
        return f"{'pass' if v.passed else 'FAIL'} ({task}): {v.figures}" + (f"; {v.reason}" if v.reason else "")

    return judge


def unobserved(report: Report) -> dict[str, int]:
    """Why rows have no accumulated figures, with their counts: folded into another layer, or in a partition that
    did not compile with the extra outputs (with the compiler's first reason)."""
    out: dict[str, int] = {}
    for layer in report.layers:
        if layer.accumulated is not None:
            continue
        if layer.folded_into is not None:
            why = "folded into another layer (that layer's row covers them)"
        else:
            note = next((n for n in layer.notes if n.startswith("accumulated not observable")), "not compared")
            why = note.removeprefix("accumulated not observable: ")
        out[why] = out.get(why, 0) + 1
    return out


def run(args: argparse.Namespace) -> int:
    model = Path(args.model).read_bytes()
    if args.image:
        spec = model_spec(Path(args.model), model)
        input_sets = [image_inputs(model, args.image, spec.prep if spec is not None else None)]
        source = f"image {args.image}" + (" (its spec.json preprocessing)" if spec is not None else "")
    else:
        n = 1 if args.random is None else args.random
        if n < 1:
            raise ValueError("--random needs at least one input")
        input_sets = random_input_sets(model, n, args.seed)
        source = f"{n} random input(s), seeds {args.seed}..{args.seed + n - 1}" + (", worst over them" if n > 1 else "")
    isolated = not args.no_isolated
    report = layer_report(model, input_sets, delegate_options(args), runtime=args.runtime, isolated=isolated,
                          judge=task_judge(Path(args.model), model))
    print(f"model: {args.model}")
    print(f"device: {report.device}, {len({layer.node for layer in report.layers})} delegated node(s) in "
          f"{report.partitions} partition(s)")
    print(f"input: {source}")
    if not report.layers:
        print("no node is delegated: nothing to compare")
    else:
        print(f"rewrite check: {report.rewrite_check}")
        print("acc = the whole model on the NPU; iso = the node alone on the NPU, fed the CPU's inputs; "
              "|diff| in LSB of each tensor\n")
        print(format_report(report, isolated))
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_json(), indent=1) + "\n")
    return 0
