"""Loading image inputs the way the reference tables in ../shared/models/ describe: PIL's bilinear resize of the
whole image (no crop, no letterbox), raw uint8 pixels."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np

Color = Literal["rgb", "bgr", "gray"]


def load_image(path: str | Path, height: int, width: int, color: Color = "rgb") -> np.ndarray:
    """uint8 pixels resized with PIL's bilinear filter (no normalization): HWC for rgb/bgr, HW for gray."""
    from PIL import Image

    if color not in ("rgb", "bgr", "gray"):
        raise ValueError(f"unknown colour order {color!r}; expected rgb, bgr or gray")
    with Image.open(path) as img:
        mode = "L" if color == "gray" else "RGB"
        pixels = np.asarray(img.convert(mode).resize((width, height), Image.BILINEAR), dtype=np.uint8)
    return pixels[..., ::-1] if color == "bgr" else pixels


def load_labels(path: str | Path) -> list[str]:
    return Path(path).read_text().splitlines()
