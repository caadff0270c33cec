"""The fast walkers of `convert.traversal` behave as the standard library's,
constants included (the stdlib's deprecated `visit_Num` & co. still reached)."""
import ast
import warnings

from d2s.convert import traversal

SOURCE = "def f(x):\n    y = x + 1.5 - 'a'.count(b'b')\n    return (y, None, ..., True, 2j)\n"


def _recorder(base):
    """A walker on `base` that records the type of every node generic_visit sees."""
    class Recorder(base):
        def __init__(self):
            self.seen = []

        def generic_visit(self, node):
            self.seen.append(type(node).__name__)
            return super().generic_visit(node)
    return Recorder()


def _walk_with(base):
    walker = _recorder(base)
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


def test_a_walker_with_its_own_generic_visit_still_sees_names_and_constants():
    # Plain walkers skip childless nodes; one that overrides generic_visit
    # is shown every node, as the standard library shows it.
    def seen(base):
        walker = _recorder(base)
        walker.visit(ast.parse(SOURCE))
        return walker.seen
    for ours, theirs in ((traversal.NodeVisitor, ast.NodeVisitor),
                         (traversal.NodeTransformer, ast.NodeTransformer)):
        kinds = seen(ours)
        assert kinds.count("Name") == 3 and kinds.count("Constant") == 7
        assert [k for k in seen(theirs) if k not in ("Load", "Store", "Add", "Sub")] == kinds
