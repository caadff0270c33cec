"""The API namespaces d2s.vision, d2s.vision.ops, d2s.linalg and d2s.fft list
their API and nothing else (as Paddle's modules do): `dir()` shows no
helper imports (numpy, core ops used inside), `__all__` names exactly the
public names, and each of them resolves."""
import inspect

import pytest

import d2s
import d2s.fft
import d2s.linalg
import d2s.vision
import d2s.vision.ops

# paddle.vision.ops.__all__ less its file / JPEG readers (no image IO in d2s)
PADDLE_VISION_OPS = {"yolo_loss", "yolo_box", "prior_box", "box_coder", "deform_conv2d",
                     "DeformConv2D", "distribute_fpn_proposals", "generate_proposals",
                     "roi_pool", "RoIPool", "psroi_pool", "PSRoIPool", "roi_align", "RoIAlign",
                     "nms", "matrix_nms"}


@pytest.mark.parametrize("mod", [d2s.vision, d2s.vision.ops, d2s.linalg, d2s.fft],
                         ids=lambda m: m.__name__)
def test_dir_lists_the_api_only(mod):
    public = {n for n in dir(mod) if not n.startswith("_")}
    assert public == set(mod.__all__), (
        f"{mod.__name__}: not in __all__: {sorted(public - set(mod.__all__))}; "
        f"missing: {sorted(set(mod.__all__) - public)}")
    for name in mod.__all__:
        obj = getattr(mod, name)
        assert inspect.ismodule(obj) or callable(obj), f"{mod.__name__}.{name}"


def test_vision_ops_has_paddles_names():
    assert set(d2s.vision.ops.__all__) == PADDLE_VISION_OPS
