"""Reference networks for the experiments: CIFAR ResNets (logits out, no regularizers)."""

from models.resnet import resnet, resnet20, resnet32, resnet56

__all__ = ["resnet", "resnet20", "resnet32", "resnet56"]
