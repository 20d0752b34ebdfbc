"""The task header (teflon.ethosu.task) against its C twin (drivers/ethosu/ethosu_task.h), and the family target's
text and JSON forms of a Vela passthrough program."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from teflon.ethosu import target, task

from . import programs
from .vela_models import CASES

HEADER = Path(__file__).resolve().parents[2] / "drivers" / "ethosu" / "ethosu_task.h"


def test_constants_match_the_c_header() -> None:
    text = HEADER.read_text()

    def define(name: str) -> str:
        m = re.search(rf"#define {name} (\S+)", text)
        assert m, name
        return m.group(1)

    assert int(define("ETHOSU_TASK_MAGIC").rstrip("u"), 0) == task.MAGIC
    assert int(define("ETHOSU_TASK_NO_BO").rstrip("u"), 0) == task.NO_BO
    assert int(define("ETHOSU_MAX_REGIONS"), 0) == task.MAX_REGIONS
    assert define("ETHOSU_TASK_HEADER_WORDS") == "(2"  # (2 + ETHOSU_MAX_REGIONS)
    assert task.HEADER_WORDS == 2 + task.MAX_REGIONS


def test_pack_unpack_round_trip() -> None:
    data = task.pack([0x0001010F, 0x4000, 0x800, 0], 2048, {0: 1, 1: 0})
    assert data[:4] == b"TEU1"
    assert task.unpack(data) == (2048, {0: 1, 1: 0}, (0x0001010F, 0x4000, 0x800, 0))


@pytest.mark.parametrize(("sram", "regions"), [(0, {8: 0}), (-1, {}), (16, {2: 0}), (0, {0: task.NO_BO})])
def test_bad_headers_refused(sram: int, regions: dict[int, int]) -> None:
    with pytest.raises(ValueError):
        task.header(sram, regions)


def test_disassemble_and_json_name_regions_and_commands() -> None:
    prog = programs.program(programs.vela_op(CASES[0].build()))
    t = target("imx93")
    text = t.disassemble(prog)
    assert "sram_size 0; region 0 = read_only, region 1 = arena" in text and "NPU_OP_CONV" in text, text
    doc = t.to_json(prog)
    (job,) = doc["jobs"]
    assert job["in"] == ["read_only"] and job["out"] == ["arena"]
    assert doc["regions"] == {"0": "read_only", "1": "arena"} and doc["command_stream"][-1] == "0xffff0000"
    assert [k["op"] for k in job["kicks"]] == ["NPU_OP_CONV"] and "read_only" in doc["buffers"]
