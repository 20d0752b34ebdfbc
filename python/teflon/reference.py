"""The correctness reference: TFLite's builtin CPU kernels, a cache of their outputs, and the delegated run.

- `run_cpu(model, inputs)` runs TFLite's own builtin kernels (BUILTIN_WITHOUT_DEFAULT_DELEGATES: no XNNPACK) and
  caches the outputs as .npz under $TEFLON_REFERENCE_CACHE (default ~/.cache/teflon/reference/), keyed by the sha256
  of the model and input bytes. Writes go through a temporary file and a rename, so parallel pytest-xdist
  workers can share the cache.
- `run_delegate(model, inputs, **options)` runs the same model with `teflon.load_delegate(**options)` and reports
  which nodes the runtime actually handed to the delegate (read back from the interpreter's node list, so it
  does not depend on the delegate's own account).
- `compare(ref, out)` gives the worst absolute difference and the exact-match fraction.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from teflon.modelgen import operator_names
from teflon.runtime import interpreter_module, make_interpreter, runtime_name

_CACHE_FORMAT = "teflon-reference-v1"


# --------------------------------------------------------------------------------------------------------------
# Running an interpreter
# --------------------------------------------------------------------------------------------------------------


def invoke(interp: Any, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Set the inputs (in graph input order), invoke, return copies of all outputs."""
    details = interp.get_input_details()
    if len(details) != len(inputs):
        raise ValueError(f"model has {len(details)} inputs, got {len(inputs)} arrays")
    for d, x in zip(details, inputs, strict=True):
        if tuple(d["shape"]) != tuple(x.shape) or np.dtype(d["dtype"]) != x.dtype:
            raise ValueError(f"input {d['name']!r} wants {tuple(d['shape'])} {np.dtype(d['dtype'])}, "
                             f"got {x.shape} {x.dtype}")
        interp.set_tensor(d["index"], x)
    interp.invoke()
    return [np.array(interp.get_tensor(d["index"])) for d in interp.get_output_details()]


def _runtime_tag(runtime: str | None) -> str:
    mod = interpreter_module(runtime)
    name = runtime_name(mod)
    top = __import__(name)
    return f"{name}-{getattr(top, '__version__', '?')}"


# --------------------------------------------------------------------------------------------------------------
# CPU reference with an on-disk cache
# --------------------------------------------------------------------------------------------------------------


def cache_dir() -> Path:
    env = os.environ.get("TEFLON_REFERENCE_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "teflon" / "reference"


def cache_key(model: bytes, inputs: Sequence[np.ndarray], runtime: str | None = None) -> str:
    """sha256 over the model bytes, each input's dtype/shape/bytes and the runtime that computes the reference."""
    h = hashlib.sha256()
    h.update(_CACHE_FORMAT.encode())
    h.update(_runtime_tag(runtime).encode())
    h.update(len(model).to_bytes(8, "little"))
    h.update(model)
    for x in inputs:
        a = np.ascontiguousarray(x)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _load_cached(path: Path) -> list[np.ndarray] | None:
    try:
        with np.load(path, allow_pickle=False) as npz:
            return [npz[f"out{i}"] for i in range(len(npz.files))]
    except (OSError, ValueError, KeyError, EOFError):
        return None  # missing, or a damaged file: recompute and overwrite


def _store(path: Path, outputs: Sequence[np.ndarray]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **{f"out{i}": o for i, o in enumerate(outputs)})
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the whole new one
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def run_cpu(model: bytes, inputs: Sequence[np.ndarray], *, cache: bool = True,
            runtime: str | None = None) -> list[np.ndarray]:
    """Outputs of TFLite's builtin CPU kernels for `inputs` (cached on disk unless cache=False)."""
    path = cache_dir() / f"{cache_key(model, inputs, runtime)}.npz" if cache else None
    if path is not None:
        hit = _load_cached(path)
        if hit is not None:
            return hit
    outputs = invoke(make_interpreter(model, reference=True, runtime=runtime), inputs)
    if path is not None:
        with contextlib.suppress(OSError):  # a read-only or full cache only costs time
            _store(path, outputs)
    return outputs


# --------------------------------------------------------------------------------------------------------------
# Delegated run
# --------------------------------------------------------------------------------------------------------------


@dataclass
class DelegateRun:
    """Outputs of a run with the teflon delegate, and which of the model's nodes it took."""

    outputs: list[np.ndarray]
    ops: tuple[str, ...]  # builtin op name of every node of the model, by node index
    delegated: frozenset[int]  # node indices the runtime replaced with teflon kernels
    partitions: int
    reasons: dict[int, str] = field(default_factory=dict)  # the compiler's why-not per node, when it reports it

    def nodes_of(self, *kinds: str) -> list[int]:
        return [i for i, op in enumerate(self.ops) if op in kinds]

    def undelegated(self, *kinds: str) -> list[int]:
        """Nodes of the given op kinds that stayed on the CPU."""
        return [i for i in self.nodes_of(*kinds) if i not in self.delegated]

    def describe(self, nodes: Sequence[int]) -> str:
        return ", ".join(f"#{i} {self.ops[i]}" + (f" ({self.reasons[i]})" if i in self.reasons else "")
                         for i in nodes)


def delegated_nodes(interp: Any, num_model_nodes: int) -> tuple[frozenset[int], int]:
    """Model nodes replaced by delegate kernels, and the number of delegate kernels.

    After delegation the interpreter lists the model's nodes followed by one DELEGATE node per partition; a
    partition's nodes are those reached walking back from its outputs until its inputs.
    """
    details = interp._get_ops_details()  # the only public-enough view of the node list in both runtimes
    producer: dict[int, int] = {}
    for d in details[:num_model_nodes]:
        for t in d["outputs"]:
            producer[int(t)] = int(d["index"])
    taken: set[int] = set()
    kernels = details[num_model_nodes:]
    for kernel in kernels:
        boundary = {int(t) for t in kernel["inputs"]}
        stack = [int(t) for t in kernel["outputs"]]
        seen: set[int] = set()
        while stack:
            t = stack.pop()
            if t in seen or t in boundary or t not in producer:
                continue
            seen.add(t)
            node = producer[t]
            taken.add(node)
            stack.extend(int(u) for u in details[node]["inputs"] if int(u) >= 0)
    return frozenset(taken), len(kernels)


@contextlib.contextmanager
def _compiler_capture() -> Iterator[Any]:
    """teflon.bridge.capture() when the bridge provides it (the compiler's per-node reasons), else nothing."""
    try:
        from teflon import bridge

        capture = bridge.capture
    except (ImportError, AttributeError):
        yield None
        return
    with capture() as cap:
        yield cap


def _reasons(cap: Any, taken: frozenset[int]) -> dict[int, str]:
    """Why nodes stayed on the CPU: the compiler's own reason, or a claimed node whose partition failed."""
    reasons: dict[int, str] = {}
    for _graph, decisions in getattr(cap, "support", None) or []:
        for node, (ok, reason) in dict(decisions).items():
            if not ok:
                reasons[int(node)] = str(reason)
            elif int(node) not in taken:
                reasons[int(node)] = "claimed, but its partition was not compiled (the delegate's stderr says why)"
    return reasons


def run_delegate(model: bytes, inputs: Sequence[np.ndarray], *, runtime: str | None = None,
                 **delegate_options: Any) -> DelegateRun:
    """Run `model` with `teflon.load_delegate(**delegate_options)`; CPU fallback nodes use the builtin kernels."""
    import teflon

    options = {k: str(v) for k, v in delegate_options.items()}
    with _compiler_capture() as cap:
        delegate = teflon.load_delegate(runtime=runtime, **options)
        interp = make_interpreter(model, [delegate], reference=True, runtime=runtime)
    ops = tuple(operator_names(model))
    taken, partitions = delegated_nodes(interp, len(ops))
    outputs = invoke(interp, inputs)
    return DelegateRun(outputs, ops, taken, partitions, _reasons(cap, taken) if cap is not None else {})


# --------------------------------------------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------------------------------------------


MODEL_LSB = 6  # whole models: the share of output elements within this many LSB (Mesa's own model tolerance)


@dataclass(frozen=True)
class Comparison:
    max_abs_diff: int
    exact_fraction: float
    n: int
    mean_abs_diff: float = 0.0
    within_model_lsb: float = 1.0  # fraction of elements within MODEL_LSB

    @property
    def mismatches(self) -> int:
        return self.n - round(self.exact_fraction * self.n)

    def within(self, max_abs_diff: int, min_exact_fraction: float, confidence: float = 0.01) -> bool:
        """max |diff| bound, and an exact-match *rate* of at least `min_exact_fraction`.

        The rate is judged statistically: on a small output one mismatch already drops the observed
        fraction below 99.5 %, yet is what a 0.5 % rate predicts. The check fails when the observed
        number of mismatches would happen with probability below `confidence` at the allowed rate
        (binomial tail); on large outputs this converges to the literal fraction.
        """
        if self.max_abs_diff > max_abs_diff:
            return False
        if self.exact_fraction >= min_exact_fraction:
            return True
        return binomial_tail(self.mismatches, self.n, 1.0 - min_exact_fraction) >= confidence

    def __str__(self) -> str:
        return (f"max |diff| {self.max_abs_diff} LSB, mean {self.mean_abs_diff:.4f}, exact "
                f"{100.0 * self.exact_fraction:.2f}% of {self.n} ({self.mismatches} differ), "
                f"{100.0 * self.within_model_lsb:.2f}% within {MODEL_LSB} LSB")


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed in log space (k is a count, not an array length)."""
    if k <= 0:
        return 1.0
    if p <= 0.0:
        return 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    below = 0.0
    for i in range(k):
        below += math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p
                          + (n - i) * log_q)
    return max(0.0, 1.0 - below)


def compare(ref: np.ndarray | Sequence[np.ndarray], out: np.ndarray | Sequence[np.ndarray]) -> Comparison:
    """Element-wise comparison of integer outputs (a single array or matching lists of arrays)."""
    refs = [ref] if isinstance(ref, np.ndarray) else list(ref)
    outs = [out] if isinstance(out, np.ndarray) else list(out)
    if len(refs) != len(outs):
        raise ValueError(f"{len(refs)} reference outputs but {len(outs)} outputs")
    for r, o in zip(refs, outs, strict=True):
        if r.shape != o.shape:
            raise ValueError(f"shape mismatch: reference {r.shape}, output {o.shape}")
    if not refs:
        return Comparison(0, 1.0, 0)
    pairs = zip(refs, outs, strict=True)
    diff = np.concatenate([np.abs(r.astype(np.int64) - o.astype(np.int64)).ravel() for r, o in pairs])
    if diff.size == 0:
        return Comparison(0, 1.0, 0)
    return Comparison(int(diff.max()), float(np.count_nonzero(diff == 0) / diff.size), int(diff.size),
                      float(diff.mean()), float(np.count_nonzero(diff <= MODEL_LSB) / diff.size))
