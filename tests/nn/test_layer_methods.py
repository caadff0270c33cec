"""Layer.apply / astype / to / clear_gradients / set_dict."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn


def test_apply_astype_to_clear_gradients_and_set_dict():
    d2s.seed(0)
    model = nn.Sequential(nn.Conv2D(1, 2, 3), nn.Flatten(), nn.Linear(8, 2))
    seen = []
    assert model.apply(lambda layer: seen.append(type(layer).__name__)) is model
    assert seen == ["Conv2D", "Flatten", "Linear", "Sequential"]
    model(d2s.randn([1, 1, 4, 4])).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.clear_gradients()
    assert all(p.grad is None for p in model.parameters())
    before = model.state_dict()["2.weight"].numpy().copy()
    assert model.to(dtype="float64") is model
    assert all(p.dtype == np.float64 for p in model.parameters())
    np.testing.assert_array_equal(model[2].weight.numpy(), before.astype(np.float64))
    assert model(d2s.randn([1, 1, 4, 4]).astype("float64")).dtype == np.float64
    with pytest.raises(ValueError, match="CPU"):
        model.to("gpu:0")
    other = nn.Sequential(nn.Conv2D(1, 2, 3), nn.Flatten(), nn.Linear(8, 2))
    other.astype("float64").set_dict(model.state_dict())
    np.testing.assert_allclose(other[2].weight.numpy(), before)
