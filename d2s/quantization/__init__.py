"""Weight-only quantization as a pass on static programs.

`weight_only(target, bits=8|4, group_size=-1)` rewrites every matmul whose
weight is a captured 2-D float parameter (what `nn.Linear` traces to) to
read the weight through a `weight_dequantize` op over int8 (or packed
int4) values and per-channel / per-group scales, and every lookup of an
embedding table to a `gather_dequantize` of int8 rows with one scale per
row (`embeddings=True`, the default). The model is trained and
written once; the inference program is what changes (train and deploy
from the same code). `captured_bytes(program)` is the memory of the
weights a program reads.
"""
from .weight_only import (WeightOnlyPass, captured_bytes, quantize_table, quantize_weight,
                          weight_only)

__all__ = ["weight_only", "quantize_weight", "quantize_table", "captured_bytes", "WeightOnlyPass"]
