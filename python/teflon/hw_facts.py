"""Hardware facts a board run proved: the report `python -m teflon doctor --experiments --json FILE` writes, read by
the compiler only when `TEFLON_HW_FACTS=FILE` names it (never by default; docs/hardware/board-facts.md).

A fact enables something only for the report's own SoC and only with a verdict that is one of the fact's
hypotheses; a missing, malformed or foreign report, or a "none matched" verdict, leaves the conservative choice and
says why (`status()`, shown by the support reasons under TEFLON_DEBUG=verbose and by `doctor`). The path is part of
the program cache's key like every TEFLON_* variable, and the delegate adds the file's bytes to it (delegate/cache.c).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENV = "TEFLON_HW_FACTS"
SCHEMA = "teflon-hw-facts/1"


@dataclass(frozen=True)
class Report:
    """What a report proves for its SoC: fact id -> the hypothesis the device matched."""

    path: str
    soc: str | None = None
    simulated: bool = False
    proved: dict[str, str] = field(default_factory=dict)
    problem: str | None = None  # why the file enables nothing


def parse(data: Any, path: str = "<report>") -> Report:
    """A report from its decoded JSON; a malformed one gives Report(problem=...)."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        return Report(path, problem=f"{path}: not a teflon hardware-facts report (schema {SCHEMA!r} expected)")
    soc, facts = data.get("soc"), data.get("facts")
    if not isinstance(soc, str) or not isinstance(facts, list):
        return Report(path, problem=f"{path}: no 'soc' string or no 'facts' list (a run without an NPU proves "
                      "nothing about a board)")
    proved: dict[str, str] = {}
    for f in facts:
        if not isinstance(f, dict) or not isinstance(f.get("id"), str) or not isinstance(f.get("hypotheses"), list):
            return Report(path, soc, problem=f"{path}: a fact without 'id' and 'hypotheses'")
        verdict = f.get("verdict")
        if f.get("soc", soc) == soc and isinstance(verdict, str) and verdict in f["hypotheses"]:
            proved[f["id"]] = verdict
    return Report(path, soc, bool(data.get("simulated", False)), proved)


def load(path: str) -> Report:
    try:
        text = Path(path).read_text()
    except (OSError, ValueError) as e:
        return Report(path, problem=f"{path}: cannot read the report ({e})")
    try:
        return parse(json.loads(text), path)
    except ValueError as e:
        return Report(path, problem=f"{path}: malformed report, not JSON ({e})")


def current() -> Report | None:
    """The report TEFLON_HW_FACTS names (read afresh: a small file, asked once per node that depends on a
    fact), or None when it is unset or empty."""
    path = os.environ.get(ENV, "")
    return load(path) if path else None


def proved(soc: str, fact: str) -> str | None:
    """The hypothesis of `fact` the report proved on `soc`, or None (no report, another SoC, not proved)."""
    r = current()
    if r is None or r.problem or r.soc != soc:
        return None
    return r.proved.get(fact)


def status(soc: str, fact: str) -> str:
    """Why `fact` is or is not in effect on `soc`, for a refusal reason or doctor's line."""
    r = current()
    if r is None:
        return f"no {ENV} report proves it"
    if r.problem:
        return f"{ENV} ignored: {r.problem}"
    if r.soc != soc:
        return f"{ENV} report is for {r.soc}, not {soc}: ignored"
    if fact not in r.proved:
        return f"the {ENV} report does not prove it on {soc} (verdict not one of its hypotheses)"
    return f"proved on {soc} ({r.proved[fact]}) by {r.path}{' (simulated run)' if r.simulated else ''}"


__all__ = ["ENV", "SCHEMA", "Report", "current", "load", "parse", "proved", "status"]
