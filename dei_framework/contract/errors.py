"""The one exception family users can cause; the CLI turns each into one line and an exit status.

The status is the error's :attr:`DEIError.exit_code`: 1, or 2 for a refused input that the user
must change before anything can run (as for usage errors).
"""

from __future__ import annotations


class DEIError(Exception):
    """Base class of every error a user can cause (bad input, bad options, failing providers).

    The message is written for the user: it says what was wrong and, where possible, what to do.
    """

    #: Exit status of the command line when this error ends it.
    exit_code: int = 1


class ConfigError(DEIError):
    """An option, configuration file or run directory is invalid."""


class ReferenceOverlap(ConfigError):
    """A reference set (e.g. the generality set) shares programs with the training opponents.

    Measured against programs it trained on, a champion looks more general than it is, so the
    run is refused (exit status 2) unless the user asks for the shared programs to be dropped.
    """

    exit_code = 2


class PluginError(DEIError):
    """A plugin failed to load or misbehaved; the message names the plugin."""


class InvalidProgram(DEIError):
    """A candidate program could not be parsed by its domain (the message says where and why)."""


class BudgetExhausted(DEIError):
    """The operator-call budget of a node (or of the whole run) is used up."""


class OperatorError(DEIError):
    """An operator failed for good (e.g. a wrong API key); the node using it stops."""


class TransportError(DEIError):
    """A transport could not be started or used (e.g. a non-loopback API address)."""


class WriteError(DEIError):
    """A file could not be written (a full disk, a read-only filesystem): the message names the
    file and the cause."""


class ReplayMismatch(ConfigError):
    """A replayed call does not match the record (its key is missing or its messages differ)."""
