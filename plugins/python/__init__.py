"""A reference domain for evolving Python programs: OpenEvolve task folders, run unchanged.

Installed as the import package ``dei_python`` (see ``setup.py``) and registered through the
``dei_framework`` entry point like any third-party plugin. See :mod:`dei_python.domain`
(the domain), :mod:`dei_python.mutate` (the offline ``python-ast`` operator) and
docs/evolving-python.md.
"""
