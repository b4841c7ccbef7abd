"""Plugins: the hook specifications (the documented contract), the manager that loads them,
the contract checks, and the core's own built-in implementations.

May import: :mod:`dei_framework.contract`, :mod:`dei_framework.search`,
:mod:`dei_framework.evaluation`, :mod:`dei_framework.net`.
"""
