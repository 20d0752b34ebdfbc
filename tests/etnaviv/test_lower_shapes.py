"""Default-mode rewrites of convolution shapes whose Mesa coefficient stream is ambiguous or undefined
(docs/hardware/etnaviv-nn.md §3.2): v7 1x1-output convs as FC jobs, v8 depthwise with fewer channels than NN
cores as dense convs, v7 1-channel wide depthwise as a conv, RELU6, the SRAM kernel cache end and tiny reshuffles.
"""

from __future__ import annotations

import numpy as np
import pytest

from teflon.etnaviv.chips import chip_for_version
from teflon.etnaviv.desc import TP
from teflon.etnaviv.lower import LoweringError, lower_graph
from teflon.etnaviv.ops import KIND_NN
from teflon.etnaviv.tiling import SRAM_RESERVED, sram_cache
from teflon.etnaviv.tp import tp_descriptors
from teflon.ir import Graph, Operation, Quant, Tensor


def _q(scale: float, zp: int) -> Quant:
    return Quant(np.array([scale], np.float32), np.array([zp], np.int32))


def _graph(h: int, c: int, oc: int, k: int, stride: int = 1, padding: str = "VALID", kind: str = "CONV_2D",
           activation: str = "NONE", out_q: tuple[float, int] = (0.05, 7)) -> Graph:
    rng = np.random.default_rng(3)
    dw = kind == "DEPTHWISE_CONV_2D"
    wshape = (1, k, k, c) if dw else (oc, k, k, c)
    oh = -(-h // stride) if padding == "SAME" else (h - k) // stride + 1
    tensors = {
        0: Tensor(0, "uint8", (1, h, h, c), _q(0.02, 5)),
        1: Tensor(1, "uint8", wshape, _q(0.01, 90), rng.integers(0, 256, wshape).astype(np.uint8)),
        2: Tensor(2, "int32", (oc,), _q(0.0002, 0), rng.integers(-1000, 1000, oc).astype(np.int32)),
        3: Tensor(3, "uint8", (1, oh, oh, oc), _q(*out_q)),
    }
    opts = {"padding": padding, "stride_h": stride, "stride_w": stride, "activation": activation,
            "dilation_h": 1, "dilation_w": 1}
    if dw:
        opts["depth_multiplier"] = 1
    return Graph(tensors, [Operation(0, kind, [0, 1, 2], [3], opts)])


def _nn(jobs: list) -> list:
    return [j for j in jobs if j.type == KIND_NN]


@pytest.mark.parametrize(("h", "c", "oc", "k", "stride", "kind"), [
    (3, 3, 32, 3, 1, "CONV_2D"), (5, 120, 120, 5, 2, "CONV_2D"), (4, 8, 16, 3, 2, "CONV_2D"),
    (3, 16, 16, 3, 1, "DEPTHWISE_CONV_2D"),
])
def test_v7_one_pixel_conv_is_fc(h: int, c: int, oc: int, k: int, stride: int, kind: str) -> None:
    g = _graph(h, c, oc, k, stride, kind=kind)
    jobs = lower_graph(g, [0], chip_for_version(7))
    (nn,) = _nn(jobs)
    assert nn.fully_connected and nn.input_width == c * h * h and nn.weights.shape == (oc, c * h * h)
    assert not any(j.type != KIND_NN and j.tp_name == "RESHUFFLE" for j in jobs)
    # the FC over the planar input computes the conv's single output pixel
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (h, h, c))
    w = g.tensors[1].data.astype(np.int64) - 90
    if kind == "DEPTHWISE_CONV_2D":
        ref = np.einsum("hwc,hwc->c", x[:k, :k] - 5, w[0])
    else:
        ref = np.einsum("hwc,ohwc->o", x[:k, :k] - 5, w)
    fc = (nn.weights.astype(np.int64) - nn.weight_zero_point) @ (x.transpose(2, 0, 1).reshape(-1) - 5)
    np.testing.assert_array_equal(fc, ref)
    # Mesa's lowering keeps the conv
    assert not _nn(lower_graph(g, [0], chip_for_version(7), mesa_compat=True))[0].fully_connected


def test_v8_small_depthwise_is_dense() -> None:
    chip = chip_for_version(8)
    g = _graph(8, 3, 3, 3, kind="DEPTHWISE_CONV_2D")
    (nn,) = _nn(lower_graph(g, [0], chip))
    assert not nn.depthwise and nn.weights.shape == (3, 3, 3, 3)
    w = g.tensors[1].data
    for o in range(3):
        for i in range(3):
            expect = w[0, :, :, o] if o == i else np.full((3, 3), 90)
            np.testing.assert_array_equal(nn.weights[o, i], expect)
    assert _nn(lower_graph(g, [0], chip, mesa_compat=True))[0].depthwise
    # six channels or more keep the native depthwise mode
    assert _nn(lower_graph(_graph(8, chip.nn_core_count, chip.nn_core_count, 3, kind="DEPTHWISE_CONV_2D"), [0],
                           chip))[0].depthwise


def test_v7_single_channel_wide_depthwise_is_conv() -> None:
    g = _graph(8, 1, 1, 5, 2, "SAME", kind="DEPTHWISE_CONV_2D")
    assert not _nn(lower_graph(g, [0], chip_for_version(7)))[0].depthwise
    assert _nn(lower_graph(_graph(8, 1, 1, 3, 1, "SAME", kind="DEPTHWISE_CONV_2D"), [0],
                           chip_for_version(7)))[0].depthwise


@pytest.mark.parametrize("version", [7, 8])
def test_relu6_follows_tflite_clamp(version: int) -> None:
    chip = chip_for_version(version)
    six = float(np.float32(6 / 255))
    g = _graph(8, 4, 8, 3, activation="RELU6", out_q=(six, 0))
    assert _nn(lower_graph(g, [0], chip))[0].relu
    with pytest.raises(LoweringError, match="RELU6"):
        lower_graph(_graph(8, 4, 8, 3, activation="RELU6", out_q=(0.05, 0)), [0], chip)


def test_kernel_cache_end_when_image_exceeds_sram() -> None:
    chip = chip_for_version(7)
    sram = chip.on_chip_sram_size
    mesa = sram_cache(chip, 0x10000, sram + 1, 120, mesa_compat=True)
    assert mesa.kernel_cache_end_address == 0
    ours = sram_cache(chip, 0x10000, sram + 1, 120, mesa_compat=False)
    assert ours.kernel_cache_start_address == SRAM_RESERVED < ours.kernel_cache_end_address == sram
    assert ours.image_caching_mode == 0


@pytest.mark.parametrize(("h", "k"), [(8, 3), (5, 5)])
def test_reshuffle_no_empty_core(h: int, k: int) -> None:
    chip = chip_for_version(7)
    jobs = lower_graph(_graph(h, 3, 32, k, 2, "SAME"), [0], chip)
    (rs,) = [j for j in jobs if j.type != KIND_NN and j.tp_name == "RESHUFFLE"]
    descs = tp_descriptors(rs, chip.tp_core_count, 0x10000, 0x20000, None)
    fields = [TP.decode(d) for d in descs]
    assert all(min(f["in_image_x_size"], f["in_image_y_size"], f["in_image_z_size"]) >= 1 for f in fields)
    assert 1 <= len(descs) < chip.tp_core_count
