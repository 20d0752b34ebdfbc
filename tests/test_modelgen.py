"""teflon.modelgen, teflon.reference and the case tables, without the delegate."""

from __future__ import annotations

import collections
from pathlib import Path

import numpy as np
import pytest
import tflite

from opcases import (
    CHANNELS,
    DEFAULT_ADD,
    DEFAULT_CONV,
    DEFAULT_PER_CHANNEL,
    DEFAULT_POOL,
    KERNELS,
    LITERT_CASES,
    SIZES,
    SLOW_ADD,
    SLOW_CONV,
    SLOW_PER_CHANNEL,
    SPREAD_DEFAULT_PER_CHANNEL,
    SPREAD_SLOW_PER_CHANNEL,
    WEIGHT_ZPS,
    total_macs,
)
from teflon import reference
from teflon.modelgen import AddCase, ConvCase, PoolCase, graph_inputs, operator_names, random_inputs
from teflon.runtime import interpreter_module, make_interpreter

# ---------------------------------------------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("case", "name"), [
    (ConvCase("conv2d", 112, 112, 32, 64, 3, 2, "same"), "conv2d-in112x112x32-oc64-k3-s2-same-u8"),
    (ConvCase("dwconv", 28, 28, 64, None, 3, 1, "valid", dtype="int8"), "dwconv-in28x28x64-k3-s1-valid-i8"),
    (ConvCase("conv2d", 8, 8, 16, 32, 1, 1, "same", dtype="int8", per_channel=True),
     "conv2d-in8x8x16-oc32-k1-s1-same-i8pc"),
    (ConvCase("conv2d", 8, 8, 16, 32, 3, 1, "same", "relu6"), "conv2d-in8x8x16-oc32-k3-s1-same-u8-relu6"),
    (ConvCase("dwconv", 8, 8, 16, None, dtype="int8", per_channel=True, scale_spread=1000.0),
     "dwconv-in8x8x16-k3-s1-same-i8pc-spread1000"),
    (ConvCase("dwconv", 14, 7, 16, kernel=5, weight_zp=74), "dwconv-in14x7x16-k5-s1-same-u8-wzp74"),
    (AddCase(8, 8, 16), "add-in8x8x16-u8"),
    (AddCase(8, 8, 16, "conv2", out_c=32, kernel=3, dtype="int8"), "conv2-add-in8x8x16-oc32-k3-i8"),
    (PoolCase(8, 8, 16, after_conv=True), "conv-avgpool-in8x8x16-ck3-k2-s2-valid-u8"),
])
def test_names(case: ConvCase | AddCase | PoolCase, name: str) -> None:
    assert case.name == name == str(case)


def test_bad_cases_raise() -> None:
    with pytest.raises(ValueError):
        ConvCase("conv2d", 8, 8, 16, 16, dtype="uint8", per_channel=True)
    with pytest.raises(ValueError):
        ConvCase("conv2d", 8, 8, 16, 16, dtype="int8", scale_spread=10.0)  # needs per-channel weights
    with pytest.raises(ValueError):
        ConvCase("conv2d", 8, 8, 16, 16, dtype="int8", weight_zp=5)
    with pytest.raises(ValueError):
        ConvCase("dwconv", 8, 8, 16, 32)
    with pytest.raises(ValueError):
        ConvCase("conv2d", 8, 8, 16, 16, weight_zp=300)
    invalid = ConvCase("conv2d", 3, 3, 16, 16, kernel=5, padding="valid")
    assert not invalid.valid
    with pytest.raises(ValueError):
        invalid.build()
    assert ConvCase("conv2d", 3, 3, 16, 16, kernel=5, padding="same").valid


# ---------------------------------------------------------------------------------------------------------------
# Flatbuffer conventions
# ---------------------------------------------------------------------------------------------------------------

STRUCTURE_CASES = [
    ConvCase("conv2d", 8, 8, 16, 32, 3, 2, "same"),
    ConvCase("dwconv", 14, 14, 32, None, 5, 1, "valid", dtype="int8", per_channel=True),
    AddCase(8, 8, 16, "conv2", out_c=16, kernel=3),
    PoolCase(8, 8, 16, after_conv=True, dtype="int8"),
]


@pytest.mark.parametrize("case", STRUCTURE_CASES, ids=str)
def test_flatbuffer_conventions(case: ConvCase | AddCase | PoolCase) -> None:
    data = case.build()
    assert data[4:8] == b"TFL3"
    model = tflite.Model.GetRootAs(data, 0)
    assert model.Version() == 3
    assert model.SubgraphsLength() == 1
    assert model.Buffers(0).DataLength() == 0, "buffer 0 must be the empty sentinel"
    for i in range(model.OperatorCodesLength()):
        oc = model.OperatorCodes(i)
        assert oc.DeprecatedBuiltinCode() == min(oc.BuiltinCode(), 127)
    base = np.frombuffer(data, np.uint8).ctypes.data
    for i in range(1, model.BuffersLength()):
        buf = model.Buffers(i)
        if buf.DataLength():
            assert (buf.DataAsNumpy().ctypes.data - base) % 16 == 0, f"buffer {i} not 16-byte aligned"
    # the runtime accepts it
    make_interpreter(data, reference=True)


def test_deterministic() -> None:
    case = ConvCase("conv2d", 14, 14, 16, 32, 3, 1, "same")
    assert case.build() == case.build()
    assert ConvCase("conv2d", 14, 14, 16, 32, 3, 1, "same", seed=1).build() != case.build()
    m = case.build()
    a, b = random_inputs(m, 0), random_inputs(m, 0)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def _tensor_quant(data: bytes, name: str) -> tuple[np.ndarray, np.ndarray, int, int]:
    sg = tflite.Model.GetRootAs(data, 0).Subgraphs(0)
    for i in range(sg.TensorsLength()):
        t = sg.Tensors(i)
        if t.Name().decode() == name:
            q = t.Quantization()
            return q.ScaleAsNumpy(), q.ZeroPointAsNumpy(), q.QuantizedDimension(), t.Type()
    raise KeyError(name)


def test_quantization_conventions() -> None:
    relu = ConvCase("conv2d", 8, 8, 16, 32, 3, 1, "same", "relu", "int8").build()
    _, zp, _, _ = _tensor_quant(relu, "output")
    assert zp[0] == -128
    relu6 = ConvCase("dwconv", 8, 8, 16, None, 3, 1, "same", "relu6", "uint8").build()
    scale, zp, _, _ = _tensor_quant(relu6, "output")
    assert zp[0] == 0 and scale[0] == np.float32(6 / 255)

    pc = ConvCase("conv2d", 8, 8, 16, 32, 3, 1, "same", dtype="int8", per_channel=True).build()
    w_scale, w_zp, axis, wtype = _tensor_quant(pc, "output/weights")
    assert axis == 0 and w_scale.size == 32 and not w_zp.any() and wtype == tflite.TensorType.INT8
    in_scale, _, _, _ = _tensor_quant(pc, "input")
    b_scale, _, _, btype = _tensor_quant(pc, "output/bias")
    assert btype == tflite.TensorType.INT32
    np.testing.assert_allclose(b_scale, in_scale[0] * w_scale, rtol=1e-6)

    dw = ConvCase("dwconv", 8, 8, 16, None, 3, 1, "same", dtype="int8", per_channel=True).build()
    w_scale, _, axis, _ = _tensor_quant(dw, "output/weights")
    assert axis == 3 and w_scale.size == 16

    spread = ConvCase("dwconv", 8, 8, 16, None, 3, 1, "same", dtype="int8", per_channel=True,
                      scale_spread=1000.0).build()
    w_scale = _tensor_quant(spread, "output/weights")[0]
    assert np.isclose(w_scale.max() / w_scale.min(), 1000.0, rtol=1e-5)  # both ends of the spread present

    forced = ConvCase("conv2d", 8, 8, 16, 32, 3, 1, "same", weight_zp=211).build()
    assert _tensor_quant(forced, "output/weights")[1][0] == 211


SPREAD_CASES = [
    ConvCase("conv2d", 28, 28, 32, 64, 3, 1, "same"),
    ConvCase("conv2d", 14, 14, 256, 32, 5, 2, "valid", dtype="int8"),
    ConvCase("conv2d", 8, 8, 3, 16, 1, 1, "same", weight_zp=211),
    ConvCase("dwconv", 28, 28, 32, None, 3, 2, "same", dtype="int8", per_channel=True),
    ConvCase("dwconv", 56, 56, 16, None, 5, 1, "same", weight_zp=74),
]


@pytest.mark.parametrize("case", SPREAD_CASES, ids=str)
def test_outputs_use_the_range(case: ConvCase) -> None:
    """The derived output scale spreads results over the 8-bit range without saturating them."""
    model = case.build()
    out = reference.run_cpu(model, random_inputs(model), cache=False)[0]
    info = np.iinfo(out.dtype)
    saturated = np.mean((out == info.min) | (out == info.max))
    assert saturated < 0.02, f"{saturated:.1%} saturated"
    assert len(np.unique(out)) >= min(64, out.size // 4)
    assert out.astype(np.float64).std() > 12


def test_relu6_exercises_the_clamp() -> None:
    model = ConvCase("conv2d", 14, 14, 16, 32, 3, 1, "same", "relu6").build()
    out = reference.run_cpu(model, random_inputs(model), cache=False)[0]
    assert 0.01 < np.mean(out == 255) < 0.5 and len(np.unique(out)) > 100


def test_graph_inspection() -> None:
    model = AddCase(8, 8, 16, "conv", out_c=32, kernel=3).build()
    assert operator_names(model) == ["CONV_2D", "ADD"]
    shapes = [(i.shape, i.dtype) for i in graph_inputs(model)]
    assert shapes == [((1, 8, 8, 16), "uint8"), ((1, 8, 8, 32), "uint8")]
    x = random_inputs(model, seed=3)
    assert [a.shape for a in x] == [(1, 8, 8, 16), (1, 8, 8, 32)]
    assert x[0].min() < 8 and x[0].max() > 247  # the whole uint8 range


# ---------------------------------------------------------------------------------------------------------------
# teflon.reference
# ---------------------------------------------------------------------------------------------------------------


def test_reference_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEFLON_REFERENCE_CACHE", str(tmp_path))
    model = ConvCase("conv2d", 8, 8, 16, 16, 3, 1, "same").build()
    x = random_inputs(model)
    first = reference.run_cpu(model, x)
    files = list(tmp_path.glob("*.npz"))
    assert len(files) == 1 and files[0].stem == reference.cache_key(model, x)
    assert not list(tmp_path.glob("*.tmp"))
    # a hit is served from the file: prove it by planting different numbers
    np.savez(files[0], out0=first[0] + 1)
    assert np.array_equal(reference.run_cpu(model, x)[0], first[0] + 1)
    # a damaged file is recomputed and replaced
    files[0].write_bytes(b"not an npz")
    assert np.array_equal(reference.run_cpu(model, x)[0], first[0])
    assert np.array_equal(reference.run_cpu(model, x, cache=False)[0], first[0])
    other = [a ^ 1 for a in x]
    assert reference.cache_key(model, other) != reference.cache_key(model, x)


def test_compare() -> None:
    a = np.array([[1, 2, 3, 4]], np.uint8)
    b = np.array([[1, 2, 4, 4]], np.uint8)
    cmp = reference.compare(a, b)
    assert (cmp.max_abs_diff, cmp.exact_fraction, cmp.n) == (1, 0.75, 4)
    assert "1 LSB" in str(cmp) and "75.00%" in str(cmp)
    assert cmp.within(1, 0.75) and not cmp.within(0, 0.5)
    # the exact-match rate is judged statistically: 1 of 4 is consistent with a 10 % mismatch rate,
    # 3 of 4 is not; on large outputs the observed fraction itself decides
    assert cmp.within(1, 0.9) and cmp.mismatches == 1
    assert not reference.compare(a, np.array([[2, 3, 4, 4]], np.uint8)).within(1, 0.9)
    big = np.zeros(100_000, np.uint8)
    worse = big.copy()
    worse[:600] = 1  # 0.6 % > 0.5 %: far outside the binomial spread at this size
    assert not reference.compare(big, worse).within(1, 0.995)
    worse[:450] = 1
    worse[450:600] = 0
    assert reference.compare(big, worse).within(1, 0.995)
    wrap = reference.compare(np.array([0], np.uint8), np.array([255], np.uint8))
    assert wrap.max_abs_diff == 255, "differences must not wrap around in 8 bits"
    assert reference.compare([a, a], [a, b]).n == 8
    with pytest.raises(ValueError):
        reference.compare(a, b.reshape(4))


def test_delegated_nodes_without_delegate() -> None:
    model = AddCase(8, 8, 16, "conv2", out_c=16, kernel=1, dtype="int8").build()
    interp = make_interpreter(model, reference=True)
    assert reference.delegated_nodes(interp, 3) == (frozenset(), 0)


def test_delegated_nodes_reads_partitions() -> None:
    """XNNPACK in ai_edge_litert takes int8 CONV_2D and ADD: the walk must find all three nodes."""
    try:
        interpreter_module("ai_edge_litert")
    except ImportError:
        pytest.skip("ai_edge_litert not installed")
    model = AddCase(8, 8, 16, "conv2", out_c=16, kernel=1, dtype="int8").build()
    interp = make_interpreter(model, runtime="ai_edge_litert")  # default resolver: XNNPACK applied
    taken, kernels = reference.delegated_nodes(interp, len(operator_names(model)))
    assert (taken, kernels) == (frozenset({0, 1, 2}), 1)


# ---------------------------------------------------------------------------------------------------------------
# Case tables
# ---------------------------------------------------------------------------------------------------------------

ALL_TABLES = {
    "DEFAULT_CONV": DEFAULT_CONV, "DEFAULT_PER_CHANNEL": DEFAULT_PER_CHANNEL, "DEFAULT_ADD": DEFAULT_ADD,
    "DEFAULT_POOL": DEFAULT_POOL, "SLOW_CONV": SLOW_CONV, "SLOW_PER_CHANNEL": SLOW_PER_CHANNEL, "SLOW_ADD": SLOW_ADD,
    "SPREAD_DEFAULT_PER_CHANNEL": SPREAD_DEFAULT_PER_CHANNEL, "SPREAD_SLOW_PER_CHANNEL": SPREAD_SLOW_PER_CHANNEL,
    "LITERT_CASES": LITERT_CASES,
}


@pytest.mark.parametrize("table", list(ALL_TABLES))
def test_tables_unique_and_valid(table: str) -> None:
    cases = ALL_TABLES[table]
    names = [c.name for c in cases]
    assert len(set(names)) == len(names), "duplicate test ids"
    assert all(getattr(c, "valid", True) for c in cases)


def test_default_suite_budget() -> None:
    default = DEFAULT_CONV + DEFAULT_PER_CHANNEL + DEFAULT_ADD + DEFAULT_POOL
    assert 150 <= len(default) <= 300  # the suite runs in minutes; the MAC budget below is the real limit
    assert total_macs(default) < 8e9, "the default suite must stay well inside 30 minutes on 2 cores"
    assert not {c.name for c in DEFAULT_CONV} & {c.name for c in SLOW_CONV}
    assert not {c.name for c in SPREAD_DEFAULT_PER_CHANNEL} & {c.name for c in SPREAD_SLOW_PER_CHANNEL}
    assert total_macs(SPREAD_DEFAULT_PER_CHANNEL) < 1e9, "rk3576 per-channel default set: keep it small"


def test_default_covers_every_axis_value() -> None:
    """Every value of every axis appears several times among the default convolutions of each op."""
    for op in ("conv2d", "dwconv"):
        cases = [c for c in DEFAULT_CONV if c.op == op]
        axes = {
            "size": (SIZES, [c.in_h for c in cases]),
            "in_c": (CHANNELS, [c.in_c for c in cases]),
            "kernel": (KERNELS, [c.kernel for c in cases]),
            "stride": ((1, 2), [c.stride for c in cases]),
            "padding": (("same", "valid"), [c.padding for c in cases]),
            "dtype": (("uint8", "int8"), [c.dtype for c in cases]),
            "weight_zp": (WEIGHT_ZPS[1:], [c.weight_zp for c in cases]),
        }
        if op == "conv2d":
            axes["out_c"] = (CHANNELS, [c.channels_out for c in cases])
        for axis, (values, seen) in axes.items():
            counts = collections.Counter(seen)
            thin = {v: counts[v] for v in values if counts[v] < 3}
            assert not thin, f"{op}: {axis} values seen fewer than 3 times: {thin}"


def test_slow_sweep_is_broader() -> None:
    assert len(SLOW_CONV) > 3 * len(DEFAULT_CONV)
    grid = {(c.op, c.in_h, c.kernel, c.stride, c.padding, c.dtype) for c in SLOW_CONV + DEFAULT_CONV}
    for op in ("conv2d", "dwconv"):
        for size in SIZES:
            for k in KERNELS:
                if k <= size:
                    assert (op, size, k, 2, "valid", "int8") in grid
