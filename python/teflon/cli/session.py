"""An interpreter with the teflon delegate loaded, plus what the compiler decided for it."""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from typing import Any

import teflon
from teflon import bridge
from teflon.runtime import make_interpreter


def delegate_options(args: argparse.Namespace) -> dict[str, str]:
    return {"device": args.device, "sim": args.sim}


@dataclass
class Session:
    interpreter: Any
    compile_ms: float
    options: dict[str, str] | None
    capture: Any = None
    notes: list[str] = field(default_factory=list)

    def describe(self) -> str:
        if self.options is None:
            return "CPU (TFLite builtin kernels)"
        programs = self.capture.programs if self.capture is not None else []
        nodes = sum(len(nodes) for nodes, _ in programs)
        sim = {"1": "simulated", "0": "real", "auto": "auto-selected"}[self.options.get("sim", "auto")]
        return f"teflon {self.options['device']} ({sim} NPU), {nodes} nodes in {len(programs)} partition(s)"


def open_interpreter(model: str | bytes, options: dict[str, str] | None, *, runtime: str | None = None,
                     reference: bool = False) -> Session:
    """Build and allocate an interpreter; with `options`, load the delegate and capture its decisions."""
    t0 = time.perf_counter()
    if options is None:
        interp = make_interpreter(model, reference=reference, runtime=runtime)
        return Session(interp, (time.perf_counter() - t0) * 1e3, None)
    with bridge.capture() as cap:
        delegate = teflon.load_delegate(runtime=runtime, **options)
        interp = make_interpreter(model, [delegate], runtime=runtime)
    return Session(interp, (time.perf_counter() - t0) * 1e3, options, cap)
