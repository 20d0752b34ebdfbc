"""Single-operation models of the Ethos-U65 operations lowered after the first sweep (tests/ethos_u/sweeps.py):
MAXIMUM / MINIMUM (two maps, broadcast, constants), two-map broadcast ADD / SUB / MUL, constants broadcast
along any of H, W, C, one-value constants, PAD, pools beyond 8x8, MEAN, HARD_SWISH, the standalone
RELU variants and QUANTIZE. OPS is the hand-picked sweep; `held_out(seed, n)` draws new cases from the same ranges."""

from __future__ import annotations

import random
import zlib

import flatbuffers
import numpy as np
import tflite

from teflon import modelgen as mg
from teflon.modelgen import BuiltinOperator, GraphBuilder, QParams

from .sweeps import ModelCase

BINARY = {"max": BuiltinOperator.MAXIMUM, "min": BuiltinOperator.MINIMUM, "add": BuiltinOperator.ADD,
          "sub": BuiltinOperator.SUB, "mul": BuiltinOperator.MUL}


def binary_model(op: str, shape: tuple[int, int, int], shape2: tuple[int, ...], dtype: str, seed: int = 0) -> bytes:
    """`op` of an (1, H, W, C) map and a second map input of shape `shape2` (broadcast along H and/or W).
    MAXIMUM / MINIMUM share one quantization (as converters write them); the others draw their own."""
    rng = np.random.default_rng([seed, zlib.crc32(f"{op}{shape}{shape2}{dtype}".encode())])
    qmin, qmax = mg.QRANGE[dtype]  # type: ignore[index]

    def q() -> QParams:
        return QParams.make(float(np.exp(rng.uniform(np.log(0.004), np.log(0.1)))), int(rng.integers(qmin, qmax + 1)))

    g = GraphBuilder(f"teflon tests: {op}")
    qa = q()
    qb, qy = (qa, qa) if op in ("max", "min") else (q(), q())
    a = g.tensor("a", (1, *shape), dtype, qa)
    b = g.tensor("b", shape2, dtype, qb)
    if op in ("add", "sub"):
        return g.build([a, b], [mg.add_add(g, a, b, op=op, out_quant=qy)])  # type: ignore[arg-type]
    y = g.tensor("y", (1, *shape), dtype, qy)
    version = 2 if dtype == "int8" else 1
    if op == "mul":
        g.op(BINARY[op], version, [a, b], [y], mg.BuiltinOptions.MulOptions, mg._mul_none_options)
    else:
        g.op(BINARY[op], version, [a, b], [y])
    return g.build([a, b], [y])


def quantize_model(shape: tuple[int, int, int], din: str, dout: str, seed: int = 0) -> bytes:
    """QUANTIZE of an 8-bit map into another 8-bit type and quantization."""
    rng = np.random.default_rng([seed, zlib.crc32(f"q{shape}{din}{dout}".encode())])
    g = GraphBuilder("teflon tests: quantize")
    lo, hi = mg.QRANGE[din]  # type: ignore[index]
    s = float(np.exp(rng.uniform(np.log(0.01), np.log(0.1))))
    x = g.tensor("x", (1, *shape), din, QParams.make(s, int(rng.integers(lo + 20, hi - 20))))
    lo, hi = mg.QRANGE[dout]  # type: ignore[index]
    y = g.tensor("y", (1, *shape), dout, QParams.make(s * float(rng.uniform(0.5, 2.0)), int(rng.integers(lo, hi + 1))))
    g.op(BuiltinOperator.QUANTIZE, 2 if "int8" in (din, dout) else 1, [x], [y])
    return g.build([x], [y])


def relu0to1_model(shape: tuple[int, int, int], dtype: str, seed: int = 0) -> bytes:
    """RELU_0_TO_1 (modelgen has no case for it) of an 8-bit map, the output quantized over [0, 1]."""
    rng = np.random.default_rng([seed, zlib.crc32(f"r01{shape}{dtype}".encode())])
    lo, hi = mg.QRANGE[dtype]  # type: ignore[index]
    g = GraphBuilder("teflon tests: relu0to1")
    x = g.tensor("x", (1, *shape), dtype, QParams.make(float(rng.uniform(0.005, 0.03)), int(rng.integers(lo, hi + 1))))
    y = g.tensor("y", (1, *shape), dtype, QParams.make(float(rng.uniform(0.8, 1.2)) / 255, lo + int(rng.integers(0, 8))))
    g.op(BuiltinOperator.RELU_0_TO_1, 1, [x], [y])
    return g.build([x], [y])


def _relu01(shape: tuple[int, int, int], dtype: str, seed: int = 0) -> ModelCase:
    name = f"relu0to1-in{'x'.join(map(str, shape))}-{'i8' if dtype == 'int8' else 'u8'}-seed{seed}"
    return ModelCase(name, lambda: relu0to1_model(shape, dtype, seed))


def const_map_model(op: str, shape: tuple[int, int, int], cshape: tuple[int, ...], dtype: str, seed: int = 0
                    ) -> bytes:
    """ADD / MUL of an (1, H, W, C) map and a constant of shape `cshape` broadcast along some of H, W, C (as NCHW
    models' per-channel scales land on NHWC: (1, C, 1, 1))."""
    rng = np.random.default_rng([seed, zlib.crc32(f"cm{op}{shape}{cshape}{dtype}".encode())])
    lo, hi = mg.QRANGE[dtype]  # type: ignore[index]

    def q() -> QParams:
        return QParams.make(float(np.exp(rng.uniform(np.log(0.004), np.log(0.1)))), int(rng.integers(lo, hi + 1)))

    g = GraphBuilder(f"teflon tests: {op} const map")
    x = g.tensor("x", (1, *shape), dtype, q())
    c = g.constant("c", rng.integers(lo, hi + 1, cshape).astype(dtype), q())
    y = g.tensor("y", (1, *shape), dtype, q())
    if op == "mul":
        g.op(BINARY[op], 2 if dtype == "int8" else 1, [x, c], [y], mg.BuiltinOptions.MulOptions, mg._mul_none_options)
    else:
        g.op(BINARY[op], 2 if dtype == "int8" else 1, [x, c], [y], mg.BuiltinOptions.AddOptions, _add_none_options)
    return g.build([x], [y])


def _add_none_options(fb: flatbuffers.Builder) -> int:
    tflite.AddOptionsStart(fb)
    return tflite.AddOptionsEnd(fb)


def _cmap(op: str, shape: tuple[int, int, int], cshape: tuple[int, ...], dtype: str, seed: int = 0) -> ModelCase:
    name = (f"{op}-in{'x'.join(map(str, shape))}-c{'x'.join(map(str, cshape))}-{'i8' if dtype == 'int8' else 'u8'}"
            f"-seed{seed}")
    return ModelCase(name, lambda: const_map_model(op, shape, cshape, dtype, seed))


def _bin(op: str, shape: tuple[int, int, int], shape2: tuple[int, ...], dtype: str, seed: int = 0) -> ModelCase:
    s2 = "x".join(map(str, shape2))
    name = f"{op}-in{'x'.join(map(str, shape))}-b{s2}-{'i8' if dtype == 'int8' else 'u8'}-seed{seed}"
    return ModelCase(name, lambda: binary_model(op, shape, shape2, dtype, seed))


def _quant(shape: tuple[int, int, int], din: str, dout: str, seed: int = 0) -> ModelCase:
    name = f"quantize-in{'x'.join(map(str, shape))}-{din}-to-{dout}-seed{seed}"
    return ModelCase(name, lambda: quantize_model(shape, din, dout, seed))


Case = ModelCase | mg.ConstOpCase | mg.UnaryCase

OPS: list[Case] = [
    _bin("max", (8, 8, 16), (1, 8, 8, 16), "int8"),
    _bin("min", (6, 5, 24), (1, 6, 5, 24), "uint8", 1),
    _bin("max", (8, 8, 16), (1, 1, 1, 16), "int8", 2),
    _bin("min", (7, 9, 32), (32,), "int8", 3),
    _bin("max", (6, 8, 16), (1, 1, 8, 16), "uint8", 4),
    _bin("min", (6, 8, 16), (1, 6, 1, 16), "int8", 5),
    _bin("mul", (8, 8, 16), (1, 1, 1, 16), "int8", 6),
    _bin("add", (8, 8, 16), (1, 1, 1, 16), "int8", 7),
    _bin("sub", (5, 7, 24), (1, 1, 1, 24), "uint8", 8),
    _cmap("mul", (16, 12, 10), (1, 16, 1, 1), "int8"),
    _cmap("add", (8, 6, 24), (1, 8, 1, 1), "uint8", 1),
    _cmap("mul", (6, 5, 16), (1, 1, 5, 16), "int8", 2),
    _cmap("add", (6, 5, 16), (1, 6, 5, 1), "int8", 3),
    _cmap("mul", (4, 7, 8), (1, 4, 7, 8), "uint8", 4),
    mg.ConstOpCase(8, 8, 16, op="max", bcast="c", dtype="int8"),
    mg.ConstOpCase(6, 8, 20, op="min", bcast="c", dtype="uint8"),
    mg.ConstOpCase(8, 8, 16, op="min", bcast="1", dtype="int8"),
    mg.ConstOpCase(4, 4, 32, op="max", bcast="1", dtype="uint8"),
    mg.ConstOpCase(8, 8, 16, op="add", bcast="1", dtype="int8", activation="relu6", seed=1),
    mg.ConstOpCase(6, 7, 24, op="sub", bcast="1", dtype="uint8", seed=2),
    mg.ConstOpCase(5, 8, 16, op="mul", bcast="1", dtype="int8", seed=3),
    # fewer than 8 channels, the second operand broadcast (a map along H / W / C, a per-channel constant, a map
    # constant along some axes): Vela keeps the shape (lower.vela_reshapes), --vela-compat matches it
    _bin("add", (8, 8, 4), (1, 1, 1, 4), "int8", 12),
    _bin("min", (6, 8, 5), (1, 6, 1, 5), "uint8", 13),
    _bin("max", (7, 9, 3), (3,), "int8", 14),
    _bin("mul", (16, 16, 1), (1, 1, 16, 1), "int8", 15),
    _bin("sub", (5, 7, 6), (1, 1, 1, 6), "uint8", 16),
    _bin("add", (40, 40, 2), (1, 1, 40, 2), "int8", 17),
    _cmap("mul", (6, 5, 3), (1, 6, 1, 1), "int8", 5),
    _cmap("add", (6, 5, 4), (1, 1, 5, 4), "uint8", 6),
    mg.ConstOpCase(8, 8, 3, op="add", bcast="c", dtype="int8"),
    mg.ConstOpCase(6, 8, 5, op="min", bcast="c", dtype="uint8"),
    mg.UnaryCase("hardswish", 4, 4, 16, dtype="int8"),
    mg.UnaryCase("hardswish", 12, 11, 20, dtype="int8", seed=3),
    mg.UnaryCase("hardswish", 8, 8, 16, dtype="uint8", seed=1),
    mg.UnaryCase("relu", 4, 4, 16, dtype="int8"),
    mg.UnaryCase("relu", 6, 8, 24, dtype="uint8", seed=1),
    mg.UnaryCase("relu6", 4, 4, 16, dtype="int8"),
    mg.UnaryCase("relu6", 9, 9, 32, dtype="uint8", seed=2),
    mg.UnaryCase("relun1", 4, 4, 16, dtype="int8"),
    mg.UnaryCase("relun1", 5, 7, 8, dtype="uint8", seed=4),
    mg.UnaryCase("quantize", 4, 4, 16, dtype="int8"),
    mg.UnaryCase("quantize", 6, 6, 24, dtype="uint8", seed=1),
    _relu01((4, 4, 16), "int8"),
    _relu01((6, 5, 24), "uint8", 1),
    _quant((4, 4, 16), "uint8", "int8"),
    _quant((5, 3, 32), "int8", "uint8", 1),
    mg.ElementwiseCase("pad", 6, 6, 16, dtype="int8", pads=(1, 1, 2, 0, 0, 0)),
    mg.ElementwiseCase("pad", 5, 7, 24, dtype="uint8", pads=(1, 2, 3, 1, 0, 0)),
    mg.ElementwiseCase("pad", 5, 7, 24, dtype="int8", pads=(0, 1, 0, 1, 0, 0)),
    mg.ElementwiseCase("pad", 8, 8, 32, dtype="int8", pads=(1, 1, 1, 1, 0, 0)),
    mg.ElementwiseCase("pad", 4, 9, 8, dtype="uint8", pads=(2, 0, 0, 0, 0, 0)),
    mg.PoolCase(14, 14, 96, filter=14, stride=1, op="avg", dtype="uint8"),
    mg.PoolCase(7, 7, 32, filter=7, stride=1, op="avg", dtype="int8"),
    mg.PoolCase(8, 8, 16, filter=8, stride=8, op="avg", dtype="int8"),
    mg.PoolCase(25, 5, 64, filter=25, filter_w=5, stride=1, op="avg", dtype="int8"),
    mg.PoolCase(12, 12, 16, filter=12, stride=1, op="max", dtype="int8"),
    mg.PoolCase(12, 12, 16, filter=9, stride=1, padding="same", op="max", dtype="uint8"),
    mg.PoolCase(20, 20, 24, filter=10, stride=2, op="avg", dtype="int8"),
    mg.PoolCase(7, 7, 32, op="mean", dtype="int8"),
    mg.PoolCase(7, 7, 32, op="mean", dtype="int8", requant=True),
    mg.PoolCase(4, 6, 48, op="mean", dtype="int8", requant=True, seed=4),
    mg.PoolCase(8, 8, 40, op="mean", dtype="uint8", seed=5),
    mg.PoolCase(2, 2, 8, op="mean", dtype="int8", requant=True, seed=6),
    mg.PoolCase(3, 5, 16, op="mean", dtype="uint8", requant=True, seed=1),
    mg.PoolCase(14, 14, 16, op="mean", dtype="int8", requant=True),
    mg.PoolCase(10, 3, 24, op="mean", dtype="int8"),
    mg.PoolCase(12, 12, 64, op="mean", dtype="uint8", seed=2),
]
# Fewer than 8 channels and more than 16 values, the second operand of the map's shape or one value, or a
# one-input operation (LUT, requantizing RELU, QUANTIZE): Vela gives
# these another shape by a search of its own (lower.vela_reshapes), so --vela-compat refuses them; the default
# compile runs them as they are. Not in OPS (whose every case --vela-compat matches); the (1, 4420, 2) MUL is
# lightface's; the (4, 4, 1) ADD has 16 values, which Vela keeps as they are.
SMALL_DEPTH_RESHAPED: list[Case] = [
    _bin("add", (8, 8, 4), (1, 8, 8, 4), "int8", 18),
    _bin("mul", (1, 4420, 2), (1, 1, 4420, 2), "int8", 19),
    _bin("sub", (9, 9, 2), (1, 9, 9, 2), "uint8", 20),
    _bin("max", (5, 7, 3), (1, 5, 7, 3), "int8", 21),
    _cmap("mul", (4, 7, 2), (1, 4, 7, 2), "int8", 7),
    mg.ConstOpCase(8, 8, 3, op="mul", bcast="1", dtype="int8", seed=4),
    mg.ConstOpCase(6, 5, 1, op="sub", bcast="c", dtype="uint8", seed=5),
    mg.UnaryCase("hardswish", 4, 4, 3, dtype="int8"),
    mg.UnaryCase("relu6", 5, 5, 2, dtype="uint8", seed=1),
    mg.UnaryCase("quantize", 3, 7, 1, dtype="int8", seed=2),
]
SMALL_DEPTH_KEPT: list[Case] = [_bin("add", (4, 4, 1), (1, 4, 4, 1), "int8", 22)]
OPS += SMALL_DEPTH_KEPT

# Tensors of rank 2 and 3 (and a (1, 1, 1, N) FULLY_CONNECTED input): Vela reads them with ones prepended up to
# rank 4, (1, C) as 1x1xC and (1, W, C) as 1xWxC (support.nhwc). Shapes of the zoo's: keras_lstm_mnist's
# QUANTIZEs, yamnet's classifier, yolov5n's output QUANTIZEs (smaller).
LOW_RANK: list[Case] = [
    _quant((28, 28), "uint8", "int8"),
    _quant((10,), "int8", "uint8", 1),
    _quant((300, 85), "int8", "int8", 2),
    mg.UnaryCase("logistic", 1, 1, 521, dtype="int8", rank=2),
    mg.UnaryCase("tanh", 1, 7, 24, dtype="uint8", seed=1, rank=3),
    mg.UnaryCase("hardswish", 1, 1, 40, dtype="int8", seed=2, rank=2),
    mg.UnaryCase("relu6", 1, 9, 16, dtype="int8", seed=3, rank=3),
    _bin("add", (12, 24), (1, 12, 24), "int8", 9),
    _bin("mul", (40,), (1, 40), "uint8", 10),
    _bin("max", (6, 16), (16,), "int8", 11),
    mg.FcCase(1024, 24, dtype="int8", rank4=True),
    mg.FcCase(64, 10, dtype="uint8", seed=1, rank4=True),
]
OPS += LOW_RANK


def softmax_model(shape: tuple[int, ...], dtype: str, beta: float = 1.0, seed: int = 0) -> bytes:
    """SOFTMAX over the last axis with a drawn input quantization and the output quantization TFLite requires
    (1/256 from the type's minimum)."""
    rng = np.random.default_rng([seed, zlib.crc32(f"sm{shape}{dtype}{beta}".encode())])
    lo, hi = mg.QRANGE[dtype]  # type: ignore[index]
    g = GraphBuilder("teflon tests: softmax")
    s = float(np.exp(rng.uniform(np.log(0.01), np.log(0.3))))
    x = g.tensor("x", shape, dtype, QParams.make(s, int(rng.integers(lo, hi + 1))))
    y = g.tensor("y", shape, dtype, QParams.make(1 / 256, lo))

    def options(fb: flatbuffers.Builder) -> int:
        tflite.SoftmaxOptionsStart(fb)
        tflite.SoftmaxOptionsAddBeta(fb, beta)
        return tflite.SoftmaxOptionsEnd(fb)

    g.op(BuiltinOperator.SOFTMAX, 2 if dtype == "int8" else 1, [x], [y], mg.BuiltinOptions.SoftmaxOptions, options)
    return g.build([x], [y])


def _softmax(shape: tuple[int, ...], dtype: str, beta: float = 1.0, seed: int = 0) -> ModelCase:
    name = f"softmax-in{'x'.join(map(str, shape))}-beta{beta:g}-{'i8' if dtype == 'int8' else 'u8'}-seed{seed}"
    return ModelCase(name, lambda: softmax_model(shape, dtype, beta, seed))


# SOFTMAX (teflon.ethosu.softmax): rows of 2 (lightface's (1, 4420, 2)) to the longest claimed (511), batched rows,
# beta other than 1. Not in OPS: the register state differs from Vela's in layout (docs/hardware/ethosu-compiler.md).
SOFTMAX: list[ModelCase] = [
    _softmax((1, 10), "int8"),
    _softmax((1, 10), "uint8", seed=1),
    _softmax((1, 2), "int8", seed=2),
    _softmax((4, 10), "int8", 0.5, 3),
    _softmax((1, 300), "int8", 2.0, 4),
    _softmax((1, 511), "uint8", seed=5),
    _softmax((1, 4420, 2), "int8", seed=6),
    _softmax((2, 3, 40), "uint8", 2.0, 7),
    _softmax((1, 1, 1, 100), "int8", seed=8),
]
MEAN_SUMS = ("Vela keeps MEAN's 32-bit sums in its fast-memory scratch (region 2), teflon in the arena (region 1): "
             "placement")


def held_out(seed: int, n: int) -> list[Case]:
    """n cases drawn from OPS's parameter ranges."""
    rnd = random.Random(seed)
    out: list[Case] = []
    while len(out) < n:
        kind = rnd.choice(["bin", "bin", "const", "lut", "rescale", "quant", "pad", "pool", "mean", "cmap"])
        dt = rnd.choice(["int8", "int8", "uint8"])
        sd = 200 + len(out)
        h, w = rnd.choice([1, 2, 3, 5, 8, 9, 16]), rnd.choice([2, 3, 4, 7, 8, 11, 16])
        c = rnd.choice([8, 16, 20, 24, 32, 48, 64])
        if kind == "bin":
            op = rnd.choice(["max", "min", "max", "min", "add", "sub", "mul"])
            s2 = rnd.choice([(1, h, w, c), (1, 1, 1, c), (1, 1, w, c), (1, h, 1, c), (c,)])
            out.append(_bin(op, (h, w, c), s2, dt, sd))
        elif kind == "const":
            out.append(mg.ConstOpCase(h, w, c, op=rnd.choice(["max", "min"]), bcast=rnd.choice(["c", "1"]),
                                      dtype=dt, seed=sd))  # type: ignore[arg-type]
        elif kind == "lut":
            out.append(mg.UnaryCase("hardswish", h, w, c, dtype=dt, seed=sd))  # type: ignore[arg-type]
        elif kind == "rescale":
            out.append(mg.UnaryCase(rnd.choice(["relu", "relu6", "relun1", "quantize"]), h, w, c, dtype=dt,  # type: ignore[arg-type]
                                    seed=sd))
        elif kind == "quant":
            out.append(_quant((h, w, c), dt, rnd.choice(["int8", "uint8"]), sd))
        elif kind == "cmap":
            keep = rnd.choice([(1, 0, 0), (0, 1, 1), (1, 1, 0), (0, 1, 0), (1, 1, 1)])
            cshape = (1, *(d if k else 1 for d, k in zip((h, w, c), keep)))
            out.append(_cmap(rnd.choice(["add", "mul"]), (h, w, c), cshape, dt, sd))
        elif kind == "mean":
            out.append(mg.PoolCase(rnd.choice([2, 3, 5, 7, 8, 14]), rnd.choice([2, 3, 4, 7, 8, 16]), c, op="mean", dtype=dt,  # type: ignore[arg-type]
                                   requant=rnd.random() < 0.7, seed=sd))
        elif kind == "pool":  # a window beyond 8x8: global (the whole map) or sliding, VALID
            kh, kw = rnd.choice([9, 10, 12, 14, 16]), rnd.choice([3, 7, 9, 12, 16])
            glob = rnd.random() < 0.5
            out.append(mg.PoolCase(kh if glob else kh + rnd.choice([0, 1, 3]), kw if glob else kw + rnd.choice([0, 2]),
                                   c, filter=kh, filter_w=kw, stride=rnd.choice([1, 2]) if not glob else kh,
                                   op=rnd.choice(["avg", "max"]), dtype=dt, seed=sd))  # type: ignore[arg-type]
        else:
            pads = tuple(rnd.choice([0, 0, 1, 1, 2, 3]) for _ in range(4))
            out.append(mg.ElementwiseCase("pad", h, w, c, dtype=dt, pads=(*pads, 0, 0), seed=sd))  # type: ignore[arg-type]
    return out
