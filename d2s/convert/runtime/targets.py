"""Reading and writing attribute/subscript targets carried as construct state.

Generated `get_state` / `set_state` functions read `acc[0]` or `self.h`
with `load_item` / `load_attr` and write them back with `store_item` /
`store_attr` (see convert/analysis/targets.py). A target that does not
exist yet reads as an UndefinedVar naming it, and writing an UndefinedVar
back makes it absent again, so each branch of a tensor `if` is traced from
the same starting state.
"""
from .undefined import UndefinedVar

__all__ = ["load_attr", "load_item", "store_attr", "store_item"]


def load_attr(obj, name, label):
    if type(obj) is UndefinedVar:
        return UndefinedVar(label)
    try:
        return getattr(obj, name)
    except AttributeError:
        return UndefinedVar(label)


def load_item(container, key, label):
    if type(container) is UndefinedVar:
        return UndefinedVar(label)
    try:
        return container[key]
    except (KeyError, IndexError):
        return UndefinedVar(label)


def store_attr(obj, name, value):
    if type(value) is not UndefinedVar:
        setattr(obj, name, value)
    elif type(obj) is not UndefinedVar and name in getattr(obj, "__dict__", ()):
        delattr(obj, name)


def store_item(container, key, value):
    if type(value) is not UndefinedVar:
        container[key] = value
    elif isinstance(container, dict) and key in container:
        del container[key]
