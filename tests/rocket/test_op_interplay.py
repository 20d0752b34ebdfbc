"""Rocket lowerings meeting each other (found by review): an ADD after a constant MUL, an ADD after an RK3576 layer
split into channel groups, and a global MEAN past the RK3588 CNA's input-channel limit. Each runs against TFLite's
builtin kernels on both simulated SoCs."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from conftest import sim_options
from teflon import netgen
from teflon.modelgen import (
    BuiltinOperator,
    BuiltinOptions,
    ConvCase,
    GraphBuilder,
    QParams,
    add_add,
    add_conv,
    conv_params,
    tflite,
)
from teflon.reference import compare, run_cpu, run_delegate

DEVICES = ["rk3588", "rk3576"]


def _inputs(model_shapes: list[tuple[int, ...]], dtype: str) -> list[np.ndarray]:
    info = np.iinfo(dtype)
    return [np.random.default_rng(i).integers(info.min, info.max + 1, s).astype(dtype)
            for i, s in enumerate(model_shapes)]


def _mul_then_add(dtype: str) -> bytes:
    """MUL by a per-channel constant (a fitted 1x1 depthwise conv), then ADD of another input: the ADD must not fuse
    into the MUL's convolution, whose OUT_CVT is fitted to the MUL's own output (it runs as a copy instead)."""
    g = GraphBuilder("mul-add")
    u = dtype == "uint8"
    x = g.tensor("x", (1, 8, 8, 32), dtype, QParams.make(0.05, 130 if u else 3))
    z = g.tensor("z", (1, 8, 8, 32), dtype, QParams.make(0.04, 120 if u else -5))
    c = g.constant("c", np.random.default_rng(1).integers(28 if u else -100, 228 if u else 100, 32).astype(dtype),
                   QParams.make(0.01, 128 if u else 0))
    m = g.tensor("m", (1, 8, 8, 32), dtype, QParams.make(0.02, 128 if u else 0))

    def options(fb):  # type: ignore[no-untyped-def]
        tflite.MulOptionsStart(fb)
        tflite.MulOptionsAddFusedActivationFunction(fb, 0)
        return tflite.MulOptionsEnd(fb)

    g.op(BuiltinOperator.MUL, 1 if u else 2, [x, c], [m], BuiltinOptions.MulOptions, options)
    y = add_add(g, m, z, out_name="y", out_quant=QParams.make(0.06, 127 if u else 1))
    return g.build([x, z], [y])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_add_after_constant_mul(dtype: str, device: str, delegate_library: None) -> None:
    model = _mul_then_add(dtype)
    x = _inputs([(1, 8, 8, 32)] * 2, dtype)
    run = run_delegate(model, x, **sim_options(device))
    cmp = compare(run_cpu(model, x), run.outputs)
    print(f"mul-add {dtype} {device}: {cmp}; reasons {run.reasons}")
    assert sorted(run.delegated) == [0, 1] and cmp.max_abs_diff <= 1, str(cmp)


def test_add_after_channel_groups_rk3576(delegate_library: None) -> None:
    """An ADD after an RK3576 per-channel layer split into channel groups runs as a copy, in the support decision and
    in the compiled program alike (before: claimed as a copy, compiled fused into the unsplit layer)."""
    from teflon import bridge, load_delegate
    from teflon.reference import make_interpreter

    case = ConvCase("dwconv", 14, 14, 64, None, 3, 1, "same", dtype="int8", per_channel=True, scale_spread=1000.0,
                    spread_planes=True, output_scale=0.008, seed=4)
    params = conv_params(case, np.random.default_rng([case.seed, zlib.crc32(case.name.encode())]))
    g = GraphBuilder("groups-add")
    x = g.tensor("x", (1, 14, 14, 64), "int8", params.input_quant)
    z = g.tensor("z", (1, 14, 14, 64), "int8", QParams.make(0.008, 0))
    model = g.build([x, z], [add_add(g, add_conv(g, case, x, params, "c"), z, out_name="y")])
    with bridge.capture() as cap:
        make_interpreter(model, [load_delegate(device="rk3576", sim="1")], reference=True)
    (_, decisions), = cap.support
    ops = [op for _, prog in cap.programs for op in prog.operations]
    assert "copy" in decisions[1][1], decisions[1]
    assert [op.nodes for op in ops].count([0]) > 1 and ops[-1].nodes == [1], [(op.nodes, op.kind) for op in ops]


@pytest.mark.parametrize("device", DEVICES)
def test_mean_wider_than_the_rk3588_cna(device: str, delegate_library: None) -> None:
    """A 17x17 global MEAN: 4624 input channels per plane, past RK3588's 4096 (refused there with the reason), within
    RK3576's 14-bit field (delegated, exact)."""
    n = netgen.Net("mean17", "uint8")
    model = n.build([n.input(17, 17, 32)], [n.mean_hw(n.conv(n.inputs[0], 40, 1))])
    x = _inputs([(1, 17, 17, 32)], "uint8")
    run = run_delegate(model, x, **sim_options(device))
    cmp = compare(run_cpu(model, x), run.outputs)
    print(f"mean17 {device}: {cmp}; reasons {run.reasons}")
    if device == "rk3588":
        assert 1 not in run.delegated and "4096" in run.reasons[1], run.reasons
    else:
        assert 1 in run.delegated
    assert cmp.max_abs_diff == 0, str(cmp)
