"""Mesa's silicon-proven RK3588 streams (../shared/golden/rocket-rk3588) run on the simulated kernel + NPU.

Each golden file becomes a teflon Program (its regcmds, packed weights and bias table, relocations instead
of Mesa's fake addresses, Mesa's job split), runs on random input through teflon.native, and must match an
exact numpy model of TFLite's quantized convolution: max |diff| <= 1 and >= 99.5 % exact.
Also: simulator errors reach Python with the register, value and task named.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from teflon.native import Device, NativeError, Runner

from .sim_golden import FILES, GOLDEN, compare, golden_program, hardware_model, load, random_input, reference

pytestmark = pytest.mark.usefixtures("delegate_library")

if not FILES:
    pytest.skip(f"no golden rocket-rk3588 files under {GOLDEN}", allow_module_level=True)


@pytest.fixture(scope="module")
def sim() -> Device:
    dev = Device("rk3588", sim=True)
    yield dev
    dev.close()


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_golden_stream(sim: Device, path) -> None:
    d = load(path)
    x = random_input(d)
    runner = Runner(sim, golden_program(d))
    out = runner.run({0: x})[3]
    exact, worst = compare(reference(d, x), out)
    stats = runner.stats()
    print(f"{path.stem}: exact {exact:.4%}, max |diff| {worst}, {stats['tasks']} tasks, {stats['macs']} MACs")
    assert worst <= 1, f"max |diff| {worst}"
    assert exact >= 0.995, f"only {exact:.4%} exact"
    assert stats["tasks"] == d["outputs"]["num_tasks_total"]


def _patched(d: dict, word_index: int, word: int):
    prog = golden_program(d)
    buf = prog.buffer("op0.regcmd")
    data = bytearray(buf.data)
    struct.pack_into(
        "<Q", data, d["outputs"]["operations"][0]["tasks"][0]["regcmd_offset_in_bo"] + 8 * word_index, word
    )
    buf.data = bytes(data)
    return prog


def _word(d: dict, index: int) -> int:
    return int(d["outputs"]["operations"][0]["tasks"][0]["regcmd"][index], 16)


SMALL = GOLDEN / "conv-in14x14x32-oc64-k1-s1-same-zp74.json"


@pytest.mark.skipif(not SMALL.is_file(), reason="golden file missing")
def test_unknown_register_is_an_error(sim: Device) -> None:
    d = load(SMALL)
    w = _word(d, 1)  # CNA_DCOMP_REGNUM
    bad = (w & ~0xFFFF) | 0x1090  # CNA 0x1090 (CLK_GATE on RK3588 is not in the table)
    with pytest.raises(NativeError, match=r"job 0 task 0: regcmd word 1: unknown register 0x1090"):
        Runner(sim, _patched(d, 1, bad)).run({0: random_input(d)})


@pytest.mark.skipif(not SMALL.is_file(), reason="golden file missing")
def test_bits_outside_fields_are_an_error(sim: Device) -> None:
    d = load(SMALL)
    idx = next(
        i for i, w in enumerate(d["outputs"]["operations"][0]["tasks"][0]["regcmd"]) if int(w, 16) & 0xFFFF == 0x1068
    )
    bad = _word(d, idx) | (1 << (16 + 20))  # CNA_PAD_CON0 bit 20: no field there
    with pytest.raises(NativeError, match=r"CNA_PAD_CON0 = 0x00100000 sets bits 0x00100000 outside its defined fields"):
        Runner(sim, _patched(d, idx, bad)).run({0: random_input(d)})


@pytest.mark.skipif(not SMALL.is_file(), reason="golden file missing")
def test_value_not_understood_names_register(sim: Device) -> None:
    d = load(SMALL)
    idx = next(
        i for i, w in enumerate(d["outputs"]["operations"][0]["tasks"][0]["regcmd"]) if int(w, 16) & 0xFFFF == 0x4070
    )
    bad = (_word(d, idx) & ~(0xFFFFFFFF << 16)) | (0x783 << 16)  # the EW bypass with EW_RELUX_EN: not simulated
    with pytest.raises(NativeError, match=r"task 0: DPU_EW_CFG = 0x00000783: only the EW bypass"):
        Runner(sim, _patched(d, idx, bad)).run({0: random_input(d)})


def test_real_device_only_is_a_clear_error() -> None:
    import glob

    if glob.glob("/dev/accel/accel*"):
        pytest.skip("an accel device node exists here")
    with pytest.raises(NativeError, match=r"no rocket NPU.*sim=0"):
        Device("rk3588", sim=False)


def test_simulator_for_unknown_soc_is_refused() -> None:
    with pytest.raises(NativeError, match=r"unknown SoC"):
        Device("rk9999", sim=True)


@pytest.mark.skipif(not SMALL.is_file(), reason="golden file missing")
def test_input_dtype_checked(sim: Device) -> None:
    d = load(SMALL)
    runner = Runner(sim, golden_program(d))
    with pytest.raises(ValueError, match="expected uint8"):
        runner.run({0: random_input(d).astype(np.int8)})


MODEL_STREAMS = ["conv-in28x28x32-oc32-k3-s1-same-zp74-izp0", "dwconv-in28x28x64-k3-s1-same-zp95-trunc"]


@pytest.mark.parametrize("stem", [s for s in MODEL_STREAMS if (GOLDEN / f"{s}.json").is_file()])
@pytest.mark.parametrize("ow", [None, 300, -1000])
def test_datapath_matches_documented_model(sim: Device, stem: str, ow: int | None) -> None:
    """Bit-exact against the numpy model of docs/hardware/rocket-sim.md, also with BS_OW_OP outside the range
    the simulator folds into the weights (its general path)."""
    d = load(GOLDEN / f"{stem}.json")
    prog = golden_program(d)
    if ow is not None:
        buf = prog.buffer("op0.regcmd")
        data = bytearray(buf.data or b"")
        words = d["outputs"]["operations"][0]["tasks"][0]["regcmd"]
        i = next(i for i, w in enumerate(words) if int(w, 16) & 0xFFFF == 0x4054)
        w = struct.unpack_from("<Q", data, 8 * i)[0]
        struct.pack_into("<Q", data, 8 * i, (w & ~(0xFFFFFFFF << 16)) | ((ow & 0xFFFF) << 16))
        buf.data = bytes(data)
    x = random_input(d, seed=3)
    out = Runner(sim, prog).run({0: x})[3]
    expect = hardware_model(d, x, ow)
    assert np.array_equal(out, expect), f"{np.count_nonzero(out != expect)} of {out.size} differ"
