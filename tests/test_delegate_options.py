"""The delegate as users meet it from Python: options and their errors, bad model files, CPU fallback for
anything unsupported or failing, and what graph_export hands to the compiler.

Runs under both TFLite runtimes where they are installed. Anything that could crash the process runs in a
subprocess, so a crash fails one test instead of taking pytest down.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

RUNTIMES = [name for name in ("tflite_runtime", "ai_edge_litert") if importlib.util.find_spec(name) is not None]


@pytest.fixture(params=RUNTIMES)
def runtime(request: pytest.FixtureRequest, delegate_library: None) -> str:
    return request.param


def _run(model: bytes, runtime: str, options: dict[str, str] | None) -> np.ndarray:
    """Output of the model on TFLite's builtin kernels, with the delegate when `options` is given."""
    import teflon
    from teflon import modelgen
    from teflon.runtime import make_interpreter

    delegates = [teflon.load_delegate(runtime=runtime, **options)] if options is not None else None
    interp = make_interpreter(model, delegates, reference=True, runtime=runtime)
    for detail, value in zip(interp.get_input_details(), modelgen.random_inputs(model, seed=1)):
        interp.set_tensor(detail["index"], value)
    interp.invoke()
    return interp.get_tensor(interp.get_output_details()[0]["index"])


# ---- options -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"colour": "blue"}, "colour"),
        ({"device": "foo"}, "foo"),
        ({"sim": "2"}, "sim"),
        ({"debug": "yes"}, "debug"),
    ],
    ids=lambda v: "-".join(f"{k}={x}" for k, x in v.items()) if isinstance(v, dict) else None,
)
def test_bad_options_raise_value_error_naming_them(runtime: str, options: dict[str, str], named: str) -> None:
    import teflon

    with pytest.raises(ValueError, match=named):
        teflon.load_delegate(runtime=runtime, **options)


def test_sim0_without_device_node_is_refused(runtime: str) -> None:
    import teflon

    if Path("/dev/accel").exists():
        pytest.skip("this machine has an accel device node")
    with pytest.raises(ValueError, match="sim"):
        teflon.load_delegate(runtime=runtime, device="rk3588", sim="0")


@pytest.mark.parametrize("options", [{}, {"device": "auto"}, {"device": "rk3588", "sim": "1"}, {"debug": True},
                                     {"device": "a311d", "sim": "1"}, {"device": "imx8mp", "sim": "1"}],
                         ids=["defaults", "auto", "rk3588-sim1", "debug", "a311d-sim1", "imx8mp-sim1"])
def test_good_options_load(runtime: str, options: dict[str, object]) -> None:
    import teflon

    assert teflon.load_delegate(runtime=runtime, **options) is not None


def test_library_override(monkeypatch: pytest.MonkeyPatch) -> None:
    import teflon

    monkeypatch.setenv("TEFLON_LIBRARY", "/nowhere/libteflon.so")
    assert teflon.delegate_path() == "/nowhere/libteflon.so"


# ---- bad model files (subprocess: a crash must not take pytest down) ----------------------------

_CORRUPT_SCRIPT = textwrap.dedent(
    """
    import sys
    import teflon
    from teflon.runtime import interpreter_module

    runtime, path = sys.argv[1], sys.argv[2]
    try:
        delegate = teflon.load_delegate(runtime=runtime, device="rk3588", sim="1")
        interp = interpreter_module(runtime).Interpreter(model_path=path, experimental_delegates=[delegate])
        interp.allocate_tensors()
        interp.invoke()
        print("RESULT ran")
    except (ValueError, RuntimeError) as exc:
        print("RESULT error", type(exc).__name__, str(exc).replace(chr(10), " ")[:300])
    """
)


def _corruptions(model: bytes) -> dict[str, bytes]:
    flipped = bytearray(model)
    middle = len(model) // 3
    flipped[middle : middle + 64] = bytes(b ^ 0x5A for b in flipped[middle : middle + 64])
    return {
        "empty": b"",
        "garbage": bytes(range(256)) * 8,
        "truncated": model[: len(model) // 2],
        "flipped": bytes(flipped),
    }


@pytest.mark.parametrize("kind", ["empty", "garbage", "truncated", "flipped"])
def test_corrupt_model_gives_error_not_crash(runtime: str, kind: str, tmp_path: Path) -> None:
    from teflon import modelgen

    model = modelgen.ConvCase("conv2d", 8, 8, 16, 16).build()
    path = tmp_path / f"{kind}.tflite"
    path.write_bytes(_corruptions(model)[kind])
    r = subprocess.run([sys.executable, "-c", _CORRUPT_SCRIPT, runtime, str(path)], check=False,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"crashed (exit {r.returncode}):\n{r.stdout}\n{r.stderr}"
    result = [line for line in r.stdout.splitlines() if line.startswith("RESULT")]
    assert result, r.stdout + r.stderr
    if kind in ("empty", "garbage"):
        assert result[0].startswith("RESULT error") and len(result[0]) > len("RESULT error ValueError "), result[0]
    # tflite_runtime 2.14 does not verify model files, so a damaged-but-parsable model may still run;
    # what matters here is a clear error or a run, never a crash.


# ---- CPU fallback -------------------------------------------------------------------------------


def test_unsupported_op_falls_back_to_cpu(runtime: str) -> None:
    from teflon import bridge, modelgen

    # an AVERAGE_POOL_2D whose windows read padding (TFLite divides by the valid count): neither PPU nor DPU
    model = modelgen.PoolCase(8, 8, 16, filter=3, stride=1, padding="same", dtype="int8").build()
    with bridge.capture() as cap:
        got = _run(model, runtime, {"device": "rk3588", "sim": "1"})
    np.testing.assert_array_equal(got, _run(model, runtime, None))
    assert len(cap.support) == 1
    graph, decisions = cap.support[0]
    assert [op.kind for op in graph.operations] == ["AVERAGE_POOL_2D"]
    claimed, reason = decisions[graph.operations[0].index]
    assert not claimed and reason
    assert cap.programs == []


def test_support_exception_falls_back_to_cpu(runtime: str, monkeypatch: pytest.MonkeyPatch,
                                             capfd: pytest.CaptureFixture[str]) -> None:
    from teflon import compiler, modelgen

    def broken(*args: object) -> None:
        raise RuntimeError("support exploded")

    monkeypatch.setattr(compiler, "supported", broken)
    model = modelgen.ConvCase("conv2d", 8, 8, 16, 16).build()
    got = _run(model, runtime, {"device": "rk3588", "sim": "1"})
    np.testing.assert_array_equal(got, _run(model, runtime, None))
    err = capfd.readouterr().err
    assert "support exploded" in err and "whole graph on the CPU" in err


def test_compile_exception_drops_partition(runtime: str, monkeypatch: pytest.MonkeyPatch,
                                           capfd: pytest.CaptureFixture[str]) -> None:
    from teflon import bridge, compiler, modelgen

    def claim_all(graph: object, device: str) -> dict[int, tuple[bool, str]]:
        return {op.index: (True, "claimed by the test") for op in graph.operations}  # type: ignore[attr-defined]

    def broken(*args: object) -> None:
        raise RuntimeError("compile exploded")

    monkeypatch.setattr(compiler, "supported", claim_all)
    monkeypatch.setattr(compiler, "compile", broken)
    model = modelgen.PoolCase(8, 8, 16, after_conv=True).build()
    with bridge.capture() as cap:
        got = _run(model, runtime, {"device": "rk3588", "sim": "1"})
    np.testing.assert_array_equal(got, _run(model, runtime, None))
    assert len(cap.failures) == 1 and "compile exploded" in cap.failures[0][1]
    assert sorted(cap.failures[0][0]) == [0, 1]
    assert "compile exploded" in capfd.readouterr().err


def test_verbose_table(runtime: str, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from teflon import modelgen

    monkeypatch.setenv("TEFLON_DEBUG", "verbose")
    _run(modelgen.PoolCase(8, 8, 16, filter=3, stride=1, padding="same", dtype="int8").build(), runtime,
         {"device": "rk3588"})  # an average that reads padding: on the CPU
    err = capfd.readouterr().err
    assert "AVERAGE_POOL_2D" in err and "0 of 1 nodes claimed" in err


@pytest.mark.parametrize(("value", "debug"), [("1", True), ("true", True), ("YES", True), ("On", True),
                                              ("verbose", True), ("debug", True), ("0", False), ("false", False),
                                              ("no", False), ("OFF", False), ("", False), ("banana", False)],
                         ids=lambda v: f"TEFLON_DEBUG={v or 'empty'}" if isinstance(v, str) else None)
def test_teflon_debug_spellings(value: str, debug: bool, capfd: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch, delegate_library: None) -> None:
    import teflon

    monkeypatch.setenv("TEFLON_DEBUG", value)
    teflon.load_delegate(device="rk3588", sim="1")
    err = capfd.readouterr().err
    assert ("delegate created for rk3588" in err) == debug, err
    warnings = [line for line in err.splitlines() if "TEFLON_DEBUG" in line]
    assert len(warnings) == (1 if value == "banana" else 0), err
    assert all("not understood" in w and "banana" in w for w in warnings)


_REFUSAL_SCRIPT = textwrap.dedent(
    """
    import sys
    import teflon

    try:
        teflon.load_delegate(runtime=sys.argv[1], colour="blue")
    except ValueError as exc:
        print("REFUSED", str(exc).replace(chr(10), " | "))
    """
)


def test_refused_option_is_reported_once(runtime: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TEFLON_DEBUG"}
    r = subprocess.run([sys.executable, "-c", _REFUSAL_SCRIPT, runtime], check=False, capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0 and "REFUSED" in r.stdout, r.stdout + r.stderr
    assert (r.stdout + r.stderr).count("unknown option 'colour'") == 1, r.stdout + r.stderr


# ---- what the compiler receives -----------------------------------------------------------------


def test_graph_export_conv_per_channel(runtime: str) -> None:
    from teflon import bridge, modelgen

    case = modelgen.ConvCase("conv2d", 10, 12, 8, 24, kernel=3, stride=2, padding="valid", activation="relu",
                             dtype="int8", per_channel=True)
    with bridge.capture() as cap:
        _run(case.build(), runtime, {"device": "rk3588", "sim": "1"})
    graph, _ = cap.support[0]
    (op,) = graph.operations
    assert op.kind == "CONV_2D"
    assert op.options["padding"] == "VALID" and op.options["activation"] == "RELU"
    assert (op.options["stride_w"], op.options["stride_h"]) == (2, 2)
    assert (op.options["dilation_w"], op.options["dilation_h"]) == (1, 1)
    x, w, b = (graph.tensors[t] for t in op.inputs)
    y = graph.tensors[op.outputs[0]]
    assert x.shape == (1, 10, 12, 8) and x.dtype == "int8" and not x.is_constant
    assert y.shape == (1, 4, 5, 24) and y.quant is not None and y.quant.per_tensor
    assert w.is_constant and w.data is not None and w.data.shape == (24, 3, 3, 8) and w.data.dtype == np.int8
    assert w.quant is not None and w.quant.axis == 0 and w.quant.scales.shape == (24,)
    assert not w.quant.per_tensor and np.all(w.quant.scales > 0)
    assert b.is_constant and b.data is not None and b.data.dtype == np.int32 and b.data.shape == (24,)
    assert b.quant is not None
    np.testing.assert_allclose(b.quant.scales, x.quant.scale * w.quant.scales, rtol=1e-6)  # type: ignore[union-attr]


def test_graph_export_depthwise_options(runtime: str) -> None:
    from teflon import bridge, modelgen

    case = modelgen.ConvCase("dwconv", 9, 9, 16, kernel=3, stride=1, padding="same", activation="relu6")
    with bridge.capture() as cap:
        _run(case.build(), runtime, {"device": "rk3588", "sim": "1"})
    (op,) = cap.support[0][0].operations
    assert op.kind == "DEPTHWISE_CONV_2D"
    assert op.options["padding"] == "SAME" and op.options["activation"] == "RELU6"
    assert op.options["depth_multiplier"] == 1 and op.options["stride_w"] == 1


@pytest.mark.parametrize(("compatible", "soc"), [("rockchip,rk3576-rknn-core", "rk3576"),
                                                 ("rockchip,rk3588-rknn-core", "rk3588"),
                                                 ("rockchip,rk3568-rknn-core", "rk3568")])
def test_device_auto_follows_the_npu_cores_devicetree(compatible: str, soc: str, tmp_path: Path) -> None:
    """device=auto names the SoC from the rocket cores' devicetree compatible (a fake sysfs here: no node in
    /dev, so the simulator of that SoC serves)."""
    from fakesysfs import fake_rocket_sysfs

    root = fake_rocket_sysfs(tmp_path, {"27700000.npu": compatible})
    code = "import teflon\nteflon.load_delegate(device='auto', debug='1')\n"
    env = {**os.environ, "TEFLON_SYSFS_ROOT": str(root)}
    r = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"delegate created for {soc} (simulated NPU)" in r.stderr, r.stderr


@pytest.mark.parametrize(("compatible", "expected"), [("rockchip,rk3562-rknn-core", "rk3562")],
                         ids=["unknown-rk3562"])
def test_device_auto_refuses_an_unknown_rockchip_npu(compatible: str, expected: str, tmp_path: Path) -> None:
    """An NPU core this build does not know is refused."""
    from fakesysfs import fake_rocket_sysfs

    root = fake_rocket_sysfs(tmp_path, {"fde40000.npu": compatible})
    code = ("import teflon\ntry:\n    teflon.load_delegate(device='auto')\nexcept ValueError as e:\n"
            "    print('refused:', e)\n")
    env = {**os.environ, "TEFLON_SYSFS_ROOT": str(root)}
    r = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "refused:" in r.stdout and expected in r.stdout, r.stdout + r.stderr
