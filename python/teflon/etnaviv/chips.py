"""Chip parameters of the etnaviv NPUs teflon targets: the `params` of their rows in teflon.targets (the one table
of SoCs; the C side reads the same values from teflon_targets.h).

Sources (each value is restated from a public source, see docs/hardware/etnaviv-nn.md):
- A311D "VIPNano-QI.7120": Vivante feature database entry "vipnano-qi" (chip 0x8000, revision 0x7120,
  product 0x45080009, eco 0, customer 0x88) as shipped in Amlogic's galcore driver
  (github yan-wyb/npu-driver-amlogic-for-test @ bb67489, hal/kernel/inc/gc_feature_database.h), the same
  fields Mesa's etna_hwdb.c maps into its NPU info; core counts and SRAM sizes also in Linux
  drivers/gpu/drm/etnaviv/etnaviv_hwdb.c. Restated in ../shared/golden/etnaviv-v7/README.md §2.
- i.MX8M Plus "VIPNano-SI+.8002": entry "vipnano-si+" (chip 0x8000, revision 0x8002, product 0x5080009,
  eco 0x6000000, customer 0x9f) in NXP's galcore copy (github Freescale/kernel-module-imx-gpu-viv @ 51e1c87,
  hal/kernel/inc/gc_feature_database.h); core counts and SRAM sizes also in the Linux etnaviv hwdb.
  The buffer depths and ZRL bits come from NXP's copy, not from Mesa's (not public here): [INFERRED] equal.
  Restated in ../shared/golden/etnaviv-v8/README.md §2.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import targets


@dataclass(frozen=True)
class Chip:
    name: str
    version: int  # Mesa's nn_core_version: 7 (VIP_V7 without NN_XYDP0) or 8 (NN_XYDP0)
    nn_core_count: int
    nn_mad_per_core: int
    tp_core_count: int
    on_chip_sram_size: int  # VIP SRAM; the descriptor cache addresses are offsets into it
    axi_sram_size: int
    nn_zrl_bits: int
    nn_input_buffer_depth: int
    nn_accum_buffer_depth: int
    customer_id: int
    chip_model: int  # GET_PARAM MODEL / REVISION: how device=auto recognises the NPU (etnaviv.md §7.1)
    chip_revision: int


def chip(name: str) -> Chip:
    """The chip parameters of an etnaviv target (its registry row's `params`)."""
    spec = targets.get(name)
    if spec.family != "etnaviv":
        raise ValueError(f"{name} is not an etnaviv target ({spec.family})")
    return Chip(name=name, **spec.params)


CHIPS: dict[str, Chip] = {t.name: chip(t.name) for t in targets.of_family("etnaviv")}


def chip_for_version(version: int) -> Chip:
    """The tested chip of an NN path version (7 → A311D, 8 → i.MX8MP)."""
    for chip in CHIPS.values():
        if chip.version == version:
            return chip
    raise KeyError(f"no chip with NN version {version}")
