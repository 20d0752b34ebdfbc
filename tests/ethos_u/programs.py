"""ethosu programs for the kernel-side tests: Vela's raw output for a single-operation model (vela_oracle) made
into a teflon Program by the passthrough (teflon.ethosu.vela), and edits of its command words that the kernel's
validator or job checks must refuse."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from teflon import targets
from teflon.ethosu import task, vela
from teflon.ethosu.regs import U65
from teflon.program import Program

from .vela_oracle import compile_raw

IN_TENSOR, OUT_TENSOR = 0, 100  # tensor numbers given to the raw output's feature maps
PAGE = 4096  # the kernel allocates BOs in pages (drm_gem_dma_create)


def vela_op(model: bytes) -> vela.VelaOp:
    raw = compile_raw(model)
    io = tuple(vela.Feature(IN_TENSOR + i, "in", p.offset, p.shape, "int8") for i, p in enumerate(raw.inputs))
    io += tuple(vela.Feature(OUT_TENSOR + i, "out", p.offset, p.shape, "int8") for i, p in enumerate(raw.outputs))
    assert all(p.region == vela.ARENA_REGION for p in (*raw.inputs, *raw.outputs))
    return vela.VelaOp(0, raw.words, raw.config_reg, raw.id_reg, raw.read_only, raw.scratch_size, raw.fast_size, (),
                       io)


def program(v: vela.VelaOp) -> Program:
    return vela.compile_op(targets.get("imx93"), v)


def edit_words(v: vela.VelaOp, edit: Callable[[list[int], dict[str, int]], None]) -> vela.VelaOp:
    """v with its command words changed by edit(words, {command name: word index of its last occurrence})."""
    words = list(v.words)
    where = {d.command.name: d.index for d in U65.decode(words, strict=False)}
    edit(words, where)
    return replace(v, words=tuple(words))


def ofm_past_the_arena(v: vela.VelaOp) -> vela.VelaOp:
    """The OFM moved past the arena's end: the operation writes past the end of its region's BO (the kernel's BOs
    are whole pages, so past the page-rounded size)."""
    def edit(words: list[int], at: dict[str, int]) -> None:
        words[at["NPU_SET_OFM_BASE0"] + 1] = -(-v.arena_size // PAGE) * PAGE
    return edit_words(v, edit)


def ofm_region_unset(v: vela.VelaOp) -> vela.VelaOp:
    """NPU_SET_OFM_REGION replaced by a NOP-like setting the validator ignores: the OFM's region is never set."""
    def edit(words: list[int], at: dict[str, int]) -> None:
        i = at["NPU_SET_OFM_REGION"]
        words[i] = U65.command("NPU_SET_IFM_ZERO_POINT").first_word | (words[i] & 0xFFFF0000)
    return edit_words(v, edit)


def with_header(prog: Program, sram_size: int, regions: dict[int, int]) -> Program:
    """prog with its task header replaced."""
    buf = prog.buffer("task")
    _, _, words = task.unpack(bytes(buf.data or b""))
    buf.data = task.pack(words, sram_size, regions)
    return prog


def uses_ifm2_scalar(words: tuple[int, ...]) -> bool:
    """Whether an elementwise operation of the stream takes IFM2 as a scalar (IFM2_BROADCAST broadcast_scalar)."""
    bcast, scalar = 0, U65.value("NPU_SET_IFM2_BROADCAST", broadcast_scalar=1)
    for d in U65.decode(words, strict=False):
        if d.command.name == "NPU_SET_IFM2_BROADCAST":
            bcast = d.value
        elif d.command.name == "NPU_OP_ELEMENTWISE" and bcast & scalar:
            return True
    return False
