"""Fact tables: a name -> fact mapping per kind of fact about ops, filled only by explicit registration.

The IR keeps one table of op definitions (``infopt.ir.ops.OPS``); each higher layer keeps its own table of
what it knows about those ops (codegen its lowerings, the widgets their view kinds). A name is registered
once: registering it again is an error unless the call says ``replace=True``, and a table that belongs to
ops refuses names the IR does not define, so a typo cannot create a fact for an op that does not exist.
"""
from __future__ import annotations

from typing import Callable, Generic, Iterable, TypeVar

from .errors import RegistrationError

V = TypeVar("V")


class FactTable(dict, Generic[V]):
    """``name -> fact`` for one kind of fact; ``register`` is the only way in (plain item assignment is refused).

    ``what`` names the fact in messages ("lowering", "view kind"); ``known`` (optional) says which names may be
    registered, with ``known_hint`` telling the caller what to do about an unknown one.
    """

    def __init__(self, what: str, known: Callable[[str], bool] | None = None, known_hint: str = "") -> None:
        super().__init__()
        self.what = what
        self._known = known
        self._known_hint = known_hint

    def register(self, name: str, fact: V, replace: bool = False) -> V:
        """Add ``fact`` under ``name``; a second registration of ``name`` raises unless ``replace=True``."""
        if not isinstance(name, str) or not name:
            raise RegistrationError(f"a {self.what} is registered under a non-empty op name, got {name!r}")
        if self._known is not None and not self._known(name):
            raise RegistrationError(f"cannot register a {self.what} for {name!r}: no such op. {self._known_hint}")
        if name in self and not replace:
            raise RegistrationError(
                f"{name!r} already has a {self.what} ({_describe(self[name])}); registering another one is an "
                f"error. Pass replace=True to override it on purpose."
            )
        super().__setitem__(name, fact)
        return fact

    def register_all(self, names: Iterable[str], fact: V, replace: bool = False) -> V:
        """Register the same fact under each of ``names``."""
        for n in names:
            self.register(n, fact, replace)
        return fact

    def unregister(self, name: str) -> V:
        """Remove and return the fact under ``name`` (a KeyError naming the table if there is none)."""
        if name not in self:
            raise KeyError(f"no {self.what} is registered for {name!r}")
        return super().pop(name)

    def __setitem__(self, name: str, fact: V) -> None:
        raise RegistrationError(f"use .register({name!r}, ...) to add a {self.what} (item assignment is refused so "
                                "that a second registration cannot silently replace the first)")


def _describe(fact: object) -> str:
    mod = getattr(fact, "__module__", None)
    qual = getattr(fact, "__qualname__", None)
    if mod and qual:
        return f"{mod}.{qual}"
    name = getattr(fact, "name", None)
    return f"{type(fact).__name__} {name}" if name else repr(fact)[:60]
