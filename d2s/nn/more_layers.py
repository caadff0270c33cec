"""Layers of the Paddle API over `lp_pool`, `feature_alpha_dropout` and
`multi_label_margin_loss` (`LPPool1D`, `LPPool2D`, `FeatureAlphaDropout`,
`MultiLabelMarginLoss`) and `RNNCellBase`, the public base of the recurrent
cells."""
from __future__ import annotations

from .feature_alpha_dropout import feature_alpha_dropout
from .layer import Layer
from .lp_pool import lp_pool1d, lp_pool2d
from .multi_label_margin import multi_label_margin_loss
from .port_layers import _calling, _loss
from .rnn_cell_base import RNNCellBase

__all__ = ["LPPool1D", "LPPool2D", "FeatureAlphaDropout", "RNNCellBase",
           "MultiLabelMarginLoss"]

LPPool1D = type("LPPool1D", (Layer,), _calling(
    lp_pool1d, "`F.lp_pool1d`", "norm_type", "kernel_size", "stride", "padding", "ceil_mode",
    "data_format"))
LPPool2D = type("LPPool2D", (Layer,), _calling(
    lp_pool2d, "`F.lp_pool2d`", "norm_type", "kernel_size", "stride", "padding", "ceil_mode",
    "data_format"))
FeatureAlphaDropout = type("FeatureAlphaDropout", (Layer,), _calling(
    feature_alpha_dropout, "`F.feature_alpha_dropout` while training, the identity in eval "
    "mode", "p", training=True))
MultiLabelMarginLoss = _loss("MultiLabelMarginLoss", multi_label_margin_loss, "reduction")
