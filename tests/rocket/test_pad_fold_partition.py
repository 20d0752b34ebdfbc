"""A convolution whose foldable input PAD is not in its partition reads the PAD's output.

The PAD folds into the convolution's padding only when the partition computes the PAD too (partition.py). A
convolution compiled without its PAD node (the PAD left on the CPU or to another partition, or `compare`'s
one-node programs) must bind the padded map as its input and compute TFLite's answer from it; folding anyway left
that input unbound ("tensor N has no input binding") or, fed the unpadded map, off by ~98 LSB.
"""

from __future__ import annotations

import pytest

import teflon
from conftest import sim_options
from teflon import bridge, compiler, targets
from teflon.cli.compare import cpu_tensors
from teflon.modelgen import PadConvCase, random_inputs
from teflon.native import Device, Runner
from teflon.reference import compare
from teflon.runtime import make_interpreter

# rk3568 folds no PAD and runs no views (docs/hardware/rk3568.md §6): test_rk3568_status.py checks its claims
DEVICES = [t.name for t in targets.of_family("rocket") if t.drivable and t.generation != "rk3568"]
CASES = [PadConvCase("conv2d", 16, 16, 16, 32, pads=(1, 1, 1, 1)),
         PadConvCase("dwconv", 15, 15, 32, None, 3, 2, (0, 1, 0, 1), "int8")]


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("device", DEVICES)
def test_conv_compiled_without_its_pad_reads_the_padded_map(device: str, case: PadConvCase,
                                                            delegate_library: None) -> None:
    model = case.build()
    with bridge.capture() as cap:
        make_interpreter(model, [teflon.load_delegate(**sim_options(device))], reference=True)
    graph = cap.support[0][0]
    pad, conv = graph.operations
    assert (pad.kind, cap.support[0][1][pad.index][0]) == ("PAD", True), "the PAD must fold in the whole model"
    program = compiler.compile(graph, [conv.index], [pad.outputs[0]], list(conv.outputs), device)
    (x,) = random_inputs(model, 3)
    ref = cpu_tensors(model, [x], [pad.outputs[0], conv.outputs[0]])
    with Device(device, sim=True) as dev:
        runner = Runner(dev, program)
        try:
            out = runner.run({pad.outputs[0]: ref[pad.outputs[0]]})[conv.outputs[0]]
        finally:
            runner.close()
    c = compare(ref[conv.outputs[0]], out.reshape(ref[conv.outputs[0]].shape))
    assert c.max_abs_diff <= 1, f"{case}: max |diff| {c.max_abs_diff} LSB without the PAD in the partition"
