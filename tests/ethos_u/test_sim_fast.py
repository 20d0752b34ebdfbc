"""The simulated Ethos-U's fast convolution datapath computes the bytes of its reference loop
(docs/hardware/ethosu-sim.md "Fast datapath").

The simulated kernel (drivers/ethosu/ethosu_kernel_sim.c) picks the datapath when the device opens: the fast one
(drivers/ethosu/ethosu_fast.c: etnaviv's MAC kernel sets on a planar copy of the IFM, the vectorized TFL
requantization, decoded weight streams kept while their bytes are unchanged) by default, the reference loop of
ethosu_npu_conv.c with TEFLON_SIM_REFERENCE=1; TEFLON_SIM_KERNELS=c|avx2|avx512|avx512vnni|neon forces a kernel
set (one the CPU does not run falls back to the best). Here:
- teflon's own compile of single operations and of MobileNet v2, run twice (inputs drawn with seeds 0 and 1; the
  second invoke reads the kept weights), on both datapaths and with every kernel set: identical output bytes;
- Vela's streams on the simulator library (npu_harness): identical bytes for every kernel set, and a weight stream
  rewritten between two runs of one fast datapath is decoded again (it answers as a fresh one: same bytes, or the
  same refusal).
Ids: `imx93-conv2d-in28x28x16-oc32-k3-s1-same-u8`, `conv2d-8x8x16-oc16-k3-s1-same-i8-avx2`.
"""

from __future__ import annotations

import numpy as np
import pytest
from npu_harness import Simulator, VelaOutput, npu_only, vela_compile_many

from conftest import device_cases, shared_path
from datapaths import ETNA_DOT_KERNELS, check_same_bytes
from opcases import DEFAULT_CONV, DEFAULT_PER_CHANNEL
from teflon import modelgen as mg

SHARED = shared_path()
# every 9th case of the default convolution sweep (kernels 1/3/5, strides, padding, channel tails, depthwise),
# and the per-channel cases
CASES = DEFAULT_CONV[::9] + DEFAULT_PER_CHANNEL
KERNEL_CASES = CASES[::4]


@pytest.mark.usefixtures("delegate_library")
@pytest.mark.parametrize(("device", "case"), device_cases(["imx93"], CASES))
def test_ops_same_bytes(device: str, case: object, monkeypatch: pytest.MonkeyPatch) -> None:
    check_same_bytes(case.build(), device, monkeypatch, str(case))  # type: ignore[attr-defined]


@pytest.mark.usefixtures("delegate_library")
@pytest.mark.parametrize(("device", "case"), device_cases(["imx93"], KERNEL_CASES))
def test_kernel_sets_same_bytes(device: str, case: object, monkeypatch: pytest.MonkeyPatch) -> None:
    check_same_bytes(case.build(), device, monkeypatch, str(case), list(ETNA_DOT_KERNELS))  # type: ignore[attr-defined]


@pytest.mark.usefixtures("delegate_library")
@pytest.mark.skipif(SHARED is None, reason="../shared (models) not found")
def test_mobilenet_v2_same_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    assert SHARED is not None
    check_same_bytes((SHARED / "models" / "mobilenet_v2_1.0_224_quant.tflite").read_bytes(), "imx93", monkeypatch,
                "mobilenet_v2_1.0_224_quant")


# Vela's streams: convolutions and depthwise convolutions with strides, padding, non-square kernels, both IFM types
VELA_CASES = [
    mg.ConvCase("conv2d", 8, 8, 16, 16, kernel=3, stride=1, padding="same", dtype="int8", per_channel=True),
    mg.ConvCase("conv2d", 16, 16, 8, 32, kernel=3, stride=2, padding="same", activation="relu6", dtype="int8",
                per_channel=True),
    mg.ConvCase("conv2d", 12, 12, 24, 20, kernel=1, stride=1, padding="valid", dtype="uint8"),
    mg.ConvCase("conv2d", 9, 9, 3, 16, kernel=5, stride=2, padding="valid", dtype="uint8"),
    mg.ConvCase("dwconv", 8, 8, 16, kernel=3, stride=1, padding="same", dtype="int8", per_channel=True),
    mg.ConvCase("dwconv", 15, 15, 24, kernel=3, stride=2, padding="same", dtype="uint8"),
    mg.ConvCase("conv2d", 10, 11, 32, 24, kernel=3, kernel_w=5, stride=2, stride_w=1, padding="same", dtype="int8",
                per_channel=True),
]


@pytest.fixture(scope="module")
def vela_outputs(npu_sim: Simulator) -> dict[str, VelaOutput]:
    got = vela_compile_many({c.name: c.build() for c in VELA_CASES})
    out = {k: v for k, v in got.items() if isinstance(v, VelaOutput) and npu_only(v)}
    if not out:
        pytest.skip(f"Vela put none of the cases on the NPU: {got}")
    return out


def _inputs(vo: VelaOutput, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, size=shape, dtype=np.int8) for _r, _o, shape in vo.inputs]


@pytest.mark.parametrize("kernels", ETNA_DOT_KERNELS)
@pytest.mark.parametrize("case", VELA_CASES, ids=lambda c: c.name)
def test_vela_streams_same_bytes(case: mg.ConvCase, kernels: str, npu_sim: Simulator,
                                 vela_outputs: dict[str, VelaOutput]) -> None:
    vo = vela_outputs.get(case.name)
    if vo is None:
        pytest.skip("not on the NPU with Vela")
    fast = Simulator(npu_sim.lib, kernels=kernels)
    try:
        for seed in (0, 1):
            ref, got = npu_sim.run(vo, _inputs(vo, seed)), fast.run(vo, _inputs(vo, seed))
            assert ref.rc == 0 and got.rc == 0, (ref.error, got.error)
            for r, f in zip(ref.outputs, got.outputs, strict=True):
                assert r.tobytes() == f.tobytes(), (f"{case.name} ({fast.kernels} kernels, seed {seed}): "
                                                    f"{int(np.sum(r != f))} of {r.size} elements differ")
    finally:
        fast.close()


@pytest.mark.parametrize("case", VELA_CASES[::2], ids=lambda c: c.name)
def test_rewritten_weights_decoded_again(case: mg.ConvCase, npu_sim: Simulator,
                                         vela_outputs: dict[str, VelaOutput]) -> None:
    """Flip bytes of the read-only blob (weight and scale streams) in place between two runs of one fast datapath:
    the second run must answer as a fresh fast datapath and as the reference loop given the flipped bytes."""
    vo = vela_outputs.get(case.name)
    if vo is None:
        pytest.skip("not on the NPU with Vela")
    rng = np.random.default_rng(7)
    blob = np.frombuffer(vo.read_only, dtype=np.uint8)

    def memory() -> dict[int, np.ndarray]:
        mem = {r: np.zeros(max(size, 1), dtype=np.uint8) for r, size in vo.scratch.items()}
        mem[vo.read_only_region] = blob.copy()
        for (region, off, _shape), arr in zip(vo.inputs, _inputs(vo, 3), strict=True):
            raw = np.ascontiguousarray(arr).view(np.uint8).ravel()
            mem[region][off: off + raw.size] = raw
        return mem

    def result(sim: Simulator, mem: dict[int, np.ndarray]) -> tuple[int, str, bytes]:
        rc, err = sim.run_on(vo, mem, vo.cmds)
        return rc, err, b"".join(mem[r][o: o + int(np.prod(s))].tobytes() for r, o, s in vo.outputs)

    warm_sim = Simulator(npu_sim.lib, kernels="")
    try:
        for pos in rng.choice(blob.size, size=min(blob.size, 8), replace=False):
            mem = memory()
            assert result(warm_sim, mem)[0] == 0
            mem[vo.read_only_region][int(pos)] ^= 0x81
            for r in mem:
                if r != vo.read_only_region:
                    mem[r][:] = memory()[r]
            warm = result(warm_sim, mem)
            fresh_sim = Simulator(npu_sim.lib, kernels="")
            try:
                fresh_mem = memory()
                fresh_mem[vo.read_only_region][int(pos)] ^= 0x81
                fresh = result(fresh_sim, fresh_mem)
            finally:
                fresh_sim.close()
            ref_mem = memory()
            ref_mem[vo.read_only_region][int(pos)] ^= 0x81
            ref = result(npu_sim, ref_mem)
            assert warm == fresh, f"byte {pos}: the kept weights were used after a rewrite"
            assert (warm[0] == 0) == (ref[0] == 0), f"byte {pos}: fast {warm[1]!r}, reference {ref[1]!r}"
            if warm[0] == 0:
                assert warm[2] == ref[2], f"byte {pos}: fast and reference datapaths differ"
    finally:
        warm_sim.close()
