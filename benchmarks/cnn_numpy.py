"""W7's hand-written numpy twin: one SGD training step of a small CNN
(Conv3x3-BN-ReLU-MaxPool2 three times, then a Linear head, softmax
cross-entropy), forward and backward written out as a numpy user would:
convolutions as im2col matrix products (strided views, no copies until the
product), batch norm in training mode (batch statistics; running statistics
updated as Paddle does), 2x2 max pooling by reshaping."""
from __future__ import annotations

import numpy as np

F32 = np.float32
EPS = F32(1e-5)
MOMENTUM = F32(0.9)


def _windows(xp):
    """The 3x3 windows of a padded (N, C, H+2, W+2) array as (N*H*W, C*9) rows."""
    n, c, hp, wp = xp.shape
    h, w = hp - 2, wp - 2
    s = xp.strides
    view = np.lib.stride_tricks.as_strided(xp, (n, h, w, c, 3, 3),
                                           (s[0], s[2], s[3], s[1], s[2], s[3]))
    return view.reshape(n * h * w, c * 9)


def conv3x3(x, wt):
    """Same-padded 3x3 convolution, stride 1, no bias: (out, its im2col rows)."""
    n, _, h, w = x.shape
    cols = _windows(np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))))
    out = cols @ wt.reshape(wt.shape[0], -1).T
    return out.reshape(n, h, w, -1).transpose(0, 3, 1, 2), cols


def conv3x3_backward(dout, cols, wt):
    """(d input, d weight) of `conv3x3`: the input's gradient is the same-padded
    convolution of `dout` with the flipped, transposed kernel."""
    o = wt.shape[0]
    d2 = dout.transpose(0, 2, 3, 1).reshape(-1, o)
    dw = (d2.T @ cols).reshape(wt.shape)
    flipped = wt[:, :, ::-1, ::-1].transpose(1, 0, 2, 3)
    dx, _ = conv3x3(np.ascontiguousarray(dout), np.ascontiguousarray(flipped))
    return dx, dw


def batchnorm_train(x, gamma, beta, running):
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    var = x.var(axis=(0, 2, 3), keepdims=True)
    inv = 1.0 / np.sqrt(var + EPS)
    xhat = (x - mean) * inv
    running[0] *= MOMENTUM
    running[0] += (1 - MOMENTUM) * mean.reshape(-1)
    running[1] *= MOMENTUM
    running[1] += (1 - MOMENTUM) * var.reshape(-1)
    return xhat * gamma[None, :, None, None] + beta[None, :, None, None], (xhat, inv)


def batchnorm_backward(dy, gamma, saved):
    xhat, inv = saved
    m = dy.shape[0] * dy.shape[2] * dy.shape[3]
    dgamma = (dy * xhat).sum(axis=(0, 2, 3))
    dbeta = dy.sum(axis=(0, 2, 3))
    dxhat = dy * gamma[None, :, None, None]
    dx = inv / m * (m * dxhat - dxhat.sum(axis=(0, 2, 3), keepdims=True)
                    - xhat * (dxhat * xhat).sum(axis=(0, 2, 3), keepdims=True))
    return dx, dgamma, dbeta


def maxpool2(x):
    n, c, h, w = x.shape
    blocks = x.reshape(n, c, h // 2, 2, w // 2, 2)
    out = blocks.max(axis=(3, 5))
    return out, (blocks == out[:, :, :, None, :, None])


def maxpool2_backward(dout, mask):
    """(Ties only occur at ReLU's zeros, whose gradient ReLU drops anyway.)"""
    n, c, h2, _, w2, _ = mask.shape
    return (mask * dout[:, :, :, None, :, None]).reshape(n, c, h2 * 2, w2 * 2)


def train_step(params, running, x, label, lr):
    """One SGD step: updates `params` ([conv, gamma, beta] * 3 + [w, b]) and
    the running statistics in place; returns the mean loss."""
    h, saved = x, []
    for k in range(3):
        wt, gamma, beta = params[3 * k: 3 * k + 3]
        c, cols = conv3x3(h, wt)
        b, bn = batchnorm_train(c, gamma, beta, running[k])
        r = np.maximum(b, 0)
        h, mask = maxpool2(r)
        saved.append((h.shape, cols, bn, b, mask))
    n = x.shape[0]
    flat = h.reshape(n, -1)
    w, bias = params[9], params[10]
    z = flat @ w + bias
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    s = e.sum(axis=1, keepdims=True)
    rows = np.arange(n)
    loss = np.log(s[:, 0]).mean() - z[rows, label].mean()
    dz = e / s
    dz[rows, label] -= 1
    dz *= F32(1.0 / n)
    grads = [None] * 11
    grads[9], grads[10] = flat.T @ dz, dz.sum(axis=0)
    dh = (dz @ w.T).reshape(h.shape)
    for k in reversed(range(3)):
        _, cols, bn, b, mask = saved[k]
        dr = maxpool2_backward(dh, mask)
        db = dr * (b > 0)
        dc, grads[3 * k + 1], grads[3 * k + 2] = batchnorm_backward(db, params[3 * k + 1], bn)
        dh, grads[3 * k] = conv3x3_backward(dc, cols, params[3 * k])
    for p, g in zip(params, grads):
        p -= lr * g.astype(F32, copy=False)
    return F32(loss)
