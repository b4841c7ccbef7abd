"""The checks a run configuration must pass: its fields' validators (whole-number counts,
durations in seconds), the members converter, the checks across fields (the compute axis and
its budget, delivery, lifecycle, the share of new programs), and the per-node endpoints.

:class:`~dei_framework.runtime.config.run_config.RunConfig` runs the field checks as it is
made. A node's server URL (``api_base``) is one of its operator options. It comes from the
global ``--api-base`` flag (or ``api_base`` in ``[operator_options]``), from the node's
``[[node]]`` table, or from the operator spec itself:
``--operator ollama/qwen2.5-coder@http://127.0.0.1:11434`` (:func:`split_endpoint`). A global
URL reaches every node without one of its own, so one given beside operators of several
providers would send, say, an Anthropic node's requests (and its key) to a local Ollama server:
:func:`check_shared_api_base` refuses that and shows the per-node form.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Sequence
from typing import Any, Protocol

from dei_framework.contract.domain import LIFECYCLES
from dei_framework.contract.errors import ConfigError
from dei_framework.runtime.budget.usage import COMPUTE_AXES

#: Champion delivery modes (``RunConfig.delivery``, ``--delivery``).
DELIVERIES = ("auto", "virtual", "wallclock")


def check_count(name: str, value: Any, minimum: int | None = 1) -> None:
    """Refuses a count that is not a whole number of at least ``minimum`` (``None`` passes:
    the option was not given).

    A TOML file can hold any type where a flag holds an int: ``true`` (a bool is an int to
    Python, and would count as 1) or ``"ten"`` must be refused by name, not crash later.

    Raises:
        ConfigError: Naming the option and the value.
    """
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"{name} must be a whole number, got {value!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, got {value}")


def positive(name: str, minimum: int | None = 1):
    """A validator refusing a count below ``minimum`` (:func:`check_count`)."""

    def check(instance, attribute, value) -> None:
        check_count(name, value, minimum)

    return check


def seconds(name: str):
    """A validator refusing a duration that is not a number of seconds ≥ 0."""

    def check(instance, attribute, value) -> None:
        if (
            isinstance(value, bool)
            or not isinstance(value, numbers.Real)
            or not 0 <= value < float("inf")
        ):
            raise ConfigError(f"{name} must be a number of seconds, at least 0, got {value!r}")

    return check


def members(value: Any) -> tuple[str, ...]:
    """The run's membership entries, checked (``RunConfig.members``' converter)."""
    from dei_framework.net.envelope import EnvelopeError, parse_membership

    try:
        membership = parse_membership(value or None)
        return () if membership is None else membership.entries()
    except EnvelopeError as exc:
        raise ConfigError(f"members: {exc}") from None


class CheckedRun(Protocol):
    """What the checks across fields read of a
    :class:`~dei_framework.runtime.config.run_config.RunConfig` (which imports this module: it is
    not imported here)."""

    nodes: Sequence[object]
    budget: int | None
    iterations: int | None
    compute_axis: str
    max_cost_usd: float | None
    delivery: str
    lifecycle: str
    new_fraction: float


def check_config(config: CheckedRun) -> None:
    """The checks across a configuration's fields, run as it is made.

    Raises:
        ConfigError: No node; a compute axis unknown or without its budget; not exactly one of
            ``budget`` and ``iterations`` where one is needed; a money cap not positive; an
            unknown delivery or lifecycle; ``new_fraction`` outside [0, 1].
    """
    if not config.nodes:
        raise ConfigError("a run needs at least one node")
    if config.compute_axis not in COMPUTE_AXES:
        raise ConfigError(
            f"--compute-axis must be one of {', '.join(COMPUTE_AXES)}, got {config.compute_axis!r}"
        )
    if config.max_cost_usd is not None and not config.max_cost_usd > 0:
        raise ConfigError(f"--max-cost-usd must be positive, got {config.max_cost_usd}")
    if config.compute_axis == "cost":
        if config.max_cost_usd is None:
            raise ConfigError("--compute-axis cost needs --max-cost-usd (the budget)")
        if (config.budget is None) == (config.iterations is None):
            raise ConfigError(
                "give exactly one of --budget and --iterations (calls at "
                "most; --max-cost-usd is the budget)"
            )
    elif config.compute_axis == "tokens":
        if config.budget is None or config.iterations is None:
            raise ConfigError(
                "--compute-axis tokens needs --budget (total tokens) and "
                "--iterations (calls per node per round at most)"
            )
    elif (config.budget is None) == (config.iterations is None):
        raise ConfigError("give exactly one of --budget and --iterations")
    if config.delivery not in DELIVERIES:
        raise ConfigError(
            f"delivery must be one of {', '.join(DELIVERIES)}, got {config.delivery!r}"
        )
    if config.lifecycle and config.lifecycle not in LIFECYCLES:
        raise ConfigError(
            f"lifecycle must be one of {', '.join(LIFECYCLES)}, got {config.lifecycle!r}"
        )
    if not 0.0 <= config.new_fraction <= 1.0:
        raise ConfigError(f"new_fraction must be within [0, 1], got {config.new_fraction}")


# ``@`` followed by a URL: model strings may contain ``@`` themselves (Vertex AI's
# ``vertex_ai/claude-3-5-sonnet@20240620``), a scheme after it tells the endpoint apart.
_ENDPOINT = re.compile(r"^(?P<operator>.+?)@(?P<url>https?://\S+)$")

# ``provider/model`` (``llm:`` optional); paths (``./op.py``, ``/x/y``) are not model strings.
_MODEL = re.compile(r"^(?:llm:)?(?P<provider>[A-Za-z][A-Za-z0-9_.\-]*)/\S+$")

#: Providers that usually run on the user's own machine: the example a refusal shows.
_LOCAL_PROVIDERS = ("ollama", "ollama_chat", "hosted_vllm", "lm_studio", "llamafile", "vllm")


def split_endpoint(spec: str) -> tuple[str, str | None]:
    """``"ollama/qwen2.5-coder@http://127.0.0.1:11434"`` into the operator and its URL.

    Returns:
        The operator spec without the endpoint, and the URL (``None`` when there is none).
    """
    match = _ENDPOINT.match(spec.strip())
    if match is None:
        return spec, None
    return match["operator"], match["url"]


def provider_of(spec: str) -> str | None:
    """The provider of a model string (``anthropic`` of ``anthropic/claude-haiku-4-5``), or
    ``None`` for an operator that is not one (``gp``, a path)."""
    match = _MODEL.match(spec.strip())
    return match["provider"] if match is not None else None


def check_shared_api_base(api_base: str | None, inheriting: Sequence[str]) -> None:
    """Refuses a global ``api_base`` that operators of several providers would share.

    Args:
        api_base: The global URL (``--api-base`` or ``[operator_options] api_base``).
        inheriting: The operator specs of the nodes that would get it (those without an
            endpoint of their own).

    Raises:
        ConfigError: The operators of ``inheriting`` name more than one provider.
    """
    if not api_base:
        return
    providers = {
        provider: spec for spec in inheriting if (provider := provider_of(spec)) is not None
    }
    if len(providers) < 2:
        return
    local = [spec for provider, spec in providers.items() if provider in _LOCAL_PROVIDERS]
    example = (local or list(providers.values()))[0].removeprefix("llm:")
    raise ConfigError(
        f"--api-base {api_base} would send the requests of every LLM node to that one server, "
        f"but the nodes use {len(providers)} providers ({', '.join(sorted(providers))}): give "
        f"the server to the node it serves, e.g. --operator {example}@{api_base} (or api_base "
        "in its [[node]] table), and none to hosted models"
    )
