"""CIFAR ResNets (He et al. 2016, Sec. 4.2) as functional Keras models that output logits.

Depth ``6n + 2``: a 3x3 stem conv, three stages of ``n`` basic blocks (two 3x3 convs each)
with ``16, 32, 64`` filters (times ``width / 16``), stride 2 at the first block of stages 2
and 3 with a 1x1 convolution projection shortcut (option B), global average pooling and a
dense layer producing logits.  There are no kernel regularizers: weight decay is the
Gaussian prior inside the sampler.
"""

import numbers

import keras

__all__ = ["resnet", "resnet20", "resnet32", "resnet56"]

_BN_MOMENTUM = 0.9
_BN_EPSILON = 1e-5


def _check_depth(depth):
    if isinstance(depth, bool) or not isinstance(depth, numbers.Integral) or depth < 8 or (depth - 2) % 6 != 0:
        raise ValueError(f"depth must be 6n + 2 with n >= 1 (8, 14, 20, 32, 44, 56, 110, ...), got {depth!r}")
    return int(depth)


def _conv(filters, kernel_size, strides, name):
    return keras.layers.Conv2D(
        filters, kernel_size, strides=strides, padding="same", use_bias=False, kernel_initializer="he_normal", name=name
    )


def _bn(synchronized, name):
    return keras.layers.BatchNormalization(
        momentum=_BN_MOMENTUM, epsilon=_BN_EPSILON, synchronized=synchronized, name=name
    )


def _basic_block(x, filters, strides, synchronized, name):
    shortcut = x
    y = _conv(filters, 3, strides, f"{name}_conv1")(x)
    y = _bn(synchronized, f"{name}_bn1")(y)
    y = keras.layers.ReLU(name=f"{name}_relu1")(y)
    y = _conv(filters, 3, 1, f"{name}_conv2")(y)
    y = _bn(synchronized, f"{name}_bn2")(y)
    if strides != 1 or shortcut.shape[-1] != filters:
        shortcut = _conv(filters, 1, strides, f"{name}_proj")(shortcut)
        shortcut = _bn(synchronized, f"{name}_proj_bn")(shortcut)
    y = keras.layers.Add(name=f"{name}_add")([shortcut, y])
    return keras.layers.ReLU(name=f"{name}_out")(y)


def resnet(depth, num_classes=10, input_shape=(32, 32, 3), width=16, synchronized_bn=False, name=None):
    """Builds the CIFAR ResNet of He et al. (2016) with ``depth = 6n + 2`` layers, logits out.

    Args:
      depth: number of weighted layers, ``6n + 2`` with ``n >= 1`` (20, 32, 56, 110, ...).
      num_classes: number of classes (>= 2); the output is ``[batch, num_classes]`` logits
        (no softmax: pair it with ``SparseCategoricalCrossentropy(from_logits=True)``).
      input_shape: shape of one image, channels last.
      width: filters of the first stage (16 in the paper); stages use ``width, 2 width,
        4 width``.
      synchronized_bn: passed to ``BatchNormalization(synchronized=...)``; use True under a
        ``tf.distribute`` strategy with several replicas so statistics are all-reduced.
      name: model name (default ``"resnet{depth}"``).

    Returns:
      A built functional ``keras.Model``.

    Raises:
      ValueError: if ``depth`` is not ``6n + 2`` (n >= 1), ``num_classes < 2`` or
        ``width < 1``.

    Example:
      >>> net = resnet(20, num_classes=10)
      >>> net.output_shape
      (None, 10)
    """
    depth = _check_depth(depth)
    if isinstance(num_classes, bool) or not isinstance(num_classes, numbers.Integral) or num_classes < 2:
        raise ValueError(f"num_classes must be an integer >= 2, got {num_classes!r}")
    if isinstance(width, bool) or not isinstance(width, numbers.Integral) or width < 1:
        raise ValueError(f"width must be a positive integer, got {width!r}")
    n = (depth - 2) // 6
    width = int(width)

    inputs = keras.Input(shape=tuple(input_shape), name="image")
    x = _conv(width, 3, 1, "stem_conv")(inputs)
    x = _bn(synchronized_bn, "stem_bn")(x)
    x = keras.layers.ReLU(name="stem_relu")(x)
    for stage, filters in enumerate((width, 2 * width, 4 * width), 1):
        for block in range(n):
            strides = 2 if stage > 1 and block == 0 else 1
            x = _basic_block(x, filters, strides, synchronized_bn, f"stage{stage}_block{block + 1}")
    x = keras.layers.GlobalAveragePooling2D(name="pool")(x)
    outputs = keras.layers.Dense(int(num_classes), kernel_initializer="he_normal", name="logits")(x)
    return keras.Model(inputs, outputs, name=name or f"resnet{depth}")


@keras.saving.register_keras_serializable(package="models")
def resnet20(**kwargs):
    """ResNet-20 (about 0.27M parameters for 10 classes); ``kwargs`` as in :func:`resnet`.

    Example:
      >>> sampler = tf_vrre.ReplicaExchangeSampler(resnet20, data_size=50000, num_chains=2,
      ...                                          temperatures=[0.01, 0.05], learning_rates=2e-6)
      >>> sampler.cold_model.count_params()
      274042
    """
    return resnet(20, **kwargs)


@keras.saving.register_keras_serializable(package="models")
def resnet32(**kwargs):
    """ResNet-32 (about 0.47M parameters for 10 classes); ``kwargs`` as in :func:`resnet`.

    Example:
      >>> resnet32(num_classes=100).output_shape
      (None, 100)
    """
    return resnet(32, **kwargs)


@keras.saving.register_keras_serializable(package="models")
def resnet56(**kwargs):
    """ResNet-56 (about 0.86M parameters for 10 classes); ``kwargs`` as in :func:`resnet`.

    Example:
      >>> resnet56().name
      'resnet56'
    """
    return resnet(56, **kwargs)
