"""The runtime of a run: the node driver, building a run from its configuration, the ensemble
loop, budget accounting, checkpoints and resume, replay, the run directory, merging, node
processes.

May import: every layer below it — :mod:`dei_framework.contract`, :mod:`dei_framework.search`,
:mod:`dei_framework.evaluation`, :mod:`dei_framework.net`, :mod:`dei_framework.plugin`,
:mod:`dei_framework.analysis`.
"""
