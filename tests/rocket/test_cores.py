"""The delegate option `cores`: a program's independent jobs spread over one open file (lane) per core.

accel/rocket gives each open file one scheduler entity that keeps its jobs on one core at a time
(docs/hardware/rocket.md "multi-core"), so the runner submits independent jobs through several files; the
simulated kernel shares its cores between those files and keeps simulated time per core. Checked here: outputs
byte-identical to cores=1 on multi-op models of the rocket SoCs teflon runs on several cores (RK3588; RK3576 runs
one core at a time: docs/hardware/rocket-rk3576.md "Two cores at once"), the simulated NPU time (the simulator's counters,
never host time) not larger with more cores and smaller where branches are independent, one file's jobs never
overlapping, and the option's validation.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from teflon import netgen, targets

ROCKET = [t.name for t in targets.of_family("rocket") if t.drivable and t.cores > 1]
# the nets with independent branches (SSD's box and class heads, DeepLab's ASPP); RK3588 has no per-channel
# weights, so its nets are uint8
NETS = ["ssd", "deeplab"]


def _dtype(device: str) -> str:
    return "int8" if targets.get(device).per_channel else "uint8"


def _cores(device: str) -> list[int]:
    return list(range(1, targets.get(device).cores + 1))


def _programs(net: str, device: str) -> list:
    from program_digest import delegate_programs

    return [prog for _, prog in delegate_programs(netgen.build(net, _dtype(device)), device)]


def _run(prog, device: str, cores: int) -> tuple[dict[int, np.ndarray], int, int, list[dict[str, int]]]:
    """Outputs, simulated NPU ns, lanes and per-task counters of one run on random inputs."""
    from teflon.native import Device, Runner

    rng = np.random.default_rng(7)
    with Device(device, sim=True, cores=cores) as dev:
        runner = Runner(dev, prog)
        inputs = {b.tensor: rng.integers(0, 256, size=b.shape, dtype=np.uint8).view(b.dtype)
                  for b in runner.bindings if b.direction == "in"}
        runner.run(inputs)
        out = runner.run(inputs)  # the second run starts from the state the first left in every lane
        ns, lanes = runner.npu_time()
        counters = runner.task_counters()
        runner.close()
    return out, ns, lanes, counters


@pytest.mark.parametrize("net", NETS)
@pytest.mark.parametrize("device", ROCKET)
def test_cores_outputs_identical_and_time_not_larger(device: str, net: str, delegate_library: None) -> None:
    for k, prog in enumerate(_programs(net, device)):
        base, base_ns, base_lanes, _ = _run(prog, device, 1)
        assert base_lanes == 1 and base_ns > 0
        for cores in _cores(device)[1:]:
            out, ns, lanes, counters = _run(prog, device, cores)
            for t, v in base.items():
                assert np.array_equal(out[t], v), f"{net} {device} partition {k} cores={cores}: tensor {t} differs"
            assert ns <= base_ns, f"{net} {device} partition {k}: cores={cores} {ns} ns > cores=1 {base_ns} ns"
            assert lanes <= cores
            if lanes > 1:
                # independent jobs really ran at once: on different cores, overlapping in simulated time
                assert ns < base_ns, f"{net} {device} partition {k}: {lanes} lanes, no gain ({ns} ns)"
                assert len({c["core"] for c in counters}) > 1


@pytest.mark.parametrize("device", ROCKET)
def test_cores_ssd_heads_run_concurrently(device: str, delegate_library: None) -> None:
    """SSD's four heads read two feature maps: with every core, some lane runs beside another."""
    (prog,) = _programs("ssd", device)[:1]
    _, base_ns, _, _ = _run(prog, device, 1)
    _, ns, lanes, _ = _run(prog, device, targets.get(device).cores)
    assert lanes > 1 and ns < base_ns, (lanes, ns, base_ns)


@pytest.mark.parametrize("device", ROCKET)
def test_cores_tasks_on_one_core_never_overlap(device: str, delegate_library: None) -> None:
    """A core runs one task at a time (the scheduler's credit limit of 1 per core)."""
    (prog,) = _programs("ssd", device)[:1]
    _, _, _, counters = _run(prog, device, targets.get(device).cores)
    for core in {c["core"] for c in counters}:
        spans = sorted((c["start_ns"], c["start_ns"] + c["ns"]) for c in counters if c["core"] == core)
        assert all(a[1] <= b[0] for a, b in pairwise(spans)), (core, spans)


@pytest.mark.parametrize("device", ROCKET)
def test_cores_through_the_delegate_identical(device: str, delegate_library: None) -> None:
    """The same through load_delegate(..., options={"cores": N}) and TFLite, every core count."""
    import teflon
    from teflon import modelgen
    from teflon.reference import make_interpreter

    model = netgen.build("ssd", _dtype(device))
    outs = {}
    for cores in _cores(device):
        interp = make_interpreter(model, [teflon.load_delegate(device=device, sim="1", cores=str(cores))],
                                  reference=True)
        for detail, value in zip(interp.get_input_details(), modelgen.random_inputs(model, seed=3), strict=True):
            interp.set_tensor(detail["index"], value)
        interp.invoke()
        outs[cores] = [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]
    for cores, values in outs.items():
        assert all(np.array_equal(a, b) for a, b in zip(values, outs[1], strict=True)), f"cores={cores}"


@pytest.mark.parametrize("kind", ["timeout", "dma_read", "iommu"])
@pytest.mark.parametrize("device", ROCKET)
def test_cores_fault_names_lane_job_and_task(device: str, kind: str, delegate_library: None,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """An injected fault (docs/faults.md) in a run spread over lanes names the lane, the job and the task; the next
    run is whole again and equals cores=1."""
    from teflon.native import Device, NativeError, Runner

    (prog,) = _programs("ssd", device)[:1]
    base, _, _, _ = _run(prog, device, 1)
    monkeypatch.setenv("TEFLON_SIM_FAULT", kind)
    rng = np.random.default_rng(7)
    with Device(device, sim=True, cores=targets.get(device).cores) as dev:
        runner = Runner(dev, prog)
        inputs = {b.tensor: rng.integers(0, 256, size=b.shape, dtype=np.uint8).view(b.dtype)
                  for b in runner.bindings if b.direction == "in"}
        with pytest.raises(NativeError, match=rf"lane \d of \d: job \d+ of \d+, task \d+ of \d+: .*\(simulated "
                                              rf"fault '{kind}'\)"):
            runner.run(inputs)
        out = runner.run(inputs)
        runner.close()
    for t, v in base.items():
        assert np.array_equal(out[t], v), f"tensor {t} after the fault"


@pytest.mark.parametrize("device", ROCKET)
def test_cores_fault_frees_every_lane_from_c(device: str, tmp_path, delegate_library: None) -> None:
    """No Python in the process (tests/c/test_fault_leaks.c): a faulting run over several lanes, then a good one,
    unload and close; under the ASan stage leak detection is on here."""
    import os
    import subprocess

    import teflon
    from conftest import build_c_test
    from teflon.native import bindings

    (prog,) = _programs("ssd", device)[:1]
    blob = prog.to_blob()
    (tmp_path / "program.blob").write_bytes(blob)
    inp = next(b for b in bindings(blob) if b.direction == "in")
    out = next(b for b in bindings(blob) if b.direction == "out")
    exe = build_c_test("test_fault_leaks", tmp_path)
    env = {**os.environ, "TEFLON_SIM_FAULT": "dma_write"}
    if "libasan" in env.get("LD_PRELOAD", ""):
        env["ASAN_OPTIONS"] = "detect_leaks=1"
    r = subprocess.run([str(exe), teflon.delegate_path(), device, str(tmp_path / "program.blob"), str(inp.tensor),
                        str(int(np.prod(inp.shape))), str(out.tensor), str(int(np.prod(out.shape))), "dma_write",
                        str(targets.get(device).cores)], check=False, capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0 and "all checks passed" in r.stdout, r.stdout + r.stderr
    assert "lane " in r.stdout, r.stdout


@pytest.mark.parametrize(
    ("device", "value", "expect"),
    [
        ("rk3588", "4", (r"invalid value '4' for option 'cores' \(rk3588 runs jobs on 3 NPU cores at once: "
                         r"expected 1\.\.3\)")),
        ("rk3576", "2", (r"invalid value '2' for option 'cores' \(rk3576 runs jobs on 1 NPU core at once: "
                         r"expected 1\.\.1\)")),
        ("a311d", "2", (r"invalid value '2' for option 'cores' \(a311d runs jobs on 1 NPU core at once: "
                        r"expected 1\.\.1\)")),
        ("rk3588", "0", r"invalid value '0' for option 'cores' \(expected a whole number"),
        ("rk3588", "two", r"invalid value 'two' for option 'cores'"),
        ("rk3588", "-1", r"invalid value '-1' for option 'cores'"),
        ("rk3588", "", r"invalid value '' for option 'cores'"),
    ],
    ids=lambda v: str(v) or "empty",
)
def test_cores_invalid_values_refused(device: str, value: str, expect: str, delegate_library: None) -> None:
    import teflon

    with pytest.raises(ValueError, match=expect):
        teflon.load_delegate(device=device, sim="1", cores=value)


@pytest.mark.parametrize("device", ROCKET)
def test_cores_native_open_refuses_too_many(device: str, delegate_library: None) -> None:
    from teflon.native import Device, NativeError

    with pytest.raises(NativeError, match=r"cores must be 1\.\.\d, not \d"):
        Device(device, sim=True, cores=targets.get(device).cores + 1)


# Runs in a subprocess that preloads the rocket ioctl shim (tests/shim.py): the SSD net through the real kernel
# client (sim=0) with every core count; the outputs go to an .npz.
_SHIM_RUN = """
import sys
import numpy as np
import teflon
from teflon import modelgen, netgen
from teflon.reference import make_interpreter

device, dtype, cores, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
model = netgen.build("ssd", dtype)
res = {}
for c in range(1, cores + 1):
    interp = make_interpreter(model, [teflon.load_delegate(device=device, sim="0", cores=str(c))], reference=True)
    for detail, value in zip(interp.get_input_details(), modelgen.random_inputs(model, seed=3)):
        interp.set_tensor(detail["index"], value)
    interp.invoke()
    for k, d in enumerate(interp.get_output_details()):
        res[f"c{c}o{k}"] = interp.get_tensor(d["index"])
np.savez(out, **res)
"""


@pytest.mark.parametrize("device", ROCKET)
def test_cores_through_the_real_client(device: str, tmp_path, delegate_library: None,
                                       tmp_path_factory: pytest.TempPathFactory) -> None:
    """sim=0 over the rocket shim: each lane is a second open() of the accel node (its own BOs and IOVAs); the
    outputs equal cores=1 and every file and BO is closed."""
    from shim import calls, rocket_shim, run_python

    shim = rocket_shim(tmp_path_factory, device)
    log, out = tmp_path / "calls.log", tmp_path / "out.npz"
    cores = targets.get(device).cores
    r = run_python(_SHIM_RUN, shim.env(log, device), device, _dtype(device), str(cores), str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    res = np.load(out)
    for name in res.files:
        base = name.replace(name[:name.index("o")], "c1")
        assert res[name].tobytes() == res[base].tobytes(), name
    seen = calls(log)
    assert seen.count("OPEN") > cores, "one delegate per core count, and the lanes open the node again"
    assert seen.count("OPEN") == seen.count("CLOSE") and seen.count("CREATE_BO") == seen.count("GEM_CLOSE"), seen
