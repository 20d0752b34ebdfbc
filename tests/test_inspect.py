"""`python -m teflon inspect`: the grouped reasons for CPU nodes and the --dot partition graph.

The Graphviz binary is not needed: the DOT text is checked structurally (balanced braces, one node statement per
op with its colour, one cluster per partition, edges between existing nodes).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from teflon.cli import main
from teflon.cli.inspect import CPU_COLOUR, NPU_COLOUR, cpu_reasons, reason_pattern
from teflon.ir import Graph, Operation, op_name
from teflon.modelgen import PoolCase, operators

NODE = re.compile(r'^\s*n(\d+) \[label="([^"]*)", fillcolor="([^"]*)"')
EDGE = re.compile(r"^\s*(n\d+|t\d+) -> (n\d+|t\d+)")


def run_inspect(model: Path, device: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    dot = tmp_path / "graph.dot"
    rc = main(["inspect", "--model", str(model), "--device", device, "--sim", "1", "--dot", str(dot)])
    out = capsys.readouterr().out
    assert rc == 0, out
    return out, dot.read_text()


def check_dot(text: str, nops: int) -> tuple[dict[int, str], int]:
    """Structural checks; returns the fill colour of every op node and the number of clusters."""
    assert text.startswith("digraph ") and text.rstrip().endswith("}")
    depth = 0
    for ch in re.sub(r'"(?:[^"\\]|\\.)*"', '""', text):  # braces inside labels do not count
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0
    assert depth == 0
    colours: dict[int, str] = {}
    declared: set[str] = set()
    for line in text.splitlines():
        m = NODE.match(line)
        if m:
            node = int(m.group(1))
            assert node not in colours, f"n{node} declared twice"
            colours[node] = m.group(3)
            assert m.group(2).startswith(f"{node} ")
        t = re.match(r"^\s*(t\d+) \[", line)
        if t:
            declared.add(t.group(1))
    assert sorted(colours) == list(range(nops))
    declared |= {f"n{i}" for i in colours}
    edges = [EDGE.match(line).groups() for line in text.splitlines() if EDGE.match(line)]
    assert edges and all(a in declared and b in declared for a, b in edges)
    return colours, text.count("subgraph cluster_")


def test_reason_pattern_groups_numbers_only() -> None:
    assert reason_pattern("per-channel weight quantization (32 scales) not supported on rk3588") == \
        "per-channel weight quantization (N scales) not supported on rk3588"
    assert reason_pattern("kernel 7x7 in112x112x3") == "kernel 7x7 in112x112x3"


def test_cpu_reasons_counts_and_order() -> None:
    ops = [Operation(index=i, kind=k, inputs=[], outputs=[]) for i, k in
           enumerate(["CONV_2D", "CONV_2D", "DEPTHWISE_CONV_2D", "ADD", "CONV_2D"])]
    decisions = {0: (False, "per-channel (32 scales)"), 1: (False, "per-channel (96 scales)"),
                 2: (False, "per-channel (8 scales)"), 3: (False, "ADD on the CPU"), 4: (True, "conv")}
    groups = cpu_reasons(Graph(tensors={}, operations=ops), decisions, {4: "LoweringError: boom"})
    assert [(n, why) for n, why, _ in groups] == [
        (3, "per-channel (N scales)"), (1, "ADD on the CPU"),
        (1, "claimed, but its partition did not compile: LoweringError: boom")]
    assert dict(groups[0][2]) == {"CONV_2D": 2, "DEPTHWISE_CONV_2D": 1}


@pytest.mark.parametrize("device", ["rk3588", "a311d"])
def test_inspect_conv_avgpool(device: str, delegate_library: None, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "conv-avgpool.tflite"
    # a 3x3 SAME average reads padding (TFLite divides by the valid count): it stays on the CPU
    model.write_bytes(PoolCase(16, 16, 8, filter=3, stride=1, padding="same", after_conv=True, dtype="int8").build())
    out, dot = run_inspect(model, device, tmp_path, capsys)
    summary = [line for line in out.splitlines() if line.startswith("  * ")]
    assert len(summary) == 1 and summary[0].startswith("  *   1  ") and "[AVERAGE_POOL_2D 1]" in \
        summary[0], out
    colours, clusters = check_dot(dot, 2)
    assert colours == {0: NPU_COLOUR, 1: CPU_COLOUR} and clusters == 1
    assert "n0 -> n1" in dot and "16x16x8" in dot


def test_inspect_mobilenet_dot(shared_dir: Path, delegate_library: None, tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_dir / "models" / "mobilenet_v1_0.25_128_quant.tflite"
    if not path.is_file():
        pytest.skip(f"{path.name} not in {path.parent}")
    out, dot = run_inspect(path, "rk3588", tmp_path, capsys)
    ops = operators(path.read_bytes())
    colours, clusters = check_dot(dot, len(ops))
    cpu = {i for i, c in colours.items() if c != NPU_COLOUR}
    npu = ("CONV_2D", "DEPTHWISE_CONV_2D", "RESHAPE", "AVERAGE_POOL_2D")
    assert cpu == {i for i, op in enumerate(ops) if op.name not in npu}
    assert clusters == 1  # the AVERAGE_POOL_2D runs on the PPU: one partition up to the RESHAPE
    summary = [line for line in out.splitlines() if line.startswith("  * ")]
    assert len(summary) == len(cpu) and all(line.split()[1] == "1" for line in summary), out


@pytest.mark.parametrize(("code", "custom", "name"), [
    (3, "", "CONV_2D"), (44, "", "UNIDIRECTIONAL_SEQUENCE_LSTM"), (69, "", "TILE"), (90, "", "FLOOR_DIV"),
    (107, "", "GATHER_ND"),
    (32, "TFLite_Detection_PostProcess", "CUSTOM(TFLite_Detection_PostProcess)"), (9999, "", "BUILTIN_9999")])
def test_op_name_is_the_schema_name(code: int, custom: str, name: str) -> None:
    assert op_name(code, custom) == name


def test_every_builtin_code_of_the_schema_has_its_name() -> None:
    """The table covers the schema the converter's `tflite` package was generated from, name for name."""
    import tflite

    schema = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
    assert {code: op_name(code) for code in schema if code != 32} == {c: n for c, n in schema.items() if c != 32}
