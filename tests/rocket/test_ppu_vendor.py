"""Our RK3576 pool task against the vendor's (../shared/golden/rocket-rk3576-ops, README §5): the same single pool
built with teflon.modelgen must program the same PPU geometry and mode words.

Compared by name: the cube sizes (0x600C..0x6020, PPU_RDMA 0x700C..0x7014), OPERATION_MODE_CFG, POOLING_KERNEL_CFG,
the reciprocals, POOLING_PADDING_CFG, DST_SURF_STRIDE / DATA_FORMAT, MISC_CTRL, SRC_LINE_STRIDE, the RDMA data format,
the S_POINTERs, and for max pooling the seven padding values. Known differences, not compared:
- SRC_SURF_STRIDE (0x7028): the vendor's input is a conv output with round4(IW·IH) planes; ours here is a graph input
  with IW·IH planes (equal when IW·IH is a multiple of 4);
- average padding values: (j + 1) x the input zero point, and the modelgen zero point is not the vendor's;
- the vendor's average capture is int8 2x2, an even window, which teflon runs as a depthwise convolution (the PPU
  sends its exact ties to even or toward zero, TFLite away from zero: docs/hardware/rocket.md §6a): its program is
  compared with the PPU task the encoder builds for that same pool (`_ppu_task_words`), the one the support decision
  would emit had the rounding allowed it.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from teflon.modelgen import PoolCase

pytestmark = pytest.mark.usefixtures("delegate_library")

FILES = {
    "pool-max-in16x16x32-k2x2-s2-p0000-i8-afterconv__ru-max_c32_k2s2_16.json": PoolCase(16, 16, 32, 2, 2, "valid",
                                                                                         "int8", op="max"),
    "pool-max-in15x18x32-k2x2-s2-p0000-i8-afterconv__ru-max_c32_k2s2_15x18.json": PoolCase(15, 18, 32, 2, 2, "valid",
                                                                                           "int8", op="max"),
    "pool-max-in16x16x32-k3x3-s1-p1111-i8-afterconv__ru-max_c32_k3s1_16.json": PoolCase(16, 16, 32, 3, 1, "same",
                                                                                         "int8", op="max"),
    "pool-avg-in16x16x32-k2x2-s2-p0000-i8-afterconv__ru-avg_c32_k2s2_16.json": PoolCase(16, 16, 32, 2, 2, "valid",
                                                                                         "int8"),
}
COMPARED = (
    "PPU_S_POINTER", "PPU_RDMA_S_POINTER", "PPU_DATA_CUBE_IN_WIDTH", "PPU_DATA_CUBE_IN_HEIGHT",
    "PPU_DATA_CUBE_IN_CHANNEL", "PPU_DATA_CUBE_OUT_WIDTH", "PPU_DATA_CUBE_OUT_HEIGHT", "PPU_DATA_CUBE_OUT_CHANNEL",
    "PPU_OPERATION_MODE_CFG", "PPU_POOLING_KERNEL_CFG", "PPU_RECIP_KERNEL_WIDTH", "PPU_RECIP_KERNEL_HEIGHT",
    "PPU_POOLING_PADDING_CFG", "PPU_DST_SURF_STRIDE", "PPU_DATA_FORMAT", "PPU_MISC_CTRL", "PPU_RDMA_CUBE_IN_WIDTH",
    "PPU_RDMA_CUBE_IN_HEIGHT", "PPU_RDMA_CUBE_IN_CHANNEL", "PPU_RDMA_SRC_LINE_STRIDE", "PPU_RDMA_DATA_FORMAT",
)
PAD_VALUES = tuple(f"PPU_PADDING_VALUE_{i}_CFG" for i in range(1, 8))


def _vendor_dir(shared_dir: Path) -> Path:
    return shared_dir / "golden" / "rocket-rk3576-ops"


def _vendor_words(path: Path) -> list[int]:
    d = json.loads(path.read_text())
    task = next(t for t in d["programs"][0]["tasks"] if t.get("role") == "ppu-pool")
    return [int(w, 16) if isinstance(w, str) else int(w) for w in task["words"]]


def _by_name(words: list[int]) -> dict[str, int]:
    from teflon.rocket import target

    rm = target("rk3576").regmap
    out = {}
    for w in words:
        if w and (w >> 48) in (0x4001, 0x8001):
            _unit, name, _ = rm.decode(w)
            out[name] = (w >> 16) & 0xFFFFFFFF
    return out


def _ppu_task_words(graph: object) -> list[int]:
    """The rk3576 encoder's PPU task for the graph's single pool, its reciprocals the vendor's floor(2^16 / k) (the
    only ones the simulator accepts)."""
    from teflon.rocket import target
    from teflon.rocket.average import RECIP_ONE
    from teflon.rocket.pool import window_pool
    from teflon.rocket.rk3576.encoder import pool_streams

    pool = window_pool(graph, graph.operations[0])  # type: ignore[attr-defined]
    pool.recip_w, pool.recip_h = RECIP_ONE // pool.kw, RECIP_ONE // pool.kh
    return pool_streams(target("rk3576").regmap, pool, pool.in_h * pool.in_w)[0].words


def _our_words(case: PoolCase) -> list[int]:
    from teflon import bridge, load_delegate
    from teflon.reference import make_interpreter

    with bridge.capture() as cap:
        make_interpreter(case.build(), [load_delegate(device="rk3576", sim="1")], reference=True)
    if case.op == "avg" and case.filter % 2 == 0:  # an even window: the DPU's convolution runs it
        graph, decisions = cap.support[0]
        assert "depthwise" in decisions[graph.operations[0].index][1]
        return _ppu_task_words(graph)
    assert len(cap.programs) == 1, f"{case} was not delegated"
    data = cap.programs[0][1].buffer("op0.regcmd").data or b""
    return list(struct.unpack(f"<{len(data) // 8}Q", data))


@pytest.mark.parametrize("name", sorted(FILES))
def test_pool_registers_match_vendor(name: str, shared_dir: Path) -> None:
    path = _vendor_dir(shared_dir) / name
    if not path.is_file():
        pytest.skip(f"{name} not in {path.parent}")
    case = FILES[name]
    vendor, ours = _by_name(_vendor_words(path)), _by_name(_our_words(case))
    names = COMPARED + (PAD_VALUES if case.op == "max" else ())
    diff = {n: (f"ours 0x{ours.get(n, -1):x}", f"vendor 0x{vendor.get(n, -1):x}") for n in names
            if ours.get(n) != vendor.get(n)}
    assert not diff, f"{case}: {diff}"
    assert set(ours) == set(vendor), f"register sets differ: {set(ours) ^ set(vendor)}"


def test_ppu_switch_keeps_pools_off_the_ppu(monkeypatch: pytest.MonkeyPatch) -> None:
    """TEFLON_ROCKET_PPU=0 (a board whose kernel arms only the DPU completion): no pool runs on the PPU (each says
    why); an average the DPU computes exactly as a depthwise convolution (pool.average_pool_conv) still runs there,
    since DPU tasks complete on such a kernel."""
    from teflon import bridge, load_delegate, modelgen
    from teflon.reference import make_interpreter

    def decision(case: modelgen.PoolCase, device: str) -> tuple[bool, str]:
        with bridge.capture() as cap:
            make_interpreter(case.build(), [load_delegate(device=device, sim="1")], reference=True)
        graph, decisions = cap.support[0]
        return decisions[graph.operations[0].index]

    average = modelgen.PoolCase(7, 7, 64, filter=7, stride=1)
    maximum = modelgen.PoolCase(8, 8, 32, filter=2, stride=2, op="max")
    for device in ("rk3588", "rk3576"):
        assert decision(average, device)[0] and decision(maximum, device)[0]
    monkeypatch.setenv("TEFLON_ROCKET_PPU", "0")
    for device in ("rk3588", "rk3576"):
        claimed, why = decision(maximum, device)
        assert not claimed and "TEFLON_ROCKET_PPU=0" in why, why
        claimed, why = decision(average, device)
        assert claimed and "depthwise" in why, why


def test_rk3576_trailing_pads_in_the_low_nibbles() -> None:
    """RK3576 POOLING_PADDING_CFG holds the trailing pads in its low nibbles (a vendor program for a SAME k3 s2 max
    pool over 16 writes 0x0011, third-party capture: docs/hardware/rocket.md §6a); a pool whose leading or trailing
    pads differ between x and y stays on the CPU there (which nibble of a pair is x is not known) and runs on
    RK3588, whose TRM field order is known."""
    from teflon import bridge, load_delegate
    from teflon.reference import make_interpreter

    same = PoolCase(16, 16, 32, 3, 2, "same", "int8", op="max")
    words = _by_name(_our_words(same))
    assert words["PPU_POOLING_PADDING_CFG"] == 0x0011
    uneven = PoolCase(15, 16, 32, 3, 2, "same", "int8", op="max")  # top 1 / bottom 1, left 0 / right 1
    for device, claimed in (("rk3576", False), ("rk3588", True)):
        with bridge.capture() as cap:
            make_interpreter(uneven.build(), [load_delegate(device=device, sim="1")], reference=True)
        graph, decisions = cap.support[0]
        ok, why = decisions[graph.operations[0].index]
        assert ok == claimed, why
        if not claimed:
            assert "nibble" in why, why
