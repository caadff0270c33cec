"""`Layer`: the base of models. Sublayers and parameters register by attribute
assignment; parameters are eager Tensors (`stop_gradient=False`) with unique
names, captured by reference when a layer runs inside a static program."""
from __future__ import annotations

import itertools
import re
import threading
from collections import OrderedDict

import numpy as np

from ..core import effects, state
from ..core.dispatch import Symbolic
from ..core.dtypes import as_dtype
from ..core.tensor import Tensor
from . import initializer as init

__all__ = ["Layer", "Sequential", "LayerList", "LayerDict", "HookRemoveHelper", "unique_name"]

_name_lock = threading.Lock()
_name_counters = {}


def unique_name(prefix):
    """`prefix_0`, `prefix_1`, ...: process-wide unique layer names."""
    with _name_lock:
        counter = _name_counters.setdefault(prefix, itertools.count())
        return f"{prefix}_{next(counter)}"


def _snake(name):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


_hook_ids = itertools.count()


class HookRemoveHelper:
    """The handle a hook registration returns: `remove()` unregisters it."""

    def __init__(self, hooks, key):
        self._hooks, self._key = hooks, key

    def remove(self):
        if self._hooks.pop(self._key, None) is not None:
            _hooks_changed()


def _hooks_changed():
    """Programs traced with other hooks must not be reused (see core.state)."""
    state.forward_hooks_version[0] += 1
    state.layer_modes_version[0] += 1


class Layer:
    """Base class of layers: override `forward`; call the layer to run it.

    Assigning a Layer to an attribute registers it as a sublayer; assigning
    a Tensor with `stop_gradient=False` (e.g. from `create_parameter`)
    registers it as a parameter; `register_buffer` registers state that is
    no parameter (running statistics, counters). `training` (see `train()` /
    `eval()`) propagates to every sublayer.

    A registered parameter or buffer set in a converted `forward` (`self._mean
    = ...`) is updated in place after each run (jit.outliving): while the
    program is traced the attribute holds the traced value and stays
    registered.
    """

    def __init__(self, name_scope=None, dtype="float32"):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_sub_layers", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistable_buffer_names", set())
        self.training = True
        self._dtype = as_dtype(dtype)
        self._full_name = unique_name(name_scope or _snake(type(self).__name__))
        self._param_counts = {}

    @property
    def training(self):
        """Whether the layer trains (dropout on). Read while a function is
        traced by `to_static`, the flag is noted (core.effects.note_mode): a
        training step's program holds for the flags its trace read, and
        `train()` / `eval()` between calls picks another one."""
        flag = self.__dict__["_training"]
        if state._tls.builders:
            effects.note_mode(self, flag)
        return flag

    @training.setter
    def training(self, flag):
        self.__dict__["_training"] = flag
        state.layer_modes_version[0] += 1  # to_static functions read the flags again

    # ---- registration ----------------------------------------------------------
    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        if params is None:
            if isinstance(value, (Layer, Tensor)):
                raise RuntimeError(f"{type(self).__name__}: call super().__init__() before "
                                   f"assigning sublayer or parameter {name!r}")
            object.__setattr__(self, name, value)
            return
        subs = self._sub_layers
        if isinstance(value, Tensor) or isinstance(self.__dict__.get(name), Tensor):
            state.tensor_attributes_version[0] += 1  # captured by path (d2s.jit)
        else:
            state.plain_attributes_version[0] += 1  # read guards (jit.read_guards)
        buffers = self.__dict__.get("_buffers")
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, (Tensor, Symbolic)):
                raise TypeError(f"{type(self).__name__}.{name} is a buffer: assign a Tensor "
                                f"or None, not a {type(value).__name__}")
            buffers[name] = value
            object.__setattr__(self, name, value)
            return
        if isinstance(value, Symbolic) and name in params:
            # a traced value while to_static builds: still the parameter's slot
            params[name] = value
            object.__setattr__(self, name, value)
            return
        if isinstance(value, Layer):
            params.pop(name, None)
            subs[name] = value
        elif isinstance(value, Tensor) and (not value.stop_gradient or name in params
                                            or _made_by_param_attr(value)):
            subs.pop(name, None)
            params[name] = value
        elif value is None and (name in params or name in subs):
            (params if name in params else subs)[name] = None
        else:
            params.pop(name, None)
            subs.pop(name, None)
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if isinstance(self.__dict__.get(name), Tensor):
            state.tensor_attributes_version[0] += 1
        state.plain_attributes_version[0] += 1
        self._parameters.pop(name, None)
        self._sub_layers.pop(name, None)
        buffers = self.__dict__.get("_buffers")
        if buffers is not None and name in buffers:
            del buffers[name]
            self._non_persistable_buffer_names.discard(name)
        object.__delattr__(self, name)

    def add_sublayer(self, name, sublayer):
        if not isinstance(sublayer, Layer):
            raise TypeError(f"add_sublayer: {name!r} must be a Layer, got "
                            f"{type(sublayer).__name__}")
        setattr(self, name, sublayer)
        return sublayer

    def add_parameter(self, name, parameter):
        """Register `parameter` (any Tensor) under `name`."""
        if parameter is not None and not isinstance(parameter, Tensor):
            raise TypeError(f"add_parameter: {name!r} must be a Tensor, got "
                            f"{type(parameter).__name__}")
        self._sub_layers.pop(name, None)
        self._parameters[name] = parameter
        state.tensor_attributes_version[0] += 1
        object.__setattr__(self, name, parameter)
        return parameter

    def register_buffer(self, name, tensor, persistable=True):
        """Register `tensor` (a Tensor or None) as the buffer `name`: state of the
        layer that is no parameter (running statistics, counters). Persistable
        buffers are in `state_dict()` (and so saved and loaded); every buffer
        is in `named_buffers()`. Assigning the attribute later keeps it a buffer."""
        if not isinstance(name, str) or not name or "." in name:
            raise ValueError(f"register_buffer: the name must be a non-empty string without "
                             f"'.', got {name!r}")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: {name!r} must be a Tensor or None, got "
                            f"{type(tensor).__name__}")
        if "_buffers" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}: call super().__init__() before "
                               f"registering buffer {name!r}")
        if name in self._parameters or name in self._sub_layers or (
                name in self.__dict__ and name not in self._buffers):
            raise KeyError(f"register_buffer: {type(self).__name__} already has an "
                           f"attribute {name!r}")
        self._buffers[name] = tensor
        if persistable:
            self._non_persistable_buffer_names.discard(name)
        else:
            self._non_persistable_buffer_names.add(name)
        state.tensor_attributes_version[0] += 1
        object.__setattr__(self, name, tensor)
        return tensor

    def create_parameter(self, shape, dtype=None, initializer=None, is_bias=False, name=None,
                         default_initializer=None, attr=None):
        """A new trainable eager Tensor named `<layer>.w_<k>` (or `.b_<k>`).

        The default initializer is Xavier-uniform for weights and zeros for
        biases. `attr` (Paddle's `ParamAttr`, an initializer, a name, or False
        for "no parameter": None is returned) names the initializer, name and
        training attributes. The parameter is registered once it is assigned
        to an attribute.
        """
        from .param_attr import apply_param_attr, resolve_param_attr
        if initializer is None:  # set_global_initializer's come before the layer's defaults
            default_initializer = init.global_initializer(is_bias) or default_initializer
        if attr is not None:
            initializer, pattr = resolve_param_attr(attr, initializer or default_initializer)
            if initializer is None and pattr is None:
                return None
            param = self.create_parameter(shape, dtype, initializer, is_bias,
                                          name if pattr is None or pattr.name is None
                                          else pattr.name)
            return apply_param_attr(param, pattr)
        initializer = initializer or default_initializer
        if initializer is None:
            initializer = init.Constant(0.0) if is_bias else init.XavierUniform()
        dtype = as_dtype(dtype) if dtype is not None else self._dtype
        shape = [int(d) for d in shape]
        value = initializer(shape, dtype)
        if not isinstance(value, Tensor):
            value = Tensor(np.asarray(value, dtype=dtype))
        if tuple(value.shape) != tuple(shape) or value.dtype != dtype:
            raise ValueError(f"create_parameter: initializer returned {value.dtype.name}"
                             f"{list(value.shape)}, expected {dtype.name}{shape}")
        if name is None:
            kind = "b" if is_bias else "w"
            k = self._param_counts.get(kind, 0)
            self._param_counts[kind] = k + 1
            name = f"{self._full_name}.{kind}_{k}"
        param = Tensor._from_array(value._value, stop_gradient=False)
        param.name = name
        effects.note_new_tensor(param)  # a parameter made inside a traced step is an error
        return param

    def full_name(self):
        return self._full_name

    # ---- running -----------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *inputs, **kwargs):
        return self._call_forward(self.forward, inputs, kwargs)

    def _call_forward(self, forward, inputs, kwargs, wrap=None):
        """`forward(*inputs, **kwargs)` between the forward hooks, PaddlePaddle's
        way: each pre-hook(layer, inputs) may return new inputs (a non-tuple
        is the one input); each post-hook(layer, inputs, outputs) may return
        new outputs. Converted code calls a layer through this with its
        converted forward, and `wrap` converts each hook (see
        convert.runtime.call): hooks run inside the program too."""
        pre = self.__dict__.get("_forward_pre_hooks")
        post = self.__dict__.get("_forward_post_hooks")
        if not pre and not post:
            return forward(*inputs, **kwargs)
        for hook in list(pre.values()) if pre else ():
            new = (wrap(hook) if wrap else hook)(self, inputs)
            if new is not None:
                inputs = new if isinstance(new, tuple) else (new,)
        outputs = forward(*inputs, **kwargs)
        for hook in list(post.values()) if post else ():
            new = (wrap(hook) if wrap else hook)(self, inputs, outputs)
            if new is not None:
                outputs = new
        return outputs

    def register_forward_pre_hook(self, hook):
        """`hook(layer, inputs)` runs before each forward; a value it returns
        replaces the inputs. Returns a handle whose `remove()` unregisters it."""
        return self._add_hook("_forward_pre_hooks", hook)

    def register_forward_post_hook(self, hook):
        """`hook(layer, inputs, outputs)` runs after each forward; a value it
        returns replaces the outputs. Returns a handle with `remove()`."""
        return self._add_hook("_forward_post_hooks", hook)

    def _add_hook(self, kind, hook):
        if not callable(hook):
            raise TypeError(f"{kind[1:-1].replace('_', ' ')}: expected a callable, got "
                            f"{type(hook).__name__}")
        hooks = self.__dict__.get(kind)
        if hooks is None:
            hooks = OrderedDict()
            object.__setattr__(self, kind, hooks)
        key = next(_hook_ids)
        hooks[key] = hook
        _hooks_changed()
        return HookRemoveHelper(hooks, key)

    def train(self):
        for layer in self.sublayers(include_self=True):
            layer.training = True
        return self

    def eval(self):
        for layer in self.sublayers(include_self=True):
            layer.training = False
        return self

    # ---- traversal -------------------------------------------------------------
    def named_sublayers(self, prefix="", include_self=False):
        """(dotted name, layer) for every sublayer, depth first, each layer once."""
        seen = set()

        def walk(layer, pre):
            for name, sub in layer._sub_layers.items():
                if sub is None or id(sub) in seen:
                    continue
                seen.add(id(sub))
                full = f"{pre}.{name}" if pre else name
                yield full, sub
                yield from walk(sub, full)

        if include_self:
            seen.add(id(self))
            yield prefix, self
        yield from walk(self, prefix)

    def sublayers(self, include_self=False):
        return [layer for _, layer in self.named_sublayers(include_self=include_self)]

    def named_children(self):
        return [(n, l) for n, l in self._sub_layers.items() if l is not None]

    def children(self):
        return [l for _, l in self.named_children()]

    def named_parameters(self, prefix="", include_sublayers=True):
        """(dotted name, parameter): own parameters first, then each sublayer's,
        in assignment order; a parameter shared by several layers appears once."""
        seen = set()
        layers = (self.named_sublayers(prefix, include_self=True) if include_sublayers
                  else [(prefix, self)])
        for pre, layer in layers:
            for name, p in layer._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield (f"{pre}.{name}" if pre else name), p

    def parameters(self, include_sublayers=True):
        return [p for _, p in self.named_parameters(include_sublayers=include_sublayers)]

    def named_buffers(self, prefix="", include_sublayers=True):
        """(dotted name, buffer) for every buffer (persistable or not), own first,
        then each sublayer's; a buffer shared by several layers appears once."""
        for name, b, _ in self._named_buffers(prefix, include_sublayers):
            yield name, b

    def _named_buffers(self, prefix="", include_sublayers=True):
        seen = set()
        layers = (self.named_sublayers(prefix, include_self=True) if include_sublayers
                  else [(prefix, self)])
        for pre, layer in layers:
            held = layer.__dict__.get("_buffers") or {}
            for name, b in held.items():
                if b is None or id(b) in seen:
                    continue
                seen.add(id(b))
                yield ((f"{pre}.{name}" if pre else name), b,
                       name not in layer._non_persistable_buffer_names)

    def buffers(self, include_sublayers=True):
        return [b for _, b in self.named_buffers(include_sublayers=include_sublayers)]

    # ---- state ------------------------------------------------------------------
    def state_dict(self):
        """Ordered {dotted name: Tensor}: the parameters, then the persistable buffers."""
        out = OrderedDict(self.named_parameters())
        for name, b, persistable in self._named_buffers():
            if persistable:
                out[name] = b
        return out

    def set_state_dict(self, state_dict, strict=True):
        """Load values (arrays, Tensors or nested lists) into the parameters.

        Every value is checked before any is assigned, so a bad dict changes
        nothing. With `strict`, missing or unexpected keys raise `KeyError`;
        otherwise they are returned as `(missing_keys, unexpected_keys)`.
        Parameters are rebound to copies of the values (programs that
        captured them see the new values on their next run).
        """
        own = self.state_dict()
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            parts = []
            if missing:
                parts.append(f"missing keys {missing}")
            if unexpected:
                parts.append(f"unexpected keys {unexpected}")
            raise KeyError(f"set_state_dict on {type(self).__name__}: " + "; ".join(parts))
        new = {}
        for key, param in own.items():
            if key in state_dict:
                new[key] = _checked_value(key, state_dict[key], param)
        for key, value in new.items():
            own[key]._value = value
        return missing, unexpected

    load_dict = set_state_dict
    set_dict = set_state_dict

    def astype(self, dtype=None):
        """Cast every floating-point parameter (and the layer's default dtype for
        parameters made later) to `dtype`; returns the layer."""
        if dtype is None:
            return self
        dtype = as_dtype(dtype)
        for layer in self.sublayers(include_self=True):
            layer._dtype = dtype
            for p in layer._parameters.values():
                if p is not None and p._value.dtype.kind == "f" and p._value.dtype != dtype:
                    p._value = p._value.astype(dtype)
                    p.clear_grad()
        state.tensor_attributes_version[0] += 1
        return self

    def to(self, device=None, dtype=None, blocking=None):
        """Paddle's `to`: `dtype` casts as `astype`; d2s runs on the CPU, so a
        device other than "cpu" is an error."""
        if device is not None and str(device).split(":")[0].lower() not in ("cpu", "place(cpu)",
                                                                            "cpuplace"):
            raise ValueError(f"Layer.to: d2s runs on the CPU, got device {device!r}")
        return self.astype(dtype)

    def apply(self, fn):
        """Call `fn(layer)` on every sublayer, then on this layer; returns the layer."""
        for layer in self.children():
            layer.apply(fn)
        fn(self)
        return self

    def clear_gradients(self, set_to_zero=True):
        """Drop every parameter's gradient (the next backward starts afresh; d2s
        leaves `.grad` None either way, which accumulates as zeros would)."""
        params = self.parameters()
        ov = effects.overlay()
        if ov is not None:  # inside a traced step: part of its program
            ov.activate("layer.clear_gradients()")
            ov.track_all(params)
        for p in params:
            p.clear_grad()

    # ---- printing ----------------------------------------------------------------
    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = [f"({name}): " + repr(sub).replace("\n", "\n  ")
                 for name, sub in self.named_children()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not lines:
            return head + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"


def _made_by_param_attr(value):
    from .param_attr import param_attr_of
    return param_attr_of(value) is not None


def _checked_value(key, value, param):
    if isinstance(value, Tensor):
        arr = value._value
    elif isinstance(value, np.ndarray):
        arr = value
    else:
        try:
            arr = np.asarray(value, dtype=param.dtype)
        except (TypeError, ValueError) as e:
            raise ValueError(f"set_state_dict: value for {key!r} cannot be converted to "
                             f"{param.dtype.name}: {e}") from None
    if arr.dtype != param.dtype:
        raise ValueError(f"set_state_dict: {key!r} has dtype {arr.dtype.name}, the parameter "
                         f"is {param.dtype.name}")
    if arr.shape != param.shape:
        raise ValueError(f"set_state_dict: {key!r} has shape {list(arr.shape)}, the parameter "
                         f"has shape {list(param.shape)}")
    return np.array(arr, copy=True)


class Sequential(Layer):
    """Runs its sublayers in order. `Sequential(l1, l2)` names them "0", "1";
    `Sequential(("fc", l1), ("act", l2))` uses the given names."""

    def __init__(self, *layers):
        super().__init__()
        for i, item in enumerate(layers):
            if isinstance(item, (list, tuple)):
                name, layer = item
            else:
                name, layer = str(i), item
            self.add_sublayer(name, layer)

    def __getitem__(self, index):
        items = list(self._sub_layers.values())
        if isinstance(index, slice):
            return Sequential(*items[index])
        return items[index]

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())

    def forward(self, x):
        for layer in self._sub_layers.values():
            x = layer(x)
        return x

    # Converted like user code when called from converted code: each sublayer
    # call then runs the sublayer's converted forward (a tensor `if` in it works).
    forward._d2s_convert_as_user_code = True


class LayerList(Layer):
    """A list of sublayers, registered as "0", "1", ..."""

    def __init__(self, sublayers=None):
        super().__init__()
        for layer in sublayers or ():
            self.append(layer)

    def _items(self):
        return list(self._sub_layers.values())

    def _renumber(self, items):
        for name in list(self._sub_layers):
            self.__delattr__(name)
        for i, layer in enumerate(items):
            self.add_sublayer(str(i), layer)

    def append(self, layer):
        self.add_sublayer(str(len(self)), layer)
        return self

    def extend(self, layers):
        for layer in layers:
            self.append(layer)
        return self

    def insert(self, index, layer):
        items = self._items()
        items.insert(index, layer)
        self._renumber(items)

    def __getitem__(self, index):
        items = self._items()
        if isinstance(index, slice):
            return LayerList(items[index])
        return items[index]

    def __setitem__(self, index, layer):
        items = self._items()
        items[index] = layer
        self._renumber(items)

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._items())

    def forward(self, *args, **kwargs):
        raise NotImplementedError("LayerList has no forward(); iterate over its layers")


class LayerDict(Layer):
    """An ordered dict of sublayers (PaddlePaddle's `LayerDict`): keys are the
    sublayers' names; `update` takes a dict, a LayerDict or (key, layer) pairs."""

    def __init__(self, sublayers=None):
        super().__init__()
        if sublayers is not None:
            self.update(sublayers)

    def __getitem__(self, key):
        return self._sub_layers[key]

    def __setitem__(self, key, layer):
        self.add_sublayer(key, layer)

    def __delitem__(self, key):
        self.__delattr__(key)

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(list(self._sub_layers))

    def __contains__(self, key):
        return key in self._sub_layers

    def clear(self):
        for key in list(self._sub_layers):
            self.__delattr__(key)

    def pop(self, key):
        layer = self._sub_layers[key]
        self.__delattr__(key)
        return layer

    def keys(self):
        return list(self._sub_layers.keys())

    def items(self):
        return list(self._sub_layers.items())

    def values(self):
        return list(self._sub_layers.values())

    def update(self, sublayers):
        items = sublayers.items() if isinstance(sublayers, (dict, LayerDict)) else sublayers
        for pair in items:
            if not (isinstance(pair, (list, tuple)) and len(pair) == 2):
                raise TypeError("LayerDict.update: expected a dict, a LayerDict or "
                                f"(key, layer) pairs, got an item {pair!r}")
            self.add_sublayer(pair[0], pair[1])

    def forward(self, *args, **kwargs):
        raise NotImplementedError("LayerDict has no forward(); call its layers by key")
