"""The delegate's compiled-program cache (delegate/cache.c): a second process compiles nothing, damaged entries
are detected and rebuilt, concurrent writers leave whole entries, the size limit evicts, and the options are
checked (also through the exported teflon_check_options).

Every "process" is a fresh Python subprocess: the cache matters across processes, and a fresh process is the
only way to show that a full hit never starts the Python compiler.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from teflon import cache

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("TEFLON_SHARED", REPO.parent / "shared"))
MOBILENET_V2 = SHARED / "models" / "mobilenet_v2_1.0_224_quant.tflite"

# One process: build an interpreter per model with the given options, time Interpreter() .. allocate_tensors(),
# run it on seeded inputs and print a digest of the outputs.
_SCRIPT = textwrap.dedent(
    """
    import hashlib, json, sys, time
    import teflon
    from teflon import modelgen
    from teflon.runtime import interpreter_module

    models, options = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    Interpreter = interpreter_module(None).Interpreter
    for path in models:
        delegate = teflon.load_delegate(**options)
        t0 = time.perf_counter()
        interp = Interpreter(model_path=path, experimental_delegates=[delegate])
        interp.allocate_tensors()
        ms = 1e3 * (time.perf_counter() - t0)
        with open(path, "rb") as f:
            inputs = modelgen.random_inputs(f.read(), seed=3)
        for detail, value in zip(interp.get_input_details(), inputs):
            interp.set_tensor(detail["index"], value)
        interp.invoke()
        digest = hashlib.sha256()
        for detail in interp.get_output_details():
            digest.update(interp.get_tensor(detail["index"]).tobytes())
        compiler = "teflon.compiler" in sys.modules  # a full hit never imports (or starts) the Python compiler
        print("RESULT", json.dumps({"model": path, "ms": ms, "out": digest.hexdigest(), "compiler": compiler}),
              flush=True)
    """
)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TEFLON_DEBUG", "TEFLON_CACHE_DIR")}
    env.update(extra)
    return env


def _start(models: list[Path], options: dict[str, str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", _SCRIPT, json.dumps([str(m) for m in models]), json.dumps(options)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env or _env())


def _finish(proc: subprocess.Popen[str]) -> tuple[list[dict[str, object]], str]:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{out}\n{err}"
    results = [json.loads(line.split(" ", 1)[1]) for line in out.splitlines() if line.startswith("RESULT ")]
    return results, err


def _run(models: list[Path], options: dict[str, str], env: dict[str, str] | None = None
         ) -> tuple[list[dict[str, object]], str]:
    return _finish(_start(models, options, env))


def _partition_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("teflon: partition ") and ": program " in line]


@pytest.fixture(scope="module")
def conv_models(tmp_path_factory: pytest.TempPathFactory, delegate_library: None) -> list[Path]:
    from teflon import modelgen

    folder = tmp_path_factory.mktemp("models")
    cases = [modelgen.ConvCase("conv2d", 16, 16, 16, 32, kernel=3), modelgen.ConvCase("dwconv", 12, 12, 32, kernel=3),
             modelgen.ConvCase("conv2d", 8, 8, 64, 64, kernel=3, stride=2)]
    paths = []
    for case in cases:
        path = folder / f"{case.name}.tflite"
        path.write_bytes(case.build())
        paths.append(path)
    return paths


def _options(device: str, folder: Path, **extra: str) -> dict[str, str]:
    return {"device": device, "sim": "1", "debug": "1", "cache_dir": str(folder), **extra}


# ---- a second process compiles nothing ----------------------------------------------------------


@pytest.mark.parametrize("device", ["rk3588", "rk3576"])
def test_mobilenet_v2_second_process_hits_every_partition(device: str, tmp_path: Path, delegate_library: None) -> None:
    if not MOBILENET_V2.is_file():
        pytest.skip(f"{MOBILENET_V2} not found")
    options = _options(device, tmp_path / "programs")
    (cold,), cold_err = _run([MOBILENET_V2], options)
    (warm,), warm_err = _run([MOBILENET_V2], options)
    print(f"{device} MobileNetV2: cold compile {cold['ms']:.1f} ms, from the cache {warm['ms']:.1f} ms "
          f"({100 * float(warm['ms']) / float(cold['ms']):.1f} %)")  # type: ignore[arg-type]
    cold_parts, warm_parts = _partition_lines(cold_err), _partition_lines(warm_err)
    assert cold_parts and all("compiled and stored in the cache" in line for line in cold_parts), cold_err
    assert len(warm_parts) == len(cold_parts) and all("read from the cache" in line for line in warm_parts), warm_err
    assert "support decisions from cache" in warm_err and "nodes claimed for the NPU" in warm_err
    assert warm["out"] == cold["out"]
    assert cold["compiler"] and not warm["compiler"]
    assert cache.verify(tmp_path / "programs") == []


def test_modelgen_second_process_hits_and_environment_is_keyed(conv_models: list[Path], tmp_path: Path) -> None:
    options = _options("rk3588", tmp_path)
    cold, _ = _run(conv_models, options)
    warm, err = _run(conv_models, options)
    parts = _partition_lines(err)
    assert len(parts) == len(conv_models) and all("read from the cache" in line for line in parts), err
    assert [r["out"] for r in warm] == [r["out"] for r in cold]
    assert not any(r["compiler"] for r in warm)
    # A compiler switch in the environment changes programs, so it is part of the key.
    _, err = _run(conv_models[:1], options, _env(TEFLON_ROCKET_FUSE_ADD="1"))
    assert all("compiled and stored" in line for line in _partition_lines(err)), err


def test_cache_dir_environment_variable(conv_models: list[Path], tmp_path: Path) -> None:
    env = _env(TEFLON_CACHE_DIR=str(tmp_path))
    _run(conv_models[:1], {"device": "rk3588", "sim": "1"}, env)
    assert len(cache.entries(tmp_path / "programs")) == 2  # the support decisions and one program
    # An explicit empty cache_dir turns the cache off whatever the environment says.
    _, err = _run(conv_models[:1], {"device": "rk3588", "sim": "1", "debug": "1", "cache_dir": ""}, env)
    assert "program compiled in" in err and "cache" not in err.replace("program compiled in", ""), err


# ---- damaged entries ---------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["flip-payload-byte", "flip-header-byte", "truncate", "empty"])
def test_corrupt_entry_is_detected_and_rebuilt(damage: str, conv_models: list[Path], tmp_path: Path) -> None:
    options = _options("rk3576", tmp_path)
    (cold,), _ = _run(conv_models[:1], options)
    (program,) = [p for p in cache.entries(tmp_path) if p.name.startswith("p-")]
    data = bytearray(program.read_bytes())
    if damage == "flip-payload-byte":
        data[len(data) // 2] ^= 0x01
    elif damage == "flip-header-byte":
        data[1] ^= 0x20
    elif damage == "truncate":
        data = data[: len(data) - 100]
    else:
        data = bytearray()
    program.write_bytes(bytes(data))
    assert cache.verify(tmp_path) != []
    (again,), err = _run(conv_models[:1], options)
    assert f"cache entry {program} is corrupt (" in err and "recompiling" in err, err
    assert all("compiled and stored in the cache" in line for line in _partition_lines(err)), err
    assert again["out"] == cold["out"]
    assert cache.verify(tmp_path) == []
    _, err = _run(conv_models[:1], options)
    assert all("read from the cache" in line for line in _partition_lines(err)), err


# ---- concurrency, size limit, unusable directory ------------------------------------------------


def test_two_processes_fill_one_cache_at_once(conv_models: list[Path], tmp_path: Path) -> None:
    options = _options("rk3588", tmp_path)
    procs = [_start(conv_models, options), _start(list(reversed(conv_models)), options)]
    results = [_finish(p)[0] for p in procs]
    assert sorted(r["out"] for r in results[0]) == sorted(r["out"] for r in results[1])  # type: ignore[type-var]
    assert cache.verify(tmp_path) == []
    assert len(cache.entries(tmp_path)) == 2 * len(conv_models)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]
    _, err = _run(conv_models, options)
    assert all("read from the cache" in line for line in _partition_lines(err)), err


def test_size_limit_evicts_least_recently_used(conv_models: list[Path], tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "programs"
    _run(conv_models[1:2], _options("rk3588", first))
    needed = sum(p.stat().st_size for p in cache.entries(first))
    _run(conv_models[:1], _options("rk3588", second))
    old = set(cache.entries(second))
    # Room for the newest model's two entries only: the older model's entries go.
    limit_mb = f"{(needed + 64) / 2**20:.9f}"
    _, err = _run(conv_models[1:2], _options("rk3588", second, cache_max_mb=limit_mb))
    left = set(cache.entries(second))
    assert not (left & old) and len(left) == 2, err
    assert sum(p.stat().st_size for p in left) <= needed + 64
    assert "evicted" in err


def test_unwritable_cache_dir_compiles_normally(conv_models: list[Path], tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    (result,), err = _run(conv_models[:1], _options("rk3588", blocker / "programs"))
    assert "unusable" in err and len([line for line in err.splitlines() if "unusable" in line]) == 1, err
    assert all("program compiled in" in line for line in _partition_lines(err)), err
    (plain,), _ = _run(conv_models[:1], {"device": "rk3588", "sim": "1"})
    assert result["out"] == plain["out"]


# ---- options -----------------------------------------------------------------------------------

BAD_MAX_MB = ["0", "-1", "abc", "", "inf", "nan", "1e7", "12MB"]


@pytest.mark.parametrize("value", BAD_MAX_MB, ids=lambda v: f"cache_max_mb={v or 'empty'}")
def test_bad_cache_max_mb_is_refused(value: str, delegate_library: None) -> None:
    import teflon

    with pytest.raises(ValueError, match="cache_max_mb"):
        teflon.load_delegate(device="rk3588", sim="1", cache_max_mb=value)


def _check_options(options: dict[str, str]) -> tuple[int, str]:
    import cffi

    import teflon

    ffi = cffi.FFI()
    ffi.cdef("int teflon_check_options(const char *const *keys, const char *const *values, size_t n, char *err, "
             "size_t errlen);")
    lib = ffi.dlopen(teflon.delegate_path())
    keepalive = [ffi.new("char[]", s.encode()) for kv in options.items() for s in kv]
    keys = ffi.new("const char *[]", keepalive[0::2] or [ffi.NULL])
    values = ffi.new("const char *[]", keepalive[1::2] or [ffi.NULL])
    err = ffi.new("char[512]")
    rc = lib.teflon_check_options(keys, values, len(options), err, len(err))
    return rc, ffi.string(err).decode()


@pytest.mark.parametrize(
    ("options", "named"),
    [({"cache_max_mb": "0"}, "cache_max_mb"), ({"cache_max_mb": "x"}, "cache_max_mb"), ({"colour": "blue"}, "colour"),
     ({"device": "foo"}, "device"), ({"sim": "2"}, "sim"), ({"debug": "maybe"}, "debug")],
    ids=lambda v: "-".join(f"{k}={x}" for k, x in v.items()) if isinstance(v, dict) else None,
)
def test_check_options_refuses_naming_the_option(options: dict[str, str], named: str, delegate_library: None) -> None:
    rc, err = _check_options(options)
    assert rc == -1 and named in err and err.startswith("teflon: ") and "\n" not in err, err


@pytest.mark.parametrize("options", [{}, {"device": "rk3576", "sim": "1", "cache_dir": "/tmp/x", "cache_max_mb": "0.5"},
                                     {"device": "a311d", "cache_max_mb": "1024", "cache_dir": ""}],
                         ids=["defaults", "rk3576-cache", "a311d-cache-off"])
def test_check_options_accepts(options: dict[str, str], delegate_library: None) -> None:
    assert _check_options(options) == (0, "")


def test_default_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.default_dir() == tmp_path / "teflon" / "programs"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache.default_dir() == Path.home() / ".cache" / "teflon" / "programs"


# ---- the SHA-256 behind keys and checksums, both block functions ---------------------------------


@pytest.mark.parametrize("variant", ["portable", "native"])
def test_sha256_matches_hashlib(variant: str, tmp_path: Path) -> None:
    import hashlib

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    exe = tmp_path / "sha256sum"
    defines = ["-DTEFLON_SHA256_PORTABLE"] if variant == "portable" else []
    subprocess.run([cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", *defines, f"-I{REPO / 'delegate'}",
                    str(REPO / "tests" / "c" / "test_sha256.c"), str(REPO / "delegate" / "sha256.c"), "-o", str(exe)],
                   check=True)
    blob = bytes((i * 131 + 7) & 0xFF for i in range(200_003))
    sizes = [0, 1, 3, 55, 56, 63, 64, 65, 119, 120, 127, 128, 1000, 200_003]
    (tmp_path / "data").write_bytes(blob)
    out = subprocess.run([str(exe), str(tmp_path / "data"), *map(str, sizes)], check=True, capture_output=True,
                         text=True).stdout.split()
    assert out == [hashlib.sha256(blob[:n]).hexdigest() for n in sizes]


def test_program_miss_after_a_support_hit_compiles_its_own_graph(conv_models: list[Path], tmp_path: Path) -> None:
    """Support decisions from the cache, programs not: Python has not seen this Prepare's graph, and must not
    reuse the graph an earlier Prepare converted at the same address (the exported graph lives on Prepare's
    stack, so the address repeats)."""
    reference = {r["model"]: r["out"] for r in _finish(_start(conv_models, {"device": "rk3588", "sim": "1"}))[0]}
    options = _options("rk3588", tmp_path)
    _run(conv_models, options)
    for entry in cache.entries(tmp_path):
        if entry.name.startswith("p-"):
            entry.unlink()
    results, err = _finish(_start(list(reversed(conv_models)), options))
    assert "support decisions read from the cache" in err, err
    assert {r["model"]: r["out"] for r in results} == reference
