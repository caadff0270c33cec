"""`d2s.incubate`: Paddle's incubating APIs that real models call (`nn.FusedLinear`,
`nn.functional.swiglu`), as compositions of d2s layers and ops."""
from . import nn  # noqa: F401
