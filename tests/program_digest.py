"""Digests of compiled programs, to prove that a refactor leaves every program byte for byte as it was.

A digest covers what reaches the device: every buffer (name, size, tensor flag, initial bytes), every relocation
(where, which bits, which target), every task (buffer, offset, bytes), every job and every I/O binding. A job's
`join` flag (which jobs the runner submits as one kernel job) is left out: it is a function of the jobs and the
compile mode (teflon.rocket.kernel_jobs), checked by tests/rocket/test_kernel_jobs.py, so the digests recorded
before the runner merged jobs still prove that the jobs themselves did not change. It is
computed from the Program object in the blob-format-neutral terms of teflon.program, so the blob's own version
can change while the programs stay the same.

`python tests/program_digest.py record OUT.json` compiles every case of the op sweeps (default and slow, both
rocket SoCs, as the delegate partitions them), the RK3588 golden graphs (both requant modes) and the four shared
models on both SoCs, and writes {case id: digest}. tests/rocket/test_program_identity.py compares against the
recorded file.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent
RECORDED = TESTS / "data" / "rocket_programs.json"


def canonical(prog: Any) -> dict[str, Any]:
    """The device-visible content of a Program as plain JSON data."""
    from teflon.program import reloc_fields

    return {
        "buffers": [[b.name, b.size, bool(b.tensor), hashlib.sha256(b.data).hexdigest() if b.data is not None else None]
                    for b in prog.buffers],
        "relocs": [[r.buffer, r.offset, r.target, *reloc_fields(r)] for r in prog.relocs],
        "jobs": [[[[t.buffer, t.offset, t.nbytes] for t in j.tasks], list(j.in_buffers), list(j.out_buffers)]
                 for j in prog.jobs],
        "io": [[io.tensor, io.direction, io.buffer, io.dtype, io.h, io.w, io.c, io.layout, io.c2, io.offset,
                io.row_pitch, io.plane_pitch, io.xor, io.pad_value] for io in prog.io],
    }


def _sha(prog: Any) -> str:
    return hashlib.sha256(json.dumps(canonical(prog), sort_keys=True).encode()).hexdigest()


def digest(prog: Any) -> str:
    """16 hex digits of the program's canonical form."""
    return _sha(prog)[:16]


def digests(programs: list[tuple[list[int], Any]]) -> str:
    """16 hex digits over the programs of one model, in compile order."""
    return hashlib.sha256("|".join(f"{sorted(n)}:{_sha(p)}" for n, p in programs).encode()).hexdigest()[:16]


def delegate_programs(model: bytes, device: str) -> list[tuple[list[int], Any]]:
    """The programs the delegate compiles for `model` (Prepare only, nothing invoked)."""
    import teflon
    from teflon import bridge
    from teflon.reference import make_interpreter

    with bridge.capture() as cap:
        delegate = teflon.load_delegate(device=device, sim="1")
        make_interpreter(model, [delegate], reference=True)
    return list(cap.programs)


def sweep_cases() -> Iterator[tuple[str, Any]]:
    sys.path.insert(0, str(TESTS))
    import opcases

    seen: set[str] = set()
    for table in ("DEFAULT_CONV", "DEFAULT_PER_CHANNEL", "DEFAULT_ADD", "DEFAULT_POOL", "DEFAULT_CONST", "DEFAULT_PAD_CONV",
                  "DEFAULT_UNARY",
                  "LITERT_CASES",
                  "SLOW_CONV", "SLOW_PER_CHANNEL", "SLOW_ADD"):
        for case in getattr(opcases, table):
            if case.name not in seen:
                seen.add(case.name)
                yield case.name, case


def golden_graphs() -> Iterator[tuple[str, Any]]:
    sys.path.insert(0, str(TESTS))
    from conftest import shared_path
    from rocket.test_golden_rk3588 import graph_from_golden

    root = shared_path()
    if root is None:
        return
    for path in sorted((root / "golden" / "rocket-rk3588").glob("*.json")):
        yield path.stem, graph_from_golden(json.loads(path.read_text()))


def model_files() -> Iterator[Path]:
    sys.path.insert(0, str(TESTS))
    from conftest import shared_path

    root = shared_path()
    if root is not None:
        yield from sorted((root / "models").glob("*.tflite"))


def record(out: Path, kinds: tuple[str, ...] = ("golden", "model", "op")) -> None:
    """Write every digest of `kinds` into `out`; digests of other kinds already in `out` are kept."""
    from teflon import compiler

    table: dict[str, str] = {}
    if out.is_file() and set(kinds) != {"golden", "model", "op"}:
        table = {k: v for k, v in json.loads(out.read_text()).items() if k.split("-", 1)[0] not in kinds}
    if "golden" in kinds:
        for name, graph in golden_graphs():
            for compat in (True, False):
                prog = compiler.compile(graph, [0], [0], [3], "rk3588", mesa_compat=compat)
                table[f"golden-{name}-{'mesa' if compat else 'default'}"] = digest(prog)
    for device in ("rk3588", "rk3576"):
        if "model" in kinds:
            for path in model_files():
                table[f"model-{path.stem}-{device}"] = digests(delegate_programs(path.read_bytes(), device))
        if "op" in kinds:
            for name, case in sweep_cases():
                table[f"op-{name}-{device}"] = digests(delegate_programs(case.build(), device))
        print(f"{device}: {len(table)} digests", file=sys.stderr)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(table, sort_keys=True, separators=(",\n", ":")) + "\n")


USAGE = "usage: python tests/program_digest.py record OUT.json [golden|model|op ...]"

if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] != "record" or not set(sys.argv[3:]) <= {"golden", "model", "op"}:
        raise SystemExit(USAGE)
    record(Path(sys.argv[2]), tuple(sys.argv[3:]) or ("golden", "model", "op"))
