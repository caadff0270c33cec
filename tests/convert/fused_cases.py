"""Functions exercising what the fused call/expression walk must keep apart:
calls in decorators, defaults and annotations (never wrapped), builtins
routed through the runtime inside wrapped calls, `x.shape`, `super()`,
`assert` with a message, `and`/`or`/`not`/chains/ternaries inside calls and
as callees, walrus operands, and `lst.append` in loops."""
import functools


def deco(f):
    return f


def nested_defs(x, xs):
    @functools.lru_cache(maxsize=len(xs))
    def g(a=len(xs), b: print = None) -> len:
        return max(a, len(x.shape)) if a and not b else print(a < b <= 3)
    out = []
    for v in xs:
        out.append(g(v) or (len if v else abs)(xs))
        out += [v.shape[0], isinstance(v, int) and v]
    assert x.sum() > 0 and len(xs), f"bad {len(xs)}"
    return (g and deco)(out), [k for k in range(len(xs)) if not k]


def walruses(x, y):
    if (a := x.sum()) > 0 and (b := y) is not None:
        x = x + a
    z = (c := len(x)) if x.shape[0] > 1 else y
    while (n := len(x)) and n < 3 or print(n):
        x = x + 1
    return x, z, c, b


class Base:
    def forward(self, x):
        return x


class Child(Base):
    def forward(self, x, k=len("ab")):
        h = super().forward(x) if x.sum() > k else super(Child, self).forward(-x)
        return lambda: print(h.shape, range(len(h)))
