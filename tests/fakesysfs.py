"""Fake sysfs trees with NPU devices (Rockchip NPU cores, an Ethos-U), for the SoC detection in drivers/driver.c
(TEFLON_SYSFS_ROOT)."""

from __future__ import annotations

import os
from pathlib import Path


def fake_rocket_sysfs(root: Path, cores: dict[str, str], where: str = "driver") -> Path:
    """A fake sysfs: NPU core devices with devicetree compatibles, bound to the rocket platform driver (upstream
    layout) or the accel device's own of_node."""
    for name, compatible in cores.items():
        dev = root / "sys/devices/platform" / name
        (dev / "of_node").mkdir(parents=True)
        (dev / "of_node/compatible").write_bytes(compatible.encode().replace(b";", b"\0") + b"\0")
        if where == "driver":
            drv = root / "sys/bus/platform/drivers/rocket"
            drv.mkdir(parents=True, exist_ok=True)
            (drv / name).symlink_to(os.path.relpath(dev, drv))
        else:
            acc = root / "sys/class/accel" / f"accel{len(list((root / 'sys/class').glob('accel/*')))}"
            acc.mkdir(parents=True)
            (acc / "device").symlink_to(os.path.relpath(dev, acc))
    drv = root / "sys/bus/platform/drivers/rocket"
    if drv.is_dir():
        for f in ("bind", "unbind", "uevent"):
            (drv / f).write_text("")
    return root


def fake_ethosu_sysfs(root: Path, compatible: str, driver: str = "ethosu") -> Path:
    """A fake sysfs: /sys/class/accel/accel0 whose device is an NPU platform device with the devicetree compatibles
    `compatible` (";"-separated), bound to the platform driver `driver` (upstream accel/ethosu's is "ethosu")."""
    dev = root / "sys/devices/platform/soc/4a900000.npu"
    (dev / "of_node").mkdir(parents=True)
    (dev / "of_node/compatible").write_bytes(compatible.encode().replace(b";", b"\0") + b"\0")
    drv = root / "sys/bus/platform/drivers" / driver
    drv.mkdir(parents=True, exist_ok=True)
    (dev / "driver").symlink_to(os.path.relpath(drv, dev))
    acc = root / "sys/class/accel/accel0"
    acc.mkdir(parents=True)
    (acc / "device").symlink_to(os.path.relpath(dev, acc))
    return root
