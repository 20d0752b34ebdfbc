"""The single-operation int8 models of the Ethos-U study (the same six cases as ../shared/tools/ethosu/make_models.py,
built with teflon.modelgen), each with its Vela-compiled form (vela_oracle: ethos-u-vela 5.2.0, ethos-u65-256)."""

from __future__ import annotations

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
