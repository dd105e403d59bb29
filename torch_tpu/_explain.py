"""Recompile explanations (TORCH_TPU_EXPLAIN_RECOMPILES=1 or
``torch_tpu.debug.explain_recompiles(True)``): every compile that has a near
cached relative prints what differed, with the user's source line."""
import sys

from . import _C

_history = []  # every explanation of this process, for tools and tests


def _report(messages):
    from .modes import _user_line
    line = _user_line()
    for m in messages:
        text = f"{m}\n  at {line}"
        _history.append(text)
        print(text, file=sys.stderr)


def explain_recompiles(on: bool = True) -> None:
    _C._set_explain(on)


def explanations() -> list:
    """The explanations printed so far in this process."""
    return list(_history)
