"""The markers of the ``dei_framework`` pluggy project: :data:`hookspec` and :data:`hookimpl`.

Defined once, below every module of hook specifications, and re-exported by
:mod:`dei_framework.plugin.hookspecs` (the path plugins import them from).
"""

import pluggy

hookspec = pluggy.HookspecMarker("dei_framework")
hookimpl = pluggy.HookimplMarker("dei_framework")
