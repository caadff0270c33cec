"""A Llama-style decoder trained, sampled and quantized through d2s.

`model` holds the network (`LlamaConfig`, `LlamaForCausalLM`), `data` the
byte-level text of the Python standard library's own source, `train` the
training script, `generate` the sampling loop written as plain eager Python.
"""
