"""Compare teflon's Ethos-U65 compile of a single-op model with Vela 5.2.0's default (Regor) compile, kick by kick.

At each compute kick (NPU_OP_CONV / DEPTHWISE / POOL / ELEMENTWISE) the register state in force must be equal,
except placement: feature-map / weight / scale / DMA addresses, weight and scale stream lengths, the weight and
scale regions and Vela's weight DMA (Vela streams weights into fast memory, region 2; teflon reads them from the
coefficient region 0). The decoded weight values of each kick (ethosu.mlw_codec.decode on both streams, teflon's
encoded by teflon.ethosu.mlw), the scale records and a LUT kick's table (the bytes its DMA copies into SHRAM) must
be equal too. `oracle_weight_encoder` (Vela's per-operation API with teflon's block depth and weight order) can
stand in for teflon's codec.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from dataclasses import dataclass, field
from types import ModuleType

import numpy as np

from teflon.ethosu import program
from teflon.ethosu.lower import Kick
from teflon.ethosu.regs import KICKS, U65
from teflon.ethosu.stream import WeightEncoder

from . import tflite_graph, vela_oracle

PLACEMENT = frozenset({
    *(f"NPU_SET_{fm}_BASE{i}" for fm in ("IFM", "OFM", "IFM2") for i in range(4)),
    "NPU_SET_WEIGHT_BASE", "NPU_SET_WEIGHT_LENGTH", "NPU_SET_SCALE_BASE", "NPU_SET_SCALE_LENGTH",
    "NPU_SET_WEIGHT_REGION", "NPU_SET_SCALE_REGION",
    "NPU_SET_WEIGHT1_BASE", "NPU_SET_WEIGHT1_LENGTH", "NPU_SET_SCALE1_BASE", "NPU_SET_SCALE1_LENGTH",
    "NPU_SET_DMA0_SRC", "NPU_SET_DMA0_DST", "NPU_SET_DMA0_LEN", "NPU_SET_DMA0_SRC_REGION",
    "NPU_SET_DMA0_DST_REGION", "NPU_SET_DMA0_SIZE0", "NPU_SET_DMA0_SIZE1", "NPU_SET_DMA0_SKIP0",
    "NPU_SET_DMA0_SKIP1",
})


WEIGHTED = ("NPU_OP_CONV", "NPU_OP_DEPTHWISE")  # the kicks that read the weight and scale streams


def _load_vela() -> tuple[ModuleType, ModuleType] | None:
    """Vela's per-operation API and weight codec from the installed wheel (None without Vela)."""
    try:
        api = importlib.import_module("ethosu.vela.api")
        importlib.import_module("ethosu.vela.weight_compressor")
        codec = importlib.import_module("ethosu.mlw_codec")
    except ImportError:
        return None
    return api, codec


VELA = _load_vela()


def oracle_weight_encoder(k: Kick) -> bytes:
    assert VELA is not None
    api = VELA[0]
    assert k.weights is not None and k.block is not None
    order = api.NpuBlockTraversal.PART_KERNEL_FIRST if k.block.part_kernel and not k.depthwise else \
        api.NpuBlockTraversal.DEPTH_FIRST
    return bytes(api.npu_encode_weights(api.NpuAccelerator.Ethos_U65_256, k.weights.astype(np.int16), (1, 1), 8,
                                        k.block.ofm[2], k.depthwise, order))


@dataclass
class Result:
    kicks: tuple[int, int]  # (teflon, vela)
    diffs: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.diffs and self.kicks[0] == self.kicks[1]


def _name(n: str) -> str:
    return n.removeprefix("NPU_SET_")


def _show(name: str, v: int | None) -> str:
    if v is None:
        return "-"
    return str(U65.fields_of(U65.command(name), v))


def _streams(state: dict[str, int], blob: bytes) -> tuple[bytes | None, bytes | None]:
    """Vela's weight and scale bytes for one kick, followed through its weight DMA when it made one."""
    def get(base: str, length: str, region: str) -> bytes | None:
        if base not in state:
            return None
        addr, n = state[base] & (1 << 40) - 1, state[length] & 0xFFFFFFFF
        if state.get(region, 0) != 0:  # in fast memory: the DMA copied it from region 0
            addr = addr - (state["NPU_SET_DMA0_DST"] & (1 << 40) - 1) + (state["NPU_SET_DMA0_SRC"] & (1 << 40) - 1)
        return blob[addr:addr + n]

    return (get("NPU_SET_WEIGHT_BASE", "NPU_SET_WEIGHT_LENGTH", "NPU_SET_WEIGHT_REGION"),
            get("NPU_SET_SCALE_BASE", "NPU_SET_SCALE_LENGTH", "NPU_SET_SCALE_REGION"))


def compare(model: bytes, weight_encoder: WeightEncoder | None = None) -> Result:
    """Kick-by-kick comparison; teflon's weights are encoded by its own codec (teflon.ethosu.mlw) unless another
    encoder is given (oracle_weight_encoder: Vela's, for telling an order error from a codec error)."""
    assert VELA is not None
    mlw_codec = VELA[1]
    graph = tflite_graph.load(model)
    ours = program.lower_graph(graph, [op.index for op in graph.operations], vela_compat=True,
                               weight_encoder=weight_encoder)
    vela = vela_oracle.compile_raw(model)
    mine = U65.state_at_kicks(ours.words, KICKS)
    theirs = U65.state_at_kicks(vela.words, KICKS)
    res = Result((len(mine), len(theirs)))
    if res.kicks[0] != res.kicks[1]:
        res.diffs.append(f"kicks: teflon {res.kicks[0]}, vela {res.kicks[1]}")
    for i, ((ka, a), (kb, b)) in enumerate(zip(mine, theirs)):
        if ka != kb:
            res.diffs.append(f"kick {i}: {ka} vs {kb}")
        for n in sorted(set(a) | set(b)):
            if n in PLACEMENT or a.get(n, 0) == b.get(n, 0):
                continue
            res.diffs.append(f"kick {i} {_name(n)}: teflon {_show(n, a.get(n))} vela {_show(n, b.get(n))}")
        vw, vs = _streams(b, vela.read_only) if kb in WEIGHTED else (None, None)  # else stale state
        placed = ours.placed[i]
        tw = ours.coeffs[placed.weights[0]:placed.weights[0] + placed.weights[1]] if placed.weights else None
        ts = ours.coeffs[placed.scales[0]:placed.scales[0] + placed.scales[1]] if placed.scales else None
        if (vw is None) != (tw is None):
            res.diffs.append(f"kick {i}: weights teflon {tw is not None} vela {vw is not None}")
        elif vw is not None and tw is not None:
            dv, dt = np.asarray(mlw_codec.decode(bytearray(vw))), np.asarray(mlw_codec.decode(bytearray(tw)))
            if dv.shape != dt.shape or not np.array_equal(dv, dt):
                res.diffs.append(f"kick {i}: decoded weights differ ({dt.size} vs {dv.size} values)")
        if U65.fields_of(U65.command("NPU_SET_ACTIVATION"), b.get("NPU_SET_ACTIVATION", 0))["type"] >= 16:
            mask = (1 << 40) - 1
            vl = vela.read_only[b["NPU_SET_DMA0_SRC"] & mask:][:b["NPU_SET_DMA0_LEN"] & 0xFFFFFFFF]
            tl = ours.coeffs[a.get("NPU_SET_DMA0_SRC", 0) & mask:][:a.get("NPU_SET_DMA0_LEN", 0) & 0xFFFFFFFF]
            if vl != tl:
                res.diffs.append(f"kick {i}: LUT differs ({tl[:8].hex()}... vs {vl[:8].hex()}...)")
        if vs is not None:  # Vela pads the records to 16 bytes
            vs = vs[:len(ts or b"")]
        if ts != vs:
            res.diffs.append(f"kick {i}: scale records differ ({len(ts or b'')} vs {len(vs or b'')} bytes)"
                             + (f" first record {ts[:10].hex()} vs {vs[:10].hex()}" if ts and vs else ""))
    return res
