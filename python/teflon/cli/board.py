"""`python -m teflon board`: the board-latency model's constants, and its estimates beside the published figures.

--constants prints every target's table with each value's source; --published compiles MobileNetV1 1.0/224
(netgen's, random weights: the layer shapes the published figures ran) and MobileNetV2 1.0/224 (the shared model
file, when present) for each target the figures name, runs them once on the simulator for the counters, and prints
estimate and published figure side by side, then the estimate of the program as compiled (one kernel job per
partition on rocket) beside that of a kernel job per program job (Mesa's job per operation, the runner before it
merged them), in the Markdown docs/PERFORMANCE.md holds.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from teflon import board, targets

HELP = "print the board-latency model's constants and its estimates beside the published board timings"
V2_MODEL = "mobilenet_v2_1.0_224_quant.tflite"


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--constants", action="store_true", help="every target's constants with their sources")
    p.add_argument("--published", action="store_true",
                   help="estimates of MobileNetV1/V2 beside the published figures (compiles and simulates both)")
    p.add_argument("--models-dir", default=None,
                   help=f"where {V2_MODEL} is (default: ../shared/models of the checkout, or $TEFLON_MODELS)")


def constants_markdown() -> list[str]:
    out = ["| target | constant | value | kind | source |", "|---|---|---|---|---|"]
    seen: dict[int, str] = {}
    for name in targets.names():
        t = board.table(name)
        if id(t) in seen:  # a row sharing another's NPU (rk3566: rk3568's table)
            out.append(f"| {name} | (all) | as {seen[id(t)]} | | the same table |")
            continue
        seen[id(t)] = name
        for key, fact in t.facts().items():
            out.append(f"| {name} | {key} | {fact.value:g} | {fact.kind} | {fact.source} |")
        out.append(f"| {name} | mac_basis | {t.mac_basis} | | which MAC counter the rate applies to |")
    return out


def loads_of(model: str, device: str) -> list[board.PartitionLoad]:
    """The partitions' loads of `model` compiled for `device`, from one simulated run."""
    from teflon.cli.profile import profile_session
    from teflon.cli.session import open_interpreter

    p = profile_session(open_interpreter(model, {"device": device, "sim": "1"}), True)
    return p.loads


def _models_dir(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    if os.environ.get("TEFLON_MODELS"):
        return Path(os.environ["TEFLON_MODELS"])
    return Path(__file__).resolve().parents[4] / "shared" / "models"


def published_markdown(models: dict[str, str]) -> list[str]:
    cache: dict[tuple[str, str], list[board.PartitionLoad]] = {}

    def loads(device: str, model: str) -> list[board.PartitionLoad] | None:
        if model not in models:
            return None
        if (device, model) not in cache:
            cache[(device, model)] = loads_of(models[model], device)
        return cache[(device, model)]

    out = [("| target | model | stack (counts modelled) | published ms | estimated ms | est / published | bound | "
           "source |"), "|---|---|---|---|---|---|---|---|"]
    for pub in board.PUBLISHED:
        ld = loads(pub.device, pub.model)
        if ld is None:
            out.append(f"| {pub.device} | {pub.model} | {pub.stack.name} | {_range(pub)} | n/a (model missing) | | | "
                       f"{pub.source} |")
            continue
        est = board.estimate(pub.device, ld, pub.stack)
        mid = (pub.low_ms + pub.high_ms) / 2
        note = f" {pub.note}" if pub.note else ""
        out.append(f"| {pub.device} | {pub.model} | {pub.stack.name} | {_range(pub)} | {est.total_ms:.2f} | "
                   f"{est.total_ms / mid:.2f} | {est.bound()} | {pub.source}.{note} |")
    out += ["", ("| target | model | partitions | tasks | program jobs | kernel jobs | submits | estimate, a job per "
                 "operation (before) ms | estimate as compiled (after) ms | after / before | bound | shares (after) |"),
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for device in (t.name for t in targets.drivable_generations()):
        for model in ("mobilenet_v1", "mobilenet_v2"):
            ld = loads(device, model)
            if ld is None:
                continue
            before = board.estimate(device, ld, board.JOB_PER_OP)
            after = board.estimate(device, ld)
            share = ", ".join(f"{k} {100 * v:.0f} %" for k, v in after.share().items())
            out.append(f"| {device} | {model} | {len(ld)} | {sum(x.tasks for x in ld)} | "
                       f"{sum(x.program_jobs for x in ld)} | {sum(x.jobs for x in ld)} | {sum(x.submits for x in ld)} | "
                       f"{before.total_ms:.2f} | {after.total_ms:.2f} | {after.total_ms / before.total_ms:.2f} | "
                       f"{after.bound()} | {share} |")
    return out


def _range(pub: board.Published) -> str:
    return f"{pub.low_ms:g}" if pub.low_ms == pub.high_ms else f"{pub.low_ms:g}-{pub.high_ms:g}"


def run(args: argparse.Namespace) -> int:
    if not (args.constants or args.published):
        args.constants = True
    if args.constants:
        print("\n".join(constants_markdown()))
    if args.published:
        from teflon import netgen

        with tempfile.TemporaryDirectory(prefix="teflon-board-") as tmp:
            v1 = Path(tmp) / "mobilenet_v1_1.0_224_netgen.tflite"
            v1.write_bytes(netgen.build("mobilenet_v1", "uint8"))
            models = {"mobilenet_v1": str(v1)}
            v2 = _models_dir(args.models_dir) / V2_MODEL
            if v2.is_file():
                models["mobilenet_v2"] = str(v2)
            print()
            print("\n".join(published_markdown(models)))
    return 0
