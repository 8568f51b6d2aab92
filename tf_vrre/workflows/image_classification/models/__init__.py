"""Reference networks for the experiments (logits out, no regularizers).

CIFAR ResNets (``resnet8/20/32/56``, ``resnet(depth, ...)``), a small CNN for CPU runs
(``cnn``) and a registry by name (``build(name, ...)``, ``names()``).
"""

from tf_vrre.workflows.image_classification.models.cnn import cnn
from tf_vrre.workflows.image_classification.models.registry import MODELS, Builder, build, check_name, names
from tf_vrre.workflows.image_classification.models.resnet import resnet, resnet20, resnet32, resnet56

__all__ = ["resnet", "resnet20", "resnet32", "resnet56", "cnn", "MODELS", "Builder", "build", "check_name", "names"]
