"""Write the whole-zoo benchmark's Keras models as .tflite files, float32 and full-integer int8.

    python benchmarks/keras_zoo.py OUT_DIR [--only NAME ...]

A tool, never a dependency of teflon-py or of CI: run it in a separate virtual environment with
TensorFlow (``python3 -m venv tfvenv && tfvenv/bin/pip install tensorflow-cpu==2.21.0``). Keras
application architectures with random weights (``weights=None``: the architecture is what a
benchmark measures), a small UNet and a small transformer encoder; int8 models are converted with
a random representative dataset, int8 inputs and outputs. Each model is ``<name>_f32.tflite`` and
``<name>_i8.tflite``.
"""
from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

keras = tf.keras


def unet(size: int = 128) -> keras.Model:
    """A four-level UNet (3x3 convs, max pools, transpose-conv upsampling, skip concatenations)."""
    x = inp = keras.Input((size, size, 3))
    skips = []
    for ch in (16, 32, 64, 128):
        x = keras.layers.Conv2D(ch, 3, padding="same", activation="relu")(x)
        x = keras.layers.Conv2D(ch, 3, padding="same", activation="relu")(x)
        skips.append(x)
        x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.Conv2D(256, 3, padding="same", activation="relu")(x)
    for ch, skip in zip((128, 64, 32, 16), reversed(skips)):
        x = keras.layers.Conv2DTranspose(ch, 2, strides=2, padding="same")(x)
        x = keras.layers.Concatenate()([x, skip])
        x = keras.layers.Conv2D(ch, 3, padding="same", activation="relu")(x)
    return keras.Model(inp, keras.layers.Conv2D(2, 1, activation="softmax")(x))


def transformer(tokens: int = 128, dim: int = 256, heads: int = 4, layers: int = 4) -> keras.Model:
    """A BERT-style encoder over float embeddings: multi-head attention, layer norm, GELU MLP."""
    x = inp = keras.Input((tokens, dim))
    for _ in range(layers):
        a = keras.layers.MultiHeadAttention(heads, dim // heads)(x, x)
        x = keras.layers.LayerNormalization()(x + a)
        m = keras.layers.Dense(4 * dim, activation="gelu")(x)
        x = keras.layers.LayerNormalization()(x + keras.layers.Dense(dim)(m))
    return keras.Model(inp, keras.layers.Dense(2)(keras.layers.GlobalAveragePooling1D()(x)))


def _app(name: str, **kw: object) -> Callable[[], keras.Model]:
    """A Keras application with random weights whose logits are rescaled to unit spread before the
    softmax: random weights leave them ~1e-7 apart, and an int8 softmax over such a narrow input
    grid is one LiteRT's reference kernel refuses (beta * input scale * 2^26 below 1)."""
    def build() -> keras.Model:
        net = getattr(keras.applications, name)(weights=None, classifier_activation=None, **kw)
        sample = np.random.default_rng(1).uniform(-1, 1, (4, *net.input_shape[1:])).astype(np.float32)
        spread = float(np.std(net(sample).numpy())) or 1.0
        out = keras.layers.Softmax()(keras.layers.Rescaling(1.0 / spread)(net.output))
        return keras.Model(net.input, out)

    return build


MODELS: dict[str, Callable[[], keras.Model]] = {
    "mobilenet_v3_small": _app("MobileNetV3Small", input_shape=(224, 224, 3)),
    "mobilenet_v3_large": _app("MobileNetV3Large", input_shape=(224, 224, 3)),
    "efficientnet_b0": _app("EfficientNetB0", input_shape=(224, 224, 3)),
    "resnet50": _app("ResNet50", input_shape=(224, 224, 3)),
    "densenet121": _app("DenseNet121", input_shape=(224, 224, 3)),
    "unet": unet,
    "transformer": transformer,
}


def convert(model: keras.Model, int8: bool, seed: int = 0) -> bytes:
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    if int8:
        shape = [1, *model.input_shape[1:]]
        rng = np.random.default_rng(seed)

        def data():
            for _ in range(8):
                yield [rng.uniform(-1, 1, shape).astype(np.float32)]

        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = data
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = tf.int8
        conv.inference_output_type = tf.int8
    return conv.convert()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--only", nargs="*", choices=sorted(MODELS))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.only or MODELS:
        keras.utils.set_random_seed(0)
        model = MODELS[name]()
        for int8 in (False, True):
            path = args.out / f"{name}_{'i8' if int8 else 'f32'}.tflite"
            path.write_bytes(convert(model, int8))
            print(path, path.stat().st_size)


if __name__ == "__main__":
    main()
