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
        devices = {prog.device for _, prog in programs} or {self.options["device"]}
        return f"teflon {', '.join(sorted(devices))} ({self.npu_kind()} NPU), {nodes} nodes in {len(programs)} partition(s)"

    def npu_kind(self) -> str:
        """'simulated' or 'real', as the driver's own auto-selection decides (no second implementation)."""
        assert self.options is not None
        sim = self.options.get("sim", "auto")
        if sim != "auto":
            return "simulated" if sim == "1" else "real"
        from teflon import targets
        from teflon.native import Device, NativeError

        device = self.options.get("device", "auto")
        try:
            with Device(targets.FALLBACK if device == "auto" else device, sim=None) as dev:
                return "simulated" if dev.is_sim else "real"
        except NativeError:
            return "unknown"


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
