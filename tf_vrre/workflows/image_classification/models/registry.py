"""Models by name: ``build("resnet20", num_classes=100)``; unknown names list the valid ones.

Every builder returns a built functional ``keras.Model`` that outputs logits, made only of
built-in Keras layers, so ``keras.models.model_from_json(model.to_json())`` rebuilds it.
"""

import keras

from tf_vrre.workflows.image_classification.models.cnn import cnn
from tf_vrre.workflows.image_classification.models.resnet import resnet

__all__ = ["MODELS", "Builder", "build", "check_name", "names"]


def _resnet(depth):
    def builder(num_classes=10, input_shape=(32, 32, 3), synchronized_bn=False, **kwargs):
        return resnet(
            depth, num_classes=num_classes, input_shape=input_shape, synchronized_bn=synchronized_bn, **kwargs
        )

    builder.__name__ = f"resnet{depth}"
    builder.__doc__ = f"ResNet-{depth} (``models.resnet({depth}, ...)``)."
    return builder


MODELS = {
    "cnn": cnn,
    "resnet8": _resnet(8),
    "resnet20": _resnet(20),
    "resnet32": _resnet(32),
    "resnet56": _resnet(56),
}
"""Registered builders: ``name -> callable(num_classes, input_shape, synchronized_bn, **kwargs)``."""


def names():
    """The registered model names, in registry order."""
    return tuple(MODELS)


def check_name(name):
    """Returns ``name`` if registered, else raises ``ValueError`` listing the valid names."""
    if name not in MODELS:
        raise ValueError(f"model must be one of {', '.join(MODELS)}; got {name!r}")
    return name


def build(name, num_classes=10, input_shape=(32, 32, 3), synchronized_bn=False, **kwargs):
    """Builds the registered model ``name`` (logits out).

    Args:
      name: one of :func:`names` (``cnn``, ``resnet8``, ``resnet20``, ``resnet32``, ``resnet56``).
      num_classes: number of output logits.
      input_shape: one image's shape (NHWC without the batch axis).
      synchronized_bn: all-reduce BatchNormalization statistics across replicas (set it
        when a ``tf.distribute`` strategy has more than one replica, so replicas cannot drift).
      **kwargs: extra builder arguments (e.g. ``width``, ``batch_norm`` for ``cnn``).

    Example:
      >>> net = build("resnet8", num_classes=10)
      >>> keras.models.model_from_json(net.to_json()).count_params() == net.count_params()
      True
    """
    check_name(name)
    try:
        model = MODELS[name](
            num_classes=num_classes, input_shape=tuple(input_shape), synchronized_bn=synchronized_bn, **kwargs
        )
    except TypeError as err:
        raise ValueError(f"model {name!r}: bad keyword arguments {sorted(kwargs)}: {err}") from None
    if not isinstance(model, keras.Model):  # pragma: no cover - registry holds builders only
        raise TypeError(f"model {name!r} did not build a keras.Model")
    return model


@keras.saving.register_keras_serializable(package="models")
class Builder:
    """A sampler's ``model_fn`` for a registered model: ``Builder(name, ...)()`` is ``build(name, ...)``.

    Unlike ``functools.partial(build, ...)`` it is Keras-serializable (``get_config`` holds
    exactly the constructor arguments), so a sampler built with it has a complete config:
    ``sampler.save`` works and output directories record the run identity.

    Args:
      name: a registered model name (:func:`names`).
      num_classes, input_shape, synchronized_bn: as :func:`build`.
      **kwargs: the model's own keyword arguments, as :func:`build`.

    Example:
      >>> fn = Builder("cnn", num_classes=10, width=8)
      >>> again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(fn))
      >>> again().count_params() == fn().count_params()
      True
    """

    def __init__(self, name, num_classes=10, input_shape=(32, 32, 3), synchronized_bn=False, **kwargs):
        self.name = check_name(name)
        self.num_classes = int(num_classes)
        self.input_shape = tuple(int(d) for d in input_shape)
        self.synchronized_bn = bool(synchronized_bn)
        self.kwargs = dict(kwargs)

    def __call__(self):
        return build(self.name, self.num_classes, self.input_shape, self.synchronized_bn, **self.kwargs)

    def get_config(self):
        return {
            "name": self.name,
            "num_classes": self.num_classes,
            "input_shape": list(self.input_shape),
            "synchronized_bn": self.synchronized_bn,
            **self.kwargs,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)
