"""teflon: a TFLite external delegate for Rockchip and Vivante NPUs, and its compiler.

    import teflon
    from tflite_runtime.interpreter import Interpreter
    it = Interpreter("model.tflite", experimental_delegates=[teflon.load_delegate(device="rk3588")])

Delegate options (all strings on the C side): device = auto | rk3588 | rk3576 | a311d | imx8mp,
sim = auto | 0 | 1, debug = 0 | 1 (or TEFLON_DEBUG=1), cache_dir = program cache directory (or
TEFLON_CACHE_DIR; teflon.cache), cache_max_mb = its size limit, cores = NPU cores the independent jobs of a
program may be spread over (1 .. the device's: rk3588 3, rk3576 1, etnaviv 1; default 1).

Kept light on purpose: libteflon.so imports this package from inside the interpreter's Prepare, so
nothing heavy (numpy, the compiler) is imported here.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["delegate_path", "load_delegate", "verify_model"]
__version__ = "0.1.0"


def delegate_path() -> str:
    """Path of libteflon.so: $TEFLON_LIBRARY if set, else the library installed with this package.

    Works for editable installs too, where the library lives in the build directory.
    """
    override = os.environ.get("TEFLON_LIBRARY")
    if override:
        return override
    from importlib.resources import files

    return str(files("teflon") / "libteflon.so")


def _option_string(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def load_delegate(*, runtime: str | None = None, **options: object) -> Any:
    """Load libteflon.so as a TFLite external delegate.

    `runtime` picks the TFLite Python runtime ("tflite_runtime" or "ai_edge_litert"; default: the
    first installed). Options are passed as strings (booleans as "1"/"0"). Raises ValueError with the
    delegate's own one-line message, naming the option, when it refuses the options (checked before the runtime
    loads the library) or cannot open the device.
    """
    from teflon.native import check_options
    from teflon.runtime import interpreter_module

    module = interpreter_module(runtime)
    strings = {k: _option_string(v) for k, v in options.items()}
    check_options(strings)
    try:
        return module.load_delegate(delegate_path(), strings)
    except ValueError as exc:
        # The runtimes prefix the delegate's message with "Failed to load delegate from <path>\n".
        raise ValueError(str(exc).splitlines()[-1]) from None


def verify_model(model: str | os.PathLike[str] | bytes) -> None:
    """Raise ValueError("not a valid .tflite model: ...") unless `model` (a path or the flatbuffer) is a .tflite
    model the runtimes can read safely. tflite_runtime 2.14 does not verify models itself and crashes on a
    truncated one: call this before `Interpreter(model_path=...)` when the file may be damaged."""
    from teflon.modelcheck import verify_model as verify

    verify(model)
