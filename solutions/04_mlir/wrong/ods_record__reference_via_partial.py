# WRONG ANSWER (ods_record): rule 5: 'do not call the library's reference_record'. This answer calls it through a functools.partial bound
# when the cell runs, so the name the grader guards is never looked up.
from infopt.mlir.ods import ATTRIBUTE_KINDS, VALUE_KINDS, OpSpec

import functools

from infopt.mlir import ods as _ods

_write = functools.partial(_ods.reference_record)


def ods_record(spec: OpSpec) -> str:
    """The ODS `def` of the op `spec` describes."""
    return _write(spec)
