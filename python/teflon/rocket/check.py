"""The static program check: every regcmd word of a compiled rocket program against its generation's register
table, before the program can reach a device.

A word must name a register of the table (or one of its special words), set no bit outside the register's
fields, give a field with `Field.allowed` one of those values, and keep a field that the table's `ranges` narrow
(e.g. RK3588's DPU_OUT_CVT_SHIFT.OUT_CVT_SHIFT <= 47) inside its range. The simulator reads the same ranges from
the header generated from the same table (teflon/hw/gen_c_header.py), so a program this check accepts is not
refused by the simulator for a plain field range, and vice versa.

The encoders already pack no word outside the table (RegMap.word_of raises, which the support decision reports
as the node's reason); this check is the last gate on the finished program (RocketTarget.compile), so a
program that slips past an encoder's own limits fails its compile, and the delegate leaves that partition on
the CPU instead of failing at invoke.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..hw.regmap import RegMap, RegMapError
from ..program import Program
from .disasm import task_words


@dataclass(frozen=True)
class Problem:
    """One word the hardware would not take: where it is and why."""

    nodes: tuple[int, ...]  # the graph nodes of the operation holding the word
    kind: str  # that operation's kind
    task: int  # task index inside the operation
    word: int  # word index inside the task's stream
    reason: str

    def __str__(self) -> str:
        return f"{self.kind} nodes {list(self.nodes)} task {self.task} word {self.word}: {self.reason}"


class ProgramCheckError(ValueError):
    """A compiled program with words outside the register table (the problems, one a line)."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        super().__init__("program check: " + "; ".join(str(p) for p in problems[:5]) + more)


def check_words(regmap: RegMap, words: Sequence[int], verdicts: dict[int, str] | None = None) -> list[tuple[int, str]]:
    """(word index, reason) for every word of a regcmd stream the table refuses. `verdicts`: word -> reason ("" when
    accepted), kept across calls: most words of a program repeat from task to task, and each is decoded once."""
    seen = {} if verdicts is None else verdicts
    out: list[tuple[int, str]] = []
    for i, w in enumerate(words):
        why = seen.get(w)
        if why is None:
            try:
                regmap.decode(w)
                why = ""
            except RegMapError as e:
                why = str(e)
            seen[w] = why
        if why:
            out.append((i, why))
    return out


def _task_hazards(regmap: RegMap) -> Callable[[RegMap, Sequence[int]], list[tuple[int, str]]] | None:
    """A generation's check of hazards across a task's words (rk3568/hazards.py), or None."""
    if regmap.soc == "rk3568":
        from .rk3568.hazards import check_task

        return check_task
    return None


def check_program(regmap: RegMap, program: Program) -> list[Problem]:
    """Every refused word of every task of `program`, by operation, and the generation's task hazards."""
    problems: list[Problem] = []
    verdicts: dict[int, str] = {}
    hazards = _task_hazards(regmap)
    for op in program.operations:
        for ti, t in enumerate(op.tasks):
            words = task_words(program, t)
            for wi, why in check_words(regmap, words, verdicts) + (hazards(regmap, words) if hazards else []):
                problems.append(Problem(tuple(op.nodes), op.kind, ti, wi, why))
    return problems


def require_valid(regmap: RegMap, program: Program) -> Program:
    """`program` itself, or ProgramCheckError naming each refused word."""
    problems = check_program(regmap, program)
    if problems:
        raise ProgramCheckError(problems)
    return program
