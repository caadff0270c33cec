"""`d2s.save` / `d2s.load`: nested state (dicts, lists and tuples of Tensors,
arrays, numbers, strings, None) in one pickle-free file, as Paddle's
`paddle.save(layer.state_dict(), "model.pdparams")` is used.

The file is a NumPy `.npz` archive (whatever `path` is named): the arrays as
entries, and the structure as one JSON text entry that names them. Loading
never unpickles (`allow_pickle=False`), so a file can hold no code.
"""
from __future__ import annotations

import json
import os

import numpy as np

from ..core.tensor import Tensor

__all__ = ["save", "load"]

_STRUCTURE = "__d2s_structure__"
_FORMAT = "d2s.save/1"


def _encode(obj, arrays, where):
    if isinstance(obj, Tensor):
        key = f"a{len(arrays)}"
        arrays[key] = np.asarray(obj.numpy())
        return {"tensor": key, "name": obj.name, "stop_gradient": bool(obj.stop_gradient)}
    if isinstance(obj, np.ndarray) or isinstance(obj, np.generic):
        if np.asarray(obj).dtype.kind == "O":
            raise TypeError(f"d2s.save: {where} is an object array, which needs pickle")
        key = f"a{len(arrays)}"
        arrays[key] = np.asarray(obj)
        return {"ndarray": key, "scalar": isinstance(obj, np.generic)}
    if obj is None or isinstance(obj, (bool, str)):
        return {"value": obj}
    if isinstance(obj, int):
        return {"int": str(obj)}  # any size
    if isinstance(obj, float):
        return {"float": repr(obj)}  # nan / inf survive
    if isinstance(obj, dict):
        items = []
        for k, v in obj.items():
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise TypeError(f"d2s.save: {where} has a key {k!r}; keys must be str or int")
            items.append([k, _encode(v, arrays, f"{where}[{k!r}]")])
        return {"dict": items}
    if isinstance(obj, (list, tuple)):
        return {"tuple" if isinstance(obj, tuple) else "list":
                [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(obj)]}
    raise TypeError(f"d2s.save: {where} is a {type(obj).__name__}; d2s.save stores Tensors, "
                    "arrays, numbers, strings, None and dicts / lists / tuples of them")


def save(obj, path, protocol=4, **configs):
    """Write `obj` to `path` (a file name, or an open binary file)."""
    arrays = {}
    doc = {"format": _FORMAT, "root": _encode(obj, arrays, "obj")}
    arrays[_STRUCTURE] = np.asarray(json.dumps(doc))
    if hasattr(path, "write"):
        np.savez(path, **arrays)
        return
    path = os.fspath(path)
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:  # np.savez would add ".npz" to a name without it
        np.savez(f, **arrays)
    os.replace(tmp, path)


def _decode(node, data, return_numpy):
    if "tensor" in node:
        arr = data[node["tensor"]]
        if return_numpy:
            return arr
        t = Tensor(arr, stop_gradient=node.get("stop_gradient", True))
        if node.get("name"):
            t.name = node["name"]
        return t
    if "ndarray" in node:
        arr = data[node["ndarray"]]
        return arr[()] if node.get("scalar") else arr
    if "value" in node:
        return node["value"]
    if "int" in node:
        return int(node["int"])
    if "float" in node:
        return float(node["float"])
    if "dict" in node:
        return {k: _decode(v, data, return_numpy) for k, v in node["dict"]}
    if "list" in node:
        return [_decode(v, data, return_numpy) for v in node["list"]]
    if "tuple" in node:
        return tuple(_decode(v, data, return_numpy) for v in node["tuple"])
    raise ValueError(f"d2s.load: unknown entry {sorted(node)} in the file's structure")


def load(path, return_numpy=False, **configs):
    """Read what `save` wrote: Tensors come back as Tensors (arrays with
    `return_numpy=True`), every other value as it was saved."""
    try:
        with np.load(path, allow_pickle=False) as f:
            data = {k: f[k] for k in f.files}
    except (OSError, ValueError) as e:
        raise ValueError(f"d2s.load: {os.fspath(path) if not hasattr(path, 'read') else path} "
                         f"is not a file d2s.save wrote ({e})") from None
    if _STRUCTURE not in data:
        raise ValueError(f"d2s.load: {path} holds no d2s.save structure (a jit.save model is "
                         "loaded with d2s.jit.load)")
    doc = json.loads(str(data.pop(_STRUCTURE)))
    if doc.get("format") != _FORMAT:
        raise ValueError(f"d2s.load: {path} has format {doc.get('format')!r}, expected "
                         f"{_FORMAT!r}")
    return _decode(doc["root"], data, return_numpy)
