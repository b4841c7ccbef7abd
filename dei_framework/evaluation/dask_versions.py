"""Which versions the workers of a ``dask`` run must run: the run's own, checked at connect.

At connect every worker reports the versions of ``dei-framework`` and of the domain's
distribution (:func:`installed_versions`, run on each worker); a worker on another version, or
one that cannot even import the project, is refused before anything runs
(:func:`check_versions`). A worker that joins later is checked on arrival by the version guard
(:mod:`~dei_framework.evaluation.dask_guard`); :func:`refusal` is the warning the run prints
for it.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping, Sequence
from typing import Any

from dei_framework.contract.errors import ConfigError

#: The distribution of the core; every worker must run the same version.
CORE_DISTRIBUTION = "dei-framework"


def distribution_of(module: str) -> str | None:
    """The installed distribution that provides ``module`` (``None``: not from one)."""
    top = module.partition(".")[0]
    names = importlib.metadata.packages_distributions().get(top) or []
    return names[0] if names else None


def installed_versions(distributions: Sequence[str]) -> dict[str, str | None]:
    """The versions of ``distributions`` installed where this runs (run on every worker)."""
    versions: dict[str, str | None] = {}
    for name in distributions:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def check_versions(client: Any, domain: Any, address: str | None) -> dict[str, str | None]:
    """Refuses the cluster of ``client`` (the scheduler at ``address``) when a worker runs
    another version of the core or of ``domain``'s distribution; returns the versions every
    worker must run.

    Raises:
        ConfigError: A worker runs another version, or cannot run the project at all.
    """
    distributions = [CORE_DISTRIBUTION]
    domain_distribution = distribution_of(type(domain).__module__)
    if domain_distribution and domain_distribution not in distributions:
        distributions.append(domain_distribution)
    here = installed_versions(distributions)
    # A worker without the project cannot even unpickle the check: its error is returned,
    # and it is refused like a worker on another version.
    there = client.run(installed_versions, distributions, on_error="return")
    wrong = [
        f"{worker} cannot run this project ({_short(versions)})"
        for worker, versions in sorted(there.items())
        if isinstance(versions, BaseException)
    ]
    wrong += [
        f"{worker} runs {_runs(name, versions.get(name), here[name])}"
        for worker, versions in sorted(there.items())
        for name in distributions
        if isinstance(versions, Mapping) and versions.get(name) != here[name]
    ]
    if wrong:
        raise ConfigError(
            f"refusing the Dask workers at {address}: "
            f"{'; '.join(wrong)}; start the workers from the same "
            "installation as the run"
        )
    return here


def refusal(report: Mapping[str, Any], address: str | None) -> str:
    """The warning for a worker that joined the scheduler at ``address`` on another version and
    closed itself: ``report`` is the event the version guard logged."""
    found, expected = report.get("found", {}), report.get("expected", {})
    what = "; ".join(
        _runs(name, found.get(name), expected[name])
        for name in expected
        if found.get(name) != expected[name]
    )
    return (
        f"refused the Dask worker {report.get('worker')} that joined {address}: it "
        f"runs {what}; its tasks go to the other workers"
    )


def _runs(name: str, found: str | None, expected: str | None) -> str:
    """What a worker runs of distribution ``name``, against the run's: ``dei-framework 9.9.9
    (this run: 0.1.0)``, or ``without dei-framework (this run: 0.1.0)``."""
    runs = f"{name} {found}" if found is not None else f"without {name}"
    return f"{runs} (this run: {expected})"


def _short(exc: BaseException) -> str:
    """One line naming an exception a worker raised. One the worker could not send as itself
    (raised before the job was unpickled there) arrives as a plain ``Exception`` holding its
    ``repr``: that is shown alone."""
    text = str(exc).strip().splitlines()
    if not text:
        return type(exc).__name__
    return text[0] if type(exc) is Exception else f"{type(exc).__name__}: {text[0]}"
