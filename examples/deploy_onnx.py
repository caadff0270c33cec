"""Train with d2s, deploy with ONNX Runtime: the models of `train.py`, exported to ONNX.

    python examples/deploy_onnx.py                 # train, export to ./d2s_onnx, serve
    python examples/deploy_onnx.py --out /tmp/m    # write the .onnx files there

The MLP and the variable-length RNN (a `for` over `len(x)`: one `Loop` in
the ONNX model) are trained as in `train.py`, exported with
`d2s.onnx.export`, and then served by a separate process that imports only
`onnxruntime` and `numpy` (`--serve`). Both sides print their outputs on the
same inputs; they must agree.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np


def serve(folder):
    """The deployment side: ONNX Runtime and numpy only (no d2s, no onnx)."""
    import onnxruntime as ort

    inputs = np.load(os.path.join(folder, "inputs.npz"))
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    outputs = {}
    for name in ("mlp", "rnn"):
        session = ort.InferenceSession(os.path.join(folder, f"{name}.onnx"), options,
                                       providers=["CPUExecutionProvider"])
        feed_name = session.get_inputs()[0].name
        keys = sorted(k for k in inputs.files if k.startswith(name))
        outputs[name] = [session.run(None, {feed_name: inputs[k]})[0].tolist() for k in keys]
    leaked = sorted(m for m in ("d2s", "onnx") if m in sys.modules)
    assert not leaked, f"the deployment process imported {leaked}"
    print(json.dumps(outputs))


def _rounded(a):
    return np.round(a.astype(np.float64), 4).tolist()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=1,
                        help="training epochs before the export (default 1)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the data and the initial weights (default 0)")
    parser.add_argument("--out", default="d2s_onnx",
                        help="folder for the .onnx files and their test inputs, created if "
                             "missing (default ./d2s_onnx)")
    parser.add_argument("--serve", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return 0

    import d2s
    from train import train_mlp, train_rnn  # the models and loops of train.py

    d2s.seed(args.seed)
    rng = np.random.default_rng(args.seed)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    print(f"the .onnx files will be written to {out}")
    mlp, _, x = train_mlp(args.epochs, rng)
    rnn, _, data = train_rnn(args.epochs, rng)
    # input_spec comes from the decorators: [None, 2] and [None, 4] (any batch, any length)
    d2s.onnx.export(mlp, os.path.join(out, "mlp.onnx"))
    d2s.onnx.export(rnn, os.path.join(out, "rnn.onnx"))
    inputs = {"mlp_0": x[:3], "mlp_1": x[3:10]}
    inputs.update({f"rnn_{k}": data[k][0] for k in range(3)})  # lengths differ
    np.savez(os.path.join(out, "inputs.npz"), **inputs)

    served = subprocess.run([sys.executable, os.path.abspath(__file__), "--serve", out],
                            capture_output=True, text=True, check=True)
    onnx_outputs = json.loads(served.stdout)
    agree = {}
    for name, model in (("mlp", mlp), ("rnn", rnn)):
        keys = sorted(k for k in inputs if k.startswith(name))
        ours = [model(d2s.to_tensor(inputs[k])).numpy() for k in keys]
        theirs = [np.asarray(v, np.float32) for v in onnx_outputs[name]]
        for k, a, b in zip(keys, ours, theirs):
            print(f"{k} {list(inputs[k].shape)}:\n  d2s          {_rounded(a)}\n"
                  f"  onnxruntime  {_rounded(b)}")
        agree[name] = all(a.shape == b.shape and np.allclose(a, b, rtol=1e-5, atol=1e-6)
                          for a, b in zip(ours, theirs))
    print(f"exported to {out}; ONNX Runtime agrees with d2s: "
          f"mlp {agree['mlp']}, rnn {agree['rnn']}")
    return 0 if all(agree.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
