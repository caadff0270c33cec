"""Paddle's padding layers with a fixed mode (`ZeroPad1D`/`3D`,
`ReflectionPad*`, `ReplicationPad*`, `CircularPad*`; `ZeroPad2D` lives in
port_layers): each is `Pad1D`/`Pad2D`/`Pad3D` with that mode, so all share
`F.pad` (its gradients, xla and ONNX rules)."""
from __future__ import annotations

from .conv_layers import Pad1D, Pad2D
from .port_layers import Pad3D

__all__ = []


def _fixed(name, base, mode, doc):
    def __init__(self, padding, data_format=None, name=None):
        base.__init__(self, padding, mode=mode, value=0.0, data_format=data_format, name=name)
    cls = type(name, (base,), {"__init__": __init__, "__doc__": doc,
                               "__module__": __name__})
    __all__.append(name)
    return cls


_SIDES = {1: "[left, right] of L", 2: "[left, right, top, bottom] of H and W",
          3: "[left, right, top, bottom, front, back] of D, H and W"}
_BASES = {1: Pad1D, 2: Pad2D, 3: Pad3D}
_MODES = {"Zero": ("constant", "zeros"), "Reflection": ("reflect", "the input mirrored at "
                                                        "its border (border not repeated)"),
          "Replication": ("replicate", "copies of the border values"),
          "Circular": ("circular", "the input wrapped around")}

for _kind, (_mode, _what) in _MODES.items():
    for _n in (1, 2, 3):
        if _kind == "Zero" and _n == 2:
            continue  # ZeroPad2D: port_layers (F.zeropad2d)
        _name = f"{_kind}Pad{_n}D"
        globals()[_name] = _fixed(_name, _BASES[_n], _mode,
                                  f"Pad {_SIDES[_n]} with {_what} (`F.pad(mode={_mode!r})`).")
