"""The checked-in list of (model, target) cases that do not pass yet, each with its measured cause (like Mesa's CI
fail lists): tests/zoo_expectations.toml.

    ["<model file stem>".<target>]
    inputs = ["grace_hopper"]   # the failing inputs (file stems); omitted: every input of the model
    cause = "which node, how many LSB, how many partitions"
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Expectation:
    model: str
    target: str
    inputs: frozenset[str] | None  # None: every input
    cause: str

    def covers(self, input_name: str) -> bool:
        return self.inputs is None or input_name in self.inputs


@dataclass(frozen=True)
class Outcome:
    kind: str  # pass | fail | xfail
    message: str


class Expectations:
    """Known failures by (model, target)."""

    def __init__(self, entries: list[Expectation], source: str = "the expectations file") -> None:
        self.entries = {(e.model, e.target): e for e in entries}
        self.source = source

    def expected(self, model: str, input_name: str, target: str) -> Expectation | None:
        """The entry that expects `model` on `input_name` to fail on `target`, or None."""
        entry = self.entries.get((model, target))
        return entry if entry is not None and entry.covers(input_name) else None

    def outcome(self, model: str, input_name: str, target: str, passed: bool, summary: str) -> Outcome:
        """What the suite reports for a case: strict both ways (a new failure and a listed case that passes both
        fail)."""
        entry = self.expected(model, input_name, target)
        if passed and entry is None:
            return Outcome("pass", summary)
        if passed and entry is not None:
            return Outcome("fail", f"{model} on {input_name} now passes on {target}: take [{model!r}.{target}] "
                                   f"{'(or this input) ' if entry.inputs else ''}out of {self.source} (its cause "
                                   f"was: {entry.cause}); {summary}")
        if entry is None:
            return Outcome("fail", f"new failure (not in {self.source}): {summary}")
        return Outcome("xfail", f"expected ({entry.cause}): {summary}")


def _entry(path: Path, model: str, target: str, raw: object) -> Expectation:
    where = f"{path}: [{model!r}.{target}]"
    if not isinstance(raw, dict):
        raise TypeError(f"{where} must be a table")
    unknown = set(raw) - {"inputs", "cause"}
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
    cause = str(raw.get("cause", "")).strip()
    if not cause or cause.lower() in ("unknown", "?", "todo"):
        raise ValueError(f"{where}: needs a measured cause (which node, how many LSB, how many partitions)")
    inputs = raw.get("inputs")
    if inputs is not None and (not isinstance(inputs, list) or not inputs):
        raise ValueError(f"{where}: inputs must be a non-empty list of input file stems")
    return Expectation(model, target, frozenset(str(i) for i in inputs) if inputs is not None else None, cause)


def load_expectations(path: Path) -> Expectations:
    """Parse and check the expectations file (every entry needs a cause; an absent file expects nothing)."""
    if not path.is_file():
        return Expectations([], path.name)
    data = tomllib.loads(path.read_text())
    entries = []
    for model, targets in data.items():
        if not isinstance(targets, dict):
            raise TypeError(f"{path}: [{model!r}] must hold one table per target")
        entries.extend(_entry(path, model, target, raw) for target, raw in targets.items())
    return Expectations(entries, path.name)
