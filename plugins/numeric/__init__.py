"""A static numeric reference domain: continuous genomes, a pyribs-style benchmark objective.

Installed as the import package ``dei_numeric`` (see ``setup.py``) and registered through the
``dei_framework`` entry point like any third-party plugin. See :mod:`dei_numeric.domain`.
"""
