"""Rockchip's own RK3568 programs on the rk3568 simulator (../shared/golden/rocket-rk3568, rknn-toolkit2 2.5.0).

The golden folder carries no inputs or outputs, but every file names the teflon.modelgen call of its model and holds
the vendor's packed weights and BS table (when <= 128 KiB). So: the model is rebuilt, compiled and run by the delegate
on device=rk3568 (the program it captures gives the buffers, relocations and I/O bindings); its layer tasks are then
replaced word for word by the vendor's — except the address words (the offsets inside the buffers are the
program's own: the README compares only their unit and register) and the README's `toolkit_words` (the toolkit's
rescaling converter on the packed-pixel path, the FC's link into its Reshape helper) — and the weight and bias
buffers by the vendor's bytes (the global average's file carries only their sha256, which tests/rocket/
test_golden_rk3568.py checks the program's bytes against); the program runs on the simulated NPU and must give TFLite's output within 1 LSB and
>= 99.5 % exact. Files whose vendor program the simulator does not run say why (NOT_RUN).
"""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path

import numpy as np
import pytest

from conftest import shared_path
from teflon import bridge, modelgen, reference
from teflon.native import Device, Runner

SHARED = shared_path() or Path("/nonexistent/shared")
GOLDEN = SHARED / "golden" / "rocket-rk3568"
FILES = sorted(GOLDEN.glob("*.json")) if GOLDEN.is_dir() else []

NOT_RUN = {
    "maxpool-": "pools are PPU tasks, which the rk3568 simulator refuses (no completion interrupt, rk3568.md §5)",
    "avgpool-in32x32": "the vendor writes a PPU task, which the rk3568 simulator refuses (no completion interrupt); teflon "
                       "runs this average as an exact depthwise convolution (test_rk3568_status.py)",
}

pytestmark = [pytest.mark.usefixtures("delegate_library"),
              pytest.mark.skipif(not FILES, reason=f"no golden rocket-rk3568 files under {GOLDEN}")]


def _params() -> list[object]:
    out = []
    for p in FILES:
        why = next((w for prefix, w in NOT_RUN.items() if p.name.startswith(prefix)), None)
        out.append(pytest.param(p, id=p.stem, marks=[pytest.mark.skip(reason=why)] if why else []))
    return out


@pytest.fixture(scope="module")
def sim() -> Device:
    dev = Device("rk3568", sim=True)
    yield dev
    dev.close()


def _input_indices(model: bytes) -> list[int]:
    from teflon.runtime import make_interpreter

    return [d["index"] for d in make_interpreter(model).get_input_details()]


@pytest.mark.parametrize("path", _params())
def test_vendor_program_computes_the_layer(path: Path, sim: Device) -> None:
    d = json.loads(path.read_text())
    m = d["params"]["modelgen"]
    model = getattr(modelgen, m["class"])(**m["kwargs"]).build()
    inputs = modelgen.random_inputs(model, seed=7)
    with bridge.capture() as cap:
        run = reference.run_delegate(model, inputs, device="rk3568", sim="1")
    assert len(run.delegated) == 1 and len(cap.programs) == 1, run.delegated
    (_, prog), = cap.programs
    vendor = [t for t in d["tasks"] if t["role"] == "layer"]
    (op,) = prog.operations
    assert len(op.tasks) == len(vendor)
    regcmd = prog.buffer(op.tasks[0].buffer)
    data = bytearray(regcmd.data)
    for task, t in zip(op.tasks, vendor):
        words = [int(w, 16) for w in t["regcmd"]]
        assert 8 * len(words) == task.nbytes
        keep = set(t["address_words"]) | set(t["toolkit_words"])
        ours = struct.unpack_from(f"<{len(words)}Q", data, task.offset)
        struct.pack_into(f"<{len(words)}Q", data, task.offset,
                         *(o if i in keep else v for i, (o, v) in enumerate(zip(ours, words))))
    regcmd.data = bytes(data)
    for key, suffix in (("weights", ".weights"), ("bs_table", ".bias")):
        c = d["constants"].get(key, {})
        if "data_b64" in c:
            buf = next(b for b in prog.buffers if b.name.endswith(suffix))
            vb = base64.b64decode(c["data_b64"])
            buf.data = vb + bytes(len(buf.data or b"") - len(vb))
    runner = Runner(sim, prog)
    ids = _input_indices(model)
    outs = runner.run({i: x for i, x in zip(ids, inputs) if i in {b.tensor for b in prog.io if b.direction == "in"}})
    (out,) = outs.values()
    ref = reference.run_cpu(model, inputs, cache=False)[0]
    diff = np.abs(out.astype(np.int64).reshape(ref.shape) - ref.astype(np.int64))
    exact = float((diff == 0).mean())
    print(f"{path.stem}: vendor program, exact {exact:.4%}, max |diff| {diff.max()}, {len(vendor)} tasks")
    assert diff.max() <= 1 and exact >= 0.995, f"max |diff| {diff.max()}, {exact:.4%} exact"
