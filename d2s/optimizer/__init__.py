"""`d2s.optimizer`: SGD, Momentum, Adam, AdamW, Adamax, RMSProp, Adagrad,
Adadelta, Lamb, NAdam, RAdam, Rprop, ASGD (eager `step()`, static
`minimize()`, and inside converted training steps), LBFGS (eager
`step(closure)`), `lr` schedulers and `regularizer`s."""
from . import lr, regularizer
from .optimizer import SGD, Adagrad, Adam, Adamax, AdamW, Momentum, Optimizer, RMSProp
from .adadelta_lamb import Adadelta, Lamb
from .adaptive import ASGD, NAdam, RAdam, Rprop
from .lbfgs import LBFGS

__all__ = ["Optimizer", "SGD", "Adam", "Adamax", "AdamW", "Momentum", "RMSProp", "Adagrad",
           "Adadelta", "Lamb", "NAdam", "RAdam", "Rprop", "ASGD", "LBFGS", "lr", "regularizer"]
