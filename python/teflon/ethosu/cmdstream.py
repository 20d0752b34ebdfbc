"""Ethos-U command streams as Vela ships them: the driver-action header around the command words.

Vela's `ethos_u_command_stream` tensor (input 0 of its `ethos-u` custom op) starts with a driver-action header
(docs/hardware/ethosu-commands.md "Vela's COP1 header"; read from Vela's output and its driver_actions.py): the
fourcc "COP1", a config action carrying images of the NPU's CONFIG and ID registers, NOP actions up to 16-byte
alignment, then one command-stream action whose 24-bit length in words precedes the command words. The kernel
takes the bare words (Mesa submits them without a header), so the header is parsed and dropped here.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

COP1 = 0x31504F43  # "COP1" little-endian
DA_CONFIG, DA_CMDSTREAM, DA_READAPB, DA_DUMPSHRAM, DA_NOP = 1, 2, 3, 4, 5


class StreamError(ValueError):
    pass


@dataclass(frozen=True)
class DriverPayload:
    """A command stream's driver payload: the register images it was compiled for and its words."""

    config_reg: int | None  # the NPU CONFIG register image the stream was compiled for
    id_reg: int | None  # the NPU ID register image (architecture version)
    words: tuple[int, ...]  # the command words


def words_of(data: bytes) -> list[int]:
    if len(data) % 4:
        raise StreamError(f"a command stream is whole 32-bit words; got {len(data)} bytes")
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def parse(data: bytes) -> DriverPayload:
    """The command words of a Vela driver payload (or of a bare stream, returned as it is)."""
    words = words_of(data)
    if not words or words[0] != COP1:
        return DriverPayload(None, None, tuple(words))
    config = ident = None
    cmds: list[int] | None = None
    i = 1
    while i < len(words):
        tag = words[i]
        da, hi, param = tag & 0xFF, (tag >> 8) & 0xFF, tag >> 16
        i += 1
        if da == DA_CONFIG:
            if i + 2 > len(words):
                raise StreamError("COP1 config action cut short")
            config, ident = words[i], words[i + 1]
            i += 2
        elif da == DA_NOP:
            continue
        elif da == DA_CMDSTREAM:
            n = hi << 16 | param
            if i + n > len(words) or cmds is not None:
                raise StreamError("COP1 command-stream action: length past the end, or a second stream")
            cmds = words[i:i + n]
            i += n
        else:
            raise StreamError(f"COP1 driver action {da} (tag 0x{tag:08x}) is not one teflon runs")
    if cmds is None:
        raise StreamError("COP1 payload without a command stream")
    return DriverPayload(config, ident, tuple(cmds))
