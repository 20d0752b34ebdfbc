"""The target registry: every SoC teflon knows, as data. The one list of SoCs in the project.

A row names the SoC, its NPU family (the package `teflon.<family>` that compiles for it and the C driver family
`drivers/<family>/` that runs it), its hardware generation (the per-generation modules inside the family), the id
it has in program blobs, how a board shows it (devicetree compatibles of the NPU, or of the SoC for NPUs that
appear as a DRM render node), and its capabilities. `drivable` is False while a family exists only on paper: the
delegate refuses such a device with a clear message.

The C side reads the same rows from `teflon_targets.h`, generated at build time by `python -m teflon.targets
--c-header OUT` (delegate/meson.build); the module is numpy-free and imports nothing from the package.

Adding an SoC to an existing family: one row here, plus the generation's modules when it is a new generation
(docs/architecture.md, "Adding an SoC").
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Target:
    name: str  # the `device` option value
    family: str  # teflon.<family>, drivers/<family>/
    generation: str  # the per-generation modules of the family (rocket: rk3588, rk3576, rk3568; etnaviv: v7, v8)
    blob_id: int  # program blob header `target` (never reused)
    # How device=auto recognises the NPU: devicetree compatibles of the NPU core nodes (rocket) or of the SoC
    # root node when the NPU is a DRM render node (etnaviv).
    compatibles: tuple[str, ...]
    cores: int = 1  # NPU cores teflon runs a partition's jobs on at once (the `cores` option's maximum)
    per_channel: bool = False  # int8 per-channel weights
    drivable: bool = True  # the family's compiler and driver exist
    params: dict[str, int] = field(default_factory=dict)  # generation-specific chip parameters (C: params[])
    source: str = ""  # where the row's facts come from


TARGETS: tuple[Target, ...] = (
    Target("rk3588", "rocket", "rk3588", 1, ("rockchip,rk3588-rknn-core",), cores=3, per_channel=True,
           source="Linux accel/rocket DT binding rockchip,rk3588-rknn-core.yaml; docs/hardware/rocket.md"),
    # cores=1 although the SoC has two: jobs running on both at once corrupt each other's outputs (third-party
    # hardware measurement, docs/hardware/rocket-rk3576.md "Two cores at once")
    Target("rk3576", "rocket", "rk3576", 2, ("rockchip,rk3576-rknn-core",), cores=1, per_channel=True,
           source="RK3576 rocket enablement series (rocket.md §6.3); docs/hardware/rocket-rk3576.md"),
    # RK3566 and RK3568 carry one NPU as far as software knows (one RKNN target dir, one vendor-driver config for
    # both) [INFERRED identity, not measured]; one core (vendor rknpu rk356x config core_mask 0x1); compatible from
    # the RK3568 RFC v4 7/9 binding (not upstream). Measured by nobody here: no board; the register facts are
    # third-party silicon measurements and Rockchip's own programs (docs/hardware/rk3568.md). Drivable on the
    # simulated kernel + NPU (drivers/rocket/sim_rk3568.c); a board needs a non-upstream kernel (rk3568.md §5).
    Target("rk3568", "rocket", "rk3568", 5, ("rockchip,rk3568-rknn-core",), cores=1, per_channel=True, drivable=True,
           source="RK3568 RFC v4 7/9 (rockchip,rk3568-rknn-core); vendor rknpu rk356x config; docs/hardware/rk3568.md"),
    Target("rk3566", "rocket", "rk3568", 6, ("rockchip,rk3568-rknn-core",), cores=1, per_channel=True,
           drivable=True,
           source="same NPU as rk3568 [INFERRED: one RKNN target RK3566_RK3568]; docs/hardware/rk3568.md §1"),
    # etnaviv params: Vivante feature database entries as restated in teflon/etnaviv/chips.py (sources there)
    Target("a311d", "etnaviv", "v7", 3, ("amlogic,a311d",),
           params={"version": 7, "nn_core_count": 8, "nn_mad_per_core": 64, "tp_core_count": 4,
                   "on_chip_sram_size": 0x80000, "axi_sram_size": 0x100000, "nn_zrl_bits": 5,
                   "nn_input_buffer_depth": 12, "nn_accum_buffer_depth": 64, "customer_id": 0x88,
                   "chip_model": 0x8000, "chip_revision": 0x7120},
           source="Vivante feature DB entry vipnano-qi 0x8000/0x7120 (golden etnaviv-v7 README §2)"),
    Target("imx8mp", "etnaviv", "v8", 4, ("fsl,imx8mp",),
           params={"version": 8, "nn_core_count": 6, "nn_mad_per_core": 64, "tp_core_count": 3,
                   "on_chip_sram_size": 0x40000, "axi_sram_size": 0, "nn_zrl_bits": 8,
                   "nn_input_buffer_depth": 9, "nn_accum_buffer_depth": 32, "customer_id": 0x9F,
                   "chip_model": 0x8000, "chip_revision": 0x8002},
           source="Vivante feature DB entry vipnano-si+ 0x8000/0x8002 (golden etnaviv-v8 README §2)"),
    # ethosu: the Ethos-U65-256 of the i.MX93 behind Linux accel/ethosu (DT binding npu/arm,ethos.yaml). `config` and
    # `id` are the NPU CONFIG / ID register images Vela 5.2.0 writes into its COP1 header for ethos-u65-256 (the same
    # values DEV_QUERY returns from the registers); `sram_size` is the i.MX93 devicetree `sram` node the NPU node
    # points at (mmio-sram, reg size 0x18000 = 96 KiB; docs/hardware/ethosu-kernel.md "SRAM").
    Target("imx93", "ethosu", "u65", 7, ("fsl,imx93-npu", "arm,ethos-u65"), cores=1, per_channel=True,
           params={"config": 0x10003008, "id": 0x10066001, "macs": 256, "sram_size": 0x18000},
           source="Linux arm,ethos.yaml + ethosu_drv.c; Vela 5.2.0 COP1 header (ethosu.md §1.1); imx93 NPU dts "
                  "series (sram 0x18000); docs/hardware/ethosu-kernel.md"),
)

# device=auto on a machine without an NPU: the simulator of the first row (delegate.c: teflon_targets[0]).
FALLBACK = TARGETS[0].name

_BY_NAME = {t.name: t for t in TARGETS}


def names() -> tuple[str, ...]:
    return tuple(t.name for t in TARGETS)


def get(name: str) -> Target:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown device {name!r}; expected one of {', '.join(names())}") from None


def by_blob_id(blob_id: int) -> Target:
    for t in TARGETS:
        if t.blob_id == blob_id:
            return t
    raise ValueError(f"no target with blob id {blob_id}")


def of_family(family: str) -> tuple[Target, ...]:
    return tuple(t for t in TARGETS if t.family == family)


def drivable_generations() -> tuple[Target, ...]:
    """The first drivable row of each (family, generation): the rows the sweeps and model suites run on (rk3566 runs
    rk3568's programs on the same simulator; tests/rocket/test_rk3568_status.py checks that row)."""
    seen: dict[tuple[str, str], Target] = {}
    for t in TARGETS:
        if t.drivable:
            seen.setdefault((t.family, t.generation), t)
    return tuple(seen.values())


def c_header() -> str:
    """teflon_targets.h: the registry for the C delegate and drivers."""
    out = [
        "/* Generated by python/teflon/targets.py --c-header. Do not edit: the rows live in targets.py. */",
        "#ifndef TEFLON_TARGETS_H", "#define TEFLON_TARGETS_H", "", "#include <stdint.h>", "",
        "typedef struct teflon_target_param {",
        "    const char *name;",
        "    uint32_t value;",
        "} teflon_target_param;", "",
        "typedef struct teflon_target {",
        "    const char *name;        /* device option value */",
        "    const char *family;      /* drivers/<family>/ */",
        "    const char *generation;  /* per-generation modules of the family */",
        "    uint32_t blob_id;        /* program blob header target id */",
        "    const char *const *compatibles; /* NULL-terminated devicetree compatibles */",
        "    uint32_t cores;",
        "    int per_channel;",
        "    int drivable;",
        "    const teflon_target_param *params; /* generation-specific chip parameters, {NULL, 0}-terminated */",
        "} teflon_target;", "",
    ]
    for t in TARGETS:
        comp = ", ".join(f'"{c}"' for c in t.compatibles)
        out.append(f"static const char *const teflon_target_{t.name}_compatibles[] = {{{comp}, 0}};")
        params = "".join(f'{{"{k}", 0x{v:x}u}}, ' for k, v in t.params.items())
        out.append(f"static const teflon_target_param teflon_target_{t.name}_params[] = {{{params}{{0, 0}}}};")
    out += ["", "#if defined(__GNUC__)", "__attribute__((unused))", "#endif",
            "static const teflon_target teflon_targets[] = {"]
    for t in TARGETS:
        out.append(f'    {{"{t.name}", "{t.family}", "{t.generation}", {t.blob_id}u, '
                   f"teflon_target_{t.name}_compatibles, {t.cores}u, {int(t.per_channel)}, {int(t.drivable)}, "
                   f"teflon_target_{t.name}_params}},")
    out += ["};", f"#define TEFLON_NUM_TARGETS {len(TARGETS)}", "", "#endif", ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="the target registry")
    ap.add_argument("--c-header", metavar="OUT", help="write teflon_targets.h")
    args = ap.parse_args(argv)
    if args.c_header:
        Path(args.c_header).write_text(c_header())
    else:
        for t in TARGETS:
            print(f"{t.name:8s} {t.family:8s} {t.generation:7s} blob {t.blob_id}  cores {t.cores}"
                  f"{'' if t.drivable else '  (not drivable yet)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
