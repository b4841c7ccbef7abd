"""The core's own plugin: built-in behaviour registered exactly like a third party's."""

from __future__ import annotations

from dei_framework.contract.backend import EvaluatorSpec
from dei_framework.contract.cli_options import RunOption
from dei_framework.evaluation import dask_backend
from dei_framework.evaluation.local import make_local_backend
from dei_framework.plugin.hookspecs import hookimpl
from dei_framework.search.allocation import BUILTIN_ALLOCATORS, AllocatorSpec
from dei_framework.search.archives import BUILTIN_ARCHIVES, ArchiveSpec
from dei_framework.search.selectors import BUILTIN_SELECTORS, SelectorSpec
from dei_framework.search.sharing import BUILTIN_POLICIES, SharingSpec


@hookimpl
def dei_sharing_policies() -> list[SharingSpec]:
    return list(BUILTIN_POLICIES)


@hookimpl
def dei_budget_allocators() -> list[AllocatorSpec]:
    return list(BUILTIN_ALLOCATORS)


@hookimpl
def dei_parent_selectors() -> list[SelectorSpec]:
    return list(BUILTIN_SELECTORS)


@hookimpl
def dei_archives() -> list[ArchiveSpec]:
    return list(BUILTIN_ARCHIVES)


@hookimpl
def dei_evaluation_backends() -> list[EvaluatorSpec]:
    return [
        EvaluatorSpec(
            name="local",
            factory=make_local_backend,
            description="a process pool on this machine (--eval-workers processes)",
        ),
        EvaluatorSpec(
            name="dask",
            factory=dask_backend.make_backend,
            description="a Dask distributed cluster (--evaluator-address, or a local "
            "cluster started for the run); needs dei-framework[dask]",
        ),
    ]


@hookimpl
def dei_run_options() -> list[RunOption]:
    return dask_backend.tls_run_options()
