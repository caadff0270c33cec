"""Target-neutral optimization passes over a `ProgramView` (the op lists a
backend compiles).

Each pass reads a view and returns a new one; the Program itself is never
changed, so the interpreter (the reference) and backward construction keep
seeing the original IR. (One exception, outside the pipeline:
`dce.prune_program` removes dead ops from a traced function's program once,
when its outputs are final.) Order (see `optimize`):

1. constant folding first, so the next passes see folded values;
2. algebraic simplification needs those constants (`x * 1` is `x`);
3. CSE after both: equal constants are now equal inputs;
4. DCE after them: they leave unused ops behind (skipped on a program
   `dce.prune_program` left as it is: see `dce.finds_nothing`).

What only one target can use stays with it: the numpy backend's in-place
fusion and buffer reuse (`d2s.backends.numpy.inplace`) runs after these,
in its own pipeline (`d2s.backends.numpy.passes`), since it needs final use
counts and numpy's `out=` buffers.
"""
from .view import ProgramView
from . import constant_folding, cse, dce, simplify

PIPELINE = [constant_folding, simplify, cse, dce]


def optimize(view):
    """`view` after every target-neutral pass."""
    # (before the passes: the test compares the view with the program's ops)
    skip = dce if dce.finds_nothing(view) else None
    for p in PIPELINE:
        if p is not skip:
            view = p.run(view)
    return view


__all__ = ["ProgramView", "optimize", "PIPELINE"]
