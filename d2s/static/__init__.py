"""Static programs: IR, building, control flow, backward, execution."""
from . import nn
from .backward import append_backward, gradients
from .control_flow import ControlFlowError
from .executor import Executor, Scope
from .framework import data, default_main_program, program_guard
from .input_spec import InputSpec
from .ir import Block, Operator, Program, Variable
