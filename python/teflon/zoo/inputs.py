"""A spec's test input as the model's input tensor: images through teflon.images and the spec's `prep`, raw
tensor files (`*.bin`) fed as-is with the input's dtype and shape."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from teflon.images import load_image
from teflon.modelgen import TensorInfo
from teflon.zoo.spec import Prep

# ImageNet channel statistics of the `imagenet` normalisation (torchvision's).
_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
_STD = np.array([0.229, 0.224, 0.225], np.float32)


def _normalise(pixels: np.ndarray, norm: str) -> np.ndarray:
    f = pixels.astype(np.float32)
    if norm == "raw":
        return f
    if norm == "unit":
        return f / 255.0
    if norm == "pm1":
        return f / 127.5 - 1.0
    if norm == "ultraface":
        return (f - 127.0) / 128.0
    if norm == "imagenet":
        return (f / 255.0 - _MEAN) / _STD
    raise ValueError(f"unknown normalisation {norm!r}")


def quantize(x: np.ndarray, info: TensorInfo) -> np.ndarray:
    """x in the input's dtype: float32 as-is, integers round(x / scale) + zero point, saturated."""
    dtype = np.dtype(info.dtype)
    if dtype.kind == "f":
        return x.astype(dtype)
    if info.scale == 0.0:
        raise ValueError(f"input {info.name!r} is {info.dtype} without a quantization scale")
    lim = np.iinfo(dtype)
    return np.clip(np.round(x / info.scale) + info.zero_point, lim.min, lim.max).astype(dtype)


def _image_geometry(shape: tuple[int, ...], layout: str) -> tuple[int, int, int]:
    """(height, width, channels) of an image input; channels 0 for a [1, H, W] input without a channel axis."""
    if len(shape) == 3:
        return shape[1], shape[2], 0
    if len(shape) != 4:
        raise ValueError(f"an image input needs shape [1, H, W] or 4 dimensions, not {list(shape)}")
    if layout == "nchw":
        return shape[2], shape[3], shape[1]
    return shape[1], shape[2], shape[3]


def make_input(path: Path, info: TensorInfo, prep: Prep) -> np.ndarray:
    """The input tensor for `path` (an image or a raw `.bin` tensor) fed to the input `info`."""
    if path.suffix == ".bin":
        data = np.fromfile(path, dtype=np.dtype(info.dtype))
        if data.size != int(np.prod(info.shape)):
            raise ValueError(f"{path.name}: {data.size} values, the input {list(info.shape)} needs "
                             f"{int(np.prod(info.shape))}")
        return data.reshape(info.shape)
    h, w, c = _image_geometry(info.shape, prep.layout)
    gray = prep.color == "gray" or c in (0, 1)
    pixels = load_image(path, h, w, "gray" if gray else prep.color)  # type: ignore[arg-type]
    if gray and c:
        pixels = np.repeat(pixels[..., None], c, axis=2)  # a grey image fed to a 3-channel input
    if prep.norm == "rawq":
        if info.dtype != "uint8":
            raise ValueError(f"norm rawq feeds uint8 pixels as-is, but the input is {info.dtype}")
        x = pixels
    else:
        x = quantize(_normalise(pixels, prep.norm), info)
    if prep.layout == "nchw" and c:
        x = x.transpose(2, 0, 1)
    return np.ascontiguousarray(x.reshape(info.shape))
