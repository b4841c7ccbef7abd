"""One node of a run: its parts assembled, and a node in a process of its own (``dei node``).

May import: the layers below the runtime and the runtime's other modules but
:mod:`dei_framework.runtime.ensemble` (which runs what is assembled here).

Modules:
    assembly.py             one node's parts: scheduler (restored), identity, clock, driver
    links.py                a node process's round reports and money hand-overs to its peers;
                            the money cap they share (hand-overs, starved waits)
    process.py              one node process's directory read and checked against its summary
    join.py                 joining the node processes' directories into one run (dei merge)
    launcher.py             one process per node on one machine (dei-run over a networked
                            transport)
"""
