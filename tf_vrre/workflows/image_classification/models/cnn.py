"""A small CNN for CPU runs: functional Keras model, logits out, no regularizers.

``conv(w) - conv(w) - maxpool - conv(2w) - conv(2w) - maxpool - global average pool - dense``,
ReLU activations, optional BatchNormalization after every convolution.  With ``width = 16``
(the default) it has about 17k parameters for 10 classes, a fifth of ResNet-8's 78k, and
its convolutions run at full resolution only in the first block, so a training step on 32x32
images costs a few times less than ResNet-8's on a CPU.
"""

import numbers

import keras

__all__ = ["cnn"]


def cnn(num_classes=10, input_shape=(32, 32, 3), width=16, batch_norm=False, synchronized_bn=False, name="cnn"):
    """Builds the small CNN (logits out).

    Layers: two blocks of ``[conv3x3(f), conv3x3(f), maxpool2]`` with ``f = width, 2 width``,
    then global average pooling and a dense layer of ``num_classes`` logits.

    Args:
      num_classes: number of classes (>= 2).
      input_shape: shape of one image, channels last.
      width: filters of the first block (>= 1); the second block has ``2 width``.
      batch_norm: add ``BatchNormalization`` after each convolution (then the sampler's
        ``energy_mode="auto"`` picks ``"inference"``).
      synchronized_bn: ``BatchNormalization(synchronized=True)`` (use under a strategy with
        several replicas so statistics are all-reduced and replicas cannot drift).
      name: model name.

    Returns:
      A built functional ``keras.Model``.

    Raises:
      ValueError: naming ``num_classes`` or ``width`` if out of range.

    Example:
      >>> net = cnn(num_classes=10)
      >>> net.output_shape
      (None, 10)
    """
    for arg, value, lo in (("num_classes", num_classes, 2), ("width", width, 1)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < lo:
            raise ValueError(f"{arg} must be an integer >= {lo}, got {value!r}")
    inputs = keras.Input(shape=tuple(input_shape), name="image")
    x = inputs
    for block, filters in enumerate((int(width), 2 * int(width)), 1):
        for j in (1, 2):
            x = keras.layers.Conv2D(
                filters,
                3,
                padding="same",
                use_bias=not batch_norm,
                kernel_initializer="he_normal",
                name=f"block{block}_conv{j}",
            )(x)
            if batch_norm:
                x = keras.layers.BatchNormalization(
                    momentum=0.9, epsilon=1e-5, synchronized=synchronized_bn, name=f"block{block}_bn{j}"
                )(x)
            x = keras.layers.ReLU(name=f"block{block}_relu{j}")(x)
        x = keras.layers.MaxPooling2D(2, name=f"block{block}_pool")(x)
    x = keras.layers.GlobalAveragePooling2D(name="pool")(x)
    outputs = keras.layers.Dense(int(num_classes), kernel_initializer="he_normal", name="logits")(x)
    return keras.Model(inputs, outputs, name=name)
