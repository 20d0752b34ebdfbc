"""The etnaviv front-end command stream that kicks a partition's NN and TP jobs (etnaviv.md §7.3).

State writes are LOAD_STATE commands, one register each: header (1 << 27) | (1 << 16) | (byte offset >> 2), then
the value. Writing NN_INST_ADDR / TP_INST_ADDR (descriptor address + tag) kicks a job. A partition is one stream:
the one-time init block (Mesa sends it once per process before the first invoke; sent here at the start of every
stream, which only re-writes two mode registers [INFERRED harmless]), the 8 filler words, every job in order, and
the close-batch words (FLUSH_CACHE twice, 2 filler words).

Addresses are relocations: `Stream.relocs` lists (word index, descriptor index) for every *_INST_ADDR value, which
holds the tag until the descriptor's address is added.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LOAD_STATE = 1 << 27  # FE opcode LOAD_STATE, count 1 in bits 16..25 [RNNDB]

# State byte offsets [RNNDB, etnaviv.md §7.3]
PA_SYSTEM_MODE = 0x0A28
GL_FLUSH_CACHE = 0x380C
GL_API_MODE = 0x384C
GL_NN_CONFIG = 0x3930
GL_OCB_REMAP_START = 0x393C
GL_OCB_REMAP_END = 0x3940
GL_TP_CONFIG = 0x394C
GL_UNK03950 = 0x3950
PS_NN_INST_ADDR = 0x10A0
PS_UNK10A4 = 0x10A4
PS_TP_INST_ADDR = 0x10B8

SYSTEM_MODE = 0x11  # PROVOKING_VERTEX_LAST | HALF_PIXEL_CENTER (Mesa's init)
API_MODE_OPENCL = 2
NN_CONFIG_SMALL_BATCH = 0x10  # serial execution of the batch's jobs (Mesa's default mode)
FLUSH = 0xC23  # DEPTH | COLOR | UNK10 | UNK11 | SHADER_L1 (Mesa's close-batch value outside parallel mode)
TP_TAG_NOT_LAST = 1  # tag on the descriptor address of every core but the last of a multi-core TP job
UNK03950_NOT_LAST = 0x8  # GL.UNK03950 before non-last cores of multi-core PAD/RELU/ABS jobs (etnaviv.md §5.8)
FILLER = 8  # zero words before the jobs, as in the vendor's streams


@dataclass
class Stream:
    words: list[int] = field(default_factory=list)
    relocs: list[tuple[int, int]] = field(default_factory=list)  # (word index, descriptor index)

    def state(self, offset: int, value: int) -> None:
        self.words += [LOAD_STATE | (1 << 16) | (offset >> 2), value & 0xFFFFFFFF]

    def kick(self, offset: int, descriptor: int, tag: int) -> None:
        self.relocs.append((len(self.words) + 1, descriptor))
        self.state(offset, tag)

    @property
    def bytes(self) -> bytes:
        return b"".join(w.to_bytes(4, "little") for w in self.words)


def init(s: Stream) -> None:
    s.words += [0] * FILLER
    s.state(PA_SYSTEM_MODE, SYSTEM_MODE)
    s.state(GL_API_MODE, API_MODE_OPENCL)
    s.words += [0, 0]


def nn_job(s: Stream, descriptor: int) -> None:
    s.state(GL_OCB_REMAP_START, 0)
    s.state(GL_OCB_REMAP_END, 0)
    s.state(GL_NN_CONFIG, NN_CONFIG_SMALL_BATCH)
    s.kick(PS_NN_INST_ADDR, descriptor, 0)
    s.state(PS_UNK10A4, 0)


def tp_job(s: Stream, descriptors: list[int], tp_name: str) -> None:
    for i, d in enumerate(descriptors):
        last = i == len(descriptors) - 1
        s.state(GL_OCB_REMAP_START, 0)
        s.state(GL_OCB_REMAP_END, 0)
        s.state(GL_TP_CONFIG, 0)
        s.state(GL_UNK03950, UNK03950_NOT_LAST if not last and tp_name in ("PAD", "RELU", "ABSOLUTE") else 0)
        s.kick(PS_TP_INST_ADDR, d, 0 if last else TP_TAG_NOT_LAST)
    s.state(PS_UNK10A4, 0)


def close(s: Stream) -> None:
    s.state(GL_FLUSH_CACHE, FLUSH)
    s.state(GL_FLUSH_CACHE, FLUSH)
    s.words += [0, 0]
