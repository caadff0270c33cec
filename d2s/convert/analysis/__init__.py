"""Static analyses over a function's AST; they only annotate nodes (see `annos`)."""
from . import annos
from .activity import memoized, reads_writes, scope_locals, free_reads, modified_names
from .liveness import annotate_liveness
from .closures import annotate_call_effects
from .definedness import annotate_definedness
from .targets import annotate_targets


def analyze_function(fn_node):
    """Run all analyses on one function scope (not its nested defs)."""
    annotate_call_effects(fn_node)  # read by activity analysis: first
    with memoized():  # the tree does not change while the rest annotate it
        annotate_liveness(fn_node)
        annotate_definedness(fn_node)
        annotate_targets(fn_node)  # reads MODIFIED, from liveness
