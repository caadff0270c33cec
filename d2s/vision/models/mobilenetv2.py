"""Paddle's MobileNetV2 (`paddle.vision.models.mobilenet_v2`, with `scale`):
the same sublayer names (Sequential indices, as Paddle's ConvNormActivation
gives them), so a Paddle state_dict loads by name."""
from ... import nn
from ...core.ops import flatten

from ._conv_norm import _ConvNormActivation
from ._pretrained import check_pretrained


def _make_divisible(v, divisor=8, min_value=None):
    """Round a scaled channel count to a multiple of `divisor`, never going
    more than 10% below the unrounded value (MobileNet's channel rule)."""
    min_value = divisor if min_value is None else min_value
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class InvertedResidual(nn.Layer):
    """MobileNetV2's block: 1x1 expand (skipped at ratio 1), 3x3 depthwise,
    linear 1x1 project; a residual add when shape is kept."""

    def __init__(self, inp, oup, stride, expand_ratio, norm_layer=nn.BatchNorm2D):
        super().__init__()
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(_ConvNormActivation(inp, hidden_dim, kernel_size=1,
                                              norm_layer=norm_layer, activation_layer=nn.ReLU6))
        layers += [_ConvNormActivation(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim,
                                       norm_layer=norm_layer, activation_layer=nn.ReLU6),
                   nn.Conv2D(hidden_dim, oup, 1, 1, 0, bias_attr=False),
                   norm_layer(oup)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


# (expand ratio t, channels c, repeats n, first stride s)
_V2_SETTING = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1],
               [6, 160, 3, 2], [6, 320, 1, 1]]


class MobileNetV2(nn.Layer):
    """MobileNetV2(scale=1.0, num_classes=1000, with_pool=True): widths are
    scaled and rounded to multiples of 8; the last conv never shrinks below
    1280 channels."""

    def __init__(self, scale=1.0, num_classes=1000, with_pool=True):
        super().__init__()
        self.scale = scale
        self.num_classes = num_classes
        self.with_pool = with_pool
        norm_layer = nn.BatchNorm2D
        input_channel = _make_divisible(32 * scale, 8)
        self.last_channel = _make_divisible(1280 * max(1.0, scale), 8)
        features = [_ConvNormActivation(3, input_channel, stride=2, norm_layer=norm_layer,
                                        activation_layer=nn.ReLU6)]
        for t, c, n, s in _V2_SETTING:
            output_channel = _make_divisible(c * scale, 8)
            for i in range(n):
                features.append(InvertedResidual(input_channel, output_channel,
                                                  s if i == 0 else 1, expand_ratio=t,
                                                  norm_layer=norm_layer))
                input_channel = output_channel
        features.append(_ConvNormActivation(input_channel, self.last_channel, kernel_size=1,
                                            norm_layer=norm_layer, activation_layer=nn.ReLU6))
        self.features = nn.Sequential(*features)
        if with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self.classifier = nn.Sequential(nn.Dropout(0.2),
                                            nn.Linear(self.last_channel, num_classes))

    def forward(self, x):
        x = self.features(x)
        if self.with_pool:
            x = self.pool2d_avg(x)
        if self.num_classes > 0:
            x = flatten(x, 1)
            x = self.classifier(x)
        return x


def mobilenet_v2(pretrained=False, scale=1.0, **kwargs):
    """MobileNetV2 with width multiplier `scale`; kwargs go to `MobileNetV2`."""
    check_pretrained(pretrained, "mobilenet_v2")
    return MobileNetV2(scale=scale, **kwargs)
