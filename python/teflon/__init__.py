"""teflon: a TFLite external delegate for Rockchip and Vivante NPUs, and its compiler.

    import teflon
    from tflite_runtime.interpreter import Interpreter
    it = Interpreter("model.tflite", experimental_delegates=[teflon.load_delegate(device="rk3588")])

Delegate options (all strings on the C side): device = auto | rk3588 | rk3576 | a311d | imx8mp,
sim = auto | 0 | 1, debug = 0 | 1 (or TEFLON_DEBUG=1), cache_dir = program cache directory (or
TEFLON_CACHE_DIR; teflon.cache), cache_max_mb = its size limit.

Kept light on purpose: libteflon.so imports this package from inside the interpreter's Prepare, so
nothing heavy (numpy, the compiler) is imported here.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["delegate_path", "load_delegate"]
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
    delegate's own message when it refuses the options or cannot open the device.
    """
    from teflon.runtime import interpreter_module

    module = interpreter_module(runtime)
    return module.load_delegate(delegate_path(), {k: _option_string(v) for k, v in options.items()})
