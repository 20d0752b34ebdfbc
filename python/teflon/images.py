"""Loading classification inputs the way the reference table in ../shared/models/README.md does."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def load_image(path: str | Path, height: int, width: int, grey: bool = False) -> np.ndarray:
    """RGB uint8 HWC array resized with PIL's bilinear filter (raw pixels, no normalization); with `grey`, PIL's
    luminance (L mode) as an HW array."""
    from PIL import Image

    with Image.open(path) as img:
        pixels = img.convert("L" if grey else "RGB").resize((width, height), Image.BILINEAR)
        return np.asarray(pixels, dtype=np.uint8)


def load_labels(path: str | Path) -> list[str]:
    return Path(path).read_text().splitlines()
