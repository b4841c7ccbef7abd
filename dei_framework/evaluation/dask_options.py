"""What the ``dask`` backend needs to reach a cluster: ``distributed`` itself, imported only
when the backend starts, how long connecting may take, and the TLS files of a ``tls://``
scheduler.

A ``tls://`` scheduler address is reached over TLS with the certificates named in the run's
``[evaluator_options]`` (``tls_ca_file``, ``tls_cert``, ``tls_key``: Dask's
``distributed.security.Security``), or given as flags of ``dei-run``, ``dei experiment`` and
``dei node`` (:func:`tls_run_options`); the run then refuses to talk to the scheduler
unencrypted.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from dei_framework.contract.cli_options import RunOption
from dei_framework.contract.errors import ConfigError

#: Seconds to wait for the scheduler to answer at connect.
CONNECT_SECONDS = 20.0
#: ``[evaluator_options]`` keys of this backend: the TLS files of a ``tls://`` scheduler.
TLS_OPTIONS = ("tls_ca_file", "tls_cert", "tls_key")


def tls_files(address: str | None, options: Mapping[str, Any]) -> dict[str, str]:
    """The TLS files of ``[evaluator_options]`` for ``address``, checked (``{}``: plain TCP).

    Raises:
        ConfigError: An unknown option, a ``tls://`` address without all three files (or
            files without a ``tls://`` address), or a file that does not exist.
    """
    unknown = sorted(set(options) - set(TLS_OPTIONS))
    if unknown:
        raise ConfigError(
            f"--evaluator dask takes no [evaluator_options] key "
            f"{', '.join(map(repr, unknown))} (known: {', '.join(TLS_OPTIONS)})"
        )
    files = {key: str(options[key]) for key in TLS_OPTIONS if options.get(key)}
    secure = (address or "").startswith("tls://")
    if secure and len(files) < len(TLS_OPTIONS):
        missing = [key for key in TLS_OPTIONS if key not in files]
        raise ConfigError(
            f"the Dask scheduler at {address} speaks TLS: give "
            f"{', '.join(missing)} in [evaluator_options] (PEM files of the "
            "cluster's certificate authority and of this client)"
        )
    if files and not secure:
        raise ConfigError(
            f"[evaluator_options] names TLS files but the Dask scheduler address "
            f"{address or '(a local cluster)'} is not tls://host:port"
        )
    for key, path in files.items():
        if not os.path.isfile(path):
            raise ConfigError(f"[evaluator_options] {key} = {path!r}: no such file")
    return files


def tls_run_options() -> list[RunOption]:
    """``--evaluator-tls-ca``, ``--evaluator-tls-cert``, ``--evaluator-tls-key``: the
    :data:`TLS_OPTIONS` of ``[evaluator_options]`` as flags of ``dei-run``, ``dei experiment``
    and ``dei node`` (paths made absolute)."""
    flags = {
        "tls_ca_file": (
            "--evaluator-tls-ca",
            "The certificate authority of a tls:// Dask scheduler (PEM)",
        ),
        "tls_cert": (
            "--evaluator-tls-cert",
            "This client's certificate for a tls:// Dask scheduler (PEM, signed by that authority)",
        ),
        "tls_key": ("--evaluator-tls-key", "The private key of that certificate (PEM)"),
    }
    return [
        RunOption(
            option=click.Option(
                [flag, key], type=click.Path(dir_okay=False), metavar="FILE", help=f"{help_text}."
            ),
            target="evaluator_options",
            convert=lambda path: str(Path(path).resolve()),
        )
        for key, (flag, help_text) in flags.items()
    ]


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise ConfigError(
            '--evaluator dask needs Dask distributed: pip install "dei-framework[dask]"'
        ) from None
    return distributed
