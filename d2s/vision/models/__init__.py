"""`d2s.vision.models`: Paddle's `paddle.vision.models` classification
networks with Paddle's constructors, architectures and parameter names, so a
ported script builds the same network and a Paddle state_dict loads with
`set_state_dict`. No weights ship and nothing is downloaded:
`pretrained=True` raises. Each family has its module named as Paddle's
(`resnet`, `vgg`, `mobilenetv1`, ...), so `from d2s.vision.models.resnet
import BottleneckBlock` ports too."""
from .alexnet import AlexNet, alexnet
from .lenet import LeNet
from .mobilenetv1 import MobileNetV1, mobilenet_v1
from .mobilenetv2 import MobileNetV2, mobilenet_v2
from .resnet import (ResNet, resnet18, resnet34, resnet50, resnet101, resnet152,
                     resnext50_32x4d, resnext50_64x4d, resnext101_32x4d, resnext101_64x4d,
                     resnext152_32x4d, resnext152_64x4d, wide_resnet50_2, wide_resnet101_2)
from .vgg import VGG, vgg11, vgg13, vgg16, vgg19

__all__ = ["LeNet", "AlexNet", "alexnet", "ResNet", "resnet18", "resnet34", "resnet50",
           "resnet101", "resnet152", "wide_resnet50_2", "wide_resnet101_2", "resnext50_32x4d",
           "resnext50_64x4d", "resnext101_32x4d", "resnext101_64x4d", "resnext152_32x4d",
           "resnext152_64x4d", "VGG", "vgg11", "vgg13", "vgg16", "vgg19", "MobileNetV1",
           "MobileNetV2", "mobilenet_v1", "mobilenet_v2"]
