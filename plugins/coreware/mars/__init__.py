"""Core War simulator (MARS) matching pMARS 0.9.4 bit for bit, with a C inner loop.

Typical use::

    from dei_coreware.mars import MarsSettings, run_battle

    result = run_battle([w1, w2], MarsSettings(rounds=100), seed=847877000)
    result.scores, result.results

``seed`` is pMARS's ``-F`` value; ``result.scores`` and ``result.results`` are exactly what
``pmars -b -r R -F SEED`` prints. Every round also carries :class:`RoundObservables`.
"""

from dei_coreware.mars._battle import BattleResult, RoundObservables, run_battle
from dei_coreware.mars._placement import pmars_rng, round_placements
from dei_coreware.mars._settings import MarsError, MarsSettings

__all__ = [
    "BattleResult",
    "MarsError",
    "MarsSettings",
    "RoundObservables",
    "pmars_rng",
    "round_placements",
    "run_battle",
]
