"""What a user meets when something is wrong: damaged model files given to every CLI command and to
`teflon.load_delegate` + `make_interpreter` under both runtimes (one line on stderr, rc 1, never a signal),
refused options, bad flag values, models with nothing delegated, closed pipes; and the model verifier itself.

Every case that could crash runs in a subprocess: tflite_runtime 2.14 does not verify flatbuffers and dies with
SIGSEGV on a truncated model, which is what teflon.modelcheck exists to prevent.
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

from conftest import shared_path

RUNTIMES = [name for name in ("tflite_runtime", "ai_edge_litert") if importlib.util.find_spec(name) is not None]
COMMANDS = ["classify", "inspect", "regcmd", "bench"]
KINDS = ["empty", "truncated", "random", "not-a-model"]
REAL_MODEL = "mobilenet_v1_0.25_128_quant.tflite"
TRUNCATED_BYTES = 175_199  # the length of the truncated MobileNet


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("TEFLON_DEBUG", None)
    return env


def teflon_cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "teflon", *args], check=False, capture_output=True, text=True,
                          env=_env(), timeout=timeout)


def _small_model() -> bytes:
    from teflon import modelgen

    return modelgen.ConvCase("conv2d", 16, 16, 16, 32).build()


def _damaged(kind: str) -> bytes:
    if kind == "empty":
        return b""
    if kind == "random":
        return np.random.default_rng(9).integers(0, 256, 4096, dtype=np.uint8).tobytes()
    if kind == "not-a-model":
        return b"\x89PNG\r\n\x1a\n" + b"this is an image, not a model\n" * 20
    shared = shared_path()
    real = shared / "models" / REAL_MODEL if shared is not None else None
    if real is not None and real.is_file():
        return real.read_bytes()[:TRUNCATED_BYTES]
    model = _small_model()
    return model[: len(model) // 2]


@pytest.fixture(scope="module")
def small_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One modelgen convolution (nothing from ../shared needed)."""
    path = tmp_path_factory.mktemp("model") / "conv.tflite"
    path.write_bytes(_small_model())
    return path


@pytest.fixture(scope="module")
def damaged_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("damaged")
    files = {}
    for kind in KINDS:
        files[kind] = root / f"{kind}.tflite"
        files[kind].write_bytes(_damaged(kind))
    return files


def _assert_one_line_error(r: subprocess.CompletedProcess[str], prefix: str) -> None:
    assert r.returncode == 1, f"rc {r.returncode} (negative = killed by a signal)\n{r.stdout}\n{r.stderr}"
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix), r.stderr
    assert "not a valid .tflite model" in lines[0], lines[0]


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("kind", KINDS)
def test_damaged_model_is_a_one_line_error(damaged_files: dict[str, Path], kind: str, command: str,
                                           runtime: str, delegate_library: None) -> None:
    extra = ["--image", str(damaged_files["not-a-model"])] if command == "classify" else []
    r = teflon_cli(command, "--model", str(damaged_files[kind]), "--runtime", runtime, "--device", "rk3588",
                   "--sim", "1", *extra)
    _assert_one_line_error(r, f"teflon {command}: error: ")


_SCRIPT = textwrap.dedent(
    """
    import sys
    import teflon
    from teflon.runtime import make_interpreter

    runtime, path = sys.argv[1], sys.argv[2]
    try:
        delegate = teflon.load_delegate(runtime=runtime, device="rk3588", sim="1")
        make_interpreter(path, [delegate], runtime=runtime).invoke()
    except ValueError as exc:
        print(f"script: {exc}", file=sys.stderr)
        sys.exit(1)
    """
)


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("kind", KINDS)
def test_damaged_model_through_load_delegate_and_make_interpreter(damaged_files: dict[str, Path], kind: str,
                                                                  runtime: str, delegate_library: None) -> None:
    r = subprocess.run([sys.executable, "-c", _SCRIPT, runtime, str(damaged_files[kind])], check=False,
                       capture_output=True, text=True, env=_env(), timeout=120)
    _assert_one_line_error(r, "script: not a valid .tflite model: ")


def test_missing_model_is_a_one_line_error(tmp_path: Path) -> None:
    r = teflon_cli("inspect", "--model", str(tmp_path / "missing.tflite"))
    assert r.returncode == 1 and len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith("teflon inspect: error: ") and "missing.tflite" in r.stderr


# ---- the verifier in process: every truncation and random damage ends in ModelError, nothing else -----------

def test_every_truncation_is_refused_by_the_verifier() -> None:
    from teflon.modelcheck import ModelError, check_buffer

    model = _small_model()
    check_buffer(model)
    for n in range(0, len(model), max(1, len(model) // 600)):
        with pytest.raises(ModelError, match="not a valid .tflite model"):
            check_buffer(model[:n])


def test_random_damage_raises_model_error_or_passes() -> None:
    from teflon.modelcheck import ModelError, check_buffer

    model = _small_model()
    rng = np.random.default_rng(3)
    for _ in range(500):
        b = bytearray(model)
        b[int(rng.integers(0, len(b)))] = int(rng.integers(0, 256))
        try:
            check_buffer(bytes(b))
        except ModelError:
            pass


def test_verify_model_accepts_the_shared_models() -> None:
    import teflon

    shared = shared_path()
    models = sorted((shared / "models").glob("*.tflite")) if shared is not None else []
    if not models:
        pytest.skip("no models in ../shared/models")
    for m in models:
        teflon.verify_model(m)
        teflon.verify_model(m.read_bytes())


# ---- options -----------------------------------------------------------------------------------------------

def _has_check_options() -> bool:
    from teflon.native import library

    return hasattr(library(), "teflon_check_options")


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_refused_option_is_one_value_error_naming_it(runtime: str, delegate_library: None,
                                                     capfd: pytest.CaptureFixture[str]) -> None:
    """Checked before the runtime loads the library: no "Failed to load delegate", nothing printed."""
    import teflon

    if not _has_check_options():
        pytest.skip("libteflon.so does not export teflon_check_options yet")
    with pytest.raises(ValueError) as info:
        teflon.load_delegate(runtime=runtime, device="rk3588", colour="blue")
    assert "colour" in str(info.value) and "\n" not in str(info.value) and "Failed to load" not in str(info.value)
    assert capfd.readouterr().err == ""


def test_cli_refused_option_is_one_line(small_model: Path, delegate_library: None) -> None:
    r = teflon_cli("inspect", "--model", str(small_model), "-o", "colour=blue")
    assert r.returncode == 1, r.stderr
    assert r.stderr.splitlines()[-1].startswith("teflon inspect: error: ") and "colour" in r.stderr
    if _has_check_options():
        assert len(r.stderr.splitlines()) == 1, r.stderr


# ---- flags, bench, pipes ------------------------------------------------------------------------------------

def test_version() -> None:
    import teflon

    r = teflon_cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"teflon {teflon.__version__}", r.stdout + r.stderr


@pytest.mark.parametrize("flag", ["--runs", "--top-k", "--threads"])
def test_classify_counts_must_be_positive(flag: str) -> None:
    r = teflon_cli("classify", "--model", "m.tflite", "--image", "i.bmp", flag, "0")
    assert r.returncode == 2 and flag in r.stderr and "at least 1" in r.stderr, r.stderr


def test_bench_runs_zero_is_refused() -> None:
    r = teflon_cli("bench", "--model", "m.tflite", "--runs", "0")
    assert r.returncode == 2 and "--runs" in r.stderr and "at least 1" in r.stderr, r.stderr


def test_bench_with_nothing_delegated_says_so_and_records_only_when_asked(tmp_path: Path,
                                                                          delegate_library: None) -> None:
    from teflon.modelgen import AddCase

    model = tmp_path / "add.tflite"
    model.write_bytes(AddCase(8, 8, 1).build())  # a lone ADD of single-channel maps: rocket leaves it on the CPU
    perf = tmp_path / "PERFORMANCE.md"
    r = teflon_cli("bench", "--model", str(model), "--device", "rk3588", "--sim", "1", "--runs", "1",
                   "--perf-file", str(perf))
    assert r.returncode == 0, r.stderr
    assert "nothing delegated: the whole model runs on the CPU" in r.stdout, r.stdout
    assert "NPU invoke" not in r.stdout and "ratio" not in r.stdout, r.stdout
    assert not perf.exists()  # no --record, no row
    r = teflon_cli("bench", "--model", str(model), "--device", "rk3588", "--sim", "1", "--runs", "1",
                   "--perf-file", str(perf), "--record")
    assert r.returncode == 0, r.stderr
    rows = [line for line in perf.read_text().splitlines() if line.startswith("| 20")]
    assert len(rows) == 1 and "nothing delegated" in rows[0], rows


@pytest.mark.parametrize("command", ["inspect", "regcmd"])
def test_closed_stdout_exits_quietly(command: str, small_model: Path, delegate_library: None) -> None:
    """`python -m teflon inspect ... | head -1`: the reader goes away; no traceback, no message, rc 0."""
    p = subprocess.Popen([sys.executable, "-m", "teflon", command, "--model", str(small_model),
                          "--device", "rk3588", "--sim", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=_env())
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()  # before the command writes anything: every write meets a closed pipe
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 0, err
    assert "Traceback" not in err and "Broken pipe" not in err and "Errno" not in err, err


# ---- classify's flags -------------------------------------------------------------------------------------

def test_classify_top_k_threads_without_labels(delegate_library: None, shared_dir: Path) -> None:
    models = shared_dir / "models"
    if not (models / REAL_MODEL).is_file():
        pytest.skip(f"{REAL_MODEL} not in {models}")
    r = teflon_cli("classify", "--model", str(models / REAL_MODEL), "--image", str(models / "grace_hopper.bmp"),
                   "--device", "rk3588", "--sim", "1", "--top-k", "3", "--threads", "2", "-o", "debug=0")
    assert r.returncode == 0, r.stderr
    scores = [line.split() for line in r.stdout.splitlines() if line[:1].isdigit()]
    assert len(scores) == 3 and all(len(s) == 2 and s[1].isdigit() for s in scores), r.stdout
    assert scores[0][1] == "401", r.stdout  # academic gown, the CPU's top-1 (../shared/models/README.md)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_classify_cpu_names_what_ran(runtime: str, shared_dir: Path) -> None:
    models = shared_dir / "models"
    if not (models / REAL_MODEL).is_file():
        pytest.skip(f"{REAL_MODEL} not in {models}")
    r = teflon_cli("classify", "--model", str(models / REAL_MODEL), "--image", str(models / "grace_hopper.bmp"),
                   "--cpu", "--runtime", runtime, "--top-k", "1")
    assert r.returncode == 0, r.stderr
    where = next(line for line in r.stdout.splitlines() if line.startswith("running on:"))
    assert runtime in where, where
    # ai_edge_litert applies XNNPACK by default, tflite_runtime 2.14's wheel does not: the label follows the plan
    assert ("XNNPACK" in where) == (runtime == "ai_edge_litert"), where


def test_float_input_is_normalised_with_mean_and_std() -> None:
    from teflon.cli.classify import model_input

    pixels = np.array([[[0, 127, 255]]], dtype=np.uint8)
    x = model_input(pixels, np.dtype(np.float32), 127.5, 127.5)
    assert x.dtype == np.float32 and np.allclose(x, (pixels - 127.5) / 127.5)
    assert model_input(pixels, np.dtype(np.int8), 0, 1).tolist() == [[[-128, -1, 127]]]
    assert model_input(pixels, np.dtype(np.uint8), 0, 1) is pixels


def test_bench_times_a_fresh_process_compile_from_cache(small_model: Path, tmp_path: Path,
                                                                          delegate_library: None) -> None:
    import teflon

    teflon.load_delegate(device="rk3588", sim="1", cache_dir=str(tmp_path))
    perf = tmp_path / "PERFORMANCE.md"
    r = teflon_cli("bench", "--model", str(small_model), "--device", "rk3588", "--sim", "1", "--runs", "1",
                   "--record", "--perf-file", str(perf))
    assert r.returncode == 0, r.stderr
    assert "ms cold (empty cache)" in r.stdout and "ms from the cache" in r.stdout, r.stdout
    assert "from cache" in perf.read_text().splitlines()[-1]
