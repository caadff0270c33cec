"""`d2s.vision.models`: Paddle's classification networks. Parameter counts
equal the published ones (the architecture is Paddle's, layer for layer),
parameter names are Paddle's (so its state_dict loads), output shapes follow
the constructor arguments, LeNet and ResNet-18 converted with to_static give
the eager outputs on numpy and xla, a converted LeNet training step equals
the eager step, and `pretrained=True` raises instead of downloading."""
import importlib.util

import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
from d2s.vision import models

needs_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                               reason="the xla backend needs jax")
BACKENDS = ["numpy", pytest.param("xla", marks=needs_jax)]
TOL = {"numpy": dict(rtol=1e-6, atol=1e-7), "xla": dict(rtol=2e-5, atol=2e-5)}


def _count(model):
    return sum(int(np.prod(p.shape)) for p in model.parameters())


def _twins(build):
    """(eager model, model to convert) with identical parameters and buffers."""
    d2s.seed(0)
    a = build()
    b = build()
    b.set_state_dict(a.state_dict())
    return a, b


def _x(shape, seed=0):
    return d2s.to_tensor(np.random.default_rng(seed).normal(size=shape).astype("float32"))


# Published counts (torchvision's model table and Keras' MobileNet for V1,
# trainable parameters: BN running statistics are buffers, not parameters).
COUNTS = [
    (lambda: models.LeNet(), 61_610),
    (lambda: models.resnet18(), 11_689_512),
    (lambda: models.resnet50(), 25_557_032),
    (lambda: models.resnext50_32x4d(), 25_028_904),
    (lambda: models.vgg16(), 138_357_544),
    (lambda: models.vgg11(batch_norm=True), 132_868_840),
    (lambda: models.mobilenet_v1(), 4_231_976),
    (lambda: models.mobilenet_v2(), 3_504_872),
    (lambda: models.alexnet(), 61_100_840),
]


@pytest.mark.parametrize("build,count", COUNTS, ids=["lenet", "resnet18", "resnet50",
                                                    "resnext50_32x4d", "vgg16", "vgg11_bn",
                                                    "mobilenet_v1", "mobilenet_v2", "alexnet"])
def test_parameter_count_is_the_published_one(build, count):
    assert _count(build()) == count


def test_parameter_names_are_paddles():
    """Names a Paddle checkpoint uses (BN statistics as `_mean`/`_variance`)."""
    keys = set(models.resnet18().state_dict())
    assert {"conv1.weight", "bn1._mean", "bn1._variance", "layer1.0.conv1.weight",
            "layer2.0.downsample.0.weight", "layer2.0.downsample.1.weight",
            "fc.weight", "fc.bias"} <= keys
    assert tuple(models.resnet18().fc.weight.shape) == (512, 1000)   # Paddle's [in, out]
    keys = set(models.mobilenet_v2(scale=0.25).state_dict())
    assert {"features.0.0.weight", "features.0.1._mean", "features.1.conv.0.0.weight",
            "features.2.conv.0.0.weight", "features.18.0.weight",
            "classifier.1.weight"} <= keys
    keys = set(models.mobilenet_v1(scale=0.25).state_dict())
    assert {"conv1.0.weight", "conv2_1._depthwise_conv.0.weight",
            "conv5_5._pointwise_conv.1._variance", "conv6._pointwise_conv.0.weight",
            "fc.weight"} <= keys
    assert "conv1.0.bias" not in keys   # no conv bias before a norm
    keys = set(models.LeNet().state_dict())
    assert keys == {"features.0.weight", "features.0.bias", "features.3.weight",
                    "features.3.bias", "fc.0.weight", "fc.0.bias", "fc.1.weight", "fc.1.bias",
                    "fc.2.weight", "fc.2.bias"}


@pytest.mark.parametrize("build,shape,out", [
    (lambda: models.LeNet(num_classes=7), (2, 1, 28, 28), (2, 7)),
    (lambda: models.LeNet(num_classes=0), (1, 1, 28, 28), (1, 16, 5, 5)),
    (lambda: models.resnet18(num_classes=5), (1, 3, 32, 32), (1, 5)),
    (lambda: models.resnet18(num_classes=0, with_pool=False), (1, 3, 64, 64), (1, 512, 2, 2)),
    (lambda: models.mobilenet_v1(scale=0.25, num_classes=3), (1, 3, 32, 32), (1, 3)),
    (lambda: models.mobilenet_v2(scale=0.25, num_classes=0), (1, 3, 32, 32), (1, 1280, 1, 1)),
], ids=["lenet", "lenet_features", "resnet18", "resnet18_nopool", "mobilenet_v1",
        "mobilenet_v2"])
def test_output_shape(build, shape, out):
    model = build()
    model.eval()
    assert tuple(model(_x(shape)).shape) == out


def test_residual_blocks_add_their_input():
    """The shortcut is used where shapes allow (a block that dropped it would
    still give the right shapes): zeroing a block's last BN scale leaves the
    block ReLU(input)."""
    block = models.resnet18().layer1[0]
    block.eval()
    block.bn2.weight.set_value(np.zeros(64, "float32"))
    block.bn2.bias.set_value(np.zeros(64, "float32"))
    x = _x((1, 64, 4, 4))
    np.testing.assert_allclose(block(x).numpy(), np.maximum(x.numpy(), 0), atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("build,shape", [(lambda: models.LeNet(), (2, 1, 28, 28)),
                                         (lambda: models.resnet18(num_classes=10),
                                          (1, 3, 32, 32))], ids=["lenet", "resnet18"])
def test_to_static_forward_equals_eager(build, shape, backend):
    eager, model = _twins(build)
    eager.eval()
    model.eval()
    static = d2s.jit.to_static(model.forward, backend=backend)
    x = _x(shape, seed=1)
    np.testing.assert_allclose(static(x).numpy(), eager(x).numpy(), **TOL[backend])


@pytest.mark.parametrize("backend", BACKENDS)
def test_lenet_training_step_converted_equals_eager(backend):
    eager, model = _twins(lambda: models.LeNet())
    static = d2s.jit.to_static(model.forward, backend=backend)
    x = _x((4, 1, 28, 28), seed=2)
    y = d2s.to_tensor(np.array([0, 3, 9, 3], dtype="int64"))
    results = []
    for m, fwd in ((eager, eager), (model, static)):
        opt = d2s.optimizer.SGD(learning_rate=0.1, parameters=m.parameters())
        loss = F.cross_entropy(fwd(x), y)
        loss.backward()
        grads = {n: p.grad.numpy().copy() for n, p in m.named_parameters()}
        opt.step()
        opt.clear_grad()
        results.append((loss.numpy(), grads, {n: p.numpy() for n, p in m.named_parameters()}))
    (l0, g0, p0), (l1, g1, p1) = results
    np.testing.assert_allclose(l1, l0, **TOL[backend])
    assert set(g1) == set(g0) and len(g0) == 10
    for n in g0:
        assert np.abs(g0[n]).max() > 0, n
        np.testing.assert_allclose(g1[n], g0[n], err_msg=n, **TOL[backend])
        np.testing.assert_allclose(p1[n], p0[n], err_msg=n, **TOL[backend])
    assert not np.allclose(p0["fc.2.weight"], models.LeNet().fc[2].weight.numpy())


@pytest.mark.parametrize("name", ["resnet18", "wide_resnet50_2", "resnext50_32x4d", "vgg16",
                                  "mobilenet_v1", "mobilenet_v2", "alexnet"])
def test_pretrained_raises_and_names_set_state_dict(name):
    with pytest.raises(ValueError, match="set_state_dict") as err:
        getattr(models, name)(pretrained=True)
    assert "downloads nothing" in str(err.value)


def test_paddles_module_paths_port():
    """`from paddle.vision.models.resnet import BottleneckBlock`, as Paddle's
    own docstring builds a ResNeXt, ports by renaming the package."""
    from d2s.vision.models.resnet import BasicBlock, BottleneckBlock
    from d2s.vision.models.vgg import make_layers
    assert _count(models.ResNet(BottleneckBlock, 50, width=4, groups=32)) == 25_028_904
    assert _count(models.ResNet(BasicBlock, 34)) == 21_797_672
    small = models.VGG(make_layers([8, "M", 16, "M"], batch_norm=True), num_classes=0,
                       with_pool=False)
    small.eval()
    assert tuple(small(_x((1, 3, 8, 8))).shape) == (1, 16, 2, 2)


def test_bad_arguments_raise_clearly():
    with pytest.raises(ValueError, match="depth=20"):
        models.ResNet(models.resnet.BasicBlock, 20)
    with pytest.raises(ValueError, match="BottleneckBlock"):
        models.resnet18(groups=32)
