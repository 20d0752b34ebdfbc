"""Structural stand-ins for published detection, segmentation and pose models (teflon.netgen) on every drivable
target's simulated NPU, against TFLite's builtin CPU kernels.

Each net runs in uint8 (per-tensor) and int8 (per-channel weights) on a random input. Whole-model tolerance:
>= 99.5 % of the output elements within 6 LSB (Mesa's model tolerance). The share of the model's nodes the delegate
takes is printed and must not fall below the floor measured for that net and target (COVERAGE_FLOOR); the rocket
goal is 80 % of all nodes on each SoC (COVERAGE_GOAL) — the printed line says where each net stands. The ids name
net, type and target: `yolo-i8-rk3576`.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from conftest import sim_options
from teflon import netgen, targets
from teflon.modelgen import DTYPE_TOKEN, random_inputs
from teflon.reference import MODEL_LSB, compare, run_cpu, run_delegate

DEVICES = [t.name for t in targets.drivable_generations()]
DTYPES = ("uint8", "int8")
MIN_WITHIN = 0.995
COVERAGE_GOAL = 0.80  # rocket: the share of all nodes a detection/segmentation/pose model should run on the NPU

# Delegated share of all nodes measured on (net, dtype, device); a run below its floor is a regression. Nets or
# targets not listed have a floor of 0.
COVERAGE_FLOOR: dict[tuple[str, str, str], float] = {
    # both run LOGISTIC / SiLU through the DPU LUT (rk3588 the DPU alone, rk3576 a LUT-load task and a copy convolution:
    # docs/hardware/rocket-rk3576.md "The LUT on RK3576");
    # both fuse ADDs into convolutions (or a 1x1 copy of one input), pool on the PPU, take global averages wider than
    # the PPU as per-plane convolutions and treat RESHAPE / channel CONCATENATION / SPLIT as views
    ("yolo", "uint8", "rk3588"): 43 / 44, ("yolo", "int8", "rk3588"): 43 / 44,
    ("yolo", "uint8", "rk3576"): 43 / 44, ("yolo", "int8", "rk3576"): 43 / 44,
    ("ssd", "uint8", "rk3588"): 16 / 18, ("ssd", "int8", "rk3588"): 16 / 18,
    ("ssd", "uint8", "rk3576"): 16 / 18, ("ssd", "int8", "rk3576"): 16 / 18,
    ("deeplab", "uint8", "rk3588"): 11 / 13, ("deeplab", "int8", "rk3588"): 11 / 13,
    ("deeplab", "uint8", "rk3576"): 11 / 13, ("deeplab", "int8", "rk3576"): 11 / 13,
    ("movenet", "uint8", "rk3588"): 8 / 9, ("movenet", "int8", "rk3588"): 8 / 9,
    ("movenet", "uint8", "rk3576"): 8 / 9, ("movenet", "int8", "rk3576"): 8 / 9,
    # its NCHW island runs as NHWC (teflon.nchw_islands); rk3576 int8: the RELU convolution with per-channel weights
    # stays on the CPU and splits the island, which then stays as written
    ("nchw_shufflenet", "uint8", "rk3588"): 17 / 17, ("nchw_shufflenet", "int8", "rk3588"): 17 / 17,
    ("nchw_shufflenet", "uint8", "rk3576"): 17 / 17, ("nchw_shufflenet", "int8", "rk3576"): 4 / 17,
    # imx93: TRANSPOSE (one exchange of two axis groups), the rank-5 channel shuffle, SPLIT / CONCATENATION on any
    # axis and RESIZE_NEAREST_NEIGHBOR x2 as copies or views (teflon.ethosu.moves); PAD stays on the CPU
    ("nchw_shufflenet", "uint8", "imx93"): 16 / 17, ("nchw_shufflenet", "int8", "imx93"): 16 / 17,
    ("yolo", "uint8", "imx93"): 43 / 44, ("yolo", "int8", "imx93"): 43 / 44,
    # etnaviv: the global average pool (stride 16) and MEAN of 16x16 maps as whole-plane unit-weight NN jobs (the FC
    # form past the kernel's 15), the image-pooling RESIZE 1x1 -> 16x16 as x2 TP steps (docs/hardware/etnaviv-pool.md);
    # int8: per-channel convolutions of more than 16 runs stay on the CPU (docs/hardware/etnaviv-per-channel.md),
    # movenet's MUL of two maps has no NPU form (int8: its MEAN then sits alone between CPU convolutions)
    ("deeplab", "uint8", "a311d"): 13 / 13, ("deeplab", "int8", "a311d"): 5 / 13,
    ("deeplab", "uint8", "imx8mp"): 13 / 13, ("deeplab", "int8", "imx8mp"): 5 / 13,
    ("movenet", "uint8", "a311d"): 8 / 9, ("movenet", "int8", "a311d"): 3 / 9,
    ("movenet", "uint8", "imx8mp"): 8 / 9, ("movenet", "int8", "imx8mp"): 3 / 9,
}


def _cases() -> list[pytest.param]:
    return [pytest.param(net, dtype, device, id=f"{net}-{DTYPE_TOKEN[dtype]}-{device}")
            for net in netgen.NETS for dtype in DTYPES for device in DEVICES]


@pytest.mark.parametrize(("net", "dtype", "device"), _cases())
def test_net(net: str, dtype: str, device: str, delegate_library: None,
             record_property: Callable[[str, object], None]) -> None:
    model = netgen.build(net, dtype)  # type: ignore[arg-type]
    x = random_inputs(model)
    ref = run_cpu(model, x)
    run = run_delegate(model, x, **sim_options(device))
    cmp = compare(ref, run.outputs)
    share = len(run.delegated) / len(run.ops)
    family = targets.get(device).family
    goal = f", goal {COVERAGE_GOAL:.0%}" if family == "rocket" else ""
    print(f"{net} {dtype} on {device}: {cmp}; {len(run.delegated)}/{len(run.ops)} nodes ({share:.0%}{goal}) in "
          f"{run.partitions} partition(s)")
    cpu = sorted({f"{run.ops[i]}: {why}" for i, why in run.reasons.items()})
    if cpu:
        print("  left on the CPU: " + "; ".join(cpu))
    record_property("delegated_share", round(share, 4))
    record_property("max_abs_diff", cmp.max_abs_diff)
    record_property("mean_abs_diff", round(cmp.mean_abs_diff, 6))
    record_property(f"within_{MODEL_LSB}_lsb", round(cmp.within_model_lsb, 6))

    assert cmp.within_model_lsb >= MIN_WITHIN, f"{net} {dtype} on {device}: {cmp}"
    if not run.delegated:
        assert cmp.max_abs_diff == 0, f"CPU fallback differs from the CPU reference: {cmp}"
    floor = COVERAGE_FLOOR.get((net, dtype, device), 0.0)
    assert share >= floor - 1e-9, f"{net} {dtype} on {device}: {share:.1%} of the nodes delegated, floor {floor:.1%}"
