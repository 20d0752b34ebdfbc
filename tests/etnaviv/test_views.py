"""The glue of real models on the etnaviv NPUs without a copy (teflon.etnaviv.views): CONCATENATION and SPLIT /
SPLIT_V on the channel axis as plane ranges of one buffer, RESHAPE / SQUEEZE / EXPAND_DIMS and the NHWC <-> NCHW
TRANSPOSEs as views, on both chips, uint8 and int8, against TFLite's builtin CPU kernels.

Each case is a small net (teflon.netgen) whose glue sits between NPU jobs: every node must be delegated in one
partition, the output within 1 LSB of the CPU and >= 99.5 % exact (its convolutions' tolerance; the glue adds no
error: the `exact-` cases, whose other jobs are exact TP copies, must be 100 % exact). The compiled program is
checked too: no job reads or writes a concatenation's or split's parts through a copy of its own where a view
serves (the copies counted per case), and `check_program` passed at compile time.
Ids name the parameters: `a311d-concat-in8x8x16+8x8x8-axis3-u8`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from conftest import device_cases
from opcheck import MAX_DIFF, MIN_EXACT
from teflon import targets
from teflon.etnaviv.lower import lower
from teflon.etnaviv.views import parts_plan, reshape_plan
from teflon.ir import Graph, Operation, Quant, Tensor
from teflon.modelgen import DTYPE_TOKEN, QParams, random_inputs
from teflon.netgen import Net
from teflon.reference import compare, run_cpu, run_delegate

DEVICES = [t.name for t in targets.of_family("etnaviv")]
PADS = [(0, 0), (1, 1), (1, 1), (0, 0)]  # a PAD is an exact TP job: one convolution at most on any path


@dataclass(frozen=True)
class GlueCase:
    name: str  # without the dtype token
    dtype: str
    build_net: Callable[[Net], list[int]]  # the net's outputs
    exact: bool = False  # only exact jobs besides the glue: 100 % exact required

    def __str__(self) -> str:
        return f"{self.name}-{DTYPE_TOKEN[self.dtype]}"

    def build(self) -> bytes:
        n = Net(str(self), self.dtype, per_channel=False)
        outputs = self.build_net(n)
        return n.build(n.inputs, outputs)


def _concat_two(n: Net) -> list[int]:
    x = n.input(8, 8, 8)
    return [n.concat([n.conv(x, 16, k=1), n.conv(x, 8, k=3)])]


def _concat_input(n: Net) -> list[int]:
    """A part that is the partition input: transposed straight into its planes."""
    x = n.input(8, 8, 8)
    return [n.pad(n.concat([n.conv(x, 16, k=1), x]), PADS)]


def _concat_twice(n: Net) -> list[int]:
    """The same tensor named twice: the second part is a TP copy."""
    x = n.input(8, 8, 8)
    a = n.conv(x, 8, k=1)
    return [n.concat([a, n.conv(x, 4, k=1), a])]


def _concat_phantom(n: Net) -> list[int]:
    """v7 gives a 3-channel job 8 kernels: its phantom planes land on the next part, written earlier (copied)."""
    x = n.input(8, 8, 8)
    b = n.conv(x, 8, k=1)
    a = n.conv(x, 3, k=1)
    return [n.concat([a, b])]


def _concat_phantom_add(n: Net) -> list[int]:
    """v7: the last part's job writes phantom planes past the whole's end, where the ADD's other operand (written
    earlier) would sit: the whole is copied for the ADD."""
    x, z = n.input(8, 8, 8), n.input(8, 8, 11)
    c = n.pad(z, PADS)
    y = n.concat([n.pad(x, PADS), n.conv(n.pad(x, PADS), 3, k=1)])
    return [n.add(y, c)]


def _concat_requant(n: Net) -> list[int]:
    """uint8: a part of another quantization (the graph input z) is requantized into its planes by an exact TP
    TABLE job, as TFLite's ConcatenationWithScaling; the other part is written in place."""
    x, z = n.input(8, 8, 8), n.input(10, 10, 4)
    y = n.concat([n.pad(x, PADS), z])
    n.g.set_quant(z, QParams.make(0.01, 120))
    return [y]


def _concat_h(n: Net) -> list[int]:
    """Along H (8 channels): no range of the planes, a range of the NHWC bytes: the convolution's part is
    detransposed into its rows, the graph input's part copied in by the host."""
    x, z = n.input(8, 8, 8), n.input(4, 8, 8)
    return [n.pad(n.concat([n.conv(x, 8, k=1), z], axis=1), PADS)]


def _split_h(n: Net) -> list[int]:
    """Rows of a padded tensor as NHWC ranges, each read by a convolution."""
    x = n.input(12, 8, 8)
    a, b = n.split(n.pad(x, PADS), 2, axis=1)
    return [n.conv(a, 8, k=1), n.conv(b, 8, k=3)]


def _concat_rows(n: Net) -> list[int]:
    """The face detector's box rows: (1, N, 4) pieces concatenated along N (W of a one-row tensor), then sliced."""
    x = n.input(8, 8, 8)
    a = n.reshape(n.conv(x, 4, k=1), (1, 64, 4))
    b = n.reshape(n.conv(x, 4, k=3), (1, 64, 4))
    y = n.concat([a, b], axis=1)
    return [n.channels(y, 0, 2), n.channels(y, 2, 2)]


def _concat_nested(n: Net) -> list[int]:
    x = n.input(8, 8, 8)
    inner = n.concat([n.conv(x, 8, k=1), n.conv(x, 4, k=1)])
    return [n.pad(n.concat([inner, n.conv(x, 4, k=3)]), PADS)]


def _concat_flat(n: Net) -> list[int]:
    """A one-pixel concatenation (planar and NHWC bytes coincide): no detranspose at the output either."""
    x = n.input(1, 1, 8)
    return [n.concat([n.conv(x, 16, k=1), n.conv(x, 8, k=1)])]


def _split_convs(n: Net) -> list[int]:
    x = n.input(8, 8, 24)
    parts = n.split(n.pad(x, PADS), 3)
    return [n.concat([n.conv(p, 8, k=3) for p in parts])]


def _split_outputs(n: Net) -> list[int]:
    """Split parts handed to the runtime (detransposed) and read by a convolution."""
    x = n.input(8, 8, 8)
    a, b = n.split(n.conv(x, 16, k=1), 2)
    return [a, n.conv(b, 8, k=1)]


def _split_add(n: Net) -> list[int]:
    """Split parts as the two ADD operands: views cannot sit back to back, so they are copied."""
    x = n.input(8, 8, 16)
    a, b = n.split(n.pad(x, PADS), 2)
    return [n.add(a, b)]


def _split_v(n: Net) -> list[int]:
    """Parts of 4, 12 and 8 channels (SPLIT_V): any channel offset is a plane offset."""
    x = n.input(8, 8, 24)
    parts = n.split_v(n.pad(x, PADS), [4, 12, 8])
    return [n.concat([n.conv(p, 8, k=1) for p in parts])]


def _slices(n: Net) -> list[int]:
    """Channel ranges as SLICE and STRIDED_SLICE (masks on the whole axes): plane ranges of the input."""
    x = n.input(8, 8, 16)
    p = n.pad(x, PADS)
    return [n.conv(n.channels(p, 4, 8), 8, k=1), n.pad(n.channels(p, 13, 3, strided=True), PADS)]


def _squeeze_expand(n: Net) -> list[int]:
    """A 1x1 plane squeezed to (1, C), expanded back: views of one buffer."""
    x = n.input(1, 1, 8)
    y = n.squeeze(n.conv(x, 16, k=1), [1, 2])
    return [n.pad(n.expand_dims(n.expand_dims(y, 1), 1), PADS)]


def _split_add_in_place(n: Net) -> list[int]:
    """A YOLOv8 box decode's halves: the SPLIT's parts sit back to back, so the first ADD reads them in place; the
    second (second half first) gets copies."""
    x = n.input(1, 4, 64)
    lt, rb = n.split(n.pad(x, [(0, 0), (0, 0), (0, 0), (0, 0)]), 2, axis=2)
    return [n.add(lt, rb), n.add(rb, lt)]


def _exact_glue(n: Net) -> list[int]:
    """Only exact jobs: a PAD (TP), the split parts swapped by a concatenation (views of another buffer: copied)."""
    x = n.input(8, 8, 16)
    a, b = n.split(n.pad(x, PADS), 2)
    return [n.concat([b, a])]


def _exact_concat_pad(n: Net) -> list[int]:
    """PAD jobs writing straight into the concatenation's planes, the whole read by another PAD."""
    x = n.input(8, 8, 8)
    return [n.pad(n.concat([n.pad(x, PADS), n.pad(x, PADS)]), PADS)]


def _reshape_pixels(n: Net) -> list[int]:
    """Regrouping pixels (channels kept): the planes stay as they are."""
    x = n.input(8, 8, 8)
    return [n.pad(n.reshape(n.conv(x, 16, k=1), (1, 16, 4, 16)), PADS)]


def _reshape_channels(n: Net) -> list[int]:
    """Regrouping channels: read from the NHWC bytes (a detranspose), then planar again for the convolution."""
    x = n.input(8, 8, 8)
    return [n.pad(n.reshape(n.conv(x, 16, k=1), (1, 8, 16, 8)), PADS)]


def _reshape_flat(n: Net) -> list[int]:
    """A 1x1 plane flattened to (1, C) and back: the bytes never move."""
    x = n.input(1, 1, 8)
    y = n.reshape(n.conv(x, 16, k=1), (1, 16))
    return [n.pad(n.reshape(y, (1, 1, 1, 16)), PADS)]


def _transposes(n: Net) -> list[int]:
    """An NCHW stretch between TRANSPOSEs (0, 3, 1, 2) and (0, 2, 3, 1), with a PAD inside it: views of planes."""
    x = n.input(8, 8, 8)
    t = n.transpose(n.conv(x, 16, k=1), (0, 3, 1, 2))
    return [n.pad(n.transpose(n.pad(t, [(0, 0), (0, 0), (1, 1), (1, 1)]), (0, 2, 3, 1)), PADS)]


CASES = [
    ("concat-in8x8x16+8x8x8-axis3", _concat_two, False),
    ("concat-in8x8x16+input8x8x8-axis3", _concat_input, False),
    ("concat-in8x8x8+8x8x4+same-axis3", _concat_twice, False),
    ("concat-in8x8x3+8x8x8-axis3-phantom", _concat_phantom, False),
    ("concat-in10x10x8+10x10x3-axis3-phantom-add", _concat_phantom_add, False),
    ("concat-nested-in8x8x8+8x8x4+8x8x4-axis3", _concat_nested, False),
    ("concat-in1x1x16+1x1x8-axis3", _concat_flat, False),
    ("split-in10x10x24-n3-axis3", _split_convs, False),
    ("split-in8x8x16-n2-axis3-outputs", _split_outputs, False),
    ("split-in10x10x16-n2-axis3-add", _split_add, False),
    ("splitv-in10x10x24-4+12+8-axis3", _split_v, False),
    ("squeeze-expand-in1x1x16", _squeeze_expand, False),
    ("slice-in10x10x16-c4+8-and-strided-c13+3", _slices, False),
    ("split-in1x4x64-n2-axis2-add-both-orders", _split_add_in_place, False),
    ("exact-split-in10x10x16-n2-concat-swapped", _exact_glue, True),
    ("exact-concat-in10x10x8+10x10x8-pads", _exact_concat_pad, True),
    ("concat-in8x8x8+input4x8x8-axis1", _concat_h, False),
    ("split-in14x10x8-n2-axis1", _split_h, False),
    ("concat-rows-in64x4+64x4-axis1-sliced", _concat_rows, False),
    ("reshape-in8x8x16-to16x4x16", _reshape_pixels, False),
    ("exact-concat-requant-in10x10x8+input10x10x4-s0.01-zp120", _concat_requant, True),
    ("reshape-in8x8x16-to8x16x8", _reshape_channels, False),
    ("reshape-in1x1x16-to16-and-back", _reshape_flat, False),
    ("transpose-nchw-in8x8x16-pad", _transposes, False),
]
# TFLite refuses an int8 concatenation that would requantize: that case is uint8 only
GLUE = [GlueCase(name, dtype, fn, exact) for name, fn, exact in CASES for dtype in ("uint8", "int8")
        if not (fn is _concat_requant and dtype == "int8")]


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, GLUE))
def test_glue(device: str, case: GlueCase, options: dict[str, str]) -> None:
    model = case.build()
    inputs = random_inputs(model, seed=0)
    ref = run_cpu(model, inputs)
    run = run_delegate(model, inputs, **options)
    cmps = [compare([r], [o]) for r, o in zip(ref, run.outputs)]
    print(f"{case} on {device}: {'; '.join(map(str, cmps))}; delegated {len(run.delegated)}/{len(run.ops)} nodes in "
          f"{run.partitions} partition(s)")
    missing = [i for i in range(len(run.ops)) if i not in run.delegated]
    assert not missing, f"not delegated: {run.describe(missing)}"
    assert run.partitions == 1
    for cmp in cmps:
        if case.exact:
            assert cmp.max_abs_diff == 0, f"{case}: {cmp} (only exact jobs: must equal the CPU)"
        else:
            assert cmp.within(MAX_DIFF, MIN_EXACT), f"{case}: {cmp}"


# ---- the lowering itself: where the parts live ---------------------------------------------------------------

def _q(scale: float = 0.05, zp: int = 128) -> Quant:
    return Quant(np.array([scale], np.float32), np.array([zp], np.int32))


def _act(i: int, shape: tuple[int, ...], q: Quant | None = None) -> Tensor:
    return Tensor(i, "uint8", shape, q or _q())


def _conv1x1(index: int, x: int, y: int, w: int, b: int) -> Operation:
    return Operation(index, "CONV_2D", [x, w, b], [y], {"padding": "VALID", "stride_w": 1, "stride_h": 1,
                                                          "activation": "NONE", "dilation_w": 1, "dilation_h": 1})


def _concat_graph(oc: tuple[int, int], q_b: Quant | None = None) -> Graph:
    """x (8x8x8) -> conv a (oc[0]), conv b (oc[1]) -> concat: tensors 0 x, 1 a, 2 b, 3 y, weights/biases 10.."""
    rng = np.random.default_rng(0)
    t = {0: _act(0, (1, 8, 8, 8)), 1: _act(1, (1, 8, 8, oc[0])), 2: _act(2, (1, 8, 8, oc[1]), q_b),
         3: _act(3, (1, 8, 8, sum(oc)))}
    ops = []
    for k, (out, c) in enumerate(((1, oc[0]), (2, oc[1]))):
        t[10 + 2 * k] = Tensor(10 + 2 * k, "uint8", (c, 1, 1, 8), Quant(np.array([0.01], np.float32),
                                                                      np.array([120], np.int32)),
                               rng.integers(0, 256, (c, 1, 1, 8)).astype(np.uint8))
        t[11 + 2 * k] = Tensor(11 + 2 * k, "int32", (c,), None, np.zeros(c, np.int32))
        ops.append(_conv1x1(k, 0, out, 10 + 2 * k, 11 + 2 * k))
    ops.append(Operation(2, "CONCATENATION", [1, 2], [3], {"axis": 3, "activation": "NONE"}))
    return Graph(t, ops)


@pytest.mark.parametrize("chip", DEVICES)
def test_concat_parts_are_views_of_the_output(chip: str) -> None:
    from teflon.etnaviv.chips import CHIPS

    g = _concat_graph((8, 8))
    low = lower(g, [0, 1, 2], CHIPS[chip], outputs=[3])
    assert [j.tp_name for j in low.jobs if j.type == 1] == ["TRANSPOSE", "DETRANSPOSE"]  # no copy
    nn_out = [j.output_tensor for j in low.jobs if j.type == 0]
    holder = next(j.input_tensor for j in low.jobs if j.tp_name == "DETRANSPOSE")
    assert {low.aliases[t] for t in set(nn_out)} == {(holder, 0), (holder, 8 * 64)}


def test_concat_of_other_quantization() -> None:
    """uint8: TFLite's requantization as a TP table (refused with the count when the table is not exact); int8:
    refused (TFLite refuses it too)."""
    from teflon.etnaviv.chips import CHIPS
    from teflon.etnaviv.views import concat_requant_table

    g = _concat_graph((8, 8), _q(0.1, 128))
    assert not isinstance(parts_plan(g, g.operations[2]), str)
    table = concat_requant_table(g, 2, 3)
    assert table is not None and table[128] == 128 and table[129] == 130  # 0.1 / 0.05: two steps per step
    jobs = lower(g, [0, 1, 2], CHIPS["a311d"], outputs=[3]).jobs
    assert [j.tp_name for j in jobs if j.type == 1] == ["TRANSPOSE", "TABLE", "DETRANSPOSE"]
    for t in g.tensors.values():
        if t.dtype == "uint8" and t.index < 10:
            t.dtype = "int8"
    why = parts_plan(g, g.operations[2])
    assert isinstance(why, str) and "int8 CONCATENATION" in why


def test_non_channel_axis_refused_with_reason() -> None:
    g = Graph({0: _act(0, (1, 4, 8, 2)), 1: _act(1, (1, 4, 8, 2)), 2: _act(2, (1, 8, 8, 2))},
              [Operation(0, "CONCATENATION", [0, 1], [2], {"axis": 1, "activation": "NONE"})])
    plan = parts_plan(g, g.operations[0])
    assert not isinstance(plan, str) and plan.nhwc and plan.offsets == [0, 64]  # NHWC rows
    g2 = Graph({0: _act(0, (1, 4, 8, 2)), 1: _act(1, (1, 4, 8, 2)), 2: _act(2, (1, 4, 16, 2))},
               [Operation(0, "CONCATENATION", [0, 1], [2], {"axis": 2, "activation": "NONE"})])
    why = parts_plan(g2, g2.operations[0])
    assert isinstance(why, str) and "W axis" in why and "neither of the planar bytes" in why
    g1 = Graph({0: _act(0, (1, 4, 8, 1)), 1: _act(1, (1, 4, 8, 1)), 2: _act(2, (1, 8, 8, 1))},
               [Operation(0, "CONCATENATION", [0, 1], [2], {"axis": 1, "activation": "NONE"})])
    plan = parts_plan(g1, g1.operations[0])
    assert not isinstance(plan, str) and plan.offsets == [0, 32]  # one channel: rows are bytes


def test_slice_plans() -> None:
    from teflon.etnaviv.views import slice_plan

    def plan(shape: tuple[int, ...], begin: list[int], size: list[int]) -> object:
        t = {0: _act(0, shape), 1: _act(1, tuple(d if s < 0 else s for d, s in zip(shape, size))),
             2: Tensor(2, "int32", (len(shape),), None, np.array(begin, np.int32)),
             3: Tensor(3, "int32", (len(shape),), None, np.array(size, np.int32))}
        g = Graph(t, [Operation(0, "SLICE", [0, 2, 3], [1])])
        return slice_plan(g, g.operations[0])

    p = plan((1, 4420, 4), [0, 0, 2], [-1, -1, 2])  # lightface's box halves: channels of a 1x4420 row
    assert not isinstance(p, str) and p.offsets == [2 * 4420]
    p = plan((1, 6, 8, 1), [0, 2, 0, 0], [-1, 3, -1, -1])  # rows of a one-channel tensor
    assert not isinstance(p, str) and p.offsets == [16]
    assert "neither" in str(plan((1, 6, 8, 2), [0, 0, 2, 0], [-1, -1, 3, -1]))  # columns of a 6-row tensor
    assert "cuts 2 axes" in str(plan((1, 6, 8, 2), [0, 2, 0, 1], [-1, 3, -1, 1]))


def test_reshape_plans() -> None:
    def plan(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
        g = Graph({0: _act(0, a), 1: _act(1, b)}, [Operation(0, "RESHAPE", [0], [1])])
        p = reshape_plan(g, g.operations[0])
        assert not isinstance(p, str)
        return p.planar_same

    assert plan((1, 8, 8, 16), (1, 64, 16))  # pixels regrouped, channels kept
    assert plan((1, 1, 1, 32), (1, 32))  # a 1x1 plane flattened
    assert plan((1, 4, 8, 1), (1, 32))  # one channel
    assert not plan((1, 8, 8, 16), (1, 8, 16, 8))  # channels regrouped


def test_view_between_cpu_nodes_not_claimed() -> None:
    from teflon.etnaviv.chips import CHIPS
    from teflon.etnaviv.lower import support

    g = Graph({0: _act(0, (1, 4, 4, 8)), 1: _act(1, (1, 16, 8)), 2: _act(2, (1, 16, 8))},
              [Operation(0, "RESHAPE", [0], [1]), Operation(1, "SOFTMAX", [1], [2])])
    ok, why = support(g, CHIPS["a311d"])[0]
    assert not ok and "not next to NPU work" in why
    assert "nor in Mesa's etnaviv" in support(g, CHIPS["a311d"])[1][1]


def test_v7_phantom_planes_over_an_earlier_part_copy_it() -> None:
    """a311d: a 3-channel NN job writes 8 planes (phantom kernels); with the 8-channel part written before it, the
    3-channel part is computed in its own buffer and copied in (written after, it may stay a view)."""
    from teflon.etnaviv.chips import CHIPS

    g = _concat_graph((3, 8))
    copies = {order: [j.tp_name for j in lower(g, list(order), CHIPS["a311d"], outputs=[3]).jobs if j.type == 1]
              for order in ((1, 0, 2), (0, 1, 2))}
    assert copies[(1, 0, 2)] == ["TRANSPOSE", "PAD", "DETRANSPOSE"]
    assert copies[(0, 1, 2)] == ["TRANSPOSE", "DETRANSPOSE"]
    v8 = [j.tp_name for j in lower(g, [1, 0, 2], CHIPS["imx8mp"], outputs=[3]).jobs if j.type == 1]
    assert v8 == ["TRANSPOSE", "DETRANSPOSE"]  # v8 streams have no phantom kernels


def test_concat_as_first_add_operand_keeps_its_partner_clear() -> None:
    """a311d: a concatenation whose last part's job writes phantom planes past the whole's end, then ADDed to a
    tensor written before that job: the ADD's second operand would sit right after the whole, so the whole is
    copied for the ADD."""
    from teflon.etnaviv.chips import CHIPS

    g = _concat_graph((8, 3))  # y = concat(a 8, b 3): 11 channels
    rng = np.random.default_rng(1)
    g.tensors[4] = _act(4, (1, 8, 8, 11))
    g.tensors[5] = _act(5, (1, 8, 8, 11))
    g.tensors[14] = Tensor(14, "uint8", (11, 1, 1, 8), Quant(np.array([0.01], np.float32), np.array([120], np.int32)),
                           rng.integers(0, 256, (11, 1, 1, 8)).astype(np.uint8))
    g.tensors[15] = Tensor(15, "int32", (11,), None, np.zeros(11, np.int32))
    g.operations = [_conv1x1(3, 0, 4, 14, 15), *g.operations,
                    Operation(4, "ADD", [3, 4], [5], {"activation": "NONE"})]
    low = lower(g, [3, 0, 1, 2, 4], CHIPS["a311d"], outputs=[5])
    add = next(j for j in low.jobs if j.input_count == 2)
    assert add.input_tensor != 3 and [j.tp_name for j in low.jobs if j.type == 1].count("PAD") == 1


def test_add_of_back_to_back_views_reads_them_in_place() -> None:
    from teflon.etnaviv.chips import CHIPS

    t = {0: _act(0, (1, 1, 4, 64)), 1: _act(1, (1, 1, 2, 64)), 2: _act(2, (1, 1, 2, 64)),
         3: _act(3, (1, 1, 2, 64)), 9: Tensor(9, "int32", (1,), None, np.array([2], np.int32))}
    g = Graph(t, [Operation(0, "SPLIT", [9, 0], [1, 2]), Operation(1, "ADD", [1, 2], [3], {"activation": "NONE"})])
    for chip in DEVICES:
        low = lower(g, [0, 1], CHIPS[chip], outputs=[3])
        add = next(j for j in low.jobs if j.input_count == 2)
        assert (add.input_tensor, add.input_tensor_1) == (1, 2)  # no copy: the halves are read where they are
        assert low.aliases[1] == (0, 0) and low.aliases[2] == (0, 128)
