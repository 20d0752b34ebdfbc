"""Build the held-out model set: real architectures (Keras applications and two hand-built heads) with seeded
weights, int8 full-integer post-training quantized by TFLite's converter with a representative dataset made of
real images, written with a spec.json to a directory outside the repository (docs/heldout.md).

Run with a Python that has TensorFlow (2.14 tested); never imported by the test suite:

    python scripts/make_heldout_models.py --images ../shared/models --out ../heldout-models [--only NAME ...]

No pretrained weights are reachable offline, so the weights are seeded; to make the int8 tensors use their range
as a trained network's do, each model is calibrated before conversion:
- every BatchNormalization gets gamma ~ U(0.6, 1.4) and beta ~ N(0.75, 0.3), then momentum 0 and one forward
  pass in training mode on a batch of image crops: its moving mean and variance become the statistics its input
  really has, so in inference mode every normalised layer sees unit-variance activations (no dead or exploding
  layers through 50-100 convolutions of glorot-initialised weights);
- the positive beta mean and halved gammas of the batch norms that end a residual branch (those feeding an ADD)
  keep the network out of the chaotic regime of random deep networks, where a 1-LSB change of 1 % of the input
  pixels moves the CPU's own logits by 7 % of their spread and flips its top-1 (measured on MobileNetV3Large
  with beta ~ N(0, 0.25): 3 top-1 flips in 12; with these settings none, and about a third of the change);
- the classifier's last layer is centred and rescaled: its bias takes away each class's mean logit over that
  batch and its kernel makes the rest spread with a standard deviation of 3 (a trained ImageNet network's order).
  Without the centring the features' common positive mean gave one class a huge logit for every image (a softmax
  of 1.0 on the same class everywhere, a logit scale of several units per LSB).
"""

from __future__ import annotations

import argparse
import json
import shutil
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tensorflow as tf

IMAGES = ("grace_hopper.bmp", "cat.bmp", "zoo/parrot.jpg", "zoo/pets.jpg", "zoo/face.jpg",
          "zoo/cityscapes_segmentation.bmp")
TEST_IMAGES = ("grace_hopper.bmp", "cat.bmp")  # the inputs each model is judged on
CALIBRATION_BATCH = 24
REPRESENTATIVE = 48


@dataclass(frozen=True)
class Entry:
    name: str
    build: Callable[[int, int | None], tf.keras.Model]
    size: int
    norm: str  # teflon.zoo.inputs normalisation of the float input: pm1 = [-1, 1], raw = [0, 255]
    task: str  # classify -> top-1 rule; other -> element rule
    io: str = "int8"  # int8 | uint8: the graph input / output type
    per_channel: bool = True  # False: per-tensor weight scales (TF1-era quantization, as the published MobileNets)
    batch: int | None = None  # None: Keras' default dynamic batch (RESHAPEs become SHAPE/STRIDED_SLICE/PACK); 1: static
    notes: str = ""
    inputs: tuple[str, ...] = field(default=TEST_IMAGES)


def _normalise(pixels: tf.Tensor, norm: str) -> tf.Tensor:
    x = tf.cast(pixels, tf.float32)
    return x / 127.5 - 1.0 if norm == "pm1" else x


def _load(path: Path) -> tf.Tensor:
    return tf.io.decode_image(tf.io.read_file(str(path)), channels=3, expand_animations=False)


def _crops(images: list[tf.Tensor], size: int, count: int, seed: int) -> np.ndarray:
    """`count` uint8 crops (random box of 50-100 % of the side, random flip, bilinear resize) of the images, the
    first len(images) of them the whole images as the tests feed them."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        img = images[i % len(images)]
        if i >= len(images):
            h, w = int(img.shape[0]), int(img.shape[1])
            f = rng.uniform(0.5, 1.0)
            ch, cw = max(8, int(h * f)), max(8, int(w * f * rng.uniform(0.8, 1.25)))
            ch, cw = min(ch, h), min(cw, w)
            y, x = rng.integers(0, h - ch + 1), rng.integers(0, w - cw + 1)
            img = img[y:y + ch, x:x + cw]
            if rng.random() < 0.5:
                img = img[:, ::-1]
        out.append(tf.image.resize(img, (size, size), method="bilinear", antialias=False).numpy())
    return np.clip(np.round(np.stack(out)), 0, 255).astype(np.uint8)


def _calibrate(model: tf.keras.Model, batch: np.ndarray, classifier: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if isinstance(layer, tf.keras.layers.BatchNormalization):
            gamma, beta = layer.gamma, layer.beta
            ends_branch = any(isinstance(n.outbound_layer, tf.keras.layers.Add) for n in layer.outbound_nodes)
            if gamma is not None:
                gamma.assign((rng.uniform(0.6, 1.4, gamma.shape) * (0.5 if ends_branch else 1.0)).astype(np.float32))
            if beta is not None:
                beta.assign(rng.normal(0.75, 0.3, beta.shape).astype(np.float32))
            layer.momentum = 0.0
    model(batch, training=True)
    if classifier:
        last = [layer for layer in model.layers if getattr(layer, "kernel", None) is not None][-1]
        head = tf.keras.Model(model.inputs, last.output)
        logits = head(batch, training=False).numpy().reshape(len(batch), -1)
        mean = logits.mean(axis=0)  # the part every image shares (the features' common positive mean)
        factor = 3.0 / max(float((logits - mean).std()), 1e-6)
        last.kernel.assign(last.kernel * factor)
        last.bias.assign((last.bias - mean) * factor)


# ---- the architectures -------------------------------------------------------------------------------------------

def _apps(size: int, batch: int | None) -> dict[str, object]:
    return {"input_tensor": tf.keras.Input((size, size, 3), batch_size=batch), "weights": None}


def mobilenet_v3_large(size: int, batch: int | None = None) -> tf.keras.Model:
    return tf.keras.applications.MobileNetV3Large(**_apps(size, batch), include_preprocessing=False)


def mobilenet_v3_small(size: int, batch: int | None = None) -> tf.keras.Model:
    return tf.keras.applications.MobileNetV3Small(**_apps(size, batch), include_preprocessing=False)


def mobilenet_v3_small_minimalistic(size: int, batch: int | None = None) -> tf.keras.Model:
    return tf.keras.applications.MobileNetV3Small(**_apps(size, batch), minimalistic=True, include_preprocessing=False)


def mobilenet_v3_large_minimalistic(size: int, batch: int | None = None) -> tf.keras.Model:
    return tf.keras.applications.MobileNetV3Large(**_apps(size, batch), minimalistic=True, include_preprocessing=False)


def efficientnet_b0(size: int, batch: int | None = None) -> tf.keras.Model:
    return tf.keras.applications.EfficientNetB0(**_apps(size, batch))  # in-graph Rescaling(1/255): raw pixels in


def resnet50(size: int, batch: int | None = None) -> tf.keras.Model:
    return tf.keras.applications.ResNet50(**_apps(size, batch))


def densenet121(size: int, batch: int | None = None) -> tf.keras.Model:
    return tf.keras.applications.DenseNet121(**_apps(size, batch))


def nasnet_mobile(size: int, batch: int | None = None) -> tf.keras.Model:
    return tf.keras.applications.NASNetMobile(**_apps(size, batch))


def inception_v3(size: int, batch: int | None = None) -> tf.keras.Model:
    return tf.keras.applications.InceptionV3(**_apps(size, batch))


def _conv_bn_relu(x: tf.Tensor, filters: int, kernel: int = 3, strides: int = 1) -> tf.Tensor:
    x = tf.keras.layers.Conv2D(filters, kernel, strides=strides, padding="same", use_bias=False,
                               kernel_initializer="he_normal")(x)
    x = tf.keras.layers.BatchNormalization()(x)
    return tf.keras.layers.ReLU()(x)


def unet(size: int, batch: int | None = None) -> tf.keras.Model:
    """A small UNet: 4 levels of conv-BN-ReLU pairs and max pools; the decoder upsamples with a transposed
    convolution, bilinear and nearest UpSampling2D (RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR) and concatenates
    the skips; 6 per-pixel class scores out."""
    inp = tf.keras.Input((size, size, 3), batch_size=1)  # always static: TRANSPOSE_CONV without SHAPE ops
    skips, x = [], inp
    for filters in (16, 32, 64):
        x = _conv_bn_relu(_conv_bn_relu(x, filters), filters)
        skips.append(x)
        x = tf.keras.layers.MaxPooling2D()(x)
    x = _conv_bn_relu(_conv_bn_relu(x, 128), 128)
    ups: list[Callable[[tf.Tensor], tf.Tensor]] = [
        tf.keras.layers.Conv2DTranspose(64, 2, strides=2, padding="same"),
        tf.keras.layers.UpSampling2D(interpolation="bilinear"),
        tf.keras.layers.UpSampling2D(interpolation="nearest"),
    ]
    for up, skip, filters in zip(ups, reversed(skips), (64, 32, 16), strict=True):
        x = tf.keras.layers.Concatenate()([up(x), skip])
        x = _conv_bn_relu(_conv_bn_relu(x, filters), filters)
    out = tf.keras.layers.Conv2D(6, 1)(x)
    return tf.keras.Model(inp, out, name="unet")


def fpn_ssd(size: int, batch: int | None = None) -> tf.keras.Model:
    """An SSD-style detector with a feature pyramid on a MobileNetV2 (alpha 0.5) backbone: three levels (stride
    8, 16, 32), 1x1 laterals, nearest 2x UpSampling2D + ADD top-down, 3x3 smoothing, shared-shape heads of 3
    anchors per cell RESHAPEd to (anchors, 4) boxes and (anchors, 8) sigmoid class scores, CONCATENATEd over
    the levels."""
    backbone = tf.keras.applications.MobileNetV2(input_tensor=tf.keras.Input((size, size, 3), batch_size=batch),
                                                 alpha=0.5, include_top=False, weights=None)
    taps = [backbone.get_layer(n).output for n in ("block_6_expand_relu", "block_13_expand_relu", "out_relu")]
    laterals = [tf.keras.layers.Conv2D(64, 1)(t) for t in taps]
    levels = [laterals[-1]]
    for lateral in reversed(laterals[:-1]):
        up = tf.keras.layers.UpSampling2D(interpolation="nearest")(levels[0])
        levels.insert(0, tf.keras.layers.Add()([lateral, up]))
    boxes, scores = [], []
    anchors, classes = 3, 8
    for level in levels:
        f = _conv_bn_relu(level, 64)
        boxes.append(tf.keras.layers.Reshape((-1, 4))(tf.keras.layers.Conv2D(anchors * 4, 3, padding="same")(f)))
        scores.append(tf.keras.layers.Reshape((-1, classes))(
            tf.keras.layers.Conv2D(anchors * classes, 3, padding="same")(f)))
    box = tf.keras.layers.Concatenate(axis=1, name="boxes")(boxes)
    score = tf.keras.layers.Activation("sigmoid", name="scores")(tf.keras.layers.Concatenate(axis=1)(scores))
    return tf.keras.Model(backbone.input, [box, score], name="fpn_ssd")


ENTRIES = (
    Entry("mobilenet_v3_large_160", mobilenet_v3_large, 160, "pm1", "classify",
          notes="Keras MobileNetV3Large: hard-swish, squeeze-excite (MEAN, hard-sigmoid, MUL), residual ADD"),
    Entry("mobilenet_v3_small_160_u8", mobilenet_v3_small, 160, "pm1", "classify", io="uint8",
          notes="Keras MobileNetV3Small, uint8 input and output"),
    Entry("resnet50_128", resnet50, 128, "pm1", "classify",
          notes="Keras ResNet50: bottleneck residual blocks, 7x7 stem, max pool"),
    Entry("resnet50_128_pt", resnet50, 128, "pm1", "classify", per_channel=False,
          notes="ResNet50 with per-tensor weight quantization"),
    Entry("efficientnet_b0_160", efficientnet_b0, 160, "raw", "classify",
          notes="Keras EfficientNetB0: swish (LOGISTIC x MUL), squeeze-excite, in-graph rescaling"),
    Entry("efficientnet_b0_160_b1", efficientnet_b0, 160, "raw", "classify", batch=1,
          notes="EfficientNetB0 converted with a static batch of 1 (no SHAPE/PACK before its RESHAPEs)"),
    Entry("fpn_ssd_160_b1", fpn_ssd, 160, "pm1", "other", batch=1,
          notes="the FPN/SSD detector converted with a static batch of 1"),
    Entry("unet_128", unet, 128, "pm1", "other",
          notes="small UNet: max pools, TRANSPOSE_CONV, RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR, skip concats"),
    Entry("fpn_ssd_160", fpn_ssd, 160, "pm1", "other",
          notes="MobileNetV2-0.5 + FPN SSD head: RESIZE_NEAREST_NEIGHBOR, ADD, RESHAPE, CONCATENATION, LOGISTIC"),
    Entry("densenet121_128", densenet121, 128, "pm1", "classify",
          notes="Keras DenseNet121: BN-ReLU-conv, 58 channel CONCATENATIONs, average-pool transitions"),
    Entry("mobilenet_v3_large_min_160_pt", mobilenet_v3_large_minimalistic, 160, "pm1", "classify",
          per_channel=False, notes="MobileNetV3Large minimalistic with per-tensor weight quantization"),
    Entry("mobilenet_v3_small_min_128", mobilenet_v3_small_minimalistic, 128, "pm1", "classify",
          notes="MobileNetV3Small minimalistic"),
    Entry("unet_128_u8", unet, 128, "pm1", "other", io="uint8", notes="the UNet with uint8 input and output"),
    Entry("nasnet_mobile_128", nasnet_mobile, 128, "pm1", "classify",
          notes="Keras NASNetMobile: separable convolutions, PAD, cropping, average/max pools, many concatenations"),
    Entry("inception_v3_128", inception_v3, 128, "pm1", "classify",
          notes="Keras InceptionV3: 1x7/7x1 kernels, VALID pools, branch concatenations"),
    Entry("mobilenet_v3_large_min_160_u8", mobilenet_v3_large_minimalistic, 160, "pm1", "classify", io="uint8",
          notes="MobileNetV3Large minimalistic (ReLU, no SE, 3x3 only), uint8 input and output"),
)


def convert(model: tf.keras.Model, samples: np.ndarray, norm: str, io: str, per_channel: bool) -> bytes:
    def representative() -> Iterator[list[np.ndarray]]:
        for s in samples:
            yield [_normalise(s[None], norm).numpy()]

    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = representative
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = tf.uint8 if io == "uint8" else tf.int8
    conv.inference_output_type = tf.uint8 if io == "uint8" else tf.int8
    conv._experimental_disable_per_channel = not per_channel  # TF 2.14: the only switch for it
    return conv.convert()


def op_counts(model: bytes) -> dict[str, int]:
    it = tf.lite.Interpreter(model_content=model)
    counts: dict[str, int] = {}
    for op in it._get_ops_details():  # the public API has no operator list
        counts[op["op_name"]] = counts.get(op["op_name"], 0) + 1
    return dict(sorted(counts.items()))


def build(entry: Entry, images: list[tf.Tensor], out: Path, seed: int) -> dict[str, object]:
    tf.keras.utils.set_random_seed(seed)
    model = entry.build(entry.size, entry.batch)
    pixels = _crops(images, entry.size, CALIBRATION_BATCH, seed)
    _calibrate(model, _normalise(pixels, entry.norm).numpy(), entry.task == "classify", seed)
    samples = _crops(images, entry.size, REPRESENTATIVE, seed + 1)
    data = convert(model, samples, entry.norm, entry.io, entry.per_channel)
    (out / f"{entry.name}.tflite").write_bytes(data)
    ops = op_counts(data)
    return {"model": f"{entry.name}.tflite", "task": entry.task,
            "post": "classify" if entry.task == "classify" else "image",
            "inputs": [f"images/{Path(p).name}" for p in entry.inputs],
            "prep": {"layout": "nhwc", "norm": entry.norm},
            "notes": f"{entry.notes}; {entry.size}x{entry.size} RGB, {entry.io} I/O, "
                     f"{'per-channel' if entry.per_channel else 'per-tensor'} weights, seed {seed}",
            "ops": ops}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "models")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[2] / "heldout-models")
    ap.add_argument("--only", nargs="*", default=None, help="build only these entries (the others keep theirs)")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    out: Path = args.out
    (out / "images").mkdir(parents=True, exist_ok=True)
    for rel in IMAGES:
        shutil.copy(args.images / rel, out / "images" / Path(rel).name)
    images = [_load(out / "images" / Path(rel).name) for rel in IMAGES]
    spec_path = out / "spec.json"
    old = {e["model"]: e for e in json.loads(spec_path.read_text())} if spec_path.is_file() else {}
    specs = []
    for entry in ENTRIES:
        if args.only is not None and entry.name not in args.only:
            if f"{entry.name}.tflite" in old:
                specs.append(old[f"{entry.name}.tflite"])
            continue
        spec = build(entry, images, out, args.seed + zlib.crc32(entry.name.encode()) % 100_000)
        print(entry.name, json.dumps(spec["ops"]), flush=True)
        specs.append(spec)
        spec_path.write_text(json.dumps(specs, indent=1) + "\n")
    spec_path.write_text(json.dumps(specs, indent=1) + "\n")


if __name__ == "__main__":
    main()
