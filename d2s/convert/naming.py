"""Fresh identifiers for generated code that never collide with the user's names.

Generated names start with a double underscore and a readable role
(`__true_fn_0`), and a counter; any identifier already present in the user's
function is reserved, so a user name can never be shadowed.
"""
import ast


class Namer:
    """Hands out unique names per converted function."""

    def __init__(self, reserved=()):
        self._used = set(reserved)
        self._counters = {}

    @classmethod
    def for_tree(cls, tree):
        """A namer reserving every identifier that appears in `tree`."""
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                names.update(node.names)
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[0])
        return cls(names)

    def new(self, role):
        """A fresh name such as `__true_fn_3`; `role` says what it is for."""
        base = "__" + role.strip("_")
        n = self._counters.get(base, 0)
        while f"{base}_{n}" in self._used:
            n += 1
        self._counters[base] = n + 1
        name = f"{base}_{n}"
        self._used.add(name)
        return name
