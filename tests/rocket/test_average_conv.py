"""The averaging depthwise convolution (python/teflon/rocket/pool.py `average_conv`): for every kernel the DPU takes,
weights, bias and OUT_CVT whose arithmetic equals TFLite's integer average pool for every window sum
(docs/hardware/rocket.md §6a). The simulator's execution of such convolutions is checked by the op sweep
(tests/rocket/test_ops.py `test_pool`, the k2 / k4 / k6 cases the PPU cannot round)."""

from __future__ import annotations

import numpy as np
import pytest

from teflon.rocket.average import AverageConv, average_conv, average_recips, dpu_average, tflite_average
from teflon.rocket.lower import MAX_KERNEL

KERNELS = range(1, MAX_KERNEL + 1)


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_every_kernel_has_an_exact_average_conv(dtype: str) -> None:
    for kh in KERNELS:
        for kw in KERNELS:
            a = average_conv(kh, kw, dtype)
            assert a is not None, f"{kh}x{kw} {dtype}"
            n = kh * kw
            sums = np.arange(-128 * n, 127 * n + 1, dtype=np.int64)
            assert np.array_equal(dpu_average(sums, a), tflite_average(sums, n, dtype))
            assert 1 << 14 <= a.scale < 1 << 15 and a.shift <= 31


def _unit_weight_exact(n: int, dtype: str) -> bool:
    """Whether any weight-1 bias and scale near 2^shift / n reproduces TFLite (the search average_conv runs)."""
    sums = np.arange(-128 * n, 127 * n + 1, dtype=np.int64)
    want = tflite_average(sums, n, dtype)
    shift = 14 + (n - 1).bit_length()
    low = (1 << shift) // n
    return any(np.array_equal(dpu_average(sums, AverageConv(1, b, s, shift)), want)
               for s in (low - 1, low, low + 1, low + 2) for b in range(-n, n + 1))


@pytest.mark.parametrize(("kernel", "dtype", "weight"), [
    ((6, 6), "uint8", 2),  # an even count that is not a power of two: a tie of either sign needs a half-step bias
    ((2, 3), "uint8", 2),
    ((4, 4), "uint8", 2),  # a power of two: 2^shift / 16 is exact, so ties are exact and OUT_CVT sends them to even
    ((5, 5), "uint8", 1),
    ((6, 6), "int8", 1),  # round half away from zero: a scale just above 1/n moves the negative ties
    ((2, 2), "int8", 1),
])
def test_weight_choice(kernel: tuple[int, int], dtype: str, weight: int) -> None:
    a = average_conv(*kernel, dtype)
    assert a is not None and a.weight == weight
    assert _unit_weight_exact(kernel[0] * kernel[1], dtype) == (weight == 1)


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_fallback_kernels_are_the_ppu_refusals(dtype: str) -> None:
    """The kernels the conv fallback serves: those the PPU's reciprocals cannot round, i.e. every even window count
    (its exact ties go to even or toward zero on the PPU, up or away from zero in TFLite)."""
    for kh in KERNELS:
        for kw in KERNELS:
            assert (average_recips(kh, kw, dtype) is None) == (kh * kw % 2 == 0), f"{kh}x{kw} {dtype}"


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize(("h", "w", "requant", "seed"), [(2, 2, False, 0), (7, 7, True, 1), (16, 16, False, 2),
                                                         (16, 16, True, 3), (3, 5, True, 4), (12, 20, True, 5)])
def test_tflite_mean_is_the_runtime_mean(h: int, w: int, requant: bool, seed: int, dtype: str) -> None:
    """average.tflite_mean (the integer MEAN the per-plane convolutions are proved against) equals the builtin kernel
    on random inputs, requantizing or not."""
    from teflon.modelgen import PoolCase, random_inputs
    from teflon.reference import run_cpu
    from teflon.rocket.average import tflite_mean
    from teflon.runtime import make_interpreter

    case = PoolCase(h, w, 40, op="mean", dtype=dtype, requant=requant, seed=seed)
    model = case.build()
    q = {d["name"]: d["quantization"] for d in make_interpreter(model).get_tensor_details()}
    (sx, zx), (sy, zy) = q["input"], q["output"]
    off = 128 if dtype == "uint8" else 0
    for s in range(4):
        x = random_inputs(model, seed=s)[0]
        sums = x.astype(np.int64).reshape(-1, 40).sum(axis=0) - off * h * w
        want = run_cpu(model, [x])[0].reshape(-1).astype(np.int64) - off
        assert np.array_equal(tflite_mean(sums, h * w, dtype, sx, zx, sy, zy), want), case.name


def test_mean_conv_exact_or_measured() -> None:
    """A uint8 MEAN (one rounding of non-negative sums) has an exact OUT_CVT; TFLite's int8 MEAN of a power-of-two
    count rounds twice (the multiplier's half step, then the shift's) and gets the closest single rounding, whose
    share of all sums is measured (flat_pool.MEAN_MIN_SHARE decides the claim); a 2x2 int8 MEAN is far off."""
    from teflon.rocket.average import mean_conv

    assert mean_conv(256, "uint8", 0.02, 130, 0.02, 130).exact == 1.0
    assert mean_conv(240, "int8", 0.02, 3, 0.013, -7).exact == 1.0
    near = mean_conv(256, "int8", 0.02, 3, 0.02, 3)
    assert near is not None and 0.998 < near.exact < 1.0
    assert mean_conv(4, "int8", 0.02, 3, 0.02, 3).exact < 0.9
