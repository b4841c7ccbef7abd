"""Plugins: the hook specifications (the documented contract), the manager that loads them,
the contract checks, and the core's own built-in implementations.

May import: :mod:`dei_framework.contract`, :mod:`dei_framework.search`,
:mod:`dei_framework.evaluation`, :mod:`dei_framework.net`.

Modules:
    hookspecs.py                every hook (the plugin contract): what the manager registers
    _markers.py                 the hookspec / hookimpl markers
    _registration_hooks.py      registration hooks: domains, operators, transports, selectors,
                                ...
    _format_hooks.py            format hooks: dei_export_program
    _default_hooks.py           defaults hooks: dei_default_nodes (the nodes of a run that
                                names no operator)
    _observation_hooks.py       observation hooks: candidates evaluated, rounds, champions, run
                                end
    manager.py                  the pluggy manager, entry-point discovery, load_plugins()
    _contract.py                the plugin contract checked at load: unknown hooks and
                                arguments, factories of an old shape
    _builtin.py                 the core's own plugin: built-in behaviour registered as a third
                                party's
"""
