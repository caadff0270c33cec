"""Train two models eagerly or through static programs (one switch), save, reload.

    python examples/train.py --mode static      # or --mode eager
    python examples/train.py --mode eager --epochs 3 --out /tmp/d2s_models

* an MLP classifying three Gaussian blobs (batched);
* an RNN over variable-length sequences: the loop runs `len(x)` steps, a
  data-dependent trip count, so in static mode it is one `while` op.

Both models and their training step are written once as plain d2s code;
`--mode` only flips `d2s.jit.enable_to_static`. In static mode the whole
training step (forward, `loss.backward()`, `opt.step()`, `opt.clear_grad()`)
is one program per input signature, and the numbers are bitwise the eager
ones. After training each model is saved with `d2s.jit.save` and reloaded
with `d2s.jit.load` for inference.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import d2s
import d2s.nn.functional as F
from d2s.jit import InputSpec, to_static

DEFAULT_OUT = "d2s_models"  # under the current folder


class MLP(d2s.nn.Layer):
    def __init__(self, n_in=2, hidden=32, n_out=3):
        super().__init__()
        self.fc1 = d2s.nn.Linear(n_in, hidden)
        self.fc2 = d2s.nn.Linear(hidden, n_out)

    @to_static(input_spec=[InputSpec([None, 2], "float32")])   # any batch size
    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class SequenceRNN(d2s.nn.Layer):
    """Elman RNN over one sequence x: (T, n_in) with T known only at run time."""

    def __init__(self, n_in=4, hidden=16, n_out=2):
        super().__init__()
        self.hidden = hidden
        self.w_in = d2s.nn.Linear(n_in, hidden)
        self.w_h = d2s.nn.Linear(hidden, hidden, bias_attr=False)
        self.head = d2s.nn.Linear(hidden, n_out)

    @to_static(input_spec=[InputSpec([None, 4], "float32")])   # any sequence length
    def forward(self, x):
        h = d2s.zeros([1, self.hidden])
        for t in range(len(x)):                  # a while op over a run-time length
            h = d2s.tanh(self.w_in(x[t:t + 1]) + self.w_h(h))
        return self.head(h)


def blobs(n, rng):
    centers = np.array([[0.0, 2.0], [2.0, -1.0], [-2.0, -1.0]])
    y = rng.integers(0, 3, size=n)
    x = centers[y] + rng.normal(scale=0.6, size=(n, 2))
    return x.astype(np.float32), y.astype(np.int64)


def sequences(n, rng):
    data = []
    for _ in range(n):
        length = int(rng.integers(3, 13))
        x = rng.normal(size=(length, 4)).astype(np.float32)
        data.append((x, np.array([int(x[:, 0].sum() > 0)], np.int64)))
    return data


def progress(prefix, done, total, loss, width=24):
    """A bar redrawn in place on a terminal; into a file or pipe, a line at
    each sixth of the epoch (so a log is not one endless line)."""
    filled = int(width * done / total)
    bar = "#" * filled + "." * (width - filled)
    line = f"{prefix} [{bar}] {done:4d}/{total} loss {loss:.4f}"
    if sys.stdout.isatty():
        sys.stdout.write("\r" + line)
    elif done == total or done % max(1, total // 6) == 0:
        sys.stdout.write(line + ("" if done == total else "\n"))
    sys.stdout.flush()


def make_train_step(model, opt, input_spec):
    """One training step, converted whole: one program runs the forward, the
    backward, the Adam update and the gradient clearing, and commits the new
    parameters, gradients and optimizer state."""
    @to_static(input_spec=input_spec)
    def train_step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss
    return train_step


def train_mlp(epochs, rng):
    x, y = blobs(600, rng)
    model = MLP()
    opt = d2s.optimizer.Adam(learning_rate=0.01, parameters=model.parameters())
    step = make_train_step(model, opt, [InputSpec([None, 2], "float32"),
                                        InputSpec([None], "int64")])
    batch = 32
    for epoch in range(epochs):
        order = rng.permutation(len(x))
        losses = []
        n_batches = len(x) // batch
        for b in range(n_batches):
            idx = order[b * batch:(b + 1) * batch]
            loss = step(d2s.to_tensor(x[idx]), d2s.to_tensor(y[idx]))
            losses.append(loss.item())
            progress(f"  mlp epoch {epoch + 1}", b + 1, n_batches, np.mean(losses))
        print(f"\n  mlp last batch loss {losses[-1]!r}")   # all digits: modes agree exactly
    logits = model(d2s.to_tensor(x)).numpy()
    return model, float((logits.argmax(1) == y).mean()), x


def train_rnn(epochs, rng):
    data = sequences(240, rng)
    model = SequenceRNN()
    opt = d2s.optimizer.Adam(learning_rate=0.01, parameters=model.parameters())
    step = make_train_step(model, opt, [InputSpec([None, 4], "float32"),
                                        InputSpec([1], "int64")])
    for epoch in range(epochs):
        losses = []
        for i in rng.permutation(len(data)):
            x, y = data[i]
            loss = step(d2s.to_tensor(x), d2s.to_tensor(y))
            losses.append(loss.item())
            if len(losses) % 20 == 0 or len(losses) == len(data):
                progress(f"  rnn epoch {epoch + 1}", len(losses), len(data), np.mean(losses))
        print(f"\n  rnn last sequence loss {losses[-1]!r}")
    correct = sum(int(model(d2s.to_tensor(x)).numpy().argmax() == y[0]) for x, y in data)
    return model, correct / len(data), data


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=["eager", "static"], default="static",
                        help="eager: run the Python code as written; static: convert the "
                             "training step to one program (default static)")
    parser.add_argument("--epochs", type=int, default=4,
                        help="passes over each model's training data (default 4)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the data and the initial weights (default 0)")
    parser.add_argument("--out", default=DEFAULT_OUT,
                        help=f"folder for the saved models, created if missing (default "
                             f"./{DEFAULT_OUT})")
    args = parser.parse_args(argv)

    d2s.jit.enable_to_static(args.mode == "static")   # the one switch
    d2s.seed(args.seed)
    rng = np.random.default_rng(args.seed)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    print(f"mode: {args.mode}; models will be saved to {out}")

    t0 = time.perf_counter()
    mlp, mlp_acc, x = train_mlp(args.epochs, rng)
    print(f"  mlp train accuracy {mlp_acc:.3f} ({time.perf_counter() - t0:.2f} s)")
    t0 = time.perf_counter()
    rnn, rnn_acc, data = train_rnn(args.epochs, rng)
    print(f"  rnn train accuracy {rnn_acc:.3f} ({time.perf_counter() - t0:.2f} s)")

    # Save and reload for inference (works in either mode: saving traces the code).
    d2s.jit.enable_to_static(True)
    mlp_path, rnn_path = os.path.join(out, "mlp"), os.path.join(out, "rnn")
    d2s.jit.save(mlp, mlp_path, input_spec=[InputSpec([None, 2], "float32")])
    d2s.jit.save(rnn, rnn_path, input_spec=[InputSpec([None, 4], "float32")])
    mlp2, rnn2 = d2s.jit.load(mlp_path), d2s.jit.load(rnn_path)
    same_mlp = np.allclose(mlp2(x[:50]).numpy(), mlp(d2s.to_tensor(x[:50])).numpy(), atol=1e-6)
    seq = data[0][0]
    same_rnn = np.allclose(rnn2(seq).numpy(), rnn(d2s.to_tensor(seq)).numpy(), atol=1e-6)
    print(f"saved to {out}; reloaded models agree with the trained ones: "
          f"mlp {same_mlp}, rnn {same_rnn}")
    return 0 if same_mlp and same_rnn else 1


if __name__ == "__main__":
    sys.exit(main())
