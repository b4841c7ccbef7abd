"""Analysis: common ground (scoring every node's programs on the same reference set), the
statistics of comparisons, archive metrics and number formatting.

May import: :mod:`dei_framework.contract`, :mod:`dei_framework.search`,
:mod:`dei_framework.evaluation`, :mod:`dei_framework.net`, :mod:`dei_framework.plugin`.
"""
