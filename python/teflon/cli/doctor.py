"""`python -m teflon doctor`: what a user would otherwise paste into an issue, checked on this machine.

The SoC (devicetree), the kernel, each NPU driver's device node (driver name and version from DRM_IOCTL_VERSION,
whether this user may open it and through which group), the target `device=auto` picks, the program cache, and a
model run on the CPU and on the NPU (time, top-1 agreement, largest difference). Each check is one line:

    ok    npu node       /dev/accel/accel0: rocket 0.0.0 (rk3588), read-write (group render)

Without an NPU the delegate's device=auto falls back to the simulator: every line that depends on it says
`simulated`. Under one of the test-only ioctl shims (docs/shim.md: LD_PRELOAD of libteflon_*_shim.so) the device
node, the driver and the devicetree are the shim's, and every check says so. `--json FILE` writes the report.
`--experiments` also runs the experiments that settle the open hardware facts (cli/experiments.py) and writes
their verdicts into the JSON report, which `TEFLON_HW_FACTS=FILE` hands to the compiler.
"""

from __future__ import annotations

import argparse
import ctypes
import grp
import json
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

import teflon
from teflon import hw_facts, targets

HELP = "check this machine: SoC, kernel, NPU driver and permissions, device=auto, program cache, a model CPU vs NPU"

# Where each driver family's device nodes are listed in sysfs (the delegate's discovery reads the same places:
# drivers/rocket/rkt_family.c, drivers/etnaviv/etna_detect.c). accel/ethosu nodes are accel nodes too.
NODE_CLASSES = (("accel", "/sys/class/accel", "accel", "/dev/accel"), ("drm", "/sys/class/drm", "renderD", "/dev/dri"))
SHIM_MARKERS = ("libteflon_rocket_shim", "libteflon_etna_shim")


@dataclass
class Check:
    name: str
    status: str  # ok, warn, fail, info
    detail: str
    simulated: bool = False


class _DrmVersion(ctypes.Structure):
    """struct drm_version (include/uapi/drm/drm.h)."""

    _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int), ("patchlevel", ctypes.c_int),
                ("name_len", ctypes.c_size_t), ("name", ctypes.c_char_p), ("date_len", ctypes.c_size_t),
                ("date", ctypes.c_char_p), ("desc_len", ctypes.c_size_t), ("desc", ctypes.c_char_p)]


def _drm_iowr(nr: int, size: int) -> int:
    """_IOWR('d', nr, size) of the Linux generic ioctl encoding (include/uapi/asm-generic/ioctl.h)."""
    return (3 << 30) | (size << 16) | (ord("d") << 8) | nr


def under_shim() -> bool:
    """An ioctl shim is preloaded: the device node, sysfs and devicetree are simulated (docs/shim.md)."""
    return any(m in os.environ.get("LD_PRELOAD", "") for m in SHIM_MARKERS)


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return None


def soc_check(sim: bool) -> Check:
    compat = _read("/proc/device-tree/compatible")
    model = _read("/proc/device-tree/model")
    if compat is None:  # the rocket driver's NPU core nodes carry the SoC in their own compatible
        cores = "/sys/bus/platform/drivers/rocket"
        try:
            entries = sorted(e for e in os.listdir(cores) if e.startswith("npu-core"))
        except OSError:
            entries = []
        if entries:
            compat, model = _read(f"{cores}/{entries[0]}/of_node/compatible"), "NPU core node"
    if compat is None:
        return Check("soc", "info", "no devicetree (/proc/device-tree/compatible): not an Arm board", sim)
    names = [c for c in compat.split("\0") if c]
    known = [t.name for t in targets.TARGETS if any(c in names for c in t.compatibles)]
    detail = f"{(model or '').strip(chr(0)).strip() or 'board'}: {', '.join(names)}"
    if known:
        detail += f" (teflon target {', '.join(known)})"
    return Check("soc", "ok", detail, sim)


def kernel_check(sim: bool) -> Check:
    u = os.uname()
    return Check("kernel", "info", f"Linux {u.release} {u.machine}; Python {platform.python_version()}", sim)


def _drm_version(node: str) -> str:
    fd = os.open(node, os.O_RDWR | os.O_CLOEXEC)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        v = _DrmVersion()
        buf = ctypes.create_string_buffer(64)
        v.name, v.name_len = ctypes.cast(buf, ctypes.c_char_p), len(buf)
        if libc.ioctl(fd, ctypes.c_ulong(_drm_iowr(0, ctypes.sizeof(v))), ctypes.byref(v)) != 0:
            return f"DRM_IOCTL_VERSION failed (errno {ctypes.get_errno()})"
        name = buf.raw[: min(v.name_len, len(buf))].split(b"\0")[0].decode(errors="replace")
        return f"{name} {v.major}.{v.minor}.{v.patchlevel}"
    finally:
        os.close(fd)


def _access(node: str) -> tuple[str, str]:
    """(status, text): may this user open the node read-write, and which group owns it."""
    try:
        st = os.stat(node)
        group = grp.getgrgid(st.st_gid).gr_name
    except (OSError, KeyError):
        group = "?"
    try:
        os.close(os.open(node, os.O_RDWR | os.O_CLOEXEC))
    except PermissionError:
        mine = os.getgroups()
        hint = f"add the user to group {group} (sudo usermod -aG {group} $USER), then log in again"
        return "fail", f"not openable by uid {os.getuid()} (groups {mine}): {hint}"
    except OSError as exc:
        return "fail", f"cannot open: {exc.strerror}"
    return "ok", f"read-write (group {group})"


def node_checks(sim: bool) -> list[Check]:
    checks = []
    for kind, cls, prefix, devdir in NODE_CLASSES:
        try:
            entries = sorted(e for e in os.listdir(cls) if e.startswith(prefix))
        except OSError:
            continue
        for entry in entries:
            try:
                driver = os.path.basename(os.readlink(f"{cls}/{entry}/device/driver"))
            except OSError:
                driver = "?"
            if kind == "drm" and driver not in ("etnaviv", "?"):
                continue  # render nodes of GPUs teflon does not drive
            node = f"{devdir}/{entry}"
            try:
                version = _drm_version(node)
            except OSError as exc:
                version = f"version unknown ({exc.strerror})"
            if kind == "drm" and driver == "?" and not version.startswith("etnaviv"):
                continue
            if driver == "?":
                driver = version.split()[0]
            status, access = _access(node)
            checks.append(Check("npu node", status, f"{node}: driver {driver}, version {version.split()[-1]}, "
                                f"{access}", sim))
    if not checks:
        checks.append(Check("npu node", "warn", "no NPU device node (/sys/class/accel, etnaviv render nodes): is the "
                            "kernel's rocket / etnaviv / ethosu driver loaded (lsmod, dmesg)?", sim))
    return checks


def _delegate_line(options: dict[str, str], env: dict[str, str] | None = None) -> tuple[int, str]:
    """Create the delegate in a child process (a crash stays there) and return its debug output."""
    code = "import sys, teflon; teflon.load_delegate(**dict(a.split('=', 1) for a in sys.argv[1:]))"
    r = subprocess.run([sys.executable, "-c", code, *(f"{k}={v}" for k, v in options.items())], check=False,
                       capture_output=True, text=True, timeout=300, env=env)
    return r.returncode, r.stderr


def auto_check(sim: bool) -> tuple[Check, str | None, bool]:
    """(check, the target device=auto picks, whether that is the simulator)."""
    rc, err = _delegate_line({"device": "auto", "debug": "1"})
    m = re.search(r"delegate created for (\S+) \(([^)]*)\)", err)
    if rc != 0 or not m:
        last = [line for line in err.splitlines() if line.strip()]
        return Check("device=auto", "fail", last[-1] if last else f"exit {rc}", sim), None, sim
    on_sim = "simulated" in m.group(2)
    detail = f"{m.group(1)} ({m.group(2)})"
    if on_sim:
        detail += ": no NPU found, the delegate would run the simulator (pass device=<soc> sim=0 to insist)"
    return Check("device=auto", "warn" if on_sim else "ok", detail, sim or on_sim), m.group(1), sim or on_sim


def cache_check(sim: bool) -> Check:
    """Where a host that passes no options keeps programs (delegate.c, default_cache_dir) and what is there."""
    env = os.environ.get("TEFLON_CACHE_DIR")
    if env is not None and not env:
        return Check("program cache", "info", "off (TEFLON_CACHE_DIR is set and empty)", sim)
    if env:
        base = Path(env)
    elif os.access("/var/cache/teflon", os.W_OK):
        base = Path("/var/cache/teflon")
    elif os.environ.get("XDG_CACHE_HOME", "").startswith("/"):
        base = Path(os.environ["XDG_CACHE_HOME"]) / "teflon"
    else:
        base = Path.home() / ".cache" / "teflon"
    programs = base / "programs"
    files = [p for p in programs.rglob("*") if p.is_file()] if programs.is_dir() else []
    size = sum(p.stat().st_size for p in files)
    return Check("program cache", "ok", f"{programs}: {len(files)} entries, {size / 1e6:.1f} MB (a host that passes "
                 "no options uses it; TEFLON_CACHE_DIR moves it, set and empty turns it off)", sim)


def _default_model() -> tuple[str, bytes | None]:
    """MobileNetV1 from the shared data of a source checkout, else a small generated SSD-style network."""
    shared = os.environ.get("TEFLON_SHARED") or str(Path(__file__).resolve().parents[3].parent / "shared")
    path = Path(shared) / "models" / "mobilenet_v1_0.25_128_quant.tflite"
    if path.is_file():
        return str(path), path.read_bytes()
    try:
        from teflon import netgen
    except ImportError:
        return "no model (pass --model FILE)", None
    return "generated ssd (uint8)", netgen.build("ssd", "uint8")


def _invoke(model: bytes, x: list[np.ndarray], delegate: object | None) -> tuple[list[np.ndarray], float]:
    from teflon.runtime import make_interpreter

    interp = make_interpreter(model, [delegate] if delegate else None)
    for d, v in zip(interp.get_input_details(), x):
        interp.set_tensor(d["index"], v)
    interp.invoke()  # the first invoke may compile and upload; time the second
    t = time.perf_counter()
    interp.invoke()
    ms = (time.perf_counter() - t) * 1e3
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()], ms


def run_check(model_arg: str | None, device: str | None, sim: bool) -> Check:
    if device is None:
        return Check("model run", "fail", "skipped: the delegate could not be created", sim)
    if model_arg:
        label, model = model_arg, Path(model_arg).read_bytes()
    else:
        label, model = _default_model()
    if model is None:
        return Check("model run", "info", f"skipped: {label}", sim)
    from teflon.modelgen import random_inputs

    x = random_inputs(model, seed=0)
    if "mobilenet" in label:
        image = Path(label).parent / "grace_hopper.bmp"
        if image.is_file():
            from teflon.images import load_image

            x = [load_image(image, 128, 128).reshape(1, 128, 128, 3)]
    cpu, cpu_ms = _invoke(model, x, None)
    try:
        npu, npu_ms = _invoke(model, x, teflon.load_delegate(device=device))
    except (RuntimeError, ValueError) as e:  # an NPU fault or timeout is this check's answer, not doctor's end
        last = [line for line in str(e).splitlines() if line.strip()]
        return Check("model run", "fail", f"{Path(label).name}: the NPU run failed: {last[0] if last else e}", sim)
    diff = max(int(np.max(np.abs(a.astype(np.int64) - b.astype(np.int64)))) for a, b in zip(cpu, npu))
    same_top = int(np.argmax(cpu[0])) == int(np.argmax(npu[0]))
    what = "simulated NPU" if sim else "NPU"
    detail = (f"{Path(label).name}: CPU {cpu_ms:.1f} ms, {what} {npu_ms:.1f} ms; top-1 "
              f"{'equal' if same_top else 'DIFFERENT'} ({int(np.argmax(cpu[0]))}), max |diff| {diff} LSB")
    return Check("model run", "ok" if same_top else "fail", detail, sim)


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help=".tflite model for the CPU vs NPU run (default: MobileNetV1 from "
                   "the shared data of a source checkout, else a generated network)")
    p.add_argument("--json", default=None, metavar="FILE", help="also write the report as JSON (with --experiments: "
                   "the hardware-facts report TEFLON_HW_FACTS reads)")
    p.add_argument("--experiments", action="store_true", help="also run the experiments that settle the open "
                   "hardware facts (docs/hardware/board-facts.md) and print a verdict per fact")


def hw_facts_check(sim: bool) -> Check:
    """What TEFLON_HW_FACTS gives the compiler (nothing by default)."""
    r = hw_facts.current()
    if r is None:
        return Check("hw facts", "info", f"{hw_facts.ENV} unset: every open hardware fact keeps its conservative "
                     "choice", sim)
    if r.problem:
        return Check("hw facts", "warn", f"{hw_facts.ENV} ignored: {r.problem}", sim)
    proved = ", ".join(f"{k}={v}" for k, v in sorted(r.proved.items())) or "nothing"
    return Check("hw facts", "ok", f"{r.path}: for {r.soc}{' (a simulated run)' if r.simulated else ''}, proves "
                 f"{proved}; used only when compiling for {r.soc}", sim)


def experiment_lines(device: str | None, npu: bool, shim: bool, checks: list[Check]) -> tuple[list[str], dict]:
    """Run every documented experiment (cli/experiments.py): on the NPU device=auto found (`npu`; the shim's under
    an ioctl shim), else each fact on the simulator of its SoC; (the printed verdict lines, the report)."""
    from teflon.cli import experiments

    board = device is not None and npu
    soc = device if board else None
    simulated = shim or not board
    results = experiments.run_all(soc, simulated)
    lines = []
    for r in results:
        where = f"{r.soc}{', simulated' if r.simulated else ''}" if r.soc else "-"
        lines.append(f"fact {r.number} {r.id:15s} {r.verdict}  ({where}: {r.title})")
        if r.note:
            lines.append(f"  {' ' * 22}{r.note[:200]}")
    system = {"machine": platform.machine(),
              "kernel": next((c.detail for c in checks if c.name == "kernel"), ""),
              "driver": "; ".join(c.detail for c in checks if c.name == "npu node")}
    return lines, experiments.report(results, soc, simulated, system)


def run(args: argparse.Namespace) -> int:
    shim = under_shim()
    checks = [kernel_check(shim), soc_check(shim), *node_checks(shim)]
    auto, device, on_sim = auto_check(shim)
    checks += [auto, cache_check(shim), hw_facts_check(shim), run_check(args.model, device, on_sim)]
    print(f"teflon {teflon.__version__} doctor: {teflon.delegate_path()}")
    if shim:
        print("(an ioctl shim is preloaded: the device node, driver and devicetree below are simulated)")
    for c in checks:
        print(f"{c.status:5s} {c.name:14s} {c.detail}{'  [simulated]' if c.simulated else ''}")
    doc: dict = {"version": teflon.__version__, "machine": platform.machine()}
    if args.experiments:
        npu = "simulated" not in auto.detail.split(")")[0]  # device=auto found a device node (a shim's, too)
        lines, doc = experiment_lines(device, npu, shim, checks)
        print("experiments (docs/hardware/board-facts.md; verdict = the hypothesis the device matched):")
        for line in lines:
            print(f"      {line}")
        if not doc["soc"]:
            print("      (no NPU here: each fact ran on the simulator of its SoC; such a report proves nothing and "
                  "TEFLON_HW_FACTS ignores it)")
    if args.json:
        Path(args.json).write_text(json.dumps({**doc, "checks": [asdict(c) for c in checks]}, indent=2) + "\n")
    return 1 if any(c.status == "fail" for c in checks) else 0
