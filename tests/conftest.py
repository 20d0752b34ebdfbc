"""Shared pytest setup: import paths, the `slow` marker, and fixtures for the delegate and the shared data.

Delegate tests use the `rk3588_sim` / `rk3576_sim` fixtures (the delegate options of each simulated NPU): they
skip with a clear message while libteflon.so is not built yet (so the suite runs before integration) and fail
instead when TEFLON_REQUIRE_DELEGATE=1 (scripts/test.sh sets it: a fresh machine that built the delegate must
not pass by skipping).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent

# The case tables (tests/opcases.py) are imported by name whatever pytest's import mode is.
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))
# A delegate loaded with no options keeps its programs in the user's cache (delegate.c, default_cache_dir); the
# tests' runs leave no such trace unless a test asks for a cache (set and empty: off).
os.environ.setdefault("TEFLON_CACHE_DIR", "")
# Before `pip install -e .` the package still imports from the source tree (the delegate tests then skip).
if importlib.util.find_spec("teflon") is None:
    sys.path.insert(0, str(REPO / "python"))


def sim_options(device: str) -> dict[str, str]:
    """Delegate options for the simulated NPU of `device`; TEFLON_TEST_SIM=0 asks for the real device instead (the
    op sweeps through an ioctl shim, tests/shim.py)."""
    return {"device": device, "sim": os.environ.get("TEFLON_TEST_SIM", "1")}


def run_model_case(spec: Any, input_path: Path, target: str, record_property: Any) -> Any:
    """One real-model case (teflon.zoo.run.run_case) on `target`'s simulated NPU, its summary printed and its
    figures recorded as JUnit properties; skips when the model or the input file is missing."""
    from teflon.zoo.run import run_case

    if not spec.path.is_file() or not input_path.is_file():
        pytest.skip(f"{spec.path.name} or {input_path.name} missing")
    result = run_case(spec, input_path, target, sim=sim_options(target)["sim"])
    print(result.summary())
    for name, value in result.properties().items():
        record_property(name, value)
    return result


def build_c_test(source: str, out_dir: Path, *flags: str) -> Path:
    """tests/c/<source>.c compiled warning-free (C11, -ldl) into out_dir; skips without a C compiler. $CC names
    another compiler (scripts/test-aarch64.sh: the aarch64 cross compiler)."""
    import shutil
    import subprocess

    cc = shutil.which(os.environ.get("CC", "")) or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    out = out_dir / source
    subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", *flags, str(TESTS / "c" / f"{source}.c"), "-o",
                    str(out), "-ldl"], check=True)
    return out


def device_cases(devices: list[str], cases: Any) -> list[Any]:
    """(device, case) parameters with ids `<device>-<case>`; `cases` is a list or a function of the device."""
    return [pytest.param(d, c, id=f"{d}-{c}") for d in devices for c in (cases(d) if callable(cases) else cases)]


@pytest.fixture
def options(device: str, delegate_library: None) -> dict[str, str]:
    """The delegate options of the test's `device` parameter (its simulated NPU)."""
    return sim_options(device)



def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: long sweeps, excluded from the default run (scripts/test.sh -m slow)")
    config.addinivalue_line("markers", "plain_stage: a case of an ASAN_FILES file that runs in the plain stage "
                                       "(tests/conftest.py)")


def _marked_slow(*owners: object) -> bool:
    for owner in owners:
        marks = getattr(owner, "pytestmark", [])
        if any(getattr(m, "name", None) == "slow" for m in (marks if isinstance(marks, list) else [marks])):
            return True
    return False


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> list[pytest.Item] | None:
    """With `-m "not slow"` (the default run) a test function marked slow as a whole is not expanded into its
    parameters at all: every item it would make carries the mark and is deselected anyway, and building the tens of
    thousands of sweep items only to drop them was most of each process's collection time (each xdist worker, each
    sweep subprocess). Any other marker expression collects as usual."""
    if collector.config.option.markexpr.strip() != "not slow" or not callable(obj) or isinstance(obj, type):
        return None
    if not collector.funcnamefilter(name):  # type: ignore[attr-defined]
        return None
    cls = getattr(collector, "cls", None)
    if _marked_slow(obj, cls, getattr(collector, "module", None)):
        return []
    return None


def _delegate_problem() -> str | None:
    """Why the delegate cannot be loaded, or None when it can."""
    try:
        import teflon
    except ImportError as exc:
        return f"the teflon package does not import ({exc})"
    for attr in ("delegate_path", "load_delegate"):
        if not hasattr(teflon, attr):
            return f"teflon.{attr}() is not there yet"
    try:
        path = Path(teflon.delegate_path())
    except (OSError, RuntimeError, FileNotFoundError) as exc:
        return f"libteflon.so not found ({exc})"
    if not path.is_file():
        return f"libteflon.so not built ({path} missing)"
    return None


@pytest.fixture(scope="session")
def delegate_library() -> None:
    problem = _delegate_problem()
    if problem is None:
        return
    message = f"{problem}; build it with `bash scripts/setup.sh`"
    if os.environ.get("TEFLON_REQUIRE_DELEGATE") == "1":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def rk3588_sim(delegate_library: None) -> dict[str, str]:
    """Delegate options for the simulated RK3588 NPU."""
    return sim_options("rk3588")


@pytest.fixture(scope="session")
def rk3576_sim(delegate_library: None) -> dict[str, str]:
    """Delegate options for the simulated RK3576 NPU."""
    return sim_options("rk3576")


def shared_path() -> Path | None:
    """../shared (or $TEFLON_SHARED) when it exists, else None."""
    env = os.environ.get("TEFLON_SHARED")
    path = Path(env) if env else REPO.parent / "shared"
    return path if path.is_dir() else None


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared (or $TEFLON_SHARED): real models and images; tests skip cleanly without it."""
    path = shared_path()
    if path is None:
        pytest.skip("shared data not found (set TEFLON_SHARED)")
    return path


# The two stages of the default run (scripts/test.sh). The files below run once, in the ASan/UBSan stage
# (scripts/test-asan.sh: `--stage=asan`, against build-asan's instrumented libteflon.so), and are deselected from
# the plain stage before it (`--stage=plain`), which runs everything else against the release build: the
# real-model tests (tests/test_models.py, tests/test_zoo.py), the golden, compiler and CLI tests, the ioctl-shim op
# sweeps and the items of ASAN_LEFT_OUT. Without --stage (any other run, or TEFLON_SKIP_ASAN=1) every test runs.
ASAN_FILES = frozenset(f"tests/{name}.py" for name in (
    "test_dlopen", "test_delegate_options", "test_ops", "test_program_cache", "test_dynamic_shapes",
    "test_native_lifetime", "test_compare", "test_faults", "test_doctor_experiments", "test_random", "test_netgen",
    "test_profile", "rocket/test_sim_rk3588", "rocket/test_sim_mutation", "rocket/test_split_rk3588",
    "rocket/test_ops", "rocket/test_sim_rk3576", "rocket/test_sim_rk3568_golden", "rocket/test_rk3568_status",
    "rocket/test_rk3568_perchannel", "rocket/test_rk3568_shapes", "rocket/test_sim_mutation_rk3568",
    "rocket/test_sim_fast", "rocket/test_kernel_shim", "rocket/test_views", "rocket/test_cores", "rocket/test_clamp",
    "rocket/test_columns_rk3576", "rocket/test_channel_groups_rk3576", "rocket/test_unary_views", "etnaviv/test_ops",
    "etnaviv/test_kernel_shim", "etnaviv/test_counters", "etnaviv/test_sim_fast", "etnaviv/test_views",
    "etnaviv/test_coefs", "ethos_u/test_kernel_sim", "ethos_u/test_kernel_shim", "ethos_u/test_faults",
    "ethos_u/test_vela_passthrough", "ethos_u/test_sim_fast",
))
# Items of those files that stay in the plain stage (file -> substrings of the rest of the node id), each because
# it would only repeat C code that runs instrumented anyway:
#  - the other runtime's cases (ai_edge_litert): the same delegate calls as the tflite_runtime cases beside them;
#  - the op sweeps through the rocket ioctl shim (sim=0): the sweeps themselves run in the ASan stage with sim=1,
#    and the shim's and the real client's code paths by the shim tests' own cases there;
#  - the requantization host (test_sim_fast.py): an executable the test builds with -fsanitize=address,undefined
#    itself, without libteflon, so it runs under ASan in either stage (in the ASan stage the compiler itself would
#    run with the sanitizer runtimes preloaded). The rocket C harness (test_sim_rk3576.py) runs in the ASan stage:
#    there it links the sanitized build's driver libraries instead of compiling every driver source again;
#  - the shared convolution sweep on rk3588/rk3576 (tests/test_ops.py): test_sim_fast.py's test_sweep_best runs
#    the same models (DEFAULT_CONV and the per-channel ones) on both SoCs through the same delegate, on the fast
#    datapath the sweep uses and again on the reference one (its ASan-stage subset executes the C lines and
#    branches of the whole sweep: tests/data/asan_sweep_best.txt).
# The plain stage does not collect the other files of ASAN_FILES at all: a file with plain_stage cases (below) is
# listed here too.
ASAN_LEFT_OUT: dict[str, tuple[str, ...]] = {
    "tests/test_delegate_options.py": ("[ai_edge_litert",),
    "tests/test_compare.py": ("[ai_edge_litert",),
    "tests/rocket/test_ops.py": ("::test_ai_edge_litert[",),
    "tests/rocket/test_kernel_shim.py": ("::test_default_op_sweep_through_shim[",),
    "tests/rocket/test_sim_fast.py": ("::test_requant_kernels",),
    "tests/test_ops.py": ("::test_conv[rk3588-", "::test_conv[rk3576-"),
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--stage", choices=("all", "plain", "asan"), default="all",
                     help="one stage of scripts/test.sh's default run (tests/conftest.py, ASAN_FILES); default all")


# A case of an ASAN_FILES test marked `plain_stage` runs in the plain stage instead: a sweep whose ASan stage runs a
# subset that executes every line and branch of the C code the whole sweep executes (gcov; the subset and the
# figures are next to the test).
PLAIN_STAGE = pytest.mark.plain_stage


def _in_asan_stage(item: pytest.Item) -> bool:
    path, _, rest = item.nodeid.partition("::")
    if path not in ASAN_FILES or item.get_closest_marker("plain_stage") is not None:
        return False
    return not any(part in "::" + rest for part in ASAN_LEFT_OUT.get(path, ()))


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Each stage collects only the files that have items in it (the expensive part of a worker's start)."""
    stage = config.getoption("stage")
    if stage == "all" or collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    try:
        rel = collection_path.resolve().relative_to(REPO).as_posix()
    except ValueError:
        return None
    if stage == "asan":
        return True if rel not in ASAN_FILES else None
    return True if rel in ASAN_FILES and rel not in ASAN_LEFT_OUT else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    stage = config.getoption("stage")
    if stage == "all":
        return
    keep = [item for item in items if _in_asan_stage(item) == (stage == "asan")]
    if len(keep) != len(items):
        kept = {id(item) for item in keep}
        config.hook.pytest_deselected(items=[item for item in items if id(item) not in kept])
        items[:] = keep
