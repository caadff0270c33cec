"""Layers of the Paddle API over `lp_pool` and `feature_alpha_dropout`
(`LPPool1D`, `LPPool2D`, `FeatureAlphaDropout`) and `RNNCellBase`, the
public base of the recurrent cells."""
from __future__ import annotations

from .feature_alpha_dropout import feature_alpha_dropout
from .layer import Layer
from .lp_pool import lp_pool1d, lp_pool2d
from .port_layers import _calling
from .rnn_cell_base import RNNCellBase

__all__ = ["LPPool1D", "LPPool2D", "FeatureAlphaDropout", "RNNCellBase"]

LPPool1D = type("LPPool1D", (Layer,), _calling(
    lp_pool1d, "`F.lp_pool1d`", "norm_type", "kernel_size", "stride", "padding", "ceil_mode",
    "data_format"))
LPPool2D = type("LPPool2D", (Layer,), _calling(
    lp_pool2d, "`F.lp_pool2d`", "norm_type", "kernel_size", "stride", "padding", "ceil_mode",
    "data_format"))
FeatureAlphaDropout = type("FeatureAlphaDropout", (Layer,), _calling(
    feature_alpha_dropout, "`F.feature_alpha_dropout` while training, the identity in eval "
    "mode", "p", training=True))
