"""The simulated accel/ethosu kernel behind the real client (drivers/ethosu/ethosu_kernel_sim.c, through
teflon.native with sim=True): what its command-stream validator and its SUBMIT checks refuse, as the Linux driver
does (docs/hardware/ethosu-kernel.md "Validator", "Job checks"), and Vela's own streams accepted."""

from __future__ import annotations

import numpy as np
import pytest

from teflon import modelgen as mg
from teflon.ethosu.regs import U65
from teflon.native import Device, NativeError, Runner

from . import programs
from .vela_models import CASES, IDS

# Vela writes a one-value constant operand as an IFM2 scalar and never sets IFM2's region, base or strides
SCALAR_CASE = mg.ConstOpCase(8, 8, 16, op="min", bcast="1", dtype="int8")

pytestmark = pytest.mark.usefixtures("delegate_library")


def _run(prog: object) -> dict[int, np.ndarray]:
    dev = Device("imx93", sim=True)
    r = None
    try:
        r = Runner(dev, prog)  # type: ignore[arg-type]
        return r.run({b.tensor: np.zeros(b.shape, b.dtype) for b in r.bindings if b.direction == "in"})
    finally:
        if r is not None:
            r.close()
        dev.close()


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vela_streams_pass_the_validator(case: object) -> None:
    out = _run(programs.program(programs.vela_op(case.build())))  # type: ignore[attr-defined]
    assert out and all(a.dtype == np.int8 for a in out.values())


def test_ofm_past_the_end_of_its_bo_is_eoverflow() -> None:
    v = programs.ofm_past_the_arena(programs.vela_op(CASES[0].build()))
    with pytest.raises(NativeError, match=r"DRM_IOCTL_ETHOSU_SUBMIT refused the job: a region's BO is smaller .*"
                                          r"Value too large.*region 1 size greater than BO size"):
        _run(programs.program(v))


def test_ofm_region_never_set_is_refused_at_cmdstream_create() -> None:
    v = programs.ofm_region_unset(programs.vela_op(CASES[0].build()))
    with pytest.raises(NativeError, match=r"CMDSTREAM_BO_CREATE.*Invalid argument.*OFM never fully set"):
        _run(programs.program(v))


def test_bo_for_an_unused_region_is_refused() -> None:
    prog = programs.with_header(programs.program(programs.vela_op(CASES[0].build())), 0, {0: 0, 1: 1, 3: 0})
    with pytest.raises(NativeError, match=r"SUBMIT refused.*BO handle \d+ set for unused region 3"):
        _run(prog)


def test_sram_beyond_the_npus_is_refused() -> None:
    prog = programs.with_header(programs.program(programs.vela_op(CASES[0].build())), 0x18001, {0: 0, 1: 1})
    with pytest.raises(NativeError, match=r"uses 98305 bytes of NPU SRAM, this NPU has 98304"):
        _run(prog)


def test_region_2_with_a_bo_and_sram_is_refused_by_the_packer() -> None:
    from teflon.ethosu import task

    with pytest.raises(ValueError, match="region 2 is the SRAM"):
        task.header(1024, {2: 0})


def test_ifm2_scalar_reads_no_ifm2() -> None:
    """U65 IFM2_BROADCAST bit 7 (broadcast_scalar): the validator reads no IFM2 (Linux 838ae99f9a77); the same
    stream with the bit cleared reads an IFM2 whose region was never set, refused at CMDSTREAM_BO_CREATE."""
    v = programs.vela_op(SCALAR_CASE.build())
    assert programs.uses_ifm2_scalar(v.words)
    out = _run(programs.program(v))
    assert out and all(a.dtype == np.int8 for a in out.values())

    def clear_scalar(words: list[int], at: dict[str, int]) -> None:
        words[at["NPU_SET_IFM2_BROADCAST"]] &= ~(U65.value("NPU_SET_IFM2_BROADCAST", broadcast_scalar=1) << 16)
    with pytest.raises(NativeError, match=r"CMDSTREAM_BO_CREATE.*Invalid argument.*IFM2 never fully set"):
        _run(programs.program(programs.edit_words(v, clear_scalar)))


def test_padding_wider_than_the_ifm_is_refused_at_cmdstream_create() -> None:
    """Top padding 127 on the 8x8 3x3 convolution: the IFM height the kernel computes is negative (Linux: "Handle
    possible underflow in IFM size calculations"), refused before any job."""
    def pad(words: list[int], at: dict[str, int]) -> None:
        i = at["NPU_SET_IFM_PAD_TOP"]
        words[i] = (words[i] & 0xFFFF) | (127 << 16)
    v = programs.edit_words(programs.vela_op(CASES[0].build()), pad)
    with pytest.raises(NativeError, match=r"CMDSTREAM_BO_CREATE.*Invalid argument.*IFM never fully set.*padding"):
        _run(programs.program(v))


def test_ifm_region_is_masked_to_3_bits_by_the_validator() -> None:
    """NPU_SET_IFM_REGION 9: the validator reads region 1 (`& 0x7` as for every region since Linux 00f547e0dfec)
    and accepts the stream; the NPU itself refuses the bits outside the field when the job runs."""
    def region9(words: list[int], at: dict[str, int]) -> None:
        i = at["NPU_SET_IFM_REGION"]
        words[i] |= 8 << 16
    v = programs.edit_words(programs.vela_op(CASES[0].build()), region9)
    with pytest.raises(NativeError, match=r"NPU error IRQ.*NPU_SET_IFM_REGION value 0x9 sets bits outside") as e:
        _run(programs.program(v))
    assert "CMDSTREAM_BO_CREATE" not in str(e.value)
