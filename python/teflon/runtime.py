"""Which TFLite Python runtime to use: tflite_runtime (2.14) or ai_edge_litert (2.3).

One place that knows both module layouts, so tools, tests and `load_delegate` agree.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from teflon.modelcheck import verify_model

RUNTIMES = {"tflite_runtime": "tflite_runtime.interpreter", "ai_edge_litert": "ai_edge_litert.interpreter"}


def interpreter_module(runtime: str | None = None) -> ModuleType:
    """The interpreter module of `runtime`, or the first one installed (tflite_runtime first)."""
    names = [runtime] if runtime else list(RUNTIMES)
    errors = []
    for name in names:
        if name not in RUNTIMES:
            raise ValueError(f"unknown runtime {name!r}; expected one of {', '.join(RUNTIMES)}")
        try:
            return importlib.import_module(RUNTIMES[name])
        except ImportError as exc:
            errors.append(f"{name}: {exc}")
    raise ImportError("no TFLite runtime available (" + "; ".join(errors) + ")")


def runtime_name(module: ModuleType) -> str:
    return module.__name__.split(".")[0]


def runtime_label(runtime: str | None = None) -> str:
    """"tflite_runtime 2.14.0": the runtime `runtime` resolves to, with its version."""
    name = runtime_name(interpreter_module(runtime))
    return f"{name} {getattr(importlib.import_module(name), '__version__', '?')}"


def cpu_kernels_label(interp: Any, runtime: str | None = None, npu_partitions: int = 0) -> str:
    """What ran the CPU nodes of `interp`: the runtime's builtin kernels alone, or XNNPACK (a default delegate
    the runtime applies unless BUILTIN_WITHOUT_DEFAULT_DELEGATES is asked for) in front of them. Read from the
    execution plan: each delegate's partition is one DELEGATE node, `npu_partitions` of them teflon's."""
    ops = interp._get_ops_details() if hasattr(interp, "_get_ops_details") else []
    delegate_nodes = sum(1 for d in ops if d.get("op_name") == "DELEGATE")
    kernels = "XNNPACK and builtin kernels" if delegate_nodes > npu_partitions else "builtin kernels"
    return f"{runtime_label(runtime)}, {kernels}"


def make_interpreter(
    model: str | bytes,
    delegates: list[Any] | None = None,
    *,
    reference: bool = False,
    runtime: str | None = None,
    num_threads: int = 1,
    preserve_all_tensors: bool = False,
    verify: bool = True,
) -> Any:
    """An allocated Interpreter for a model path or flatbuffer bytes.

    reference=True selects TFLite's own builtin kernels without default delegates (no XNNPACK):
    the correctness reference of this project. preserve_all_tensors=True keeps every intermediate tensor readable
    after invoke (no buffer reuse), for per-layer comparisons. The model is verified first (teflon.modelcheck): a
    file the runtime would read out of bounds raises ValueError("not a valid .tflite model: ...") instead
    (verify=False: the caller has verified it).
    """
    if verify:
        verify_model(model)
    mod = interpreter_module(runtime)
    kwargs: dict[str, Any] = {"num_threads": num_threads}
    if isinstance(model, (bytes, bytearray)):
        kwargs["model_content"] = bytes(model)
    else:
        kwargs["model_path"] = str(model)
    if delegates:
        kwargs["experimental_delegates"] = delegates
    if reference:
        kwargs["experimental_op_resolver_type"] = mod.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    if preserve_all_tensors:
        kwargs["experimental_preserve_all_tensors"] = True
    interp = mod.Interpreter(**kwargs)
    interp.allocate_tensors()
    return interp
