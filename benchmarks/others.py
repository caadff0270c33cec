"""Optional torch / jax columns: the same workloads, eager and compiled.

Used only when `torch` / `jax` import; every builder gets the workload's
numpy inputs (`Workload.np_args`) and returns {mode: zero-arg callable}.
Nothing here is needed for the d2s comparison; failures are reported per
workload and skipped.
"""
from __future__ import annotations

import importlib.util

import numpy as np


def available():
    return [name for name in ("torch", "jax") if importlib.util.find_spec(name) is not None]


# ---- torch ----------------------------------------------------------------------------------

def _torch_defs():
    import torch
    import torch.nn.functional as TF

    def mlp(x, w1, b1, w2, b2, w3, b3):
        h = torch.relu(x @ w1 + b1)
        h = torch.relu(h @ w2 + b2)
        return h @ w3 + b3

    def grow(x, limit: float):
        # a tensor counter, as in the d2s workload: the same 5 ops per trip
        steps = torch.zeros([], dtype=torch.int64)
        while bool(x.sum() < limit):
            x = x * 1.05 + 0.01
            steps = steps + 1
        return x, steps

    def rnn(x, n: int, wx, wh, b):
        h = torch.zeros([x.shape[1], wh.shape[0]])
        for t in range(n):
            h = torch.tanh(x[t] @ wx + h @ wh + b)
        return h

    def branchy(x):
        if bool(x.mean() > 0):
            x = x * 2.0
        else:
            x = -x
        if bool(x.max() > 3.0):
            y = torch.tanh(x) + x * 0.1
        else:
            y = x * 0.5 - 1.0
        return y

    def mlp_loss(x, label, w1, b1, w2, b2, w3, b3):
        return TF.cross_entropy(mlp(x, w1, b1, w2, b2, w3, b3), label)

    def add(x, y):
        return x + y

    return torch, {"mlp": mlp, "grow": grow, "rnn": rnn, "branchy": branchy,
                   "mlp_loss": mlp_loss, "add": add}


def torch_modes(key, np_args):
    torch, d = _torch_defs()
    torch.set_num_threads(1)

    def compiled(fn):
        try:
            return torch.jit.script(fn)
        except Exception:                      # noqa: BLE001 - fall back to torch.compile
            return torch.compile(fn)

    t = [torch.from_numpy(np.array(a)) if isinstance(a, np.ndarray) else a for a in np_args]
    fns = {"W1": "mlp", "W4": "mlp", "W2": "grow", "W3": "rnn", "W3b": "rnn",
           "W5": "branchy", "ADD": "add"}
    if key in fns:
        f = d[fns[key]]
        g = compiled(f)
        return {"torch": lambda: _nograd(torch, f, t), "torch.jit": lambda: _nograd(torch, g, t)}
    if key == "W6":
        _, x, label, lr = t
        loss_fn = d["mlp_loss"]
        loss_jit = compiled(loss_fn)

        def stepper(fn):
            # each mode trains its own copy of the weights (from the same start,
            # as numpy's step does), so the equality check compares like steps
            params = [torch.from_numpy(p.copy()).requires_grad_() for p in np_args[0]]

            def step():
                loss = fn(x, label, *params)
                loss.backward()
                with torch.no_grad():
                    for p in params:
                        p -= float(lr) * p.grad
                        p.grad = None
                return loss.detach()
            return step
        return {"torch": stepper(loss_fn), "torch.jit": stepper(loss_jit)}
    if key == "W7":
        return {"torch": _torch_cnn_step(torch, np_args)}
    return {}


def _torch_cnn_step(torch, np_args):
    """W7 in PyTorch eager (oneDNN convolutions), functional, the same weights."""
    import torch.nn.functional as tf
    params = [torch.from_numpy(p.copy()).requires_grad_() for p in np_args[0]]
    x, label = torch.from_numpy(np_args[1]), torch.from_numpy(np_args[2])
    lr = float(np_args[3])
    running = [(torch.zeros(c), torch.ones(c)) for c in (16, 32, 64)]

    def step():
        h = x
        for k in range(3):
            w, g, b = params[3 * k: 3 * k + 3]
            h = tf.conv2d(h, w, padding=1)
            h = tf.batch_norm(h, *running[k], g, b, training=True, momentum=0.1, eps=1e-5)
            h = tf.max_pool2d(torch.relu(h), 2)
        loss = tf.cross_entropy(h.flatten(1) @ params[9] + params[10], label)
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= lr * p.grad
                p.grad = None
        return loss.detach()
    return step


def _nograd(torch, fn, args):
    with torch.no_grad():
        return fn(*args)


# ---- jax ------------------------------------------------------------------------------------

def jax_modes(key, np_args):
    import jax
    import jax.numpy as jnp
    from jax import lax

    def mlp(x, w1, b1, w2, b2, w3, b3):
        h = jax.nn.relu(x @ w1 + b1)
        h = jax.nn.relu(h @ w2 + b2)
        return h @ w3 + b3

    def grow_py(x, limit):
        steps = 0
        while float(x.sum()) < limit:
            x = x * 1.05 + 0.01
            steps += 1
        return x, steps

    def grow_lax(x, limit):
        return lax.while_loop(lambda s: s[0].sum() < limit,
                              lambda s: (s[0] * 1.05 + 0.01, s[1] + 1), (x, 0))

    def rnn_py(x, n, wx, wh, b):
        h = jnp.zeros((x.shape[1], wh.shape[0]), x.dtype)
        for t in range(n):
            h = jnp.tanh(x[t] @ wx + h @ wh + b)
        return h

    def rnn_lax(x, n, wx, wh, b):
        h = jnp.zeros((x.shape[1], wh.shape[0]), x.dtype)
        return lax.fori_loop(0, n, lambda t, h: jnp.tanh(x[t] @ wx + h @ wh + b), h)

    def branchy_py(x):
        x = x * 2.0 if float(x.mean()) > 0 else -x
        return jnp.tanh(x) + x * 0.1 if float(x.max()) > 3.0 else x * 0.5 - 1.0

    def branchy_lax(x):
        x = lax.cond(x.mean() > 0, lambda x: x * 2.0, lambda x: -x, x)
        return lax.cond(x.max() > 3.0, lambda x: jnp.tanh(x) + x * 0.1,
                        lambda x: x * 0.5 - 1.0, x)

    def ce_loss(params, x, label):
        logits = mlp(x, *params)
        logp = jax.nn.log_softmax(logits)
        return -jnp.take_along_axis(logp, label[:, None], axis=1).mean()

    # What the compiled twin is fed: `jax.jit` gets device arrays (as a JAX user
    # keeps them), `jax.jit np` the input (the first argument) as the numpy
    # array a d2s user holds — each call copies it in, as to_static on xla
    # must — and the weights on the device, as d2s keeps parameters. The gap
    # between the two is the input transfer (see the README's backends section).
    a = [jnp.asarray(v) if isinstance(v, np.ndarray) else v for v in np_args]
    a_np = [np_args[0]] + a[1:]

    def ready(out):
        return jax.block_until_ready(out)

    def add(x, y):
        return x + y

    # key -> (op-by-op function, function to jit, static_argnums of the jitted one)
    pairs = {"W1": (mlp, mlp, ()), "W4": (mlp, mlp, ()), "W2": (grow_py, grow_lax, (1,)),
             "W3": (rnn_py, rnn_py, (1,)), "W3b": (rnn_py, rnn_lax, ()),
             "W5": (branchy_py, branchy_lax, ()), "ADD": (add, add, ())}
    if key in pairs:
        eager, lowered, static_args = pairs[key]
        jitted = jax.jit(lowered, static_argnums=static_args)
        return {"jax": lambda: ready(eager(*a)), "jax.jit": lambda: ready(jitted(*a)),
                "jax.jit np": lambda: ready(jitted(*a_np))}
    if key == "W6":
        # The hand-written training step: parameters stay on the device and are
        # donated to the step that replaces them; the batch is an argument.
        params, lr = [jnp.asarray(p) for p in np_args[0]], float(np_args[3])
        batches = {"jax": a[1:3], "jax.jit": a[1:3], "jax.jit np": np_args[1:3]}

        def step(params, x, label):
            loss, grads = jax.value_and_grad(ce_loss)(params, x, label)
            return loss, [p - lr * g for p, g in zip(params, grads)]
        step_jit = jax.jit(step, donate_argnums=(0,))
        state = {mode: [jnp.array(p) for p in params] for mode in batches}

        def run(mode, fn):
            loss, state[mode] = ready(fn(state[mode], *batches[mode]))
            return loss
        return {"jax": lambda: run("jax", step), "jax.jit": lambda: run("jax.jit", step_jit),
                "jax.jit np": lambda: run("jax.jit np", step_jit)}
    if key == "W7":
        return _jax_cnn_step(jax, jnp, np_args, ready)
    return {}


def _jax_cnn_step(jax, jnp, np_args, ready):
    """W7 as a hand-written `jax.jit` step (parameters on the device, donated)."""
    lr = float(np_args[3])
    x, label = jnp.asarray(np_args[1]), jnp.asarray(np_args[2])

    def loss_fn(params, x, label):
        h = x
        for k in range(3):
            w, g, b = params[3 * k: 3 * k + 3]
            h = jax.lax.conv_general_dilated(h, w, (1, 1), ((1, 1), (1, 1)),
                                             dimension_numbers=("NCHW", "OIHW", "NCHW"))
            mean = h.mean(axis=(0, 2, 3), keepdims=True)
            var = h.var(axis=(0, 2, 3), keepdims=True)
            h = (h - mean) / jnp.sqrt(var + 1e-5) * g[None, :, None, None] \
                + b[None, :, None, None]
            h = jax.lax.reduce_window(jnp.maximum(h, 0), -jnp.inf, jax.lax.max,
                                      (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        logits = h.reshape(h.shape[0], -1) @ params[9] + params[10]
        logp = jax.nn.log_softmax(logits)
        return -jnp.take_along_axis(logp, label[:, None], axis=1).mean()

    def step(params, x, label):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, label)
        return loss, [p - lr * g for p, g in zip(params, grads)]
    step_jit = jax.jit(step, donate_argnums=(0,))
    state = {mode: [jnp.array(p) for p in np_args[0]] for mode in ("jax.jit", "jax.jit np")}
    batches = {"jax.jit": (x, label), "jax.jit np": tuple(np_args[1:3])}

    def run(mode):
        loss, state[mode] = ready(step_jit(state[mode], *batches[mode]))
        return loss
    return {"jax.jit": lambda: run("jax.jit"), "jax.jit np": lambda: run("jax.jit np")}


def modes_for(key, np_args, libs):
    """{mode: callable} for every importable library; {mode: error string} on failure."""
    out, errors = {}, {}
    for lib in libs:
        try:
            out.update((torch_modes if lib == "torch" else jax_modes)(key, np_args))
        except Exception as e:                 # noqa: BLE001 - optional columns
            errors[lib] = f"{type(e).__name__}: {e}"
    return out, errors
