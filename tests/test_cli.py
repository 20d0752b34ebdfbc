"""`python -m teflon classify | inspect | regcmd | bench` on a real model, as a user runs them."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

MODEL = "mobilenet_v1_0.25_128_quant.tflite"


@pytest.fixture(scope="module")
def model(shared_dir: Path, delegate_library: None) -> Path:
    path = shared_dir / "models" / MODEL
    if not path.is_file():
        pytest.skip(f"{MODEL} not in {path.parent}")
    return path


def teflon_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("TEFLON_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "teflon", *args], check=False, capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)


def test_classify_prints_top5_and_times(model: Path) -> None:
    models = model.parent
    r = teflon_cli("classify", "--model", str(model), "--image", str(models / "grace_hopper.bmp"),
                   "--labels", str(models / "imagenet_labels.txt"), "--device", "rk3588", "--sim", "1")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any(line.startswith("compile:") and line.endswith("ms") for line in lines), r.stdout
    assert any(line.startswith("invoke:") for line in lines), r.stdout
    assert "simulated NPU" in r.stdout
    scores = [line for line in lines if line[:1].isdigit() and "(" in line]
    assert len(scores) == 5, r.stdout
    assert "academic gown" in scores[0], r.stdout  # the CPU's top-1 for this image (../shared/models/README.md)


def test_inspect_lists_every_node_with_a_reason(model: Path) -> None:
    r = teflon_cli("inspect", "--model", str(model), "--device", "rk3588", "--sim", "1")
    assert r.returncode == 0, r.stderr
    rows = [line.split(None, 3) for line in r.stdout.splitlines() if line[:4].strip().isdigit()]
    assert len(rows) == 31  # MobileNetV1: 15 CONV_2D, 13 DEPTHWISE_CONV_2D, pool, reshape, softmax
    for node, op, delegated, *reason in rows:
        assert delegated in ("yes", "no") and reason and reason[0].strip(), (node, op, delegated, reason)
        if op in ("CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D"):
            assert delegated == "yes", (node, op, reason)
    assert "30 of 31 nodes delegated" in r.stdout  # the 4x4 average pool (PPU) and the final RESHAPE (an alias)


def test_regcmd_json_layout(model: Path, tmp_path: Path) -> None:
    out = tmp_path / "program.json"
    r = teflon_cli("regcmd", "--model", str(model), "--device", "rk3588", "--sim", "1", "--json", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["device"] == "rk3588"
    assert len(doc["operations"]) == 29
    for op in doc["operations"]:
        assert op["kind"] in ("CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D") and op["nodes"]
        for task in op["tasks"]:
            words = [int(w, 16) for w in task["regcmd"]]
            assert all(len(w) == 18 for w in task["regcmd"])  # "0x" + 16 hex digits
            for rel in task["relocs"]:
                assert rel["buffer"] in doc["buffers"] or rel["buffer"].rsplit("/", 1)[-1].startswith("t")
                # relocated words carry only the offset inside the target buffer, never an address
                assert (words[rel["index"]] >> 16) & 0xFFFFFFFF == rel["offset"]
    for data in doc["buffers"].values():
        base64.b64decode(data, validate=True)


def test_regcmd_pretty_prints_register_names(model: Path) -> None:
    r = teflon_cli("regcmd", "--model", str(model), "--device", "rk3588", "--sim", "1")
    assert r.returncode == 0, r.stderr
    assert "CNA_CBUF_CON0" in r.stdout and "DATA_BANK=" in r.stdout and "DPU_OUT_CVT_SCALE" in r.stdout
    # relocated address registers show their target, not the zero placeholder the word holds
    assert "FEATURE_BASE_ADDR=<t0>+0x0" in r.stdout and "DECOMPRESS_ADDR0=<op0.weights>+0x0" in r.stdout
    assert not [line for line in r.stdout.splitlines() if "_ADDR " in line and line.rstrip().endswith(" 0")
                and ("FEATURE_DATA_ADDR" in line or "DST_BASE_ADDR" in line)], r.stdout


def test_bench_record_appends_a_dated_row(model: Path, tmp_path: Path) -> None:
    perf = tmp_path / "PERFORMANCE.md"
    r = teflon_cli("bench", "--model", str(model), "--device", "rk3588", "--sim", "1", "--runs", "2",
                   "--perf-file", str(perf), "--record", "--threads", "2")
    assert r.returncode == 0, r.stderr
    for label in ("compile:", "NPU invoke:", "CPU tflite_runtime", "builtin kernels:", "NPU invoke / CPU builtin:",
                  "NPU traffic per inference:", "(2 thread(s))"):
        assert label in r.stdout, r.stdout
    lines = perf.read_text().splitlines()
    rows = [line for line in lines if line.startswith("| 20")]
    assert len(rows) == 1 and MODEL in rows[0]
    # the row lines up with the header: threads, bytes moved, compulsory, ratio before the notes
    header = next(line for line in lines if line.startswith("| date |"))
    assert rows[0].count(" | ") == header.count(" | ")
    cells = dict(zip(header.strip("|").split(" | "), rows[0].strip("|").split(" | "), strict=True))
    assert cells["CPU threads"].strip() == "2" and float(cells["traffic ratio"]) >= 1.0


@pytest.mark.parametrize("device", ["imx93", "rk3568"])
def test_bench_records_ethosu_and_rk3568(model: Path, tmp_path: Path, device: str) -> None:
    """`bench --record` on the Ethos-U target and on RK3568: the timings, the fresh-process compile (cold and from
    the cache) and a row naming the device."""
    perf = tmp_path / "PERFORMANCE.md"
    r = teflon_cli("bench", "--model", str(model), "--device", device, "--sim", "1", "--runs", "1",
                   "--perf-file", str(perf), "--record")
    assert r.returncode == 0, r.stderr
    assert f"device: {device} (simulated NPU)" in r.stdout and "compile in a fresh process:" in r.stdout, r.stdout
    rows = [line for line in perf.read_text().splitlines() if line.startswith("| 20")]
    assert len(rows) == 1 and f"| {device} |" in rows[0] and "fresh-process compile" in rows[0], rows


def test_bad_model_path_is_a_clear_error(tmp_path: Path) -> None:
    r = teflon_cli("inspect", "--model", str(tmp_path / "missing.tflite"), "--device", "rk3588", "--sim", "1")
    assert r.returncode != 0
    assert "error" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("device", ["a311d", "imx8mp"])
def test_regcmd_etnaviv_json_and_mesa_compat(model: Path, tmp_path: Path, device: str) -> None:
    """The etnaviv `regcmd --json` form (jobs, descriptors with relocations, coefficient/LUT references) and
    `--mesa-compat`, which recompiles the same partitions as Mesa encodes them."""
    docs = {}
    for flag in ("", "--mesa-compat"):
        out = tmp_path / f"program{flag}.json"
        r = teflon_cli("regcmd", "--model", str(model), "--device", device, "--sim", "1", "--json", str(out),
                       *([flag] if flag else []))
        assert r.returncode == 0, r.stderr
        docs[flag] = doc = json.loads(out.read_text())
        assert doc["device"] == device
        kinds = [j["kind"] for j in doc["jobs"]]
        assert kinds.count("NN") == 29, kinds  # each of MobileNetV1's 28 convolutions and its average pool
        for job in doc["jobs"]:
            for d in job["descriptors"]:
                assert len(d["words"]) == (34 if job["kind"] == "NN" else 31)
                assert all(r_["buffer"] in doc["buffers"] or r_["buffer"].split("/")[-1].startswith("t")
                           for r_ in d["relocs"])
            if job["kind"] == "NN":
                coef = job["coefficients"]
                assert len(base64.b64decode(doc["buffers"][coef["buffer"]])) >= coef["size"] > 0
    # same jobs; the default mode's requant multipliers are rounded, Mesa's truncated, so words may differ
    assert [j["kind"] for j in docs[""]["jobs"]] == [j["kind"] for j in docs["--mesa-compat"]["jobs"]]

    r = teflon_cli("regcmd", "--model", str(model), "--device", device, "--sim", "1")
    assert r.returncode == 0, r.stderr
    assert "kernels_per_core=" in r.stdout and "post_multiplier=" in r.stdout
    assert "in_image_address=<t" in r.stdout and ".coefficients>+0x" in r.stdout


def test_regcmd_imx93_vela_compat_streams_weights(model: Path) -> None:
    """`regcmd --device imx93 --vela-compat` prints the Vela-compatible program: its split operations' weights
    DMA'd into the SRAM (region 2) with the waits; the default program reads every weight in place."""
    out = {}
    for flag in ("", "--vela-compat"):
        r = teflon_cli("regcmd", "--model", str(model), "--device", "imx93", "--sim", "1", *([flag] if flag else []))
        assert r.returncode == 0, r.stderr
        out[flag] = r.stdout
    assert "NPU_OP_DMA_START" not in out[""] and "NPU_OP_KERNEL_WAIT" not in out[""]
    compat = out["--vela-compat"]
    assert "NPU_OP_DMA_START" in compat and "NPU_OP_DMA_WAIT" in compat and "NPU_OP_KERNEL_WAIT" in compat
    assert any("NPU_SET_WEIGHT_REGION" in line and "region=2" in line for line in compat.splitlines())
