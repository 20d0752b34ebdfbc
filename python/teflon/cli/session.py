"""An interpreter with the teflon delegate loaded, plus what the compiler decided for it."""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from typing import Any

import teflon
from teflon import bridge
from teflon.runtime import cpu_kernels_label, make_interpreter, runtime_label


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def sim_mode(sim: str) -> bool | None:
    """The `--sim auto|0|1` choice as teflon.native.Device's `sim`: None lets the device node decide."""
    return None if sim == "auto" else sim == "1"


def key_value(text: str) -> tuple[str, str]:
    """argparse type of -o/--option: key=value."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key, value


def delegate_options(args: argparse.Namespace) -> dict[str, str]:
    """--device, --sim and every -o key=value (which wins), as load_delegate takes them."""
    return {"device": args.device, "sim": args.sim, **dict(getattr(args, "option", None) or [])}


@dataclass
class Session:
    interpreter: Any
    compile_ms: float
    options: dict[str, str] | None
    capture: Any = None
    notes: list[str] = field(default_factory=list)
    runtime: str | None = None

    @property
    def partitions(self) -> int:
        return len(self.capture.programs) if self.capture is not None else 0

    def cpu_kernels(self) -> str:
        """What runs the nodes left on the CPU ("tflite_runtime 2.14.0, builtin kernels", ...)."""
        return cpu_kernels_label(self.interpreter, self.runtime, self.partitions)

    def describe(self) -> str:
        if self.options is None:
            return f"CPU ({self.cpu_kernels()})"
        programs = self.capture.programs if self.capture is not None else []
        if not programs and self.options.get("cache_dir") and not (self.capture and self.capture.support):
            # a full cache hit: the delegate never called the compiler, so there is nothing captured to count
            # (and no partition count to tell teflon's DELEGATE nodes from XNNPACK's: the runtime is named alone)
            return (f"teflon device={self.options.get('device', 'auto')} ({self.npu_kind()} NPU), programs read "
                    f"from the cache {self.options['cache_dir']}; CPU nodes on {runtime_label(self.runtime)}")
        if not programs:
            return f"CPU ({self.cpu_kernels()}): nothing delegated"
        nodes = sum(len(nodes) for nodes, _ in programs)
        devices = {prog.device for _, prog in programs}
        return (f"teflon {', '.join(sorted(devices))} ({self.npu_kind()} NPU), {nodes} nodes in {len(programs)} "
                f"partition(s); CPU nodes on {self.cpu_kernels()}")

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
                     reference: bool = False, num_threads: int = 1) -> Session:
    """Build and allocate an interpreter; with `options`, load the delegate and capture its decisions. compile_ms
    is the interpreter's construction (the delegate's Prepare included). The model is not verified here: the CLI's
    entry point verifies it once per command (python -m teflon), before any interpreter is built."""
    t0 = time.perf_counter()
    if options is None:
        interp = make_interpreter(model, reference=reference, runtime=runtime, num_threads=num_threads, verify=False)
        return Session(interp, (time.perf_counter() - t0) * 1e3, None, runtime=runtime)
    with bridge.capture() as cap:
        delegate = teflon.load_delegate(runtime=runtime, **options)
        interp = make_interpreter(model, [delegate], reference=reference, runtime=runtime, num_threads=num_threads,
                                  verify=False)
    return Session(interp, (time.perf_counter() - t0) * 1e3, options, cap, runtime=runtime)
