"""Register-table machinery for rocket regcmd streams: pack, decode, pretty-print.

SoC independent: a `RegMap` is built from one SoC's data table (`regs_<soc>.py`). The same table
feeds the encoder (values and words), the stream pretty-printer and the C header the simulator
includes (gen_c_header.py), so the two sides can never disagree on a bit position.

Kept free of numpy: gen_c_header.py loads it from the source tree at build
time, in an isolated environment.

Regcmd word (u64, little-endian): target << 48 | value << 16 | offset.
A normal register write uses target = unit id + 1; a few special targets (SYNC, the broadcast
op-enable) are listed per SoC in `specials`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

WORD_VALUE_SHIFT = 16
WORD_TARGET_SHIFT = 48
# Words word_of() keeps, by register and field values: a compile writes ~9000 words (MobileNetV2), of which ~700
# differ; the memo is emptied when it reaches this size (a long sweep compiles thousands of programs in one
# process; about 200 bytes an entry).
WORD_MEMO_LIMIT = 1 << 14


class RegMapError(ValueError):
    pass


@dataclass(frozen=True)
class Field:
    name: str
    lo: int
    hi: int
    signed: bool = False  # two's complement: negative inputs accepted, decode returns signed
    # Non-empty: the only field values accepted (values seen from the vendor for a field whose meaning
    # is unknown). Empty: any value that fits.
    allowed: tuple[int, ...] = ()

    @property
    def width(self) -> int:
        return self.hi - self.lo + 1

    @property
    def mask(self) -> int:
        """Unshifted width mask."""
        return (1 << self.width) - 1


@dataclass(frozen=True)
class Register:
    unit: str
    name: str  # name inside the unit, e.g. "CBUF_CON0"
    offset: int
    fields: tuple[Field, ...] = ()
    note: str = ""  # provenance / caveats (e.g. "undescribed, Mesa writes 0 raw")

    @property
    def full_name(self) -> str:
        return f"{self.unit}_{self.name}"

    @property
    def defined_mask(self) -> int:
        m = 0
        for f in self.fields:
            m |= f.mask << f.lo
        return m

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise RegMapError(f"{self.full_name} has no field {name!r} (fields: {', '.join(f.name for f in self.fields)})")


@dataclass(frozen=True)
class Unit:
    name: str
    id: int  # target id; a normal write uses id + 1

    @property
    def write_target(self) -> int:
        return self.id + 1


@dataclass(frozen=True)
class Special:
    """A non-write target word: SYNC, broadcast op-enable."""

    name: str
    target: int
    register: str | None = None  # full name of the register whose fields the value carries (None: value 0)
    offset: int = 0


def reg(unit: str, name: str, offset: int,
        *fields: tuple[str, int, int] | tuple[str, int, int, bool] | Field, note: str = "") -> Register:
    """Compact constructor for the data tables: fields as (name, lo, hi[, signed]) or Field."""
    return Register(unit, name, offset, tuple(f if isinstance(f, Field) else Field(*f) for f in fields), note)


@dataclass(frozen=True)
class FieldRange:
    """The values of one field the hardware takes, narrower than its bits (e.g. a 12-bit shift field whose
    datapath only shifts by up to 47), with the fact's source. One table per SoC next to its registers: the
    encoder packs no word outside it, the program check (rocket/check.py) decodes against it and the simulator
    reads it from the generated C header (P_<REG>__<FIELD>__MIN / __MAX)."""

    register: str  # full name, e.g. "DPU_OUT_CVT_SHIFT"
    field: str
    lo: int  # smallest accepted value (signed fields: the sign-extended value)
    hi: int  # largest accepted value
    source: str  # where the limit comes from (docs/hardware/<family>.md names it too)


@dataclass
class SocTable:
    soc: str
    units: tuple[Unit, ...]
    registers: tuple[Register, ...]
    specials: tuple[Special, ...] = ()
    ranges: tuple[FieldRange, ...] = ()


@dataclass(frozen=True)
class _Layout:
    """One register's packing facts, computed once from the table: encoders write thousands of words per
    model, so `word()` must not walk the field list or rebuild masks for each of them."""

    base: int  # the regcmd word without its value: write target << 48 | offset
    fields: dict[str, tuple[int, int, int]]  # field name -> (lo, unshifted mask, smallest accepted value)
    defined_mask: int
    allowed: tuple[tuple[Field, int, frozenset[int]], ...]  # restricted fields: (field, mask, accepted values)
    ranges: tuple[tuple[Field, FieldRange], ...] = ()  # ranged fields (SocTable.ranges)

    @property
    def restricted(self) -> bool:
        return bool(self.allowed or self.ranges)


def _make_layout(reg: Register, write_target: int, ranges: tuple[FieldRange, ...] = ()) -> _Layout:
    return _Layout(
        base=(write_target << WORD_TARGET_SHIFT) | reg.offset,
        fields={f.name: (f.lo, f.mask, -(1 << (f.width - 1)) if f.signed else 0) for f in reg.fields},
        defined_mask=reg.defined_mask,
        allowed=tuple((f, f.mask, frozenset(a & f.mask for a in f.allowed)) for f in reg.fields if f.allowed),
        ranges=tuple((reg.field(r.field), r) for r in ranges),
    )


def field_value(f: Field, value: int) -> int:
    """Field `f` of a 32-bit register value, sign-extended for a signed field."""
    v = (value >> f.lo) & f.mask
    return v - (1 << f.width) if f.signed and v >> (f.width - 1) else v


@dataclass(frozen=True)
class Template:
    """RegMap.template: a fixed-order stream's words with every field 0 (None: must be written) and positions."""

    words: tuple[int | None, ...]
    at: Mapping[str, tuple[int, ...]]
    required: tuple[int, ...]  # the positions of the None words


@dataclass
class RegMap:
    table: SocTable
    _by_name: dict[str, Register] = field(init=False, repr=False)
    _by_key: dict[tuple[int, int], Register] = field(init=False, repr=False)
    _units: dict[str, Unit] = field(init=False, repr=False)
    _specials: dict[int, Special] = field(init=False, repr=False)
    _layouts: dict[str, _Layout] = field(init=False, repr=False)
    _words: dict[tuple[Any, ...], int] = field(init=False, repr=False, compare=False, default_factory=dict)  # word_of's memo
    _templates: dict[tuple[str, ...], Template] = field(init=False, repr=False, compare=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._units = {u.name: u for u in self.table.units}
        self._by_name = {}
        self._by_key = {}
        for r in self.table.registers:
            if r.unit not in self._units:
                raise RegMapError(f"{r.full_name}: unknown unit {r.unit}")
            if r.full_name in self._by_name:
                raise RegMapError(f"duplicate register {r.full_name}")
            key = (self._units[r.unit].write_target, r.offset)
            if key in self._by_key:
                raise RegMapError(f"{r.full_name} overlaps {self._by_key[key].full_name}")
            used = 0
            for f in r.fields:
                if not 0 <= f.lo <= f.hi <= 31:
                    raise RegMapError(f"{r.full_name}.{f.name}: bad bit range {f.lo}..{f.hi}")
                if used & (f.mask << f.lo):
                    raise RegMapError(f"{r.full_name}.{f.name} overlaps another field")
                used |= f.mask << f.lo
            self._by_name[r.full_name] = r
            self._by_key[key] = r
        ranges: dict[str, tuple[FieldRange, ...]] = {}
        for rg in self.table.ranges:
            f = self.register(rg.register).field(rg.field)  # raises on an unknown register or field
            lowest, highest = (-(1 << (f.width - 1)), (1 << (f.width - 1)) - 1) if f.signed else (0, f.mask)
            if not lowest <= rg.lo <= rg.hi <= highest:
                raise RegMapError(f"range {rg.register}.{rg.field} {rg.lo}..{rg.hi} does not fit the field")
            if any(o.field == rg.field for o in ranges.get(rg.register, ())):
                raise RegMapError(f"two ranges for {rg.register}.{rg.field}")
            ranges[rg.register] = (*ranges.get(rg.register, ()), rg)
        self._layouts = {name: _make_layout(r, self._units[r.unit].write_target, ranges.get(name, ()))
                         for name, r in self._by_name.items()}
        self._specials = {s.target: s for s in self.table.specials}
        for s in self.table.specials:
            if s.register is not None and s.register not in self._by_name:
                raise RegMapError(f"special {s.name}: unknown register {s.register}")

    # ---- lookup ---------------------------------------------------------------------------
    @property
    def soc(self) -> str:
        return self.table.soc

    @property
    def registers(self) -> tuple[Register, ...]:
        return self.table.registers

    def register(self, reg_name: str) -> Register:
        try:
            return self._by_name[reg_name]
        except KeyError:
            raise RegMapError(f"unknown register {reg_name!r} on {self.soc}") from None

    def unit(self, name: str) -> Unit:
        return self._units[name]

    @property
    def ranges(self) -> tuple[FieldRange, ...]:
        return self.table.ranges

    def limits(self, reg_name: str, field_name: str) -> tuple[int, int]:
        """(smallest, largest) value field `field_name` of `reg_name` takes: its range when the table gives one,
        else what its bits hold."""
        for f, rg in self._layout(reg_name).ranges:
            if f.name == field_name:
                return rg.lo, rg.hi
        f = self.register(reg_name).field(field_name)
        return (-(1 << (f.width - 1)), (1 << (f.width - 1)) - 1) if f.signed else (0, f.mask)

    def special(self, name: str) -> Special:
        for s in self.table.specials:
            if s.name == name:
                return s
        raise RegMapError(f"unknown special word {name!r} on {self.soc}")

    # ---- packing --------------------------------------------------------------------------
    def _layout(self, reg_name: str) -> _Layout:
        try:
            return self._layouts[reg_name]
        except KeyError:
            raise RegMapError(f"unknown register {reg_name!r} on {self.soc}") from None

    def _pack(self, reg_name: str, lay: _Layout, fields: Mapping[str, int]) -> int:
        v = 0
        for name, fv in fields.items():
            packing = lay.fields.get(name)
            if packing is None:
                raise RegMapError(f"{reg_name} has no field {name!r} (fields: {', '.join(lay.fields)})")
            lo, mask, lowest = packing
            fv = int(fv)
            if not lowest <= fv <= mask:
                raise RegMapError(f"{reg_name}.{name} = {fv} does not fit {mask.bit_length()} bits")
            v |= (fv & mask) << lo
        if lay.restricted:
            self._check_allowed(reg_name, lay, v)
        return v

    def value(self, reg_name: str, **fields: int) -> int:
        """Pack a 32-bit register value from named field values (missing fields are 0)."""
        return self._pack(reg_name, self._layout(reg_name), fields)

    @staticmethod
    def _check_allowed(reg_name: str, lay: _Layout, value: int) -> None:
        """The restricted fields of a packed value: the accepted values of `Field.allowed` and the table's
        ranges."""
        for f, mask, accepted in lay.allowed:
            if (value >> f.lo) & mask not in accepted:
                raise RegMapError(f"{reg_name}.{f.name} = {(value >> f.lo) & mask:#x} is not one of the "
                                  f"accepted values ({', '.join(hex(a) for a in f.allowed)})")
        for f, rg in lay.ranges:
            v = field_value(f, value)
            if not rg.lo <= v <= rg.hi:
                raise RegMapError(f"{reg_name}.{f.name} = {v} is outside {rg.lo}..{rg.hi} ({rg.source})")

    def check_value(self, reg_name: str, value: int) -> int:
        """Validate a raw 32-bit value: it may only set bits inside defined fields."""
        lay = self._layout(reg_name)
        if not 0 <= value <= 0xFFFFFFFF:
            raise RegMapError(f"{reg_name}: value {value:#x} is not 32-bit")
        if value & ~lay.defined_mask:
            raise RegMapError(f"{reg_name}: value {value:#x} sets bits outside fields ({lay.defined_mask:#x})")
        self._check_allowed(reg_name, lay, value)
        return value

    def word_raw(self, reg_name: str, value: int) -> int:
        """Regcmd word writing a raw (validated) value."""
        self.check_value(reg_name, value)
        return self._layouts[reg_name].base | (value << WORD_VALUE_SHIFT)

    def word(self, reg_name: str, **fields: int) -> int:
        """Regcmd word (u64) for a normal register write."""
        return self.word_of(reg_name, fields)

    def word_of(self, reg_name: str, fields: Mapping[str, int]) -> int:
        """word() with the field values as a mapping: the encoders' path, one call per regcmd word (an encoder
        writes thousands per model, hence the memo by register and values, and _pack inlined). Only valid words
        are kept: a value out of range raises on every call."""
        key = (reg_name, *fields.items())
        try:
            return self._words[key]
        except KeyError:
            pass
        except TypeError:  # an unhashable value (never from the encoders): pack without the memo
            return self._word_of(reg_name, fields)
        word = self._word_of(reg_name, fields)
        if len(self._words) >= WORD_MEMO_LIMIT:
            self._words.clear()
        self._words[key] = word
        return word

    def template(self, order: tuple[str, ...]) -> Template:
        """The skeleton of a stream that writes the registers `order` in that order (built once per order): each
        register's word with every field 0, None where 0 is not a valid value of some field (the caller must
        write that register), and each name's word positions."""
        t = self._templates.get(order)
        if t is None:
            words: list[int | None] = []
            for name in order:
                try:
                    words.append(self.word_of(name, {}))
                except RegMapError:
                    words.append(None)
            at: dict[str, tuple[int, ...]] = {}
            for i, name in enumerate(order):
                at[name] = (*at.get(name, ()), i)
            t = self._templates[order] = Template(tuple(words), at, tuple(i for i, w in enumerate(words) if w is None))
        return t

    def known_words(self) -> Mapping[tuple[Any, ...], int]:
        """word_of's memo, read only: (register name, *field items) -> word, for callers that look a word up
        before calling word_of (rocket.stream.Emitter)."""
        return self._words

    def _word_of(self, reg_name: str, fields: Mapping[str, int]) -> int:
        lay = self._layouts.get(reg_name)
        if lay is None:
            raise RegMapError(f"unknown register {reg_name!r} on {self.soc}")
        value = 0  # in range and inside the fields by construction
        packings = lay.fields
        for name, fv in fields.items():
            packing = packings.get(name)
            if packing is None:
                return self._pack(reg_name, lay, fields)  # raises the unknown field
            lo, mask, lowest = packing
            fv = int(fv)
            if not lowest <= fv <= mask:
                return self._pack(reg_name, lay, fields)  # raises the out-of-range value
            value |= (fv & mask) << lo
        if lay.restricted:
            self._check_allowed(reg_name, lay, value)
        return lay.base | (value << WORD_VALUE_SHIFT)

    def special_word(self, name: str, **fields: int) -> int:
        s = self.special(name)
        if s.register is None and fields:
            raise RegMapError(f"special {name} carries no fields")
        value = self.value(s.register, **fields) if s.register else 0
        return (s.target << WORD_TARGET_SHIFT) | (value << WORD_VALUE_SHIFT) | s.offset

    # ---- decoding -------------------------------------------------------------------------
    @staticmethod
    def _unpack(reg: Register, value: int) -> dict[str, int]:
        return {f.name: field_value(f, value) for f in reg.fields}

    def decode(self, word: int) -> tuple[str, str, dict[str, int]]:
        """(unit, register full name, {field: value}) of one regcmd word.

        The all-zero word decodes as ("", "NOP", {}); raises on unknown targets/registers and on
        values with bits outside the register's fields.
        """
        if not 0 <= word < 1 << 64:
            raise RegMapError(f"word {word:#x} is not u64")
        target = word >> WORD_TARGET_SHIFT
        value = (word >> WORD_VALUE_SHIFT) & 0xFFFFFFFF
        offset = word & 0xFFFF
        if word == 0:
            return ("", "NOP", {})
        if target in self._specials:
            s = self._specials[target]
            if offset != s.offset:
                raise RegMapError(f"{s.name} word {word:#018x}: offset {offset:#x}, expected {s.offset:#x}")
            if s.register is None:
                if value:
                    raise RegMapError(f"{s.name} word {word:#018x} carries a value")
                return ("", s.name, {})
            reg = self._by_name[s.register]
            self.check_value(reg.full_name, value)
            return (reg.unit, s.name, self._unpack(reg, value))
        reg = self._by_key.get((target, offset))
        if reg is None:
            raise RegMapError(f"word {word:#018x}: no register at target {target:#06x} offset {offset:#06x}")
        self.check_value(reg.full_name, value)
        return (reg.unit, reg.full_name, self._unpack(reg, value))

    def format_word(self, word: int, patched: Any = None) -> str:
        """`patched` (a teflon.program.PatchedField: word bits pos..pos+width-1, printed as <target>+0xoffset)
        replaces the fields a relocation fills in, which hold only the offset inside their target."""
        unit, name, fields = self.decode(word)
        if patched is not None and name in self._by_name:
            # the whole patched value goes under the widest field it covers (PC_SOURCE_ADDR, not PC_SEL)
            lo, hi = patched.pos - WORD_VALUE_SHIFT, patched.pos - WORD_VALUE_SHIFT + patched.width - 1
            covered = [f for f in self._by_name[name].fields if f.lo <= hi and lo <= f.hi]
            if covered:
                widest = max(covered, key=lambda f: f.width).name
                fields = {k: v for k, v in fields.items() if k == widest or all(k != f.name for f in covered)}
                fields[widest] = patched
        body = " ".join(f"{k}={v}" if not isinstance(v, int) else f"{k}={v:#x}" if abs(v) > 9 else f"{k}={v}"
                        for k, v in fields.items() if not isinstance(v, int) or v)
        if not body and name != "NOP":
            body = "0"
        return f"{unit or '-':8s} {name:32s} {body}".rstrip()

    def format_stream(self, words: list[int] | tuple[int, ...], patched: dict[int, Any] | None = None) -> str:
        """One line per word: index, raw word, unit, register name, non-zero fields; `patched` maps word indices
        to their relocated field (see format_word)."""
        lines = []
        for i, w in enumerate(words):
            try:
                text = self.format_word(w, (patched or {}).get(i))
            except RegMapError as e:
                text = f"?? {e}"
            lines.append(f"{i:4d}  {w:016x}  {text}")
        return "\n".join(lines)
