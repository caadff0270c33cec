"""What the per-converter tests share: a function's source converted by the
whole pipeline, as text (`convert_src`), and that text with its whitespace
flattened (`flat`) so an assertion can name a call across wrapped lines."""
import ast
import re
import textwrap

from d2s.convert.code_text import ast_to_source
from d2s.convert.origin import annotate_origins
from d2s.convert.pipeline import convert_tree


def convert_src(src):
    node = ast.parse(textwrap.dedent(src)).body[0]
    annotate_origins(node, "<test>", 0, textwrap.dedent(src).splitlines(), node.name)
    return ast_to_source(convert_tree(node, "<test>", node.name))


def flat(src):
    return re.sub(r"\(\s+", "(", re.sub(r"\s+", " ", src))
