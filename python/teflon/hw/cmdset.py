"""Command-set machinery for opcode-word command streams (Arm Ethos-U): pack, decode, pretty-print.

The rocket and etnaviv tables (regmap.py, descriptor.py) describe register writes and descriptors; an Ethos-U
command stream is instead a sequence of *commands*, each one 32-bit word, or two when it carries a payload:

    word 0   bits 0..9 opcode, bit 14 set = "cmd1" (a 32-bit payload word follows), bits 16..31 the 16-bit param
    word 1   the payload (cmd1 only)

(docs/hardware/ethosu-commands.md gives the sources.) A command's *value* is the param for a cmd0 and
param << 32 | payload for a cmd1 (48 bits: a cmd1 address keeps bits 32..39 in the param's low byte). Fields are
bit ranges of that value. The same `CommandSet` feeds the encoder (`words`), the stream decoder and pretty-printer
and, through gen_c_header.py, the C header the simulator and the simulated kernel's validator include, so the
sides cannot disagree on a bit position or on the values a field may take.

Kept free of numpy: gen_c_header.py loads it from the source tree at build time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from teflon.hw.regmap import Field, FieldRange

CMD1_FLAG = 1 << 14  # word bit 14: a payload word follows
OPCODE_MASK = 0x3FF
CMD0_VALUE_BITS = 16
CMD1_VALUE_BITS = 48


class CommandError(ValueError):
    pass


@dataclass(frozen=True)
class Command:
    name: str  # e.g. "NPU_SET_IFM_PRECISION"
    opcode: int  # word bits 0..9
    cmd1: bool  # carries a payload word
    fields: tuple[Field, ...] = ()
    note: str = ""  # provenance / caveats
    # names of the enum (CommandSet.enums) each field's values print as
    enums: tuple[tuple[str, str], ...] = ()

    @property
    def value_bits(self) -> int:
        return CMD1_VALUE_BITS if self.cmd1 else CMD0_VALUE_BITS

    @property
    def defined_mask(self) -> int:
        m = 0
        for f in self.fields:
            m |= f.mask << f.lo
        return m

    @property
    def first_word(self) -> int:
        """The word's opcode bits (and the cmd1 flag), without the param."""
        return self.opcode | (CMD1_FLAG if self.cmd1 else 0)

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise CommandError(f"{self.name} has no field {name!r} (fields: {', '.join(f.name for f in self.fields)})")


@dataclass(frozen=True)
class Decoded:
    """One command of a stream: where it starts (word index), the command, its value and field values."""

    index: int
    command: Command
    value: int
    fields: Mapping[str, int]

    @property
    def nwords(self) -> int:
        return 2 if self.command.cmd1 else 1


@dataclass
class CommandSet:
    name: str  # e.g. "ethos-u65" (architecture 1.0.6)
    commands: tuple[Command, ...]
    enums: Mapping[str, Mapping[int, str]] = field(default_factory=dict)
    ranges: tuple[FieldRange, ...] = ()  # FieldRange.register holds the command name
    _by_name: dict[str, Command] = field(init=False, repr=False)
    _by_code: dict[tuple[int, bool], Command] = field(init=False, repr=False)
    _ranges: dict[tuple[str, str], FieldRange] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_name = {}
        self._by_code = {}
        for c in self.commands:
            if c.name in self._by_name or (c.opcode, c.cmd1) in self._by_code:
                raise CommandError(f"{self.name}: {c.name} (opcode 0x{c.opcode:03x}) defined twice")
            if c.opcode & ~OPCODE_MASK:
                raise CommandError(f"{self.name}: {c.name} opcode 0x{c.opcode:x} does not fit 10 bits")
            seen = 0
            for f in c.fields:
                bits = f.mask << f.lo
                if seen & bits or f.hi >= c.value_bits:
                    raise CommandError(f"{self.name}: {c.name}.{f.name} overlaps or leaves the value")
                seen |= bits
            for fname, ename in c.enums:
                c.field(fname)
                if ename not in self.enums:
                    raise CommandError(f"{self.name}: {c.name}.{fname} names an unknown enum {ename!r}")
            self._by_name[c.name] = c
            self._by_code[(c.opcode, c.cmd1)] = c
        self._ranges = {}
        for r in self.ranges:
            self.command(r.register).field(r.field)
            self._ranges[(r.register, r.field)] = r

    def command(self, name: str) -> Command:
        try:
            return self._by_name[name]
        except KeyError:
            raise CommandError(f"{self.name} has no command {name!r}") from None

    def by_code(self, opcode: int, cmd1: bool) -> Command | None:
        return self._by_code.get((opcode, cmd1))

    def field_range(self, command: str, fname: str) -> FieldRange | None:
        return self._ranges.get((command, fname))

    # ---- packing -----------------------------------------------------------------------------------------

    def value(self, name: str, **fields: int) -> int:
        """The command's value from its field values (missing fields are 0); refuses what does not fit."""
        c = self.command(name)
        v = 0
        for fname, x in fields.items():
            f = c.field(fname)
            x = int(x)
            if f.signed:
                lo, hi = -(1 << (f.width - 1)), (1 << (f.width - 1)) - 1
            else:
                lo, hi = 0, f.mask
            if not lo <= x <= hi:
                raise CommandError(f"{name}.{fname} = {x} does not fit {f.width} bits")
            if f.allowed and (x & f.mask) not in [a & f.mask for a in f.allowed]:
                raise CommandError(f"{name}.{fname} = {x} is not one of the values the hardware defines")
            r = self._ranges.get((name, fname))
            if r is not None and not r.lo <= x <= r.hi:
                raise CommandError(f"{name}.{fname} = {x} is outside {r.lo}..{r.hi} ({r.source})")
            v |= (x & f.mask) << f.lo
        return v

    def words(self, name: str, **fields: int) -> list[int]:
        """The word(s) of one command."""
        return self.pack(name, self.value(name, **fields))

    def pack(self, name: str, value: int) -> list[int]:
        """The word(s) of one command from its value (`value`'s result, checked there)."""
        c = self.command(name)
        if c.cmd1:
            return [c.first_word | ((value >> 32) & 0xFFFF) << 16, value & 0xFFFFFFFF]
        return [c.first_word | value << 16]

    # ---- decoding ----------------------------------------------------------------------------------------

    def fields_of(self, c: Command, value: int) -> dict[str, int]:
        out = {}
        for f in c.fields:
            x = (value >> f.lo) & f.mask
            if f.signed and x >> (f.width - 1):
                x -= 1 << f.width
            out[f.name] = x
        return out

    def check(self, c: Command, value: int) -> str | None:
        """Why the hardware would not accept `value` for `c` (bits outside fields, undefined enum values,
        values outside a range row), or None."""
        stray = value & ~c.defined_mask
        if stray:
            return f"{c.name}: bits 0x{stray:x} outside any defined field"
        for fname, x in self.fields_of(c, value).items():
            f = c.field(fname)
            if f.allowed and x not in f.allowed:
                return f"{c.name}.{fname} = {x} is not a value the hardware defines"
            r = self._ranges.get((c.name, fname))
            if r is not None and not r.lo <= x <= r.hi:
                return f"{c.name}.{fname} = {x} is outside {r.lo}..{r.hi} ({r.source})"
        return None

    def decode(self, words: Sequence[int], *, strict: bool = True) -> list[Decoded]:
        """Commands of a raw stream (no driver-action header). strict: unknown opcodes, a cmd1 without its
        payload and values check() refuses raise CommandError."""
        return [Decoded(i, c, value, self.fields_of(c, value)) for i, c, value in self._walk(words, strict)]

    def validate(self, words: Sequence[int]) -> None:
        """decode(words, strict=True) without building the decoded commands: raises CommandError where it
        would."""
        for _ in self._walk(words, True):
            pass

    def _walk(self, words: Sequence[int], strict: bool) -> Iterator[tuple[int, Command, int]]:
        """(word index, command, value) of each command of a raw stream, checked as `decode` says."""
        i = 0
        n = len(words)
        while i < n:
            w = int(words[i])
            opcode, cmd1, param = w & OPCODE_MASK, bool(w & CMD1_FLAG), w >> 16
            if w & 0xFFFF & ~(OPCODE_MASK | CMD1_FLAG):
                raise CommandError(f"word {i}: 0x{w:08x} sets reserved bits 10..15 (other than bit 14)")
            c = self.by_code(opcode, cmd1)
            if c is None:
                raise CommandError(f"word {i}: unknown {'cmd1' if cmd1 else 'cmd0'} opcode 0x{opcode:03x}")
            if cmd1:
                if i + 1 >= n:
                    raise CommandError(f"word {i}: {c.name} without its payload word")
                value = param << 32 | int(words[i + 1])
            else:
                value = param
            if strict:
                why = self.check(c, value)
                if why:
                    raise CommandError(f"word {i}: {why}")
            yield i, c, value
            i += 2 if cmd1 else 1

    def show_value(self, c: Command, fname: str, x: int) -> str:
        enums = dict(c.enums)
        if fname in enums:
            name = self.enums[enums[fname]].get(x)
            if name is not None:
                return name
        return f"0x{x:x}" if x > 9 else str(x)

    def pretty(self, words: Sequence[int], *, strict: bool = False) -> list[str]:
        """One line per command: word index, the raw word(s), the name, the fields by name."""
        lines = []
        for d in self.decode(words, strict=strict):
            raw = f"{int(words[d.index]):08x}" + (f" {int(words[d.index + 1]):08x}" if d.command.cmd1 else " " * 9)
            fs = " ".join(f"{k}={self.show_value(d.command, k, v)}" for k, v in d.fields.items())
            lines.append(f"{d.index:5d}  {raw}  {d.command.name:26s} {fs}".rstrip())
        return lines

    def state_at_kicks(self, words: Sequence[int], kicks: Iterable[str]) -> list[tuple[str, dict[str, int]]]:
        """(kick command name, {command name: value} in force) at each command named in `kicks` (NPU_OP_CONV,
        ...): the register state a compute operation starts from, whatever order the writes came in."""
        kick = set(kicks)
        state: dict[str, int] = {}
        out = []
        for d in self.decode(words):
            if d.command.name in kick:
                out.append((d.command.name, dict(state, **{d.command.name: d.value})))
            elif not d.command.name.startswith("NPU_OP_"):
                state[d.command.name] = d.value
        return out
