"""RK3576 kernel chunks for the weight slice's output-group limit (python/teflon/rocket/rk3576/split.py
`GROUP_SLICE_LIMITS`; docs/hardware/rocket-rk3576.md "weight slice and output groups"): a one-task layer whose
32-kernel slice is past the measured limit for its number of 32-kernel output groups is cut into chunks of fewer
groups, and the chunked layer still equals TFLite on the simulator. Ids: `conv2d-in6x6x576-oc128-k3-s1-same-i8`.
"""

from __future__ import annotations

import pytest

from teflon.rocket.geometry import Geometry
from teflon.rocket.rk3576.split import split

# (input channels, kernel, output channels) -> output channels per chunk
CHUNKS = [
    ((512, 3, 128), 128),  # 144 KiB: four groups compute
    ((544, 3, 128), 64),  # 153 KiB: two groups
    ((192, 5, 128), 64),  # 150 KiB
    ((576, 3, 128), 32),  # 162 KiB: one group at a time
    ((5184, 1, 64), 32),
    ((576, 3, 32), 32),  # one group: only the pool bounds it
    ((256, 5, 64), 16),  # 200 KiB: past the pool, chunks of 16 as before
]


@pytest.mark.parametrize(("shape", "chunk"), CHUNKS, ids=lambda v: "ic{}-k{}-oc{}".format(*v)
                         if isinstance(v, tuple) else str(v))
def test_chunk_follows_the_group_limit(shape: tuple[int, int, int], chunk: int) -> None:
    ic, k, oc = shape
    g = Geometry(4, 4, ic, 4, 4, oc, k, k, 1, k // 2, k // 2, k // 2, k // 2, False)
    assert split(g).oc_chunk == chunk


@pytest.mark.parametrize("case", ["conv2d-in6x6x576-oc128-k3-s1-same-i8", "conv2d-in5x5x544-oc96-k3-s1-same-u8"])
def test_chunked_layer_matches_tflite(case: str, delegate_library: None) -> None:
    from teflon.modelgen import ConvCase, random_inputs
    from teflon.reference import run_cpu, run_delegate

    parts = case.split("-")
    h, w, c = (int(v) for v in parts[1][2:].split("x"))
    conv = ConvCase("conv2d", h, w, c, int(parts[2][2:]), int(parts[3][1:]), 1, "same",
                    dtype="int8" if parts[-1] == "i8" else "uint8")
    assert conv.name == case
    model = conv.build()
    x = random_inputs(model, seed=0)
    ref = run_cpu(model, x)[0].astype(int)
    run = run_delegate(model, x, device="rk3576", sim="1")
    assert run.delegated, "the layer stayed on the CPU"
    diff = abs(run.outputs[0].astype(int) - ref)
    exact = float((diff == 0).mean())
    print(f"{case}: exact {exact:.2%}, max diff {diff.max()}, mean {diff.mean():.4f}")
    assert diff.max() <= 1 and exact >= 0.995
