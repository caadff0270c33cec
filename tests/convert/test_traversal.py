"""The fast walkers of `convert.traversal` behave as the standard library's,
constants included (the stdlib's deprecated `visit_Num` & co. still reached)."""
import ast
import warnings

from d2s.convert import traversal

SOURCE = "def f(x):\n    y = x + 1.5 - 'a'.count(b'b')\n    return (y, None, ..., True, 2j)\n"


def _walk_with(base):
    class Recorder(base):
        def __init__(self):
            self.seen = []

        def generic_visit(self, node):
            self.seen.append(type(node).__name__)
            return super().generic_visit(node)
    walker = Recorder()
    results = [walker.visit(node) for node in ast.walk(ast.parse(SOURCE))
               if isinstance(node, ast.Constant)]
    return walker.seen, results


def test_constants_visited_as_the_stdlib_visits_them():
    ours, theirs = _walk_with(traversal.NodeVisitor), _walk_with(ast.NodeVisitor)
    assert ours == theirs and ours[0] == ["Constant"] * 7


def test_a_deprecated_visitor_of_constants_is_still_called():
    def walk(base):
        class Numbers(base):
            def __init__(self):
                self.numbers = []

            def visit_Num(self, node):
                self.numbers.append(node.value)
        walker = Numbers()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            walker.visit(ast.parse(SOURCE))
        return walker.numbers
    assert walk(traversal.NodeVisitor) == walk(ast.NodeVisitor) == [1.5, 2j]


def test_transformer_keeps_constants_and_rewrites_as_the_stdlib():
    def rewrite(base):
        class Names(base):
            def visit_Name(self, node):
                return ast.copy_location(ast.Name(node.id.upper(), node.ctx), node)
        return ast.dump(Names().visit(ast.parse(SOURCE)))
    assert rewrite(traversal.NodeTransformer) == rewrite(ast.NodeTransformer)
