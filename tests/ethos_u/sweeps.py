"""Single-operation int8/uint8 models for checking teflon's Ethos-U65 compiler against Vela (test_vela_compat.py).

SWEEP is chosen by hand to cover each lowering decision once or more; `held_out(seed, n)` draws cases from the
same parameter ranges with a generator the compiler was never tuned on."""

from __future__ import annotations

import random
from collections.abc import Callable

from teflon import modelgen as mg
from teflon import netgen

Case = mg.ConvCase | mg.FcCase | mg.AddCase | mg.ConstOpCase | mg.PoolCase | mg.UnaryCase


def _conv(op: str, h: int, w: int, ci: int, co: int | None, k: int, s: int, pad: str, act: str = "none",
          dt: str = "int8", pc: bool = False, seed: int = 0) -> mg.ConvCase:
    return mg.ConvCase(op, h, w, ci, co if op == "conv2d" else None, kernel=k, stride=s, padding=pad,  # type: ignore[arg-type]
                       activation=act, dtype=dt, per_channel=pc, seed=seed)  # type: ignore[arg-type]


SWEEP: list[Case] = [
    _conv("conv2d", 8, 8, 16, 16, 1, 1, "same", pc=True),
    _conv("conv2d", 8, 8, 16, 16, 3, 1, "same", pc=True),
    _conv("conv2d", 8, 8, 16, 16, 3, 1, "same", "relu", seed=1),
    _conv("conv2d", 16, 16, 8, 32, 3, 2, "same", "relu6", pc=True),
    _conv("conv2d", 9, 7, 5, 12, 3, 2, "valid", "relu6", pc=True, seed=2),
    _conv("conv2d", 12, 12, 32, 48, 5, 1, "same", pc=True, seed=3),
    _conv("conv2d", 7, 11, 8, 8, 5, 2, "same", "relu", seed=4),
    _conv("conv2d", 6, 6, 64, 16, 1, 2, "valid", pc=True, seed=5),
    _conv("conv2d", 10, 10, 3, 8, 3, 1, "valid", "relu6", "uint8", seed=6),
    _conv("conv2d", 16, 16, 24, 40, 3, 2, "same", dt="uint8", seed=7),
    _conv("conv2d", 32, 32, 3, 24, 5, 2, "same", "relu"),
    _conv("conv2d", 4, 4, 64, 64, 3, 1, "same", pc=True, seed=8),
    _conv("conv2d", 8, 2, 20, 24, 5, 2, "same", pc=True, seed=9),
    _conv("conv2d", 3, 40, 16, 32, 3, 2, "valid", "relu", pc=True, seed=10),
    _conv("conv2d", 16, 16, 16, 32, 1, 1, "same", dt="uint8", seed=11),
    _conv("conv2d", 13, 15, 64, 16, 3, 2, "same", "relu", seed=12),
    _conv("conv2d", 1, 15, 1, 128, 5, 2, "same", "relu6", pc=True, seed=13),
    _conv("conv2d", 12, 12, 16, 16, 7, 1, "same", pc=True),
    _conv("conv2d", 12, 12, 16, 16, 2, 2, "valid", pc=True),
    mg.ConvCase("conv2d", 10, 10, 8, 16, kernel=3, kernel_w=1, stride=1, padding="same", dtype="int8"),
    mg.ConvCase("conv2d", 10, 10, 8, 16, kernel=1, kernel_w=5, stride=2, stride_w=1, padding="same", dtype="int8"),
    _conv("dwconv", 8, 8, 16, None, 3, 1, "same", pc=True),
    _conv("dwconv", 12, 12, 16, None, 7, 2, "same", pc=True),
    _conv("dwconv", 8, 8, 32, None, 3, 1, "same", "relu6", pc=True, seed=1),
    _conv("dwconv", 9, 9, 24, None, 5, 2, "valid", seed=2),
    _conv("dwconv", 12, 10, 8, None, 3, 2, "same", "relu", "uint8", seed=3),
    _conv("dwconv", 16, 16, 64, None, 3, 1, "same", pc=True, seed=4),
    _conv("dwconv", 3, 8, 64, None, 3, 2, "valid", "relu6", pc=True, seed=5),
    _conv("dwconv", 5, 4, 20, None, 5, 1, "same", "relu6", "uint8", seed=6),
    mg.FcCase(64, 16, dtype="int8"),
    mg.FcCase(100, 10, dtype="int8", per_channel=True, activation="relu", seed=1),
    mg.FcCase(256, 64, dtype="uint8", seed=2),
    mg.FcCase(32, 128, dtype="int8", per_channel=True, activation="relu6", seed=3),
    mg.AddCase(8, 8, 16, producers="inputs", dtype="int8"),
    mg.AddCase(8, 8, 16, producers="inputs", dtype="int8", op="sub", seed=3),
    mg.AddCase(5, 7, 24, producers="inputs", dtype="uint8", activation="relu", seed=4),
    mg.AddCase(8, 8, 16, producers="inputs", dtype="int8", activation="relu6", seed=5),
    mg.ConstOpCase(8, 8, 16, op="add", bcast="c"),
    mg.ConstOpCase(6, 8, 20, op="add", bcast="1", dtype="int8"),
    mg.ConstOpCase(6, 8, 20, op="sub", bcast="c", dtype="int8"),
    mg.ConstOpCase(4, 4, 32, op="sub", bcast="1", dtype="uint8"),
    mg.ConstOpCase(8, 8, 16, op="mul", bcast="1"),
    mg.ConstOpCase(8, 8, 16, op="mul", bcast="c", dtype="int8"),
    mg.PoolCase(8, 8, 16, filter=2, stride=2, op="max", dtype="int8"),
    mg.PoolCase(8, 8, 16, filter=2, stride=2, op="max", dtype="uint8", seed=5),
    mg.PoolCase(15, 15, 8, filter=3, stride=2, padding="same", op="max", dtype="int8"),
    mg.PoolCase(8, 8, 16, filter=3, stride=1, padding="same", op="avg", dtype="int8", seed=3),
    mg.PoolCase(9, 9, 24, filter=3, stride=2, padding="valid", op="avg", dtype="uint8", seed=4),
    mg.PoolCase(16, 16, 32, filter=2, stride=2, op="avg", dtype="int8"),
    mg.PoolCase(12, 12, 64, filter=5, stride=1, padding="same", op="avg", dtype="uint8"),
    mg.PoolCase(10, 10, 16, filter=4, stride=2, padding="valid", op="max", dtype="int8"),
    mg.PoolCase(5, 7, 24, filter=1, stride=1, op="avg", dtype="int8"),
    mg.PoolCase(16, 16, 20, filter=1, stride=1, op="max", dtype="int8"),
    mg.UnaryCase("logistic", 4, 4, 16, dtype="int8"),
    mg.UnaryCase("logistic", 12, 11, 20, dtype="int8", seed=9),
    mg.UnaryCase("logistic", 8, 8, 16, dtype="uint8"),
    mg.UnaryCase("logistic", 4, 4, 16, dtype="int8", seed=5),
    mg.UnaryCase("tanh", 6, 8, 24, dtype="int8"),
    mg.UnaryCase("tanh", 3, 3, 32, dtype="uint8", seed=3),
    mg.UnaryCase("leakyrelu", 4, 4, 16, dtype="int8"),
    mg.UnaryCase("leakyrelu", 6, 8, 32, dtype="uint8", seed=2),
]


def held_out(seed: int, n: int) -> list[Case]:
    """n cases drawn from the sweep's parameter ranges."""
    rnd = random.Random(seed)
    out: list[Case] = []
    while len(out) < n:
        kind = rnd.choice(["conv2d", "conv2d", "dwconv", "fc", "add", "const", "pool", "lut"])
        dt = rnd.choice(["int8", "int8", "uint8"])
        act = rnd.choice(["none", "relu", "relu6"])
        sd = 100 + len(out)
        h, w = rnd.choice([2, 3, 4, 5, 8, 9, 12, 16]), rnd.choice([2, 3, 4, 7, 8, 11, 16])
        c = rnd.choice([8, 16, 20, 24, 32, 48, 64])
        if kind in ("conv2d", "dwconv"):
            k, s, pad = rnd.choice([1, 3, 5]), rnd.choice([1, 2]), rnd.choice(["same", "valid"])
            if pad == "valid" and (k > h or k > w):
                continue
            out.append(_conv(kind, h, w, rnd.choice([1, 3, 8, 16, 32]) if kind == "conv2d" else c,
                             rnd.choice([8, 16, 24, 32, 64]), k, s, pad, act, dt,
                             dt == "int8" and rnd.random() < 0.6, sd))
        elif kind == "lut":
            out.append(mg.UnaryCase(rnd.choice(["logistic", "tanh", "leakyrelu"]), h, w, c, dtype=dt, seed=sd))  # type: ignore[arg-type]
        elif kind == "fc":
            out.append(mg.FcCase(rnd.choice([16, 32, 64, 100, 256]), rnd.choice([8, 10, 16, 64, 128]), dtype=dt,  # type: ignore[arg-type]
                                 per_channel=dt == "int8" and rnd.random() < 0.5, activation=act, seed=sd))  # type: ignore[arg-type]
        elif kind == "add":
            out.append(mg.AddCase(h, w, c, producers="inputs", dtype=dt, activation=act, seed=sd,  # type: ignore[arg-type]
                                  op=rnd.choice(["add", "sub"])))
        elif kind == "const":
            out.append(mg.ConstOpCase(h, w, c, op=rnd.choice(["add", "sub", "mul"]), bcast=rnd.choice(["c", "1"]),
                                      dtype=dt, seed=sd))  # type: ignore[arg-type]
        else:
            k = rnd.choice([2, 3])
            pad = rnd.choice(["same", "valid"])
            if pad == "valid" and (k > h or k > w):
                continue
            out.append(mg.PoolCase(h, w, c, filter=k, stride=rnd.choice([1, 2]), padding=pad,  # type: ignore[arg-type]
                                   op=rnd.choice(["max", "avg"]), dtype=dt, seed=sd))  # type: ignore[arg-type]
    return out


def concat_model(dtype: str, shapes: list[tuple[int, int, int]]) -> bytes:
    n = netgen.Net("concat", dtype)  # type: ignore[arg-type]
    xs = [n.input(*s) for s in shapes]
    return n.build(xs, [n.concat(xs, 3)])


def reshape_model(dtype: str, shape: tuple[int, int, int], new: tuple[int, ...]) -> bytes:
    n = netgen.Net("reshape", dtype)  # type: ignore[arg-type]
    x = n.input(*shape)
    return n.build([x], [n.reshape(x, new)])


def reshape_after_add_model(dtype: str, shape: tuple[int, int, int], new: tuple[int, ...]) -> bytes:
    n = netgen.Net("reshape_after_add", dtype)  # type: ignore[arg-type]
    x, y = n.input(*shape), n.input(*shape)
    return n.build([x, y], [n.reshape(n.add(x, y), new)])


class ModelCase:
    """A model built by a function (netgen graphs), named by its parameters like modelgen's cases."""

    def __init__(self, name: str, build: Callable[[], bytes], dtype: str = "int8") -> None:
        self.name = name
        self._build = build
        self.dtype = dtype

    def build(self) -> bytes:
        return self._build()

    def __str__(self) -> str:
        return self.name


VIEWS: list[ModelCase] = [
    ModelCase("concat-8x8x16+8x8x8-i8", lambda: concat_model("int8", [(8, 8, 16), (8, 8, 8)])),
    ModelCase("concat-6x8x8+6x8x24+6x8x16-u8", lambda: concat_model("uint8", [(6, 8, 8), (6, 8, 24), (6, 8, 16)])),
    ModelCase("concat-9x9x8+9x9x8-i8", lambda: concat_model("int8", [(9, 9, 8), (9, 9, 8)])),
    ModelCase("concat-5x7x8+5x7x24+5x7x16-u8", lambda: concat_model("uint8", [(5, 7, 8), (5, 7, 24), (5, 7, 16)])),
    ModelCase("concat-12x12x32+12x12x32-i8", lambda: concat_model("int8", [(12, 12, 32), (12, 12, 32)])),
    ModelCase("reshape-4x4x16-to-1x16x16-i8", lambda: reshape_model("int8", (4, 4, 16), (1, 16, 16))),
    ModelCase("reshape-6x8x24-to-1x48x24-u8", lambda: reshape_model("uint8", (6, 8, 24), (1, 48, 24))),
]


def _net(dtype: str, shapes: list[tuple[int, int, int]], build: Callable[[netgen.Net, list[int]], list[int]]) -> bytes:
    n = netgen.Net("moves", dtype)  # type: ignore[arg-type]
    xs = [n.input(*s) for s in shapes]
    return n.build(xs, build(n, xs))


def _dt(dtype: str) -> str:
    return {"int8": "i8", "uint8": "u8"}[dtype]


def concat_case(axis: int, shapes: list[tuple[int, int, int]], dtype: str = "int8") -> ModelCase:
    name = "concat-ax{}-{}-{}".format(axis, "+".join("x".join(map(str, s)) for s in shapes), _dt(dtype))
    return ModelCase(name, lambda: _net(dtype, shapes, lambda n, xs: [n.concat(xs, axis)]))


def split_case(axis: int, sizes: list[int], shape: tuple[int, int, int], dtype: str = "int8") -> ModelCase:
    equal = len(set(sizes)) == 1
    name = "split{}-ax{}-{}-in{}-{}".format("" if equal else "v", axis, "+".join(map(str, sizes)),
                                             "x".join(map(str, shape)), _dt(dtype))
    return ModelCase(name, lambda: _net(dtype, [shape], lambda n, xs: n.split(xs[0], len(sizes), axis) if equal
                                        else n.split_v(xs[0], sizes, axis)))


def slice_case(first: int, count: int, shape: tuple[int, int, int], strided: bool, dtype: str = "int8") -> ModelCase:
    name = "{}slice-c{}+{}-in{}-{}".format("strided-" if strided else "", first, count, "x".join(map(str, shape)),
                                           _dt(dtype))
    return ModelCase(name, lambda: _net(dtype, [shape], lambda n, xs: [n.channels(xs[0], first, count, strided)]))


def resize_case(shape: tuple[int, int, int], dtype: str = "int8") -> ModelCase:
    return ModelCase("resize-nearest-x2-in{}-{}".format("x".join(map(str, shape)), _dt(dtype)),
                     lambda: _net(dtype, [shape], lambda n, xs: [n.resize_nearest(xs[0], 2)]), dtype)


def transpose_case(shape: tuple[int, int, int], perm: tuple[int, ...], dtype: str = "int8") -> ModelCase:
    return ModelCase("transpose-{}-in{}-{}".format("".join(map(str, perm)), "x".join(map(str, shape)), _dt(dtype)),
                     lambda: _net(dtype, [shape], lambda n, xs: [n.transpose(xs[0], perm)]))


# Data movement (teflon.ethosu.moves) checked against Vela's kick state (test_moves.py). Vela makes one kick per
# part for these; uint8 transposes are left out: Vela reads their bytes as int8 with zero point 128.
MOVES: list[ModelCase] = [
    concat_case(1, [(4, 8, 16), (6, 8, 16)]),
    concat_case(2, [(4, 8, 16), (4, 5, 16)]),
    concat_case(1, [(3, 5, 24), (2, 5, 24), (4, 5, 24)], "uint8"),
    concat_case(2, [(6, 3, 8), (6, 9, 8)], "uint8"),
    concat_case(3, [(5, 7, 8), (5, 7, 24)], "uint8"),
    split_case(3, [16, 16], (6, 8, 32)),
    split_case(1, [3, 3], (6, 8, 32)),
    split_case(2, [4, 4], (6, 8, 32)),
    split_case(3, [8, 24], (6, 8, 32)),
    split_case(1, [2, 3, 4], (9, 5, 16), "uint8"),
    split_case(3, [8, 8, 8, 8], (4, 4, 32), "uint8"),
    slice_case(8, 16, (6, 8, 32), strided=False),
    slice_case(8, 16, (6, 8, 32), strided=True),
    slice_case(0, 40, (7, 3, 64), strided=True, dtype="uint8"),
    transpose_case((5, 7, 16), (0, 2, 1, 3)),
    transpose_case((12, 3, 40), (0, 2, 1, 3)),
]
# RESIZE_NEAREST_NEIGHBOR x2 (its block configuration: the IFM block of an upscaled read, blocks._ifm_block)
RESIZES: list[ModelCase] = [resize_case((5, 7, 16)), resize_case((8, 8, 8)), resize_case((3, 9, 24), "uint8"),
                            resize_case((20, 20, 64)), resize_case((6, 6, 16)), resize_case((16, 16, 16), "uint8"),
                            resize_case((4, 32, 16)), resize_case((40, 4, 16)), resize_case((9, 9, 16))]
# Data movement Vela lowers differently (more kicks), run on the simulator only
OWN_MOVES: list[ModelCase] = [
    transpose_case((5, 7, 16), (0, 3, 1, 2)),
    transpose_case((16, 5, 7), (0, 2, 3, 1)),
    transpose_case((3, 5, 7), (0, 1, 3, 2)),
    transpose_case((5, 7, 16), (0, 2, 1, 3), "uint8"),
    resize_case((1, 1, 40)),  # Vela: an ELEMENTWISE broadcast
]


def moves_held_out(seed: int, n: int) -> list[ModelCase]:
    """Random data-movement cases from the same kinds as MOVES (shapes, axes, parts, types), never tuned on."""
    rng = random.Random(seed)
    out: list[ModelCase] = []
    while len(out) < n:
        kind = rng.choice(["concat", "split", "slice", "transpose", "resize"])
        h, w, c = rng.randint(1, 12), rng.randint(1, 12), rng.choice([8, 16, 24, 32, 40, 64])
        dtype = rng.choice(["int8", "uint8"])
        axis = rng.choice([1, 2, 3])
        if kind == "concat":
            k = rng.randint(2, 3)
            shapes = []
            for _ in range(k):
                s = [h, w, c]
                s[axis - 1] = rng.choice([1, 2, 3, 5, 8]) * (8 if axis == 3 else 1)
                shapes.append((s[0], s[1], s[2]))
            out.append(concat_case(axis, shapes, dtype))
        elif kind == "split":
            full = [h, w, c]
            size = full[axis - 1]
            if size < 2:
                continue
            cut = rng.randint(1, size - 1)
            out.append(split_case(axis, [cut, size - cut], (h, w, c), dtype))
        elif kind == "slice":
            first = rng.choice([0, 8, 16])
            if first >= c:
                continue
            count = rng.randint(1, (c - first) // 8) * 8
            out.append(slice_case(first, count, (h, w, c), rng.random() < 0.5, dtype))
        elif kind == "transpose":
            out.append(transpose_case((h, w, c), (0, 2, 1, 3)))
        elif h * w > 1:  # a 1x1 map Vela broadcasts with an ELEMENTWISE kick instead (not modelled)
            out.append(resize_case((h, w, c), dtype))
    return out
