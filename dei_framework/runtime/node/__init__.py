"""One node of a run: its parts assembled, and a node in a process of its own (``dei node``).

May import: the layers below the runtime, :mod:`dei_framework.runtime.budget`,
:mod:`~dei_framework.runtime.config`, :mod:`~dei_framework.runtime.files` and the parts a node
is made of (:mod:`~dei_framework.runtime.builders`, :mod:`~dei_framework.runtime.driver`,
:mod:`~dei_framework.runtime.merge`, :mod:`~dei_framework.runtime.replay`,
:mod:`~dei_framework.runtime.summary`); never the assembly or the ensemble, which use it
(``tests/core/test_layers.py`` holds each sub-package to its list).

Modules:
    assembly.py             one node's parts: scheduler (restored), identity, clock, driver
    links.py                a node process's round reports and money hand-overs to its peers;
                            the money cap they share (hand-overs, starved waits)
    process.py              one node process's directory read and checked against its summary
    join.py                 joining the node processes' directories into one run (dei merge)
    launcher.py             one process per node on one machine (dei-run over a networked
                            transport)

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""
