"""The one exception family users can cause; the CLI turns each into one line and exit status 1."""

from __future__ import annotations


class DEIError(Exception):
    """Base class of every error a user can cause (bad input, bad options, failing providers).

    The message is written for the user: it says what was wrong and, where possible, what to do.
    """


class ConfigError(DEIError):
    """An option, configuration file or run directory is invalid."""


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


class ReplayMismatch(ConfigError):
    """A replayed call does not match the record (its key is missing or its messages differ)."""
