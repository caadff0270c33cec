"""The one dispatch rule of the runtime: is this value a static Variable?

Every helper asks `_is_static(value)` and either builds static control flow
(d2s.static) or runs plain Python.  The static module is looked up lazily so
the conversion side works (Python semantics only) without the core.
"""
import sys

_variable_class = None


def _static_variable_class():
    global _variable_class
    if _variable_class is None:
        module = sys.modules.get("d2s.static")
        if module is None:
            # Nobody imported d2s.static, so no value can be one of its Variables.
            return None
        try:
            from d2s.static import Variable
        except ImportError:
            return None
        _variable_class = Variable
    return _variable_class


def _is_static(value):
    """True when `value` is a static-graph Variable (False without the core)."""
    cls = _variable_class or _static_variable_class()
    return cls is not None and isinstance(value, cls)


def _any_static(values):
    cls = _variable_class or _static_variable_class()
    return cls is not None and any(isinstance(v, cls) for v in values)


def _static_nn():
    """d2s.static.nn (cond / while_loop), imported only on static paths."""
    from d2s.static import nn
    return nn
