"""`d2s.vision.ops`: Paddle's `paddle.vision.ops` (detection and RoI ops).

This module only gathers the public API; each family lives in a private
module of `d2s.vision` (`_yolo`, `_detection`, `_deform`, `_proposals`,
`_matrix_nms`), so `dir()` of this module lists the API and nothing else,
as Paddle's does.
"""
from ._deform import DeformConv2D, deform_conv2d
from ._detection import (PSRoIPool, RoIAlign, RoIPool, box_coder, nms, prior_box, psroi_pool,
                         roi_align, roi_pool)
from ._matrix_nms import matrix_nms
from ._proposals import distribute_fpn_proposals, generate_proposals
from ._yolo import yolo_box, yolo_loss

__all__ = ["yolo_loss", "yolo_box", "deform_conv2d", "DeformConv2D", "distribute_fpn_proposals",
           "generate_proposals", "roi_pool", "RoIPool", "psroi_pool", "PSRoIPool", "roi_align",
           "RoIAlign", "nms", "matrix_nms", "box_coder", "prior_box"]
