"""The single-operation int8 models of the Ethos-U study (the same six cases as ../shared/tools/ethosu/make_models.py,
built with teflon.modelgen), each with its Vela-compiled form (vela_oracle: ethos-u-vela 5.2.0, ethos-u65-256)."""

from __future__ import annotations

from dataclasses import dataclass

from teflon import modelgen as mg

from .vela_oracle import compile_tflite

CASES = (
    mg.ConvCase("conv2d", 8, 8, 16, 16, kernel=3, stride=1, padding="same", dtype="int8", per_channel=True),
    mg.ConvCase("conv2d", 16, 16, 8, 32, kernel=3, stride=2, padding="same", activation="relu6", dtype="int8",
                per_channel=True),
    mg.ConvCase("dwconv", 8, 8, 16, kernel=3, stride=1, padding="same", dtype="int8", per_channel=True),
    mg.AddCase(8, 8, 16, producers="inputs", dtype="int8"),
    mg.FcCase(64, 16, dtype="int8"),
    mg.PoolCase(8, 8, 16, filter=2, stride=2, op="max", dtype="int8"),
)
IDS = tuple(c.name for c in CASES)


def models(case: mg.ConvCase | mg.AddCase | mg.FcCase | mg.PoolCase) -> tuple[bytes, bytes]:
    """(the original model, the model Vela compiled: one `ethos-u` custom op)."""
    model = case.build()
    return model, compile_tflite(model)


@dataclass(frozen=True)
class ChainCase:
    """n 3x3 int8 convolutions in a row on h x h x c maps: Vela keeps intermediate maps in its fast scratch
    (region 2), 14464 bytes for 3 x 16x16x16 (fits the i.MX93's 96 KiB SRAM) and 215328 for 4 x 32x32x64 (does not)."""

    n: int
    h: int
    c: int

    @property
    def name(self) -> str:
        return f"conv2d-chain{self.n}-in{self.h}x{self.h}x{self.c}-oc{self.c}-k3-s1-same-i8pc"

    def build(self) -> bytes:
        cases = [mg.ConvCase("conv2d", self.h, self.h, self.c, self.c, kernel=3, seed=i, dtype="int8",
                             per_channel=True) for i in range(self.n)]
        g = mg.GraphBuilder(f"teflon tests: {self.name}")
        params = mg.conv_params(cases[0], cases[0].rng())
        x = t = g.tensor("input", cases[0].input_shape, cases[0].dtype, params.input_quant)
        for i, case in enumerate(cases):
            if i:
                params = mg.conv_params(case, case.rng(), g.quant(t))
            t = mg.add_conv(g, case, t, params, f"conv{i}")
        return g.build([x], [t])


CHAINS = (ChainCase(3, 16, 16), ChainCase(4, 32, 64))
CHAIN_IDS = tuple(c.name for c in CHAINS)
