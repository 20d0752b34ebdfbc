"""etnaviv lowering: golden graphs -> Mesa's lowered operations, weights and biases; default-mode behaviour."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from conftest import shared_path
from teflon.etnaviv.chips import CHIPS, chip_for_version
from teflon.etnaviv.desc import NN_V7, NN_V8
from teflon.etnaviv.lower import (
    MAX_CHANNEL_JOBS,
    LoweringError,
    conv_weights,
    depthwise_dense,
    depthwise_v8,
    lower_graph,
    space_to_depth_weights,
    support,
)
from teflon.etnaviv.nn import fc_factors, nn_descriptor, v7_add_view_width
from teflon.etnaviv.ops import KIND_NN, dense_weights
from teflon.etnaviv.requant import post_scale
from teflon.ir import Graph, Operation, Quant, Tensor

from .golden import VERSIONS, golden_files, load

SHARED = shared_path()
needs_shared = pytest.mark.skipif(SHARED is None, reason="../shared golden data not found")
FILES = [pytest.param(v, p, id=f"v{v}-{p.stem}") for v in VERSIONS for p in golden_files(SHARED, v)]


def _lower(path: Path, version: int, mesa_compat: bool) -> tuple[dict, list]:
    d, g = load(path)
    return d, lower_graph(g, [o.index for o in g.operations], chip_for_version(version), mesa_compat=mesa_compat)


def _weights_sha(op) -> str:
    return hashlib.sha256(np.ascontiguousarray(dense_weights(op)).tobytes()).hexdigest()


@needs_shared
@pytest.mark.parametrize(("version", "path"), FILES)
def test_lowering_matches_mesa(version: int, path: Path) -> None:
    d, ops = _lower(path, version, True)
    jobs = d["outputs"]["jobs"]
    assert [f"{j['kind']}:{j['tp_type']}" if j["kind"] == "TP" else "NN" for j in jobs] == d["outputs"]["job_kinds"]
    assert len(ops) == len(jobs)
    for op, job in zip(ops, jobs):
        want = job["mesa_lowered_operation"]
        got = op.to_golden()
        assert got == want, {k: (got[k], want[k]) for k in want if got[k] != want[k]}
        if op.type == KIND_NN:
            assert _weights_sha(op) == job["mesa_lowered_weights"]["sha256"]
            assert op.bias.tolist() == job["mesa_lowered_bias_int32"]


# Default mode vs Mesa (docs/hardware/etnaviv-nn.md): a reshuffle's output_tensor_size is its real size;
# the v8 add's 1-column kernel is recorded rows-first; SUB on v7 is refused.
@needs_shared
@pytest.mark.parametrize(("version", "path"), FILES)
def test_lowering_default_mode(version: int, path: Path) -> None:
    d, g = load(path)
    chip = chip_for_version(version)
    if version == 7 and d["kind"] == "sub":
        with pytest.raises(LoweringError, match="SUB on the v7 path"):
            lower_graph(g, [o.index for o in g.operations], chip)
        return
    ops = lower_graph(g, [o.index for o in g.operations], chip)
    for op, job in zip(ops, d["outputs"]["jobs"], strict=True):
        want = job["mesa_lowered_operation"]
        got = op.to_golden()
        diff = {k for k in want if got[k] != want[k]}
        if job.get("tp_type") == "RESHUFFLE":
            assert diff <= {"output_tensor_size"}
            assert got["output_tensor_size"] == op.output_width * op.output_height * op.output_channels
        elif d["kind"] in ("add", "sub"):
            # default mode: weights q, p with p / q the best approximation of s_b / s_a (lower.add_ratio)
            numbers = {"weight_scale", "weight_scale_bits", "weight_zero_point", "addition_offset"}
            if version == 8:
                assert diff - numbers == {"weight_width", "weight_height"}
                assert (got["weight_width"], got["weight_height"]) == (want["weight_height"], want["weight_width"])
            else:
                assert diff <= numbers, diff
            q = round(1 / op.weight_scale)
            p = got["addition_offset"] if version == 7 else None
            if p is None:
                w = np.asarray(op.weights).reshape(op.output_channels, -1).astype(int) - op.weight_zero_point
                assert w[0, 0] == q
                p = abs(int(w[0, op.output_channels]))
            node = next(o for o in g.operations if o.kind in ("ADD", "SUB"))
            sa, sb = (float(g.tensors[i].quant.scale) for i in node.inputs[:2])
            assert 1 <= p <= 255 and 1 <= q <= 255
            assert abs(p / q - sb / sa) <= abs(want["addition_offset"] / 255 - sb / sa) or version == 8
            assert abs(p / q - sb / sa) < 1 / 255
            continue
        else:
            assert not diff, diff
        if op.type == KIND_NN:
            assert _weights_sha(op) == job["mesa_lowered_weights"]["sha256"]


# ---- unit tests on synthetic graphs ------------------------------------------------------------------------

def _q(scale: float, zp: int) -> Quant:
    return Quant(np.array([scale], np.float32), np.array([zp], np.int32))


def _conv_graph(h: int, w: int, c: int, oc: int, kh: int, kw: int, stride: int = 1, padding: str = "SAME",
                dtype: str = "uint8", per_channel: bool = False, kind: str = "CONV_2D",
                wscales: list[float] | None = None) -> Graph:
    rng = np.random.default_rng(1)
    lo, hi = (0, 256) if dtype == "uint8" else (-128, 128)
    dw = kind == "DEPTHWISE_CONV_2D"
    wshape = (1, kh, kw, c) if dw else (oc, kh, kw, c)
    if per_channel and wscales is None:
        wscales = list(np.full(oc, 0.01, np.float32) * np.arange(1, oc + 1))
    wq = (Quant(np.asarray(wscales, np.float32), np.zeros(oc, np.int32), 3 if dw else 0) if wscales is not None
          else _q(0.01, 3))
    oh, ow = (-(-h // stride), -(-w // stride)) if padding == "SAME" else ((h - kh) // stride + 1,
                                                                            (w - kw) // stride + 1)
    tensors = {
        0: Tensor(0, dtype, (1, h, w, c), _q(0.02, 5)),
        1: Tensor(1, dtype, wshape, wq, rng.integers(lo, hi, wshape).astype(dtype)),
        2: Tensor(2, "int32", (oc,), _q(0.0002, 0), rng.integers(-1000, 1000, oc).astype(np.int32)),
        3: Tensor(3, dtype, (1, oh, ow, oc), _q(0.05, -3 if dtype == "int8" else 7)),
    }
    opts = {"padding": padding, "stride_h": stride, "stride_w": stride, "activation": "NONE",
            "dilation_h": 1, "dilation_w": 1}
    if dw:
        opts["depth_multiplier"] = 1
    return Graph(tensors, [Operation(0, kind, [0, 1, 2], [3], opts)])


def test_non_square_conv_default_uses_hardware_axes() -> None:
    g = _conv_graph(96, 160, 8, 16, 5, 3)
    chip = CHIPS["imx8mp"]
    ops = lower_graph(g, [0], chip)
    nn = next(o for o in ops if o.type == KIND_NN)
    assert (nn.input_width, nn.input_height, nn.weight_width, nn.weight_height) == (96, 160, 5, 3)
    fields = NN_V8.decode(nn_descriptor(nn, chip, 4096, 0x40000000, 0x30000000, 0x31000000))
    # x = TFLite W (160 columns, kernel 3 wide), y = H (96 rows, kernel 5 high); SAME offsets per axis
    assert (fields["in_image_x_size"], fields["in_image_y_size"]) == (160, 96)
    assert (fields["kernel_xy_size"], fields["kernel_y_size"]) == (3, 5)
    assert (fields["in_image_x_offset"], fields["in_image_y_offset"]) == (-1, -2)
    assert fields["out_image_tile_x_size"] == 64
    with pytest.raises(LoweringError, match="non-square kernel"):
        lower_graph(g, [0], chip, mesa_compat=True)


def test_unequal_strides_refused() -> None:
    g = _conv_graph(16, 16, 4, 8, 3, 3, stride=2)
    g.operations[0].options["stride_w"] = 1
    with pytest.raises(LoweringError, match="unequal strides"):
        lower_graph(g, [0], CHIPS["a311d"])


def test_per_channel_weights_refused_beyond_the_job_limit() -> None:
    """Every channel its own scale (as in real models): one NN job per channel, refused past MAX_CHANNEL_JOBS with
    the job count in the reason; Mesa's mode refuses per-axis scales."""
    oc = MAX_CHANNEL_JOBS + 1
    for chip in CHIPS.values():
        ok, reason = support(_conv_graph(8, 8, 4, oc, 3, 3, per_channel=True, dtype="int8"), chip)[0]
        assert not ok and f"per-channel weight scales need {oc} NN jobs" in reason
        ok, reason = support(_conv_graph(8, 8, 4, oc - 1, 3, 3, per_channel=True, dtype="int8"), chip)[0]
        assert ok and f"runs as {oc - 1} NN jobs" in reason
    with pytest.raises(LoweringError, match="per-channel"):
        lower_graph(_conv_graph(8, 8, 4, 4, 3, 3, per_channel=True, dtype="int8"), [0], CHIPS["a311d"],
                    mesa_compat=True)


@pytest.mark.parametrize("chip", sorted(CHIPS))
def test_per_channel_jobs_follow_requantization_runs(chip: str) -> None:
    """Consecutive channels whose encoded requantization is equal share a job; each job writes its channels' planes
    of the one output tensor, with its own scale, weights and biases."""
    scales = [0.01, 0.01, 0.01, 0.02, 0.02, 0.01, 0.03, 0.03]
    g = _conv_graph(8, 8, 4, 8, 3, 3, per_channel=True, dtype="int8", wscales=scales)
    jobs = [j for j in lower_graph(g, [0], CHIPS[chip]) if j.type == KIND_NN]
    assert [(j.output_channels, j.output_offset // 64) for j in jobs] == [(3, 0), (2, 3), (1, 5), (2, 6)]
    assert [j.weight_scale for j in jobs] == [float(np.float32(s)) for s in (0.01, 0.02, 0.01, 0.03)]
    assert {j.output_tensor for j in jobs} == {jobs[0].output_tensor}
    bias = g.tensors[2].data
    assert np.concatenate([j.bias for j in jobs]).tolist() == bias.tolist()
    assert sum(j.weights.shape[0] for j in jobs) == 8


def test_per_channel_v8_depthwise_jobs_read_their_channels() -> None:
    """A native v8 depthwise job reads only its channels' input planes; runs of 2..cores-1 channels (no verified
    depthwise channel map, see _lower_conv) become single-channel jobs."""
    scales = [0.01] * 8 + [0.02, 0.02] + [0.03] * 6
    g = _conv_graph(8, 8, 16, 16, 3, 3, per_channel=True, dtype="int8", kind="DEPTHWISE_CONV_2D", wscales=scales)
    jobs = [j for j in lower_graph(g, [0], CHIPS["imx8mp"]) if j.type == KIND_NN]
    assert [(j.output_channels, j.input_channels, j.input_offset // 64, j.output_offset // 64) for j in jobs] == (
        [(8, 8, 0, 0), (1, 1, 8, 8), (1, 1, 9, 9), (6, 6, 10, 10)])
    scales = [0.01] * 8 + [0.03] * 5 + [0.02] * 3  # 5 < 6 cores
    g = _conv_graph(8, 8, 16, 16, 3, 3, per_channel=True, dtype="int8", kind="DEPTHWISE_CONV_2D", wscales=scales)
    jobs = [j for j in lower_graph(g, [0], CHIPS["imx8mp"]) if j.type == KIND_NN]
    assert [j.output_channels for j in jobs] == [8] + [1] * 8


def test_support_reasons() -> None:
    g = _conv_graph(8, 8, 4, 8, 3, 3)
    g.operations.append(Operation(1, "MAX_POOL_2D", [3], [3]))
    res = support(g, CHIPS["imx8mp"])
    assert res[0][0] and "NN job" in res[0][1]
    assert not res[1][0] and "MAX_POOL_2D" in res[1][1]


def test_int8_conv_shifted_domain() -> None:
    g = _conv_graph(8, 8, 4, 8, 3, 3, dtype="int8")
    ops = lower_graph(g, [0], CHIPS["a311d"])
    nn = next(o for o in ops if o.type == KIND_NN)
    assert (nn.input_zero_point, nn.output_zero_point, nn.weight_zero_point) == (133, 125, 131)
    w = g.tensors[1].data
    assert np.array_equal(nn.weights, (conv_weights(w).astype(np.int16) + 128).astype(np.uint8))
    assert all(ok for ok, _ in support(g, CHIPS["a311d"]).values())


def test_v7_depthwise_stride2_on_6_wide_input_uses_reshuffle() -> None:
    g = _conv_graph(6, 6, 8, 8, 3, 3, stride=2, kind="DEPTHWISE_CONV_2D")
    kinds = [o.tp_name or "NN" for o in lower_graph(g, [0], CHIPS["a311d"])]
    assert kinds == ["TRANSPOSE", "RESHUFFLE", "NN", "DETRANSPOSE"]
    kinds = [o.tp_name or "NN" for o in lower_graph(g, [0], CHIPS["a311d"], mesa_compat=True)]
    assert kinds == ["TRANSPOSE", "NN", "DETRANSPOSE"]  # Mesa: neither pooling nor reshuffle


def test_fc_without_decoded_activation_refused() -> None:
    t = {0: Tensor(0, "uint8", (1, 64), _q(0.02, 5)),
         1: Tensor(1, "uint8", (10, 64), _q(0.01, 3), np.ones((10, 64), np.uint8)),
         2: Tensor(2, "int32", (10,), _q(0.0002, 0), np.zeros(10, np.int32)),
         3: Tensor(3, "uint8", (1, 10), _q(0.05, 7))}
    g = Graph(t, [Operation(0, "FULLY_CONNECTED", [0, 1, 2], [3], {})])
    ok, reason = support(g, CHIPS["a311d"])[0]
    assert not ok and "activation" in reason
    g.operations[0].options["activation"] = "NONE"
    ops = lower_graph(g, [0], CHIPS["a311d"])
    assert [o.tp_name or "NN" for o in ops] == ["TRANSPOSE", "NN"]  # 1x1x10 output: no detranspose


# ---- weight helpers against element-wise definitions (etnaviv.md §1.3) --------------------------------------

def test_space_to_depth_weights() -> None:
    rng = np.random.default_rng(2)
    w = rng.integers(0, 256, (3, 2, 5, 3)).astype(np.uint8)
    out = space_to_depth_weights(w, 77)
    assert out.shape == (3, 8, 3, 2)
    for z in range(2):
        for ro in range(2):
            for co in range(2):
                for r in range(3):
                    for s in range(2):
                        a, b = 2 * r + ro, 2 * s + co
                        want = w[:, z, a, b] if a < 5 and b < 3 else np.full(3, 77)
                        assert np.array_equal(out[:, 4 * z + 2 * ro + co, r, s], want)


def test_depthwise_layouts() -> None:
    w = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(1, 2, 3, 4)
    dense = depthwise_dense(w, 9)
    assert dense.shape == (4, 4, 2, 3)
    assert np.array_equal(dense[1, 1], w[0, :, :, 1]) and (dense[1, 2] == 9).all()
    assert np.array_equal(depthwise_v8(w)[3], w[0, :, :, 3].reshape(-1))


# ---- small pieces -----------------------------------------------------------------------------------------

def test_fc_factors_and_add_view() -> None:
    assert fc_factors(64) == (8, 8, 1)
    assert fc_factors(1024) == (8, 8, 16)
    assert fc_factors(1000) == (10, 10, 10)
    assert v7_add_view_width(3136) == 64 and v7_add_view_width(196) == 49


def test_post_scale_example() -> None:
    # etnaviv.md §4: S = 0.0123 -> v8 shift 7, multiplier 0x4985F0; v7 shift 22, multiplier 0x4985
    assert (post_scale(0.0123, 8).shift, post_scale(0.0123, 8).multiplier) == (7, 0x4985F0)
    assert (post_scale(0.0123, 7).shift, post_scale(0.0123, 7).multiplier) == (22, 0x4985)
    assert abs(post_scale(0.0123, 7).real(7) - 0.0122998) < 1e-7


def test_descriptor_tables_agree_on_versions() -> None:
    assert NN_V7.nwords == NN_V8.nwords == 34
