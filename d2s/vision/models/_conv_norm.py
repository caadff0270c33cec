"""Conv2D + norm + activation as one Sequential, the building block Paddle's
MobileNets take from `paddle.vision.ops.ConvNormActivation`; kept private
here because `d2s.vision.ops` lists Paddle's detection ops only."""
from ... import nn


class _ConvNormActivation(nn.Sequential):
    """Conv2D (+ norm) (+ activation) as one Sequential, like Paddle's
    `vision.ops.ConvNormActivation`, whose parameter names ("0.weight",
    "1._mean", ...) the MobileNets' state_dicts carry. The conv has a bias
    only when there is no norm after it."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None,
                 groups=1, norm_layer=nn.BatchNorm2D, activation_layer=nn.ReLU, dilation=1,
                 bias=None):
        if padding is None:
            padding = (kernel_size - 1) // 2 * dilation
        if bias is None:
            bias = norm_layer is None
        layers = [nn.Conv2D(in_channels, out_channels, kernel_size, stride, padding,
                            dilation=dilation, groups=groups,
                            bias_attr=None if bias else False)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer())
        super().__init__(*layers)
