"""`python -m teflon doctor --experiments` (cli/experiments.py) and the report the compiler reads with
TEFLON_HW_FACTS (teflon.hw_facts): for every open hardware fact of docs/hardware/board-facts.md, the simulator
switched to each hypothesis's rule (TEFLON_SIM_RULES, drivers/sim_rules.h) makes the experiment return that
hypothesis, so the experiments tell the hypotheses apart; a proving report enables MUL of two tensors on RK3588,
RK3576 pools with unequal pad pairs and NATURAL rounding of i.MX93 convolutions, and a foreign or malformed one
changes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from teflon import compiler, hw_facts
from teflon.cli import experiments
from teflon.ir import Graph, Operation, Tensor
from teflon.native import Device, NativeError, Runner
from teflon.rocket import target

pytestmark = pytest.mark.usefixtures("delegate_library")

# the simulator's rule today for each fact, and the verdict it gives (fact 1's and 4's refuse the variants)
DEFAULT_VERDICT = {"ew_mul": "none matched", "ew_tie": "half_even", "direct_pitch": "programmed",
                   "ppu_pad": "none matched", "partial_groups": "exact", "v7_fc_order": "flat",
                   "eu_natural": "single"}
CASES = [(f.id, soc, h) for f in experiments.FACTS for soc in f.socs for h in f.hypotheses]


def _verdict(fact_id: str, soc: str, monkeypatch: pytest.MonkeyPatch, rule: str | None) -> experiments.Result:
    monkeypatch.setenv("TEFLON_SIM_RULES", f"{fact_id}={rule}" if rule else "")
    dev = Device(soc, sim=True)  # the rule is read when the device opens
    try:
        return experiments.run_fact(experiments.FACTS_BY_ID[fact_id], dev, True)
    finally:
        dev.close()


@pytest.mark.parametrize(("fact_id", "soc", "hypothesis"), CASES, ids=[f"{f}-{s}-{h}" for f, s, h in CASES])
def test_each_simulated_rule_gives_its_own_verdict(fact_id: str, soc: str, hypothesis: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    r = _verdict(fact_id, soc, monkeypatch, hypothesis)
    print(f"{fact_id} on {soc}, TEFLON_SIM_RULES {fact_id}={hypothesis}: {r.verdict}; runs "
          f"{[(x['variant'], x['outcome'], x.get('vs_cpu')) for x in r.runs]}")
    assert r.verdict == hypothesis, r.runs
    for other, ev in r.evidence.items():  # every other hypothesis is contradicted by at least one run
        assert (other == hypothesis) == all(ev["agrees"]), (other, ev)
    if hypothesis == "timeout":
        assert any(x["outcome"] == "timeout" and "timeout" in x and x["ms"] >= 0 for x in r.runs), r.runs


@pytest.mark.parametrize("fact_id", list(DEFAULT_VERDICT))
def test_default_rules_keep_todays_verdicts(fact_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    soc = experiments.FACTS_BY_ID[fact_id].socs[0]
    r = _verdict(fact_id, soc, monkeypatch, None)
    assert r.verdict == DEFAULT_VERDICT[fact_id], r.runs
    if r.verdict == "none matched":
        assert r.note.startswith("the device refused every variant"), r.note


@pytest.mark.parametrize(("spec", "why"), [("ew_mul=bogus", "ew_mul takes refuse, wide"),
                                           ("nonsense=1", "unknown fact \"nonsense\""),
                                           ("ew_tie=half_up,ppu_pad", "ppu_pad takes equal_only")])
def test_bad_rules_refuse_the_device(spec: str, why: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEFLON_SIM_RULES", spec)
    with pytest.raises(NativeError, match="TEFLON_SIM_RULES") as e:
        Device("rk3588", sim=True)
    assert why in str(e.value)


def _report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fact_id: str, soc: str, rule: str) -> Path:
    """The report of a board (here: the simulator switched to `rule`) for `soc`, as doctor writes it."""
    r = _verdict(fact_id, soc, monkeypatch, rule)
    path = tmp_path / f"{fact_id}-{soc}.json"
    path.write_text(json.dumps(experiments.report([r], soc, True, {"kernel": "test", "driver": "simulated"})))
    monkeypatch.delenv("TEFLON_SIM_RULES")
    return path


def _mul_graph() -> Graph:
    return experiments._binary_graph("MUL", (1, 8, 8, 16))


def test_report_proves_mul_and_foreign_or_malformed_ones_change_nothing(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    rm = target("rk3588")
    ok, why = rm.supported(_mul_graph())[0]
    assert not ok and "no TEFLON_HW_FACTS report" in why
    proving = _report(tmp_path, monkeypatch, "ew_mul", "rk3588", "wide")
    monkeypatch.setenv(hw_facts.ENV, str(proving))
    ok, why = rm.supported(_mul_graph())[0]
    assert ok, why
    # the same report for another SoC, a malformed file, a missing file, a "none matched" verdict
    data = json.loads(proving.read_text())
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({**data, "soc": "rk3576", "facts": [{**data["facts"][0], "soc": "rk3576"}]}))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    none = tmp_path / "none.json"
    none.write_text(json.dumps({**data, "facts": [{**data["facts"][0], "verdict": "none matched"}]}))
    simulated_only = tmp_path / "nonpu.json"
    simulated_only.write_text(json.dumps({**data, "soc": None}))
    for path, message in ((foreign, "report is for rk3576, not rk3588: ignored"),
                          (bad, "malformed report, not JSON"), (tmp_path / "missing.json", "cannot read the report"),
                          (none, "does not prove it on rk3588"), (simulated_only, "proves nothing about a board")):
        monkeypatch.setenv(hw_facts.ENV, str(path))
        ok, why = rm.supported(_mul_graph())[0]
        print(f"{path.name}: {why}")
        assert not ok and message in why, why


def test_proved_mul_computes_tflite_mul_on_the_simulator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the simulator following the proved rule, the lowered MUL (a copy and the EW multiply) is TFLite's MUL
    within 1 LSB and the MUL's own measured bound (97 % exact: TFLite rounds twice; docs/hardware/rocket.md)."""
    from teflon.fixedpoint import multiply_by_quantized_multiplier, quantize_multiplier

    monkeypatch.setenv(hw_facts.ENV, str(_report(tmp_path, monkeypatch, "ew_mul", "rk3588", "wide")))
    monkeypatch.setenv("TEFLON_SIM_RULES", "ew_mul=wide")
    g = _mul_graph()
    prog = compiler.compile(g, [0], [0, 1], [2], "rk3588")
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, size=(1, 8, 8, 16)).astype(np.int8)
    b = rng.integers(-128, 128, size=(1, 8, 8, 16)).astype(np.int8)
    with Device("rk3588", sim=True) as dev:
        runner = Runner(dev, prog)
        y = runner.run({0: a, 1: b})[2]
        runner.close()
    (sa, za), (sb, zb), (sy, zy) = ((float(g.tensors[t].quant.scales[0]), int(g.tensors[t].quant.zero_points[0]))
                                    for t in (0, 1, 2))
    m, shift = quantize_multiplier(sa * sb / sy)
    ref = np.clip(multiply_by_quantized_multiplier((a.astype(np.int64) - za) * (b.astype(np.int64) - zb), m, shift)
                  + zy, -128, 127)
    d = np.abs(y.astype(np.int64) - ref)
    print(f"mul-in8x8x16-i8 under a proving report: exact {np.mean(d == 0):.4f}, worst {d.max()}, mean {d.mean():.4f}")
    assert d.max() <= 1 and np.mean(d == 0) >= 0.97


def test_report_enables_rk3576_pools_with_unequal_pad_pairs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shape = (1, 16, 15, 16)
    g = Graph({0: Tensor(0, "int8", shape, experiments._q(0.05, 2)),
               1: Tensor(1, "int8", (1, 8, 8, 16), experiments._q(0.05, 2))},
              [Operation(0, "MAX_POOL_2D", [0], [1], {"padding": "SAME", "stride_h": 2, "stride_w": 2, "filter_h": 3,
                                                      "filter_w": 3, "activation": "NONE"})])
    ok, why = target("rk3576").supported(g)[0]
    assert not ok and "which RK3576 POOLING_PADDING_CFG nibble" in why
    for order in ("x_low", "y_low"):
        monkeypatch.setenv(hw_facts.ENV, str(_report(tmp_path, monkeypatch, "ppu_pad", "rk3576", order)))
        ok, why = target("rk3576").supported(g)[0]
        assert ok, why
        monkeypatch.setenv("TEFLON_SIM_RULES", f"ppu_pad={order}")
        x = np.random.default_rng(8).integers(-128, 128, size=shape).astype(np.int8)
        with Device("rk3576", sim=True) as dev:
            runner = Runner(dev, compiler.compile(g, [0], [0], [1], "rk3576"))
            y = runner.run({0: x})[1]
            runner.close()
        assert np.array_equal(y, experiments._pool_reference(x, 3, 2)), order


def test_eu_natural_experiment_hits_the_rules_differences() -> None:
    """The fact 7 program's two predictions differ on many elements, both signs (ties at the final shift)."""
    with Device("imx93", sim=True) as dev:
        _, hyps = experiments._eu_natural(dev)
    single, double = (hyps[h][0].ref for h in ("single", "double"))
    assert single is not None and double is not None
    differ = single != double
    print(f"eu_natural experiment: {np.mean(differ):.4f} of {single.size} outputs differ between single and double")
    assert np.mean(differ) > 0.1 and (single[differ] < 0).any() and (single[differ] > 0).any()


@pytest.mark.parametrize("op", ["conv2d-in16x16x32-oc64-k3-same-i8-pc", "fc-in256-oc512-i8-pc"])
def test_proved_natural_matches_the_builtin_reference(op: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the simulator rounding NATURAL twice and a report proving it, the i.MX93's CONV_2D / FULLY_CONNECTED
    use NATURAL and equal TFLite's builtin (x86 optimized) kernels bit for bit, where TFL rounding differs on the
    final shift's ties (docs/hardware/ethosu-sim.md, "The builtin reference's rounding")."""
    from conftest import sim_options
    from teflon import modelgen as mg
    from teflon.reference import compare, run_cpu, run_delegate

    case = mg.ConvCase("conv2d", 16, 16, 32, 64, kernel=3, dtype="int8", per_channel=True, seed=2) \
        if op.startswith("conv") else mg.FcCase(256, 512, dtype="int8", per_channel=True, seed=2)
    model = case.build()
    xs = [mg.random_inputs(model, seed=s) for s in range(1 if op.startswith("conv") else 4)]
    refs = [run_cpu(model, x) for x in xs]
    monkeypatch.setenv("TEFLON_CACHE_DIR", str(tmp_path / "cache"))
    report = _report(tmp_path, monkeypatch, "eu_natural", "imx93", "double")

    def diffs(**extra: str) -> tuple[int, float]:
        n, exact = 0, []
        for x, ref in zip(xs, refs, strict=True):
            run = run_delegate(model, x, **sim_options("imx93"), **extra)
            assert len(run.delegated) == len(run.ops), run.reasons
            cmp = compare(ref, run.outputs)
            n = max(n, cmp.max_abs_diff)
            exact.append(cmp.exact_fraction)
        return n, float(np.mean(exact))

    monkeypatch.setenv("TEFLON_SIM_RULES", "eu_natural=double")
    tfl = diffs()  # no report: TFL rounding
    monkeypatch.setenv(hw_facts.ENV, str(report))
    natural = diffs()
    print(f"{op}: TFL worst {tfl[0]} exact {tfl[1]:.6f}; NATURAL (double) worst {natural[0]} exact {natural[1]:.6f}")
    assert tfl[0] <= 1 and natural == (0, 1.0)
    if op.startswith("conv"):  # FC's ties are rare (1 of 512 outputs in 2 of 64 runs, measured): no difference needed
        assert tfl[1] < 1.0


def test_proved_natural_only_for_conv_and_fc_and_never_with_vela_compat(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from teflon.ethosu import lower, quant, support

    g, *_ = experiments._natural_graph()

    def round_modes(vela_compat: bool = False) -> set[int]:
        spec = support.spec(Graph(dict(g.tensors), list(g.operations)), g.operations[0])  # a fresh memo
        assert isinstance(spec, lower.ConvSpec)
        kicks = lower.lower_conv(spec, vela_compat)
        return {int(k.regs["NPU_SET_OFM_PRECISION"].get("round_mode", 0)) for k in kicks}

    assert round_modes() == {quant.ROUND_TFL}
    monkeypatch.setenv(hw_facts.ENV, str(_report(tmp_path, monkeypatch, "eu_natural", "imx93", "single")))
    assert round_modes() == {quant.ROUND_TFL}
    monkeypatch.setenv(hw_facts.ENV, str(_report(tmp_path, monkeypatch, "eu_natural", "imx93", "double")))
    assert round_modes() == {quant.ROUND_NATURAL}
    assert round_modes(vela_compat=True) == {quant.ROUND_TFL}
    assert "proved on imx93 (double)" in hw_facts.status("imx93", "eu_natural")


def _teflon(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "teflon", *args], check=False, capture_output=True, text=True,
                          env=env, timeout=600)


def test_inspect_claim_follows_the_report_through_the_program_cache(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The delegate's support decision (cached by the program cache) follows the report's contents: the same path
    rewritten with a foreign report is decided afresh."""
    from tflite.BuiltinOperator import BuiltinOperator
    from tflite.BuiltinOptions import BuiltinOptions

    from teflon.modelgen import GraphBuilder, QParams, _mul_none_options

    gb = GraphBuilder("teflon test mul")
    a = gb.tensor("a", (1, 8, 8, 16), "int8", QParams.make(0.05, 3))
    b = gb.tensor("b", (1, 8, 8, 16), "int8", QParams.make(0.04, -7))
    y = gb.tensor("y", (1, 8, 8, 16), "int8", QParams.make(0.1, 1))
    gb.op(BuiltinOperator.MUL, 2, [a, b], [y], BuiltinOptions.MulOptions, _mul_none_options)
    model = tmp_path / "mul.tflite"
    model.write_bytes(gb.build([a, b], [y]))
    report = _report(tmp_path, monkeypatch, "ew_mul", "rk3588", "wide")
    proving = report.read_text()
    env = {**os.environ, "TEFLON_CACHE_DIR": str(tmp_path / "cache"), hw_facts.ENV: str(report),
           "TEFLON_SIM_RULES": "ew_mul=wide"}
    args = ["inspect", "--model", str(model), "--device", "rk3588", "--sim", "1"]
    r = _teflon(args, env)
    assert r.returncode == 0 and "MUL" in r.stdout and "yes" in r.stdout.splitlines()[1], r.stdout + r.stderr
    report.write_text(proving.replace('"soc": "rk3588"', '"soc": "rk3576"'))
    r = _teflon(args, env)
    assert r.returncode == 0 and "report is for rk3576" in r.stdout, r.stdout + r.stderr


def test_doctor_writes_the_versioned_report(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    env = {**os.environ, hw_facts.ENV: str(tmp_path / "absent.json")}
    r = _teflon(["doctor", "--experiments", "--json", str(out)], env)
    assert r.returncode == 0, r.stdout + r.stderr
    d = json.loads(out.read_text())
    assert d["schema"] == hw_facts.SCHEMA and d["simulated"] is True and d["soc"] is None
    assert {"kernel", "driver", "machine", "teflon", "checks"} <= set(d)
    assert [f["number"] for f in d["facts"]] == [1, 2, 3, 4, 5, 6, 7]
    for f in d["facts"]:
        assert {"id", "hypotheses", "verdict", "evidence", "runs", "soc", "simulated"} <= set(f), f
        assert f["verdict"] == DEFAULT_VERDICT[f["id"]], f
        assert all({"variant", "outcome", "ms"} <= set(run) for run in f["runs"]), f
    for f in experiments.FACTS:
        assert f"fact {f.number} {f.id}" in r.stdout, r.stdout
    assert "hw facts" in r.stdout and "TEFLON_HW_FACTS ignored" in r.stdout
    assert not hw_facts.parse(d, str(out)).proved  # a run without an NPU proves nothing


def test_doctor_experiments_through_the_shim_use_the_device_node(tmp_path: Path) -> None:
    """Under the rocket ioctl shim (docs/shim.md) doctor runs the experiments with sim=0 through the real kernel
    client, only those of the shim's SoC, and the rules reach the shim's simulated kernel."""
    from shim import find_shim

    shim = find_shim("rocket", "libteflon_rocket_shim.so", "TEFLON_ROCKET_SHIM", "/dev/accel/accel0",
                     tmp_path / "probe.log", "rk3588")
    out = tmp_path / "report.json"
    env = shim.env(tmp_path / "shim.log", "rk3588",
                   TEFLON_SIM_RULES="ew_mul=sat32,ew_tie=half_up,partial_groups=timeout")
    r = _teflon(["doctor", "--experiments", "--json", str(out)], env)
    d = json.loads(out.read_text())
    verdicts = {f["id"]: f["verdict"] for f in d["facts"]}
    print(r.stdout)
    assert d["soc"] == "rk3588" and d["simulated"] is True, r.stdout + r.stderr
    assert verdicts == {"ew_mul": "sat32", "ew_tie": "half_up", "direct_pitch": "not applicable on this SoC",
                        "ppu_pad": "not applicable on this SoC", "partial_groups": "timeout",
                        "v7_fc_order": "not applicable on this SoC", "eu_natural": "not applicable on this SoC"}, \
        r.stdout + r.stderr
    assert "SUBMIT" in (tmp_path / "shim.log").read_text()
    # the report of a device node is one the compiler takes (for rk3588 only)
    assert hw_facts.parse(d, str(out)).proved == {"ew_mul": "sat32", "ew_tie": "half_up", "partial_groups": "timeout"}
