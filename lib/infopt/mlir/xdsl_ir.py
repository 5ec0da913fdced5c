"""xDSL, the Python MLIR framework, as the course uses it: one context with every upstream dialect it knows (plus
ours: npu, toy), parsing MLIR text into xDSL operations and printing them back.

xdsl is imported here, inside functions, so `import infopt.mlir` stays light.
"""
from __future__ import annotations

import functools
from typing import Any, Iterable


def require_xdsl() -> Any:
    """The xdsl package, or ImportError naming what to install."""
    try:
        import xdsl
    except ImportError as err:  # pragma: no cover - xdsl is pinned in pyproject.toml
        raise ImportError("xDSL is not installed: `pip install xdsl==0.75.0` (or `make setup`)") from err
    return xdsl


@functools.lru_cache(maxsize=1)
def _base_context() -> Any:
    require_xdsl()
    from xdsl.context import Context
    from xdsl.dialects import get_all_dialects

    ctx = Context(allow_unregistered=False)
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


def context(dialects: Iterable[Any] = ()) -> Any:
    """An xDSL Context with all of xDSL's dialects registered and `dialects` (xdsl Dialect objects) loaded."""
    ctx = _base_context().clone()
    for dialect in dialects:
        ctx.load_dialect(dialect)
    return ctx


def parse_module(text: str, dialects: Iterable[Any] = (), verify: bool = True) -> Any:
    """MLIR text parsed into an xDSL ModuleOp (and verified); xDSL's ParseError / VerifyException on bad input."""
    from xdsl.parser import Parser

    module = Parser(context(dialects), text).parse_module()
    if verify:
        module.verify()
    return module


def print_ir(op: Any, generic: bool = False) -> str:
    """An xDSL operation as MLIR text (custom syntax, or the generic form MLIR itself always parses)."""
    from io import StringIO

    from xdsl.printer import Printer

    buf = StringIO()
    Printer(stream=buf, print_generic_format=generic).print_op(op)
    return buf.getvalue() + "\n"
