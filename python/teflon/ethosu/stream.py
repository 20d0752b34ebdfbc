"""Kicks -> Ethos-U65 command words, every word through the U65 command set (teflon.ethosu.regs).

Registers are written before each kick only when their value changes (the NPU keeps its registers between
operations); the weight and scale registers point at the streams placed in the coefficient region. The stream ends
with NPU_OP_STOP (mask 0xFFFF, as Vela ends its streams).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from teflon.ethosu.lower import REGION_COEFFS, REGION_FAST, Kick, LoweringError
from teflon.ethosu.regs import U65


@dataclass(frozen=True)
class Placed:
    """Where a kick's weight and scale streams sit in the coefficient region (None: the kick has none), and, for a
    kick whose streams are DMA'd into the SRAM first (`staged`), the SRAM offset its scale records land at (its
    weights follow them there as in the coefficient region)."""

    weights: tuple[int, int] | None  # (offset, length)
    scales: tuple[int, int] | None
    staged: int | None = None

    def staging(self) -> tuple[int, int]:
        """(coefficient offset, length) of the bytes a staged kick's DMA copies: its scale records, then its
        weights."""
        assert self.weights is not None and self.scales is not None
        return self.scales[0], self.weights[0] + self.weights[1] - self.scales[0]


def kick_registers(k: Kick, placed: Placed) -> dict[str, dict[str, int]]:
    """Every register the kick reads, the weight/scale stream registers included."""
    regs = dict(k.regs)
    region, shift = REGION_COEFFS, 0
    if placed.staged is not None and placed.scales is not None:
        region, shift = REGION_FAST, placed.staged - placed.scales[0]
    if placed.weights is not None:
        regs["NPU_SET_WEIGHT_REGION"] = {"region": region}
        regs["NPU_SET_WEIGHT_BASE"] = {"addr": placed.weights[0] + shift}
        regs["NPU_SET_WEIGHT_LENGTH"] = {"length": placed.weights[1]}
    if placed.scales is not None:
        regs["NPU_SET_SCALE_REGION"] = {"region": region}
        regs["NPU_SET_SCALE_BASE"] = {"addr": placed.scales[0] + shift}
        regs["NPU_SET_SCALE_LENGTH"] = {"length": placed.scales[1]}
    return regs


def emit(kicks: Sequence[Kick], placed: Sequence[Placed]) -> list[int]:
    words: list[int] = []
    state: dict[str, int] = {}
    values: dict[tuple[str, tuple[tuple[str, int], ...]], int] = {}  # kicks repeat most register settings

    def value_of(name: str, fields: dict[str, int]) -> int:
        key = (name, tuple(fields.items()))
        v = values.get(key)
        if v is None:
            v = values[key] = U65.value(name, **fields)
        return v

    for k, p in zip(kicks, placed):
        for name, fields in k.pre:
            value = U65.value(name, **fields)
            if not name.startswith("NPU_OP_"):
                state[name] = value
            words += U65.pack(name, value)
        for name, fields in kick_registers(k, p).items():
            value = value_of(name, fields)
            if state.get(name) == value:
                continue
            state[name] = value
            words += U65.pack(name, value)
        for name, fields in k.wait:
            words += U65.words(name, **fields)
        words += U65.words(k.op, **k.op_fields)
    words += U65.words("NPU_OP_STOP", mask=0xFFFF)
    return words


def check(words: Sequence[int]) -> list[str]:
    """Why the hardware would refuse the stream: fields outside their defined values or ranges (teflon.ethosu.regs
    RANGES), unknown commands."""
    try:
        U65.validate(words)
    except ValueError as e:
        return [str(e)]
    return []


WeightEncoder = Callable[[Kick], bytes]


def default_weight_encoder(k: Kick) -> bytes:
    """The kick's weights in the U65 weight-stream format (teflon.ethosu.bricks order, teflon.ethosu.mlw codec)."""
    try:
        from teflon.ethosu import bricks, mlw  # type: ignore[attr-defined]
    except ImportError as e:
        raise LoweringError("the Ethos-U weight encoder (teflon.ethosu.mlw) is not available") from e
    assert k.weights is not None and k.block is not None
    o, kh, kw, i = k.weights.shape
    geo = bricks.BrickGeometry("depthwise" if k.depthwise else "conv", o, i, kh, kw, k.block.ofm[2],
                               k.block.part_kernel and not k.depthwise)
    return bytes(mlw.encode(bricks.reorder(k.weights, geo)))
