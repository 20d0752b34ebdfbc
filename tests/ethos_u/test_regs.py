"""The U65 command set as data (teflon.ethosu.regs): packing round-trips, Vela's own streams decode strictly (every
command and every set bit known), and the Vela COP1 header is parsed."""

from __future__ import annotations

import struct

import pytest

from teflon.ethosu import cmdstream, stream
from teflon.ethosu.regs import KICKS, U65
from teflon.hw.cmdset import CommandError

from .vela_models import CASES
from .vela_oracle import compile_raw


def _sample(f) -> int:  # a value of every field: the largest it takes
    if f.allowed:
        return max(f.allowed)
    return (1 << (f.width - 1)) - 1 if f.signed else f.mask


@pytest.mark.parametrize("cmd", U65.commands, ids=lambda c: c.name)
def test_pack_decode_roundtrip(cmd) -> None:
    fields = {f.name: _sample(f) for f in cmd.fields}
    r = U65.field_range(cmd.name, next(iter(fields), ""))
    if r is not None:
        fields[r.field] = r.hi
    words = U65.words(cmd.name, **fields)
    assert len(words) == (2 if cmd.cmd1 else 1) and U65.pack(cmd.name, U65.value(cmd.name, **fields)) == words
    (d,) = U65.decode(words)
    assert d.command is cmd and dict(d.fields) == fields


def test_refusals() -> None:
    with pytest.raises(CommandError, match="does not fit"):
        U65.words("NPU_SET_IFM_REGION", region=8)
    with pytest.raises(CommandError, match="not one of the values"):
        U65.words("NPU_OP_POOL", mode=3)
    with pytest.raises(CommandError, match="does not fit 6 bits"):
        U65.words("NPU_SET_OFM_SCALE", scale=1, shift=64)
    # the same refusals from decode(strict) and from validate, which the compile's stream.check runs
    for stream_words, why in (([0x012E], "unknown cmd0 opcode 0x12e"),  # NPU_SET_WEIGHT_FORMAT: U85 only
                              ([0x0002_0105], "outside any defined field"),  # IFM_PRECISION bit 1 is reserved
                              ([0x4020], "without its payload"),
                              ([0x0000_8105], "reserved bits 10..15")):
        good = U65.words("NPU_SET_IFM_REGION", region=1)
        for check in (U65.decode, U65.validate):
            with pytest.raises(CommandError, match=why):
                check([*good, *stream_words])
        assert why in stream.check([*good, *stream_words])[0]
    assert not stream.check(U65.words("NPU_SET_IFM_REGION", region=1) + U65.words("NPU_OP_STOP", mask=0xFFFF))


def test_cop1_header() -> None:
    body = [0x0000_0123, 0xFFFF_0000]
    data = struct.pack("<8I", cmdstream.COP1, 0x0010_0001, 0x10003008, 0x10066001, 5, 5,
                       (cmdstream.DA_CMDSTREAM | len(body) << 16), 0) [:-4] + struct.pack("<2I", *body)
    p = cmdstream.parse(data)
    assert p.words == tuple(body) and p.config_reg == 0x10003008 and p.id_reg == 0x10066001
    assert cmdstream.parse(struct.pack("<2I", *body)).words == tuple(body)  # a bare stream stays as it is
    with pytest.raises(cmdstream.StreamError):
        cmdstream.parse(struct.pack("<2I", cmdstream.COP1, 0x7))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_vela_streams_decode(case) -> None:
    raw = compile_raw(case.build())
    assert raw.config_reg == 0x10003008 and raw.id_reg == 0x10066001  # ethos-u65-256, architecture 1.0.6
    cmds = U65.decode(raw.words)  # strict: every opcode and every set bit is in the table
    assert cmds[-1].command.name == "NPU_OP_STOP"
    kicks = U65.state_at_kicks(raw.words, KICKS)
    assert len(kicks) == 1
    text = "\n".join(U65.pretty(raw.words))
    assert "NPU_SET_IFM_PRECISION" in text and "activation_type=SIGNED" in text
