"""`x.stop_gradient = flag` as converted code runs it (see
transformers.stop_gradient): eager Tensors and other objects get the
attribute; a static Variable gets what the write means eagerly."""
from .dispatch import _is_static

__all__ = ["set_stop_gradient"]

# Set on a Program while it is traced: names of its inputs (data Variables)
# that the function marked `stop_gradient = False` (read by jit.static_function).
UNSTOPPED_INPUTS = "_d2s_unstopped_inputs"


def set_stop_gradient(value, flag, rebind):
    """The value the name is rebound to (`rebind`), after the write."""
    if not _is_static(value):
        value.stop_gradient = flag
        return value
    flag = bool(flag)
    if flag:
        if value.stop_gradient:
            return value
        if not rebind:
            from d2s.static import ControlFlowError
            raise ControlFlowError(
                "`.stop_gradient = True` on a tensor held by an attribute or item, in "
                "converted code: the program's gradients follow its ops, and only a name "
                "can be given the detached value; write `h = <expr>.detach()` (or "
                "assign the tensor to a local name and set its stop_gradient)")
        from d2s.core import ops
        out = ops.detach(value)
        out.weak = value.weak
        return out
    value.stop_gradient = False
    if getattr(value, "is_data", False):
        program = value.block.program
        marked = program.__dict__.setdefault(UNSTOPPED_INPUTS, set())
        marked.add(value.name)
    return value
