"""The contract: the types a plugin implements or receives, and nothing that runs a search.

Errors, program records (:class:`~dei_framework.contract.records.Candidate`), descriptor
spaces, and the plugin contracts — :class:`~dei_framework.contract.domain.Domain`,
:class:`~dei_framework.contract.operators.Operator`,
:class:`~dei_framework.contract.transport.Transport`, evaluation backends, ``dei-run`` options,
the factory context, the plugin registry, a run's events and summary as typed records, a
model's price and child processes that end with their parent. The reference plugins' classes
import only this package and the champion envelope (:mod:`dei_framework.net.envelope`); their
hook functions are marked with ``dei_framework.hookimpl`` (the specifications are in
:mod:`dei_framework.plugin.hookspecs`).

May import: nothing else of ``dei_framework`` (the bottom layer).
"""
