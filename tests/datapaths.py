"""Fast vs reference simulated datapaths, shared by the etnaviv and Ethos-U fast-path tests (both simulators run
etnaviv's MAC kernel sets, etna_sim_dot.c): the outputs of one model on each datapath and the byte comparison."""

from __future__ import annotations

import platform

import numpy as np
import pytest

from teflon.modelgen import random_inputs
from teflon.runtime import make_interpreter

# the kernel sets of etna_sim_dot.c built for this host
ETNA_DOT_KERNELS = ["c"] + (["avx2", "avx512", "avx512vnni"] if platform.machine() in ("x86_64", "AMD64", "i686")
                            else ["neon"] if platform.machine() == "aarch64" else [])


def sim_outputs(model: bytes, device: str, monkeypatch: pytest.MonkeyPatch, reference: bool | str,
                kernels: str | None = None) -> list[np.ndarray]:
    """The outputs of two invokes (inputs drawn with seeds 0 and 1) on one interpreter of `device`'s simulated NPU:
    `reference` True selects the reference datapath (TEFLON_SIM_REFERENCE=1), a string is that variable's value
    ("check"); else `kernels` forces a kernel set of the fast path (None: the best)."""
    import teflon

    monkeypatch.delenv("TEFLON_SIM_REFERENCE", raising=False)
    monkeypatch.delenv("TEFLON_SIM_KERNELS", raising=False)
    if reference:
        monkeypatch.setenv("TEFLON_SIM_REFERENCE", "1" if reference is True else reference)
    elif kernels is not None:
        monkeypatch.setenv("TEFLON_SIM_KERNELS", kernels)
    interp = make_interpreter(model, [teflon.load_delegate(device=device, sim="1")])
    interp.allocate_tensors()
    outs = []
    for seed in (0, 1):
        for detail, x in zip(interp.get_input_details(), random_inputs(model, seed=seed), strict=True):
            interp.set_tensor(detail["index"], x)
        interp.invoke()
        outs += [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]
    return outs


def check_same_bytes(model: bytes, device: str, monkeypatch: pytest.MonkeyPatch, name: str,
                     kernel_sets: list[str | None] | None = None) -> None:
    """The fast datapath (the best kernel set, or each of `kernel_sets`) gives the reference datapath's bytes."""
    ref = sim_outputs(model, device, monkeypatch, True)
    for kernels in kernel_sets or [None]:
        fast = sim_outputs(model, device, monkeypatch, False, kernels)
        for i, (r, f) in enumerate(zip(ref, fast, strict=True)):
            diff = np.argwhere(r != f)
            assert r.tobytes() == f.tobytes(), (f"{name} on {device} ({kernels or 'best'} kernels), output {i} "
                                                f"(invoke {i // (len(ref) // 2)}): {len(diff)} of {r.size} elements "
                                                f"differ from the reference datapath, first at {diff[:4].tolist()}")
