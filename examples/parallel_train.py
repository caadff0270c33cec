"""Scaling out: one single-device model, trained on many devices or processes.

Auto-parallel on the xla backend: the training step, converted with
`to_static(backend="xla")`, is one program; the batch is split over the mesh
dim "dp" (and with --mp the layers are split Megatron-style over "mp");
XLA's partitioner inserts the collectives.

    python examples/parallel_train.py --mode xla --devices 8          # 8 simulated CPUs
    python examples/parallel_train.py --mode xla --devices 8 --mp 2   # dp 4 x mp 2
    python -m d2s.distributed.launch --nproc_per_node 2 --devices_per_proc 4 \\
        examples/parallel_train.py --mode xla                          # 2 processes x 4

Data-parallel on the numpy backend: every process trains a replica on its
share of the batch; `d2s.DataParallel` averages the gradients over MPI.

    mpiexec -n 2 python examples/parallel_train.py --mode numpy
    python -m d2s.distributed.launch --nproc_per_node 2 examples/parallel_train.py --mode numpy

Every run prints the loss of the whole batch per step (rank 0), with all
digits: the runs above print the losses of one process on one device.
"""
from __future__ import annotations

import argparse

import numpy as np

import d2s
import d2s.distributed as dist
import d2s.nn.functional as F
from d2s import optimizer


class MLP(d2s.nn.Layer):
    """2 -> 32 -> 3 with ReLU (the MLP of examples/train.py), in any float dtype."""

    def __init__(self, dtype="float32", hidden=32):
        super().__init__(dtype=dtype)
        self.w1 = self.create_parameter([2, hidden])
        self.b1 = self.create_parameter([hidden], is_bias=True)
        self.w2 = self.create_parameter([hidden, 3])
        self.b2 = self.create_parameter([3], is_bias=True)

    def forward(self, x):
        return F.linear(F.relu(F.linear(x, self.w1, self.b1)), self.w2, self.b2)


def blobs(n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 2.0], [2.0, -1.0], [-2.0, -1.0]])
    y = rng.integers(0, 3, size=n)
    return (centers[y] + 0.7 * rng.standard_normal((n, 2))).astype(dtype), y.astype(np.int64)


def make_optimizer(name, model):
    if name == "sgd":
        return optimizer.SGD(learning_rate=0.2, parameters=model.parameters())
    return optimizer.Adam(learning_rate=0.02, parameters=model.parameters())


# ---- auto-parallel on XLA ------------------------------------------------------------
def train_xla(args):
    if dist.get_world_size() > 1:
        dist.init_parallel_env(backend="xla")  # one mesh of every process's devices
    elif args.devices:
        import jax  # simulated CPU devices: set before JAX starts
        jax.config.update("jax_num_cpu_devices", args.devices)
    import jax
    n = jax.device_count()
    if n % args.mp:
        raise SystemExit(f"--mp {args.mp} does not divide the {n} devices")
    mesh = dist.ProcessMesh(np.arange(n).reshape(n // args.mp, args.mp), ["dp", "mp"])

    d2s.seed(0)
    model = MLP("float32")

    def megatron(name, layer, m):  # column- then row-parallel over "mp"
        if args.mp > 1:
            layer.w1 = dist.shard_tensor(layer.w1, m, [dist.Replicate(), dist.Shard(1)])
            layer.b1 = dist.shard_tensor(layer.b1, m, [dist.Replicate(), dist.Shard(0)])
            layer.w2 = dist.shard_tensor(layer.w2, m, [dist.Replicate(), dist.Shard(0)])
    dist.shard_layer(model, mesh, megatron)  # the rest replicated
    opt = make_optimizer(args.opt, model)

    @d2s.jit.to_static(backend="xla")  # the whole step: one XLA program, split by XLA
    def train_step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    x_np, y_np = blobs(args.batch, np.float32)
    x = dist.shard_tensor(x_np, mesh, [dist.Shard(0), dist.Replicate()])  # rows over "dp"
    y = dist.shard_tensor(y_np, mesh, [dist.Shard(0), dist.Replicate()])
    losses = [train_step(x, y).item() for _ in range(args.steps)]
    return losses, f"{dist.get_world_size()} process(es), {n} devices, mesh {mesh.shape} " \
                   f"{mesh.dim_names}"


# ---- data-parallel on numpy over MPI --------------------------------------------------
def train_numpy(args):
    world, rank = dist.init_parallel_env(backend="numpy"), dist.get_rank()
    if args.batch % world:
        raise SystemExit(f"--batch {args.batch} does not split over {world} processes")
    d2s.seed(0)  # every replica starts from the same weights
    model = d2s.DataParallel(MLP("float64"))
    opt = make_optimizer(args.opt, model)
    x_np, y_np = blobs(args.batch, np.float64)
    share = args.batch // world  # this process's rows of the batch
    x = d2s.to_tensor(x_np[rank * share:(rank + 1) * share])
    y = d2s.to_tensor(y_np[rank * share:(rank + 1) * share])
    losses = []
    for _ in range(args.steps):
        loss = F.cross_entropy(model(x), y)
        loss.backward()  # ends with the gradients averaged over the processes
        opt.step()
        opt.clear_grad()
        losses.append(dist.all_reduce(loss.detach(), "avg").item())  # the whole batch's
    return losses, f"{world} process(es), DataParallel over MPI"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=("xla", "numpy"), required=True,
                   help="xla: one program split over a device mesh (auto-parallel); numpy: "
                        "one replica per process, gradients averaged over MPI")
    p.add_argument("--steps", type=int, default=10, help="training steps (default 10)")
    p.add_argument("--batch", type=int, default=64,
                   help="the whole batch, split over the devices or processes (default 64)")
    p.add_argument("--opt", choices=("sgd", "adam"), default="sgd",
                   help="optimizer (default sgd)")
    p.add_argument("--devices", type=int, default=None,
                   help="xla, one process: simulated CPU devices")
    p.add_argument("--mp", type=int, default=1, help="xla: size of the tensor-parallel dim")
    args = p.parse_args(argv)
    losses, what = (train_xla if args.mode == "xla" else train_numpy)(args)
    if dist.get_rank() == 0:
        print(f"mode {args.mode}: {what}")
        for step, value in enumerate(losses):
            print(f"step {step} loss {value!r}")


if __name__ == "__main__":
    main()
