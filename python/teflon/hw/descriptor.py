"""Descriptor tables: fixed-size arrays of little-endian u32 words whose bit fields are data.

An NPU that reads its job parameters from memory (etnaviv's NN and TP descriptors) is described by one
`DescTable` per descriptor kind and chip generation. The same table packs named values into words (encoder),
decodes words back into named values and pretty-prints them (tools, tests), checks that no bit outside a field is
set, and generates the C header the simulator decodes with (teflon.hw.gen_c_header), so the encoder and the
simulator can never disagree on a bit position.

A logical field may be split over several slices (a value whose low bits sit in one word and high bits in
another): `parts` lists (word, lo, hi) from the value's least significant bits upward.

Kept free of numpy and of the `teflon` package's heavy modules: the C header generator imports it at build time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class DescError(ValueError):
    pass


@dataclass(frozen=True)
class DescField:
    name: str
    parts: tuple[tuple[int, int, int], ...]  # (word, lo bit, hi bit), least significant slice first
    signed: bool = False
    # Non-empty: the only values accepted (a field whose meaning is unknown, seen with these values only).
    allowed: tuple[int, ...] = ()
    note: str = ""  # provenance / meaning, shown by the pretty-printer's legend
    # (min, max) inclusive: the values the hardware (or the simulator's model of it) takes, inside the bit width.
    # The compiler's program check and the simulator (through the generated header) refuse anything else.
    bounds: tuple[int, int] | None = None

    @property
    def width(self) -> int:
        return sum(hi - lo + 1 for _, lo, hi in self.parts)

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1


def fld(name: str, word: int, lo: int, hi: int, *more: tuple[int, int, int], signed: bool = False,
        allowed: tuple[int, ...] = (), note: str = "", bounds: tuple[int, int] | None = None) -> DescField:
    """Compact constructor: the first slice as (word, lo, hi), further (high-order) slices as tuples."""
    return DescField(name, ((word, lo, hi), *more), signed, allowed, note, bounds)


@dataclass
class DescTable:
    name: str  # e.g. "NN_V7"; upper-case, used as the C prefix
    nwords: int
    fields: tuple[DescField, ...]
    _by_name: dict[str, DescField] = field(init=False, repr=False)
    _defined: list[int] = field(init=False, repr=False)
    # Per field, what put() needs, worked out once: (lowest, highest accepted value, accepted set or None,
    # mask, ((word, lo, slice mask), ...)). Compiling a layer split into thousands of jobs packs every
    # descriptor field thousands of times.
    _plans: dict[str, tuple[int, int, frozenset[int] | None, int, tuple[tuple[int, int, int], ...]]] = field(
        init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_name = {}
        self._plans = {}
        self._defined = [0] * self.nwords
        for f in self.fields:
            if f.name in self._by_name:
                raise DescError(f"{self.name}: duplicate field {f.name}")
            self._by_name[f.name] = f
            for word, lo, hi in f.parts:
                if not (0 <= word < self.nwords and 0 <= lo <= hi <= 31):
                    raise DescError(f"{self.name}.{f.name}: bad slice ({word}, {lo}, {hi})")
                bits = ((1 << (hi - lo + 1)) - 1) << lo
                if self._defined[word] & bits:
                    raise DescError(f"{self.name}.{f.name} overlaps another field in word {word}")
                self._defined[word] |= bits
            w = f.width
            lowest, highest = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if f.signed else (0, f.mask)
            self._plans[f.name] = (lowest, highest, frozenset(f.allowed) if f.allowed else None, f.mask,
                                   tuple((word, lo, (1 << (hi - lo + 1)) - 1) for word, lo, hi in f.parts))

    def field(self, name: str) -> DescField:
        try:
            return self._by_name[name]
        except KeyError:
            raise DescError(f"{self.name} has no field {name!r}") from None

    def defined_mask(self, word: int) -> int:
        return self._defined[word]

    # ---- packing ------------------------------------------------------------------------------------------
    def pack(self, **values: int) -> list[int]:
        """Words from named field values (fields not named are 0)."""
        words = [0] * self.nwords
        for name, v in values.items():
            self.put(words, name, v)
        return words

    def put(self, words: list[int], name: str, value: int) -> None:
        """Write one field into `words` (replacing what it held)."""
        try:
            lowest, highest, allowed, mask, slices = self._plans[name]
        except KeyError:
            raise DescError(f"{self.name} has no field {name!r}") from None
        v = int(value)
        if not lowest <= v <= highest:
            f = self._by_name[name]
            raise DescError(f"{self.name}.{name} = {v} does not fit {f.width}{' signed' if f.signed else ''} bits")
        if allowed is not None and v not in allowed:
            raise DescError(f"{self.name}.{name} = {v:#x} is not one of the accepted values "
                            f"({', '.join(hex(a) for a in self._by_name[name].allowed)})")
        v &= mask
        for word, lo, m in slices:
            words[word] = (words[word] & ~(m << lo)) | ((v & m) << lo)
            v >>= m.bit_length()

    # ---- decoding -----------------------------------------------------------------------------------------
    def get(self, words: list[int] | tuple[int, ...], name: str) -> int:
        f = self.field(name)
        v, pos = 0, 0
        for word, lo, hi in f.parts:
            n = hi - lo + 1
            v |= ((words[word] >> lo) & ((1 << n) - 1)) << pos
            pos += n
        if f.signed and v >> (f.width - 1):
            v -= 1 << f.width
        return v

    def ranged(self) -> tuple[DescField, ...]:
        """The fields with bounds, in table order."""
        return tuple(f for f in self.fields if f.bounds is not None)

    def out_of_bounds(self, values: dict[str, int]) -> list[str]:
        """One message per bounded field of `values` (field -> value) outside its bounds."""
        bad = []
        for f in self.ranged():
            if f.name in values and f.bounds is not None and not f.bounds[0] <= int(values[f.name]) <= f.bounds[1]:
                bad.append(f"{f.name} = {int(values[f.name])} outside {f.bounds[0]}..{f.bounds[1]}")
        return bad

    def check(self, words: list[int] | tuple[int, ...]) -> None:
        """Raise when a word sets bits outside every field or a restricted field holds another value."""
        if len(words) != self.nwords:
            raise DescError(f"{self.name}: {len(words)} words, expected {self.nwords}")
        for i, w in enumerate(words):
            if not 0 <= w <= 0xFFFFFFFF:
                raise DescError(f"{self.name} word {i}: {w:#x} is not u32")
            stray = w & ~self._defined[i]
            if stray:
                raise DescError(f"{self.name} word {i} = {w:#010x} sets bits {stray:#x} outside every field")
        for f in self.fields:
            if f.allowed and self.get(words, f.name) not in f.allowed:
                raise DescError(f"{self.name}.{f.name} = {self.get(words, f.name):#x} is not one of the accepted "
                                f"values ({', '.join(hex(a) for a in f.allowed)})")
        bad = self.out_of_bounds({f.name: self.get(words, f.name) for f in self.ranged()})
        if bad:
            raise DescError(f"{self.name}: {'; '.join(bad)}")

    def decode(self, words: list[int] | tuple[int, ...]) -> dict[str, int]:
        """{field: value} of a valid descriptor (raises on stray bits, see `check`)."""
        self.check(words)
        return {f.name: self.get(words, f.name) for f in self.fields}

    def format(self, words: list[int] | tuple[int, ...], patched: dict[int, Any] | None = None) -> str:
        """One line per word: index, raw value, non-zero fields. `patched` maps a word index to its relocated field
        (a teflon.program.PatchedField, bits pos..pos+width-1): the widest field it covers shows
        <target>+0xoffset instead of the offset placeholder the word holds."""
        try:
            self.check(words)
            bad = ""
        except DescError as e:
            bad = f"  ?? {e}"
        by_word: dict[int, list[DescField]] = {}
        for f in self.fields:
            by_word.setdefault(f.parts[0][0], []).append(f)
        lines = []
        for i, w in enumerate(words):
            parts = []
            fields = sorted(by_word.get(i, []), key=lambda f: f.parts[0][1])
            p = (patched or {}).get(i)
            covered = [f for f in fields if p is not None and f.parts[0][1] <= p.pos + p.width - 1
                       and p.pos <= f.parts[0][2]]
            widest = max(covered, key=lambda f: f.width) if covered else None
            for f in fields:
                v = self.get(words, f.name)
                if f is widest:
                    parts.append(f"{f.name}={p}")
                elif v and f not in covered:
                    parts.append(f"{f.name}={v:#x}" if abs(v) > 9 else f"{f.name}={v}")
            lines.append(f"{i:3d}  {w:08x}  {' '.join(parts)}".rstrip())
        return "\n".join(lines) + bad
