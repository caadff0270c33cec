"""`InputSpec.from_numpy(array, name)`, beside `from_tensor`, as Paddle's
export scripts build specs from a sample batch."""
import numpy as np

import d2s
from d2s.static import InputSpec


def test_from_numpy_gives_the_arrays_shape_and_dtype_and_converts():
    sample = np.arange(6, dtype="int64").reshape(2, 3)
    spec = InputSpec.from_numpy(sample, name="ids")
    assert spec == InputSpec([2, 3], "int64", "ids")
    assert spec == InputSpec.from_tensor(d2s.to_tensor(sample), name="ids")
    static = d2s.jit.to_static(lambda ids: ids * 2, input_spec=[spec])
    np.testing.assert_array_equal(static(d2s.to_tensor(sample)).numpy(), sample * 2)
