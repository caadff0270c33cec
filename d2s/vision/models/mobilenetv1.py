"""Paddle's MobileNetV1 (`paddle.vision.models.mobilenet_v1`, with `scale`):
the same sublayer names (`conv1`, `conv2_1` ... `conv6`, `_depthwise_conv`,
`_pointwise_conv`, each a conv/BN/ReLU Sequential as current Paddle builds
it), so a Paddle state_dict loads by name."""
from ... import nn
from ...core.ops import flatten

from ._conv_norm import _ConvNormActivation
from ._pretrained import check_pretrained


class DepthwiseSeparable(nn.Layer):
    """A 3x3 depthwise conv then a 1x1 pointwise conv, each with BN + ReLU."""

    def __init__(self, in_channels, out_channels1, out_channels2, num_groups, stride, scale):
        super().__init__()
        self._depthwise_conv = _ConvNormActivation(
            in_channels, int(out_channels1 * scale), 3, stride=stride, padding=1,
            groups=int(num_groups * scale))
        self._pointwise_conv = _ConvNormActivation(
            int(out_channels1 * scale), int(out_channels2 * scale), 1, stride=1, padding=0)

    def forward(self, x):
        return self._pointwise_conv(self._depthwise_conv(x))


# (name, out_channels1, out_channels2 / in of next, num_groups, stride), in Paddle's order
_V1_BLOCKS = ([("conv2_1", 32, 64, 32, 1), ("conv2_2", 64, 128, 64, 2),
               ("conv3_1", 128, 128, 128, 1), ("conv3_2", 128, 256, 128, 2),
               ("conv4_1", 256, 256, 256, 1), ("conv4_2", 256, 512, 256, 2)]
              + [(f"conv5_{i + 1}", 512, 512, 512, 1) for i in range(5)]
              + [("conv5_6", 512, 1024, 512, 2), ("conv6", 1024, 1024, 1024, 1)])


class MobileNetV1(nn.Layer):
    """MobileNetV1(scale=1.0, num_classes=1000, with_pool=True): `scale`
    multiplies every width; `num_classes <= 0` drops the classifier."""

    def __init__(self, scale=1.0, num_classes=1000, with_pool=True):
        super().__init__()
        self.scale = scale
        self.num_classes = num_classes
        self.with_pool = with_pool
        self.conv1 = _ConvNormActivation(3, int(32 * scale), 3, stride=2, padding=1)
        self.dwsl = []
        in_channels = 32
        for name, c1, c2, groups, stride in _V1_BLOCKS:
            block = DepthwiseSeparable(int(in_channels * scale), c1, c2, groups, stride, scale)
            self.dwsl.append(self.add_sublayer(name, block))
            in_channels = c2
        if with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self.fc = nn.Linear(int(1024 * scale), num_classes)

    def forward(self, x):
        x = self.conv1(x)
        for dws in self.dwsl:
            x = dws(x)
        if self.with_pool:
            x = self.pool2d_avg(x)
        if self.num_classes > 0:
            x = flatten(x, 1)
            x = self.fc(x)
        return x


def mobilenet_v1(pretrained=False, scale=1.0, **kwargs):
    """MobileNetV1 with width multiplier `scale`; kwargs go to `MobileNetV1`."""
    check_pretrained(pretrained, "mobilenet_v1")
    return MobileNetV1(scale=scale, **kwargs)
