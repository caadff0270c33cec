"""Logging lines in converted code, as notebooks and training scripts write
them: `print(f"loss {loss.item():.4f}")`, `f"{loss:.4f}"`, `"%.4f" %
loss.item()`, `"{:.3f}".format(...)`, `print("loss", loss.item())`, a
dynamic batch size in the text, a line printed under a tensor `if`. Eager
code prints each call's values; the converted function must too, with
the same text (the text is formatted when the program runs, not once
with the traced values), on numpy and xla, and after jit.save -> load.
Eagerly a one-element Tensor takes a number's format spec, as in PyTorch
and PaddlePaddle."""
import numpy as np
import pytest

import d2s
from d2s.static import InputSpec

from harness import BACKENDS, t


def fstring_item(x):
    loss = (x ** 2).mean()
    print(f"step loss {loss.item():.4f} max={x.max().item():.2f}")
    return loss


def fstring_tensor(x):
    loss = (x ** 2).mean()
    print(f"loss {loss:.3f} | {loss!r}")
    return loss


def percent(x):
    loss = (x ** 2).mean()
    print("epoch %d loss %.4f (%s)" % (3, loss.item(), "train"))
    return loss


def str_format(x):
    loss = (x ** 2).mean()
    print("loss {:.3f} {}".format(loss.item(), "ok"), "step", 7)
    return loss


def plain_item(x):
    loss = (x ** 2).mean()
    print("loss", loss.item(), f"batch={x.shape[0]}")
    return loss


def under_tensor_if(x):
    loss = (x ** 2).mean()
    if loss > 3.0:
        print(f"large loss {loss.item():.2f} on {x.shape[0]} rows")
    return loss


CASES = {f.__name__: f for f in (fstring_item, fstring_tensor, percent, str_format,
                                  plain_item, under_tensor_if)}
INPUTS = [np.array([1.0, 2.0], "float32"), np.array([3.0, -2.0, 1.0, 2.0], "float32")]  # exact means


def printed(capsys, fn, x):
    fn(t(x))
    return capsys.readouterr().out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(CASES))
def test_printed_text_matches_eager_on_every_call(case, backend, capsys):
    fn = CASES[case]
    static = d2s.jit.to_static(fn, input_spec=[InputSpec([None])], backend=backend)
    static(t(INPUTS[0]))        # the first call traces: no line printed twice
    capsys.readouterr()
    for x in INPUTS:
        expected = printed(capsys, fn, x)
        assert printed(capsys, static, x) == expected
    assert case == "under_tensor_if" or expected   # something was printed


def test_loaded_program_prints_the_run_values(tmp_path, capsys):
    class Model(d2s.nn.Layer):
        def forward(self, x):
            loss = (x ** 2).mean()
            print(f"loss {loss.item():.4f} on {x.shape[0]} rows")
            return loss

    path = str(tmp_path / "m")
    d2s.jit.save(Model(), path, input_spec=[InputSpec([None])])
    capsys.readouterr()
    loaded = d2s.jit.load(path)
    for x in INPUTS:
        loaded(t(x))
        assert capsys.readouterr().out == f"loss {(x ** 2).mean():.4f} on {len(x)} rows\n"


def test_eager_tensor_takes_a_number_format_spec():
    x = d2s.to_tensor(2.5)
    assert f"{x:.3f}" == "2.500" and f"{d2s.to_tensor([7]):>4d}" == "   7"
    assert f"{x}" == str(x)
    with pytest.raises(TypeError, match="only a one-element Tensor"):
        f"{d2s.ones([2]):.2f}"


def message_built_while_tracing(x):
    loss = (x ** 2).mean()
    text = f"loss {loss.item():.4f}"      # a log line outside print: formatted now
    return loss, text


def test_a_number_formatted_outside_print_is_a_clear_error():
    static = d2s.jit.to_static(message_built_while_tracing)
    with pytest.raises(TypeError, match=r"format spec '\.4f'.*print\(f"):
        static(t(INPUTS[0]))
