"""Annotation keys written by the analyses and read by the converters.

Annotations are plain attributes on AST nodes; the keys below are the whole
vocabulary.  Analyses run on the canonicalized tree just before control flow
is converted, so converters can rely on them for every If/While/For.
"""

LIVE_OUT = "_d2s_live_out"
"""frozenset: names whose current value may be read after this statement."""

LIVE_IN = "_d2s_live_in"
"""frozenset: names whose value on entry to this statement may be read."""

LIVE_HEAD = "_d2s_live_head"
"""frozenset (While/For only): names live at the loop head, i.e. read by the
test/iteration or by the body before being written, or live after the loop."""

HANDLER_LOCAL = "_d2s_handler_local"
"""True (ExceptHandler, set by try_statements): its `as` name is a generated
one used inside the handler only; Python unbinds it when the handler ends,
so it is not a name the enclosing construct assigns (never read back as
state)."""

MODIFIED = "_d2s_modified"
"""frozenset (If/While/For): local names the construct may assign."""

CALL_EFFECTS = "_d2s_call_effects"
"""(reads, writes) (a Name loading a nested function, in its enclosing
function's scope): the enclosing locals a call of it may read and write
(`nonlocal`); activity analysis counts them at the reference."""

TARGETS = "_d2s_targets"
"""(carried, uncarried) (If/While/For): attribute/subscript targets the
construct writes, each a list of (label, target node); see analysis.targets."""

DEFINED_IN = "_d2s_defined_in"
"""frozenset: local names certainly bound when the statement starts."""

SCOPE_LOCALS = "_d2s_scope_locals"
"""frozenset (FunctionDef): names local to the function (params included)."""

SCOPE_GLOBALS = "_d2s_scope_globals"
"""frozenset (FunctionDef): names the function declares `global`."""

MAYBE_UNDEFINED = "_d2s_maybe_undefined"
"""frozenset (FunctionDef): locals that some converted construct needs bound
before it although they may be unbound there (initialized to UndefinedVar)."""

BREAK_FLAG = "_d2s_break_flag"
"""str (For/While): name of the flag that ends the loop early; the loop test
implicitly reads it (for `for`, the converter adds the check)."""

RETURN_SLOTS = "_d2s_return_slots"
"""(flag name, value name, label) (FunctionDef whose nested returns were
canonicalized): the names holding "has returned" and the returned value, and
how messages call that value; the runtime gets them as `_jst.ReturnSlots`."""

GENERATED = "_d2s_generated"
"""True on FunctionDefs the converters generated (branch/body functions)."""
