"""What a compiled rocket program makes the CNA fetch from DRAM, read from its regcmd words alone.

Per operation: how many tasks it runs, which of them load weights (rk3588: CNA_CBUF_CON0.WEIGHT_REUSE clear;
rk3576: CNA_UNDOC_1038.NOT_FIRST_TASK clear), how many distinct weight cubes (CNA_DCOMP_ADDR0 offset, size) the
tasks use, whether the layer's weights fit the CBUF next to the data its smallest legal window needs, and how
many input rows its tasks fetch against the rows the input has (row-window overlap and kernel chunks re-read
rows). A layer *re-fetches weights* when more tasks load weights than it has cubes.

"Fits" (an upper bound on what the hardware could keep resident, not the encoder's own bank choice):
- rk3588: ceil(weights / 32 KiB) + the data banks of `kh` input rows <= 12 banks (rocket.md §4.2);
- rk3576: weights <= (POOL - DATA_LIMIT) granules of 64 bytes (rk3576/split.py; POOL is [INFERRED]).
"""

from __future__ import annotations

from dataclasses import dataclass

from teflon.program import Program, Task
from teflon.rocket import target
from teflon.rocket.disasm import task_words
from teflon.rocket.geometry import FEATURE_ATOM
from teflon.rocket.rk3576 import split as split76
from teflon.rocket.rk3588 import split as split88

BANK_BYTES = split88.CBUF_ENTRIES_PER_BANK * split88.CBUF_ENTRY_BYTES


@dataclass(frozen=True)
class OpTraffic:
    kind: str
    nodes: tuple[int, ...]
    tasks: int
    weight_loads: int  # tasks that fetch weights from DRAM
    cubes: int  # distinct weight cubes the tasks use
    weight_bytes: int  # bytes of all cubes
    capacity: int  # bytes of CBUF the weights could have next to the smallest window (module docstring)
    rows_fetched: int  # input rows fetched by all tasks together
    rows_read: int  # distinct input rows among them

    @property
    def fits(self) -> bool:
        return self.weight_bytes <= self.capacity

    @property
    def refetches_weights(self) -> bool:
        return self.weight_loads > self.cubes

    @property
    def rows_refetched(self) -> int:
        return self.rows_fetched - self.rows_read

    def __str__(self) -> str:
        return (f"{self.kind} nodes {list(self.nodes)}: {self.tasks} tasks, {self.weight_loads} weight loads of "
                f"{self.cubes} cube(s) ({self.weight_bytes} bytes, {'fit' if self.fits else 'do not fit'} "
                f"{self.capacity}), {self.rows_fetched} input rows fetched, {self.rows_read} distinct")


@dataclass(frozen=True)
class _Task:
    loads: bool
    row0: int
    rows: int
    weight_offset: int
    weight_bytes: int
    capacity: int


def _registers(prog: Program, device: str, t: Task) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """{register: fields} of one task (the last write wins) and {address register: offset in its target}."""
    rm = target(device).regmap
    regs: dict[str, dict[str, int]] = {}
    names: list[str] = []
    for w in task_words(prog, t):
        _, name, fields = rm.decode(w)
        regs[name] = fields
        names.append(name)
    patched = prog.patched_fields(t.buffer, t.offset, t.nbytes, 8)
    return regs, {names[i]: f.offset for i, f in patched.items()}


def _rk3588(regs: dict[str, dict[str, int]], addrs: dict[str, int]) -> _Task:
    width = regs["CNA_FC_DATA_SIZE0"]["DMA_WIDTH"]
    eps = split88.entries_per_slice(width, regs["CNA_DATA_SIZE1"]["DATAIN_CHANNEL_REAL"] + 1)
    kh = regs["CNA_WEIGHT_SIZE2"]["WEIGHT_HEIGHT"]
    data_banks = -(-eps * kh // split88.CBUF_ENTRIES_PER_BANK)
    return _Task(not regs["CNA_CBUF_CON0"]["WEIGHT_REUSE"], addrs["CNA_FEATURE_DATA_ADDR"] // (width * FEATURE_ATOM),
                 regs["CNA_FC_DATA_SIZE0"]["DMA_HEIGHT"], addrs["CNA_DCOMP_ADDR0"],
                 regs["CNA_WEIGHT_SIZE0"]["WEIGHT_BYTES"], (split88.CBUF_BANKS - data_banks) * BANK_BYTES)


def _rk3576(regs: dict[str, dict[str, int]], addrs: dict[str, int]) -> _Task:
    width = regs["CNA_DMA_SIZE0"]["DMA_WIDTH_M1"] + 1
    return _Task(not regs["CNA_UNDOC_1038"]["NOT_FIRST_TASK"], addrs["CNA_FEATURE_DATA_ADDR"] // (width * FEATURE_ATOM),
                 regs["CNA_DMA_SIZE0"]["DMA_HEIGHT_M1"] + 1, addrs["CNA_DCOMP_ADDR0"],
                 regs["CNA_WEIGHT_SIZE0"]["WEIGHT_BYTES"],
                 (split76.POOL - regs["CNA_CBUF_CON0"]["DATA_LIMIT"]) * split76.GRANULE)


def op_traffic(prog: Program, device: str) -> list[OpTraffic]:
    """Every convolution of `prog` (a program of `device`)."""
    per_task = _rk3588 if device == "rk3588" else _rk3576
    out = []
    for op in prog.operations:
        if (not op.kind.endswith("CONV_2D") and op.kind != "FULLY_CONNECTED") or "lut" in op.info:
            continue  # a pool (PPU) or table (DPU-only) task fetches no weights
        tasks = [per_task(*_registers(prog, device, t)) for t in op.tasks]
        cubes = {t.weight_offset: t.weight_bytes for t in tasks}
        read = set().union(*(range(t.row0, t.row0 + t.rows) for t in tasks))
        out.append(OpTraffic(op.kind, tuple(op.nodes), len(tasks), sum(t.loads for t in tasks), len(cubes),
                             sum(cubes.values()), min(t.capacity for t in tasks), sum(t.rows for t in tasks),
                             len(read)))
    return out


def model_traffic(programs: list[Program], device: str) -> list[OpTraffic]:
    """op_traffic of a model's programs (one per partition), in compile order."""
    return [o for prog in programs for o in op_traffic(prog, device)]
