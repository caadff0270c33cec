"""The Llama decoder exported to ONNX and served by ONNX Runtime:

* `DecodeStep`: one token at a run-time position, the k/v caches as inputs
  and outputs (the form servers loop over);
* `GreedyGenerator`: the whole greedy loop of `generate.generate` (its
  tensor `while` becomes an ONNX `Loop`), prompt in, tokens out.

    python -m examples.llama.export_onnx --out /tmp/llama_onnx

Both are written as ordinary Layers over the same model code; `d2s.onnx.export`
traces them like `to_static` does. `ort_greedy` decodes with the exported
step in a Python loop, as a server would.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import d2s
import d2s.nn as nn
from d2s.static import InputSpec

if __package__ in (None, ""):                       # run as a script
    import pathlib
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
    from examples.llama.generate import generate
    from examples.llama.model import LlamaConfig, LlamaForCausalLM
else:
    from .generate import generate
    from .model import LlamaConfig, LlamaForCausalLM


class DecodeStep(nn.Layer):
    """forward(token [B, 1], position (int64 scalar), k_0, v_0, k_1, v_1, ...)
    -> (logits [B, vocab], new k_0, v_0, ...).

    The model writes this token's keys and values into the caches it is
    given. Written into the inputs themselves, the caller's Tensors would
    change after each converted call (as eagerly), and an exported model
    would get each cache twice as an output (returned, and `<input>_written`);
    the step writes into copies and returns them: one output per cache, the
    form a server's loop feeds back."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, token, position, *caches):
        pairs = [(caches[2 * i].clone(), caches[2 * i + 1].clone())
                 for i in range(len(caches) // 2)]
        logits, pairs = self.model.forward_cached(token, pairs, position)
        out = [logits]
        for k, v in pairs:
            out += [k, v]
        return tuple(out)

    def input_spec(self, batch, max_len):
        c = self.model.config
        shapes = self.model.cache_shapes(batch, max_len)
        return ([InputSpec([batch, 1], "int64", "token"), InputSpec([], "int64", "position")]
                + [InputSpec(shapes[j], "float32", f"{kv}_{i}")
                   for i in range(c.num_hidden_layers) for j, kv in enumerate(("k", "v"))])


class GreedyGenerator(nn.Layer):
    """forward(prompt [B, P]) -> the next `max_new_tokens` greedy tokens."""

    def __init__(self, model, max_new_tokens, eos_id=None):
        super().__init__()
        self.model, self.max_new_tokens, self.eos_id = model, max_new_tokens, eos_id

    def forward(self, prompt_ids):
        return generate(self.model, prompt_ids, self.max_new_tokens, temperature=0,
                        eos_id=self.eos_id)


def export(model, out_dir, batch, prompt_len, max_new_tokens):
    """Write decode_step.onnx and greedy.onnx under out_dir; returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    step = DecodeStep(model)
    step_path = os.path.join(out_dir, "decode_step.onnx")
    d2s.onnx.export(step, step_path,
                    input_spec=step.input_spec(batch, prompt_len + max_new_tokens))
    loop_path = os.path.join(out_dir, "greedy.onnx")
    d2s.onnx.export(GreedyGenerator(model, max_new_tokens), loop_path,
                    input_spec=[InputSpec([batch, prompt_len], "int64", "prompt_ids")])
    return step_path, loop_path


def ort_greedy(step_path, config, prompt, max_new_tokens):
    """Greedy tokens from the exported decode step, run token by token
    (the prompt too) in ONNX Runtime."""
    import onnxruntime as ort
    sess = ort.InferenceSession(step_path, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    # the shapes the step was exported with (keys [B, KV, D, L], values [B, KV, L, D])
    caches = [np.zeros(i.shape, np.float32) for i in sess.get_inputs()[2:]]
    plen = prompt.shape[1]
    out = []
    token = prompt[:, :1]
    for pos in range(plen + max_new_tokens - 1):
        feeds = dict(zip(names, [token, np.array(pos, np.int64)] + caches))
        logits, *caches = sess.run(None, feeds)
        if pos + 1 < plen:
            token = prompt[:, pos + 1:pos + 2]
        else:
            token = logits.argmax(-1)[:, None].astype(np.int64)
            out.append(token)
    return np.concatenate(out, axis=1)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="llama_onnx", help="folder for the .onnx files")
    p.add_argument("--new-tokens", type=int, default=8, help="tokens to generate")
    p.add_argument("--seed", type=int, default=0, help="seed of the (untrained) weights")
    args = p.parse_args(argv)
    import onnxruntime as ort
    d2s.seed(args.seed)
    config = LlamaConfig(hidden_size=64, intermediate_size=128, max_position_embeddings=64)
    model = LlamaForCausalLM(config)
    model.eval()
    prompt = np.frombuffer(b"import os\n", np.uint8)[None].astype(np.int64)
    step_path, loop_path = export(model, args.out, 1, prompt.shape[1], args.new_tokens)
    with d2s.no_grad():
        want = generate(model, d2s.to_tensor(prompt), args.new_tokens, temperature=0).numpy()
    by_step = ort_greedy(step_path, config, prompt, args.new_tokens)
    sess = ort.InferenceSession(loop_path, providers=["CPUExecutionProvider"])
    by_loop = sess.run(None, {sess.get_inputs()[0].name: prompt})[0]
    print("d2s                 ", want.tolist())
    print("onnxruntime step    ", by_step.tolist())
    print("onnxruntime loop    ", by_loop.tolist())
    print(f"tokens equal: step {np.array_equal(by_step, want)}, "
          f"loop {np.array_equal(by_loop, want)}")


if __name__ == "__main__":
    main()
