"""Redcode assembler matching pMARS 0.9.4: source text to a :class:`~dei_coreware.redcode.Warrior`.

Example:
    >>> from dei_coreware.assembler import assemble
    >>> assemble("imp mov 0, 1").instructions[0].as_list()
    ['MOV', 'I', '$', 0, '$', 1]
"""

from ._assembler import assemble, assemble_file
from ._errors import AssemblyError
from ._settings import AssemblerSettings

__all__ = ["AssemblerSettings", "AssemblyError", "assemble", "assemble_file"]
