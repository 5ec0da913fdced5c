"""The errors the IR raises: an ill-formed graph, an op the registry does not know, a fact registered twice."""
from __future__ import annotations


class GraphError(ValueError):
    """An ill-formed graph; the message names the node and the value at fault."""


class UnsupportedOpError(NotImplementedError):
    """An op the registry does not know; the message names the op (and node, where known) and what to do."""


class RegistrationError(ValueError):
    """A fact registered twice under one name (without ``replace=True``), or for an op the IR does not define."""
