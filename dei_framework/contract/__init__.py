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

Modules:
    errors.py           DEIError and its family: what a user can cause, one line and a status
    kinds.py            the records' string enums: CandidateSource, WorkKind, EventKind,
                        ProgressKind (members are the strings the files hold)
    records.py          Candidate (the one program record), ExportedProgram, chat messages,
                        hash_text
    json_form.py        json_form: a record's to_json/from_json derived from its attrs fields
    archive_stats.py    ArchiveStats: summary statistics of an archive
    payloads.py         JSONValue, and an experiment's summary typed key by key
                        (ExperimentSummary)
    run_summary.py      RunSummary, NodeSummary, Champion, MergedSummary: a run's results as
                        records (what Ensemble.run returns and dei_run_finished receives)
    descriptors.py      axes and DescriptorSpace
    domain.py           Domain, Program, Evaluation, DomainSpec, PromptNeeds (what a
                        domain's prompts show besides the parent)
    default_nodes.py    DefaultNodes: the nodes a task names for a run given no operator
    operators.py        Operator, OperatorRequest/Reply/Settings/Spec
    transport.py        Transport, Delivery, TransportSpec, LocalNetwork
    backend.py          EvaluationBackend contract, EvaluatorSpec, EvaluatorLost, WorkerDied
    cli_options.py      RunOption: flags plugins add to dei-run / dei experiment
    price.py            Price: what a model charges (an operator prices its calls with it)
    processes.py        parent_death_signal: child processes that end with their parent
    context.py          FactoryContext: what every plugin factory receives, factory(ctx)
    capabilities.py     what a plugin class declares it implements ("batch", "array",
                        "learns"), checked when the class is defined
    registry.py         PluginRegistry (typed lookups by Kind), hook calls, observer guard
"""
