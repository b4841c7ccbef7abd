"""Experiments: conditions (Solo, Homo, Diverse and the baselines) run at equal compute over
repeats, their summary and statistics, and the portfolio chooser (``dei plan``).

May import: every layer below it, up to :mod:`dei_framework.runtime`.

Modules:
    plan.py         an experiment's plan: conditions, equal budget split, experiment.json
    runner.py       running experiments: Solo / Homo / Diverse and baselines (library)
    summary.py      an experiment's summary.json: per-condition aggregates, comparisons
    portfolio.py    dei plan: pilots per candidate operator, pairwise complementarity, pick
"""
