"""Analysis: common ground (scoring every node's programs on the same reference set), the
statistics of comparisons, archive metrics and number formatting.

May import: :mod:`dei_framework.contract`, :mod:`dei_framework.search`,
:mod:`dei_framework.evaluation`, :mod:`dei_framework.net`, :mod:`dei_framework.plugin`.

Modules:
    common_ground.py    common ground: elites and champions re-evaluated on one reference set
    stats.py            exact Mann-Whitney test, Hodges-Lehmann interval, A12, Holm
    metrics.py          merged-archive stats, niche novelty, generality, operator divergence
    formatting.py       figures as text (numbers, mean ± std, tables): reports and the CLI
"""
