"""Print converted ASTs as Python source: astor first, `ast.unparse` as fallback.

astor gives the project's house style; it cannot print newer syntax (e.g.
`match`) and a few 3.11 nodes, so the printed text is checked by re-parsing
it and comparing trees, and `ast.unparse` is used whenever astor fails.
"""
import ast

import astor

__all__ = ["ast_to_source"]


def _same_tree(a, b):
    return ast.dump(a, include_attributes=False) == ast.dump(b, include_attributes=False)


def ast_to_source(tree):
    """Readable source for `tree` (a module, statement list or node)."""
    if isinstance(tree, list):
        tree = ast.Module(body=tree, type_ignores=[])
    ast.fix_missing_locations(tree)
    try:
        text = astor.to_source(tree)
        if _same_tree(ast.parse(text), tree if isinstance(tree, ast.Module)
                      else ast.Module(body=[tree], type_ignores=[])):
            return text
    except Exception:  # astor has no printer for this node kind
        pass
    return ast.unparse(tree) + "\n"
