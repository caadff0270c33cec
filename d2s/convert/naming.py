"""Fresh identifiers for generated code that never collide with the user's names.

Generated names start with a double underscore and a readable role
(`__true_fn_0`), and a counter; any identifier already present in the user's
function is reserved, so a user name can never be shadowed.

Roles given as `reused` get one name each, handed out again and again: for
the closures a construct defines and calls at once (branch, body and state
functions), a second construct in the same scope may rebind the name.  That
keeps the number of names bound in one scope small, and Python's compiler
spends time quadratic in it (each nested function copies its enclosing
scope's names): for a 2,500-line function, compiling took 4x longer with a
fresh name per closure.
"""
import ast

from .traversal import walk


# Node kinds other than names that bring an identifier of their own.
_NAMING = frozenset((ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.arg, ast.Global,
                     ast.Nonlocal, ast.alias))


class Namer:
    """Hands out unique names per converted function."""

    def __init__(self, reserved=(), reused=()):
        self._used = set(reserved)
        self._counters = {}
        self._reused = dict.fromkeys(reused)   # role -> its one name, once handed out

    @classmethod
    def for_tree(cls, tree, reused=(), nodes=None):
        """A namer reserving every identifier that appears in `tree`
        (`nodes`: `walk(tree)`, when the caller has it)."""
        names = set()
        for node in walk(tree) if nodes is None else nodes:
            kind = node.__class__
            if kind is ast.Name:
                names.add(node.id)
            elif kind not in _NAMING:
                continue
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                names.update(node.names)
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[0])
        return cls(names, reused)

    def new(self, role):
        """A fresh name such as `__true_fn_3` (the same one each time for a
        reused role); `role` says what it is for."""
        if role in self._reused:
            if self._reused[role] is None:
                self._reused[role] = self._fresh(role)
            return self._reused[role]
        return self._fresh(role)

    def _fresh(self, role):
        base = "__" + role.strip("_")
        n = self._counters.get(base, 0)
        while f"{base}_{n}" in self._used:
            n += 1
        self._counters[base] = n + 1
        name = f"{base}_{n}"
        self._used.add(name)
        return name
