"""The DCGAN example script ported to Paddle names: generator of
`Conv2DTranspose` + `BatchNorm2D`, discriminator of strided convolutions,
`weights_init` applied with `Layer.apply` (Normal draws chosen by class
name, written with `set_value`), two Adam optimizers with `beta1=0.5`,
`BCELoss` against `paddle.full` labels, the discriminator step on
`fake.detach()` and the generator step on the same `fake`, and fixed-noise
samples under `no_grad` after `netG.eval()`. Run eagerly, with both
networks converted, and with the whole iteration converted; every loss,
D(x)/D(G(z)) statistic, sample and weight agrees on numpy and xla."""
import numpy as np
import pytest

import d2s as paddle
import d2s.nn as nn

from harness import BACKENDS, t

NZ, NGF, NDF, NC = 4, 4, 4, 1


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        m.weight.set_value(paddle.normal(0.0, 0.02, m.weight.shape))
    elif classname.find("BatchNorm") != -1:
        m.weight.set_value(paddle.normal(1.0, 0.02, m.weight.shape))
        m.bias.set_value(paddle.zeros(m.bias.shape))


class Generator(nn.Layer):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2DTranspose(NZ, NGF * 2, 4, 1, 0, bias_attr=False),
            nn.BatchNorm2D(NGF * 2), nn.ReLU(),
            nn.Conv2DTranspose(NGF * 2, NC, 4, 2, 1, bias_attr=False), nn.Tanh())

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Layer):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2D(NC, NDF, 4, 2, 1, bias_attr=False), nn.LeakyReLU(0.2),
            nn.Conv2D(NDF, NDF * 2, 4, 2, 1, bias_attr=False), nn.BatchNorm2D(NDF * 2),
            nn.LeakyReLU(0.2),
            nn.Conv2D(NDF * 2, 1, 2, 1, 0, bias_attr=False), nn.Sigmoid())

    def forward(self, input):
        return self.main(input).reshape([-1])


def script(backend, how):
    paddle.seed(0)
    netG, netD = Generator(), Discriminator()
    netG.apply(weights_init)
    netD.apply(weights_init)
    if how == "networks":
        netG = paddle.jit.to_static(netG, backend=backend)
        netD = paddle.jit.to_static(netD, backend=backend)
    criterion = nn.BCELoss()
    optD = paddle.optimizer.Adam(learning_rate=2e-3, beta1=0.5, beta2=0.999,
                                 parameters=netD.parameters())
    optG = paddle.optimizer.Adam(learning_rate=2e-3, beta1=0.5, beta2=0.999,
                                 parameters=netG.parameters())

    def iteration(real, noise):
        b = real.shape[0]
        netD.clear_gradients()
        output = netD(real)
        errD_real = criterion(output, paddle.full((b,), 1.0, dtype="float32"))
        errD_real.backward()
        D_x = output.mean()
        fake = netG(noise)
        output = netD(fake.detach())
        errD_fake = criterion(output, paddle.full((b,), 0.0, dtype="float32"))
        errD_fake.backward()
        D_G_z1 = output.mean()
        optD.step()
        netG.clear_gradients()
        output = netD(fake)
        errG = criterion(output, paddle.full((b,), 1.0, dtype="float32"))
        errG.backward()
        optG.step()
        return errD_real + errD_fake, errG, D_x, D_G_z1, output.mean()

    if how == "iteration":
        iteration = paddle.jit.to_static(iteration, backend=backend)
    rng = np.random.RandomState(3)
    fixed_noise = t(rng.randn(2, NZ, 1, 1))
    record = []
    for _ in range(3):
        stats = iteration(t(rng.rand(3, NC, 8, 8) * 2 - 1), t(rng.randn(3, NZ, 1, 1)))
        record += [s.numpy() for s in stats]
    netG.eval()
    with paddle.no_grad():
        record.append(netG(fixed_noise).detach().numpy())
    return record + [v.numpy() for m in (netG, netD) for v in m.state_dict().values()]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("how", ["networks", "iteration"])
def test_dcgan_script_matches_eager(backend, how):
    expected = script(backend, "eager")
    actual = script(backend, how)
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-6, err_msg=f"record {i}")
