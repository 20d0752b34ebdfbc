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

MAX_PARTITIONS = 12  # the partitions a zoo model may run in without an entry saying which op forces the split


@dataclass(frozen=True)
class Expectation:
    model: str
    target: str
    inputs: frozenset[str] | None  # None: every input
    cause: str  # "" : the model passes (an entry for its partitions only)
    partitions: int | None = None
    split_by: str = ""

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
        return entry if entry is not None and entry.cause and entry.covers(input_name) else None

    def partition_outcome(self, model: str, target: str, partitions: int) -> Outcome:
        """More than MAX_PARTITIONS partitions fail unless an entry allows them and names the ops that split the
        model; an allowance the model no longer needs fails too (strict, like the failures)."""
        entry = self.entries.get((model, target))
        allowed = entry.partitions if entry is not None and entry.partitions is not None else None
        if allowed is None:
            if partitions > MAX_PARTITIONS:
                return Outcome("fail", f"{model} on {target} runs in {partitions} partitions (more than "
                                       f"{MAX_PARTITIONS}, and no partitions entry in {self.source} says why)")
            return Outcome("pass", "")
        if partitions > allowed:
            return Outcome("fail", f"{model} on {target} runs in {partitions} partitions, more than the {allowed} "
                                   f"{self.source} allows ({entry.split_by})")  # type: ignore[union-attr]
        if partitions <= MAX_PARTITIONS:
            return Outcome("fail", f"{model} on {target} now runs in {partitions} partitions: take its partitions "
                                   f"allowance out of {self.source}")
        return Outcome("pass", "")

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
    unknown = set(raw) - {"inputs", "cause", "partitions", "split_by"}
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
    vague = ("unknown", "?", "todo")
    cause = str(raw.get("cause", "")).strip()
    split_by = str(raw.get("split_by", "")).strip()
    partitions = raw.get("partitions")
    if partitions is not None and (not isinstance(partitions, int) or partitions <= MAX_PARTITIONS
                                   or not split_by or split_by.lower() in vague):
        raise ValueError(f"{where}: partitions must be a count above {MAX_PARTITIONS} with split_by naming the ops "
                         "that force the splits")
    if (not cause and partitions is None) or cause.lower() in vague:
        raise ValueError(f"{where}: needs a measured cause (which node, how many LSB, how many partitions)")
    inputs = raw.get("inputs")
    if inputs is not None and (not isinstance(inputs, list) or not inputs or not cause):
        raise ValueError(f"{where}: inputs must be a non-empty list of input file stems (with a cause)")
    return Expectation(model, target, frozenset(str(i) for i in inputs) if inputs is not None else None, cause,
                       partitions, split_by)


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
