"""The DPU clamp of a fused RELU/RELU6 (rk3588 BS ReLU/ReLUX, rk3576 CLAMP2/3), applied to the value before
OUT_CVT, against TFLite's clamp after requantization (docs/hardware/rocket.md "Fused RELU/RELU6").

- requant.clamp_bound: for OUT_CVT R(u) = (u * scale + 2^(shift-1)) >> shift (monotone, R(0) = 0), clamping u to
  [0, X] gives exactly clamp(R(u), 0, k) for every u when R(X) = k; checked exhaustively around both bounds.
- End to end on the simulators: the program of a conv with a clamped activation outputs exactly the program of
  the same conv without it, clipped to [zy, zy + round(6 / sy)]: the clamp adds no difference of its own, so the
  only differences to TFLite are OUT_CVT's (the same as without an activation).
- rk3576: the clamp words are the vendor's (../shared/golden/rocket-rk3576-ops, `conv-lut-relu-*` int8 and
  `conv-lut-relu6-*` fp16 conv programs, and the int8 ReLU6 convolutions of the `btl` bottleneck).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import shared_path
from teflon import compiler
from teflon.modelgen import ConvCase, random_inputs
from teflon.native import Device, Runner
from teflon.rocket import target
from teflon.rocket.requant import clamp_bound
from teflon.rocket.rounding import shift_even

from .graphs import conv_graph

pytestmark = pytest.mark.usefixtures("delegate_library")


def _r(u: np.ndarray, scale: int, shift: int) -> np.ndarray:
    return shift_even(u * scale, shift)


@pytest.mark.parametrize("seed", range(8))
def test_clamp_bound_is_exact(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(200):
        scale = int(rng.integers(1 << 14, 1 << 15))
        shift = int(rng.integers(1, 26))  # multipliers 2^-11 .. 2^14
        k = int(rng.integers(1, 256))
        x = clamp_bound(k, scale, shift)
        step = max(1, (1 << shift) // scale)  # inputs per output step, at least 1
        u = np.concatenate([np.arange(-300, 300), np.arange(-300, 300) + step, np.arange(-300, 300) - step,
                            np.arange(-300, 300) + 2 * step]).astype(np.int64)
        if x is None:  # only where R steps over k: a multiplier above 1
            assert scale > 1 << shift
            continue
        for around in (0, x):
            v = u + around
            want = np.clip(_r(v, scale, shift), 0, k)
            assert np.array_equal(_r(np.clip(v, 0, x), scale, shift), want), (scale, shift, k, x)


CASES = [
    ConvCase("conv2d", 14, 14, 16, 32, 3, 1, "same", "relu6", dtype="uint8", output_zp=30, output_scale=0.06),
    ConvCase("conv2d", 8, 8, 32, 64, 1, 1, "valid", "relu6", dtype="int8", output_scale=0.03),
    ConvCase("dwconv", 14, 14, 64, None, 3, 2, "same", "relu6", dtype="int8", output_zp=-100, output_scale=0.03),
    ConvCase("dwconv", 28, 28, 32, None, 3, 1, "same", "relu", dtype="uint8", output_zp=100),
    ConvCase("conv2d", 14, 14, 16, 32, 3, 1, "same", "relu6", dtype="int8", per_channel=True, output_zp=-20,
             output_scale=0.06),
    ConvCase("dwconv", 28, 28, 32, None, 3, 1, "same", "relu", dtype="int8", per_channel=True, output_zp=10),
]


@pytest.mark.parametrize("device", ["rk3588", "rk3576"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_clamp_adds_no_difference(device: str, case: ConvCase) -> None:
    g = conv_graph(case)
    claimed, why = compiler.supported(g, device)[0]
    if not claimed:
        assert device == "rk3576" and case.per_channel, why
        pytest.skip(f"{device}: {why}")
    plain = conv_graph(case)  # the same tensors, without the activation
    plain.operations[0].options["activation"] = "NONE"
    x = random_inputs(case.build(), seed=3)[0]
    out = g.tensors[3]
    sy, zy = float(out.quant.scale), int(out.quant.zero_point)
    qmin, qmax = (0, 255) if case.dtype == "uint8" else (-128, 127)
    hi = min(qmax, zy + int(np.floor(np.float32(6.0) / np.float32(sy) + np.float32(0.5)))) if case.activation == "relu6" \
        else qmax
    with Device(device, sim=True) as dev:
        clamped = Runner(dev, compiler.compile(g, [0], [0], [3], device)).run({0: x})[3]
        free = Runner(dev, compiler.compile(plain, [0], [0], [3], device)).run({0: x})[3]
    want = np.clip(free.astype(np.int32), max(zy, qmin), hi).astype(free.dtype)
    inside = float(np.mean((free.astype(np.int32) > zy) & (free.astype(np.int32) < hi)))
    print(f"{device} {case.name}: {100 * inside:.1f}% of the outputs between the bounds")
    assert np.array_equal(clamped, want)
    assert 0.02 < inside < 0.98  # both bounds and the values between them exercised


# ---- rk3576: the vendor's clamp words ---------------------------------------------------------------------------

SHARED = shared_path()
OPS = SHARED / "golden" / "rocket-rk3576-ops" if SHARED else None
CLAMP_REGS = {0x4060: "DPU_UNDOC_4060", 0x406C: "DPU_CLAMP2_MIN", 0x4070: "DPU_CLAMP2_MAX",
              0x4074: "DPU_CLAMP3_MIN", 0x4078: "DPU_CLAMP3_MAX"}


def _vendor_conv_words(name: str) -> list[dict[str, int]]:
    """The clamp registers of every conv task of compile A in a vendor ops file."""
    if OPS is None or not (OPS / name).is_file():
        pytest.skip(f"{name} not under ../shared/golden/rocket-rk3576-ops")
    d = json.loads((OPS / name).read_text())
    out = []
    for prog in d["programs"]:
        if prog["compile_label"] != "A":
            continue
        for t in prog["tasks"]:
            if t["role"] != "conv":
                continue
            words = [int(w, 16) for w in t["words"]]
            out.append({CLAMP_REGS[w & 0xFFFF]: (w >> 16) & 0xFFFFFFFF for w in words
                        if w >> 48 == 0x1001 and (w & 0xFFFF) in CLAMP_REGS})
    return out


def _our_clamp_words(case: ConvCase) -> dict[str, int]:
    prog = compiler.compile(conv_graph(case), [0], [0], [3], "rk3576")
    rm = target("rk3576").regmap
    task = prog.operations[0].tasks[0]
    data = prog.buffer(task.buffer).data or b""
    words = np.frombuffer(data, "<u8", task.nbytes // 8, task.offset)
    return {rm.decode(int(w))[1]: (int(w) >> 16) & 0xFFFFFFFF for w in words
            if rm.decode(int(w))[1] in CLAMP_REGS.values()}


def test_rk3576_relu_words_are_the_vendors() -> None:
    """The vendor's int8 Conv+Relu (conv-lut-relu, 16x16x32 -> 32, 3x3) and our RELU with its zero point inside the
    range: 0x4060 = 0x902, CLAMP2 = CLAMP3 = (0, INT32_MAX)."""
    (vendor, *rest) = _vendor_conv_words("conv-lut-relu-in16x16x32-oc32-k3x3-i8__ru-conv_relu_i8.json")
    assert not rest
    ours = _our_clamp_words(ConvCase("conv2d", 16, 16, 32, 32, 3, 1, "same", "relu", dtype="int8", output_zp=-100))
    assert ours == vendor, (ours, vendor)


def test_rk3576_relu6_words_have_the_vendors_form() -> None:
    """ReLU6: the vendor's words (int8 btl convolutions; fp16 conv-lut-relu6 holds 6.0f) and ours have the same
    form: 0x4060 = 0x902, both minima 0, both maxima equal and positive. The vendor's int8 maximum is the real 6.0
    in accumulator units, 6 / (sx * sw) (not checkable here: the weight scales are not in the file); ours is the
    smallest accumulator value that OUT_CVT maps to TFLite's top zy + round(6 / sy), within one output step of it
    (requant.clamp_bound)."""
    forms = _vendor_conv_words("btl-in16x16x32-e192-i8__ru-btl_c32_16.json")
    forms += _vendor_conv_words("conv-lut-relu6-in16x16x32-oc32-k3x3-f16__ru-conv_relu6_f16.json")
    clamped = [v for v in forms if v["DPU_UNDOC_4060"] == 0x902]
    assert len(clamped) >= 3
    ours = _our_clamp_words(CASES[0])
    for words in [*clamped, ours]:
        assert words["DPU_UNDOC_4060"] == 0x902
        assert words["DPU_CLAMP2_MIN"] == words["DPU_CLAMP3_MIN"] == 0
        assert words["DPU_CLAMP2_MAX"] == words["DPU_CLAMP3_MAX"]
        assert 0 < words["DPU_CLAMP2_MAX"] < 0x7FFFFFFF
