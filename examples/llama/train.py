"""Train the Llama-style decoder on the bytes of the Python standard
library's own source, eagerly or with the whole training step converted.

    python -m examples.llama.train --steps 300                  # static, numpy
    python -m examples.llama.train --mode eager --steps 50
    python -m examples.llama.train --backend xla --plot loss.png
    python -m examples.llama.train --steps 600 --resume ckpt.npz --save ckpt.npz

The step (forward, loss, `loss.backward()`, AdamW with global-norm
clipping, `clear_grad`) is written once as eager code; `--mode static` wraps
it in `d2s.jit.to_static`, which makes it one program, whose losses are bitwise
the eager ones on the numpy backend. The learning rate follows a linear
warm-up then a cosine decay; the scheduler steps eagerly between steps and
the program reads the new rate on its next run.

A checkpoint (`d2s.save`) holds the config, the weights, the optimizer's
moments (in parameter order), the scheduler, the step and the data
generator's state, so a resumed run continues exactly where it stopped; a
checkpoint of another config is refused with the differing keys named.
"""
from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

import d2s
import d2s.nn.functional as F
from d2s.optimizer import lr as lr_sched

if __package__ in (None, ""):                       # run as a script
    import pathlib
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
    from examples.llama import data as data_mod
    from examples.llama.model import LlamaConfig, LlamaForCausalLM
else:
    from . import data as data_mod
    from .model import LlamaConfig, LlamaForCausalLM


class Trainer:
    """The model, optimizer, schedule and data stream of one run, with the
    converted (or eager) step and checkpointing."""

    def __init__(self, config, *, lr=3e-3, warmup=20, steps=300, clip=1.0, weight_decay=0.01,
                 batch_size=8, seq_len=64, seed=0, mode="static", backend="numpy"):
        if mode not in ("eager", "static"):
            raise ValueError(f"train: mode must be 'eager' or 'static', got {mode!r}")
        self.config, self.steps, self.seq_len = config, steps, seq_len
        d2s.seed(seed)
        self.model = LlamaForCausalLM(config)
        cosine = lr_sched.CosineAnnealingDecay(lr, T_max=max(1, steps - warmup), eta_min=lr * 0.1)
        self.scheduler = lr_sched.LinearWarmup(cosine, warmup, 0.0, lr) if warmup > 0 else cosine
        self.opt = d2s.optimizer.AdamW(
            learning_rate=self.scheduler, parameters=self.model.parameters(),
            weight_decay=weight_decay, grad_clip=d2s.nn.ClipGradByGlobalNorm(clip))
        train, held = data_mod.split(data_mod.corpus_bytes())
        self.train_tokens, self.held_tokens = train, held
        self.rng = np.random.default_rng(seed)
        self.batch_size = batch_size
        self.step_count = 0
        self.losses = []
        self.mode = mode
        self._step = self._make_step(backend)

    def _make_step(self, backend):
        model, opt, vocab = self.model, self.opt, self.config.vocab_size

        def train_step(batch):
            logits = model(batch[:, :-1])
            loss = F.cross_entropy(logits.reshape([-1, vocab]), batch[:, 1:].reshape([-1]))
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss

        if self.mode == "eager":
            return train_step
        return d2s.jit.to_static(train_step, backend=backend)

    def next_batch(self):
        hi = len(self.train_tokens) - self.seq_len - 1
        starts = self.rng.integers(0, hi, size=self.batch_size)
        return np.stack([self.train_tokens[s:s + self.seq_len + 1] for s in starts]
                        ).astype(np.int64)

    def train_step(self):
        loss = self._step(d2s.to_tensor(self.next_batch()))
        self.scheduler.step()
        self.step_count += 1
        value = float(loss.item())
        self.losses.append(value)
        return value

    def held_out_loss(self, max_windows=16):
        """Mean next-byte loss (nats) on held-out windows, without gradients."""
        windows = data_mod.eval_windows(self.held_tokens, self.seq_len, max_windows)
        with d2s.no_grad():
            logits = self.model(d2s.to_tensor(windows[:, :-1]))
            loss = F.cross_entropy(logits.reshape([-1, self.config.vocab_size]),
                                   d2s.to_tensor(windows[:, 1:].reshape(-1)))
        return float(loss.item())

    # ---- checkpoints -----------------------------------------------------------------
    def save(self, path):
        moments = {}
        for name, p in self.model.named_parameters():
            st = self.opt._state.get(id(p))
            if st is not None:
                moments[name] = list(st[1])
        d2s.save({"config": self.config.to_dict(), "model": self.model.state_dict(),
                  "moments": moments, "scheduler": self.scheduler.state_dict(),
                  "step": self.step_count, "losses": list(self.losses),
                  "rng": _rng_state(self.rng)}, path)

    def load(self, path):
        ckpt = d2s.load(path)
        saved = ckpt.get("config", {})
        ours = self.config.to_dict()
        # tensor_parallel only chooses how the same weights are laid out
        diff = sorted(k for k in set(saved) | set(ours)
                      if k != "tensor_parallel" and saved.get(k) != ours.get(k))
        if diff:
            detail = ", ".join(f"{k}: checkpoint {saved.get(k)!r} vs run {ours.get(k)!r}"
                               for k in diff)
            raise ValueError(f"train: checkpoint {path} was written for another LlamaConfig "
                             f"({detail}); pass the same model options to resume")
        self.model.set_state_dict(ckpt["model"])
        params = dict(self.model.named_parameters())
        for name, states in ckpt["moments"].items():
            mine = self.opt._param_state(params[name])
            for t, v in zip(mine, states):
                t._value = np.array(v.numpy() if isinstance(v, d2s.Tensor) else v,
                                    dtype=t._value.dtype)
        self.scheduler.set_state_dict(ckpt["scheduler"])
        self.step_count = int(ckpt["step"])
        self.losses = [float(x) for x in ckpt["losses"]]
        self.rng.bit_generator.state = _rng_restore(ckpt["rng"])


def _rng_state(rng):
    st = rng.bit_generator.state
    return {"bit_generator": st["bit_generator"], "state": str(st["state"]["state"]),
            "inc": str(st["state"]["inc"]), "has_uint32": int(st["has_uint32"]),
            "uinteger": int(st["uinteger"])}


def _rng_restore(d):
    return {"bit_generator": d["bit_generator"],
            "state": {"state": int(d["state"]), "inc": int(d["inc"])},
            "has_uint32": int(d["has_uint32"]), "uinteger": int(d["uinteger"])}


def progress(step, total, loss, rate, start):
    width = 24
    filled = int(width * step / total)
    line = (f"step {step:5d}/{total} [{'#' * filled}{'.' * (width - filled)}] "
            f"loss {loss:.4f} lr {rate:.2e} {time.perf_counter() - start:6.1f}s")
    if sys.stdout.isatty():
        sys.stdout.write("\r" + line + ("\n" if step == total else ""))
    elif step == total or step % max(1, total // 10) == 0:
        sys.stdout.write(line + "\n")
    sys.stdout.flush()


def plot(losses, path, entropy):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no loss curve drawn")
        return
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(np.arange(1, len(losses) + 1), losses, label="training loss")
    ax.axhline(entropy, color="gray", linestyle="--", label="unigram entropy")
    ax.set_xlabel("step")
    ax.set_ylabel("next-byte loss (nats)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    print(f"loss curve written to {path}")


def quant_report(trainer, max_windows=16):
    """Held-out perplexity of the inference program in fp32 and after the
    weight-only pass (int8 per channel, int4 in groups of 32; the embedding
    table int8 rows in both), with the bytes of the weights each program
    reads. Those include the rotary cos/sin tables: float32 constants of
    the positions (buffers, not trained), which the pass leaves alone; their
    share is printed beside."""
    from d2s.quantization import captured_bytes, weight_only
    windows = data_mod.eval_windows(trainer.held_tokens, trainer.seq_len, max_windows)
    ids, targets = d2s.to_tensor(windows[:, :-1]), windows[:, 1:]
    model = trainer.model
    model.eval()
    buffers = {id(b) for b in model.buffers()}
    base = None
    for label, bits, group in [("fp32", None, None), ("int8", 8, -1), ("int4/g32", 4, 32)]:
        def forward(x):
            return model(x)
        fn = d2s.jit.to_static(forward)
        if bits is not None:
            weight_only(fn, bits=bits, group_size=group)
        with d2s.no_grad():
            logits = fn(ids).numpy().astype(np.float64)
        z = logits - logits.max(-1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
        ppl = math.exp(-np.take_along_axis(logp, targets[..., None], -1).mean())
        program = fn.get_concrete_program(ids).main_program
        size = captured_bytes(program)["total"]
        tables = sum(np.asarray(t._value).nbytes for t in program.captured.values()
                     if id(t) in buffers)
        base = base or size
        print(f"  {label:9s} held-out perplexity {ppl:8.4f}   weights read {size / 1024:8.1f} KiB "
              f"({size / base:.0%} of fp32; rotary tables {tables / 1024:.1f} KiB of it)")
    model.train()


def config_from_args(args):
    return LlamaConfig(vocab_size=data_mod.VOCAB_SIZE, hidden_size=args.d_model,
                       intermediate_size=args.ffn, num_hidden_layers=args.layers,
                       num_attention_heads=args.heads, num_key_value_heads=args.kv_heads,
                       max_position_embeddings=max(256, args.seq_len),
                       tie_word_embeddings=args.tie)


def parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=["eager", "static"], default="static",
                   help="run the training step eagerly or as one converted program")
    p.add_argument("--backend", choices=["numpy", "xla"], default="numpy",
                   help="backend of the converted step (static mode)")
    p.add_argument("--steps", type=int, default=300, help="training steps in all")
    p.add_argument("--batch", type=int, default=8, help="sequences per step")
    p.add_argument("--seq-len", type=int, default=64, help="bytes per training sequence")
    p.add_argument("--layers", type=int, default=2, help="decoder layers")
    p.add_argument("--d-model", type=int, default=128, help="hidden size")
    p.add_argument("--ffn", type=int, default=344, help="SwiGLU intermediate size")
    p.add_argument("--heads", type=int, default=4, help="query heads")
    p.add_argument("--kv-heads", type=int, default=2, help="key/value heads (grouped-query)")
    p.add_argument("--tie", action="store_true", help="tie input and output embeddings")
    p.add_argument("--lr", type=float, default=3e-3, help="peak learning rate")
    p.add_argument("--warmup", type=int, default=20, help="linear warm-up steps")
    p.add_argument("--clip", type=float, default=1.0, help="global gradient-norm clip")
    p.add_argument("--seed", type=int, default=0, help="seed of weights and batches")
    p.add_argument("--save", default=None, help="write a checkpoint here at the end")
    p.add_argument("--resume", default=None, help="continue from this checkpoint")
    p.add_argument("--plot", default=None, help="write the loss curve PNG here")
    p.add_argument("--quant-report", action="store_true",
                   help="held-out perplexity and Linear weight bytes: fp32, int8, int4")
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    config = config_from_args(args)
    trainer = Trainer(config, lr=args.lr, warmup=args.warmup, steps=args.steps, clip=args.clip,
                      batch_size=args.batch, seq_len=args.seq_len, seed=args.seed,
                      mode=args.mode, backend=args.backend)
    if args.resume:
        trainer.load(args.resume)
        print(f"resumed from {args.resume} at step {trainer.step_count}")
    entropy = data_mod.unigram_entropy(trainer.train_tokens)
    n_params = sum(int(np.prod(p.shape)) for p in trainer.model.parameters())
    print(f"{n_params} parameters, {len(trainer.train_tokens)} training bytes, "
          f"unigram entropy {entropy:.4f} nats; mode {args.mode}, backend {args.backend}")
    start = time.perf_counter()
    while trainer.step_count < args.steps:
        loss = trainer.train_step()
        progress(trainer.step_count, args.steps, loss, trainer.opt.get_lr(), start)
    if trainer.losses:
        print(f"last loss {trainer.losses[-1]!r}")
    held = trainer.held_out_loss()
    print(f"held-out loss {held:.4f} nats (perplexity {math.exp(held):.2f}); "
          f"unigram entropy {entropy:.4f}")
    if args.quant_report:
        quant_report(trainer)
    if args.plot:
        plot(trainer.losses, args.plot, entropy)
    if args.save:
        trainer.save(args.save)
        print(f"checkpoint written to {args.save}")
    return trainer


if __name__ == "__main__":
    main()
