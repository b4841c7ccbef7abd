"""The operator contract: what proposes new program text (an LLM, or an offline generator).

An operator is bound to one node. The search loop asks it for either a brand-new program or a
mutation of a parent, handing it the chat messages the domain wrote for that request; offline
operators may ignore the messages and work on the parent's text directly.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol

import attrs

from dei_framework.contract.capabilities import settle
from dei_framework.contract.context import FactoryContext
from dei_framework.contract.records import Candidate, Message
from dei_framework.contract.registry import Kind


class DeferredMessages(Sequence[Message]):
    """Chat messages written on first use: offline operators that never read them cost nothing.

    A read-only sequence (``len``, indexing, iteration, equality with any sequence of
    messages) over what ``write()`` returns, called once, on the first access.

    Args:
        write: Returns the messages (e.g. a ``functools.partial`` of ``Domain.messages``).
    """

    __slots__ = ("_write", "_messages")

    def __init__(self, write: Callable[[], Sequence[Message]]) -> None:
        self._write = write
        self._messages: list[Message] | None = None

    def _written(self) -> list[Message]:
        if self._messages is None:
            self._messages = list(self._write())
        return self._messages

    def __len__(self) -> int:
        return len(self._written())

    def __getitem__(self, index):  # type: ignore[override]  # int or slice, as list's
        return self._written()[index]

    def __iter__(self):
        return iter(self._written())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DeferredMessages):
            other = other._written()
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return self._written() == list(other)

    __hash__ = None  # type: ignore[assignment]  # as a list's

    def __repr__(self) -> str:
        return repr(self._written()) if self._messages is not None else "DeferredMessages(...)"


@attrs.frozen(kw_only=True)
class OperatorRequest:
    """One request for a program.

    Attributes:
        key: Unique, stable id of this request within the run (``node/round/iteration``); used
            to record replies and to replay or resume them.
        kind: ``"new"`` for a program from scratch, ``"mutate"`` for a variation of ``parent``.
        messages: Chat messages from the domain (system prompt first); the scheduler's
            requests write them on first access (:class:`DeferredMessages`).
        parent: The elite to mutate (``kind == "mutate"`` only).
        others: A few more elites (e.g. for crossover), possibly empty.
        feedback: The last parse error in this parent's lineage, if any.
        inspirations: Elites the domain's prompt shows besides the parent
            (:class:`~dei_framework.contract.domain.PromptNeeds`: the best by fitness, then
            elites of other cells); empty for a domain that asks for none.
        seed: A seed derived from the run seed, for operators that draw random numbers.
        meter: The call's account with the budget ledger; operators that bill per attempt
            open and settle every attempt on it (see :class:`UsageMeter`). ``None`` outside a
            run (library use, tests).
    """

    key: str
    kind: Literal["new", "mutate"]
    messages: Sequence[Message]
    parent: Candidate | None = None
    others: Sequence[Candidate] = ()
    feedback: str | None = None
    seed: int = 0
    inspirations: Sequence[Candidate] = ()
    meter: UsageMeter | None = attrs.field(default=None, eq=False, repr=False)


class UsageMeter(Protocol):
    """What an operator that bills per attempt reports to the ledger, attempt by attempt.

    ``open_attempt`` comes before a request goes out, with the attempt's worst case; it raises
    :class:`~dei_framework.contract.errors.BudgetExhausted` when the attempt could break a cap (the
    operator then ends the call by letting it propagate). ``settle_attempt`` follows every
    opened attempt, failed ones included, with the usage the provider reported (``None``
    tokens when it reported none; ``None`` cost when the price is unknown).
    """

    async def open_attempt(
        self, *, prompt_tokens: int, max_tokens: int, cost_usd: float | None
    ) -> None: ...

    def settle_attempt(
        self,
        *,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        cost_usd: float | None = 0.0,
    ) -> None: ...


@attrs.frozen(kw_only=True)
class OperatorReply:
    """What an operator answered for one request.

    Attributes:
        text: The raw reply (may contain prose and code fences; the domain extracts the program).
        prompt_tokens: Prompt tokens as reported by the provider, summed over the call's
            attempts (0 for offline operators).
        completion_tokens: Completion tokens as reported by the provider, summed likewise.
        cost_usd: Cost of all the call's attempts in USD; ``None`` when the price is unknown
            (never a made-up 0).
        attempts: How many attempts this call took (1 plus retries).
        model: The model that answered, where it differs from the operator label.
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    attempts: int = 1
    model: str = ""


class Operator(abc.ABC):
    """Proposes program text; one instance per node.

    Implementations must be safe to call concurrently up to :attr:`max_in_flight` times. A
    transient failure is retried inside :meth:`propose`; a failure that retrying cannot fix
    (wrong key, unknown model) raises :class:`~dei_framework.contract.errors.OperatorError`, which
    stops the node that owns the operator and nothing else. Raising
    :class:`TransientOperatorFailure` gives the call back to the budget (counted as attempts).
    """

    #: Name shown in logs and summaries (e.g. ``"gp"`` or ``"openai/gpt-4.1-mini"``).
    label: str = "operator"
    #: ``True`` when the operator needs no network and no model server.
    offline: bool = True
    #: How many calls of this operator may be in flight at once on its node.
    max_in_flight: int = 4
    #: Nominal seconds per call, for virtual-time champion delivery (docs/architecture.md,
    #: "Determinism"): a round of ``Q`` calls lasts ``Q * nominal_latency / max_in_flight``
    #: virtual seconds. Only ratios between a run's nodes matter. Offline operators default
    #: to 0.05 s, LLM operators to 10 s; the node option ``nominal_latency`` overrides it.
    nominal_latency: float = 0.05
    #: Whether the cost of a call is known before it is made (offline operators cost nothing);
    #: a money cap is refused for operators that cannot price their calls.
    priced: bool = True
    #: Whether the operator reports billed tokens per attempt on the request's meter (a
    #: ``tokens`` or ``cost`` compute axis needs it).
    metered: bool = False
    #: What the driver may use besides :meth:`propose`, declared: ``"batch"`` (an own
    #: :meth:`propose_batch`: an offline operator then gets a turn's calls in one call of it)
    #: and ``"array"`` (:meth:`propose_genomes`: the array path). A declared capability whose
    #: method is not overridden is refused when the class is defined.
    capabilities: frozenset[str] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        settle(cls, Operator, {"batch": ("propose_batch",), "array": ("propose_genomes",)})

    @abc.abstractmethod
    async def propose(self, request: OperatorRequest) -> OperatorReply:
        """Answers one request."""

    async def propose_batch(self, requests: Sequence[OperatorRequest]) -> list[OperatorReply]:
        """Answers several requests, replies in the requests' order.

        The default awaits :meth:`propose` for each request in turn. An operator that can
        answer many requests at once (a vectorised offline generator) overrides it; its
        replies must be exactly those :meth:`propose` gives for each request alone, so that
        a seeded run does not depend on how requests are grouped.
        """
        return [await self.propose(request) for request in requests]

    def propose_genomes(self, requests: Sequence[Any]) -> Any:
        """Optional array form of an offline operator: one genome per request, as array rows.

        Row ``i`` is the genome whose text (the domain's
        :meth:`~dei_framework.contract.domain.Domain.genome_texts`) :meth:`propose` writes for
        ``requests[i]``, and it depends on that request alone. ``requests`` are operator
        requests or the scheduler's work items: read only ``seed``, ``parent``, ``others``
        and ``feedback``, never the chat messages. When an offline operator and its domain
        both have the array form, ``dei-run`` goes through it (docs/performance.md, "The
        array path"); the default raises :class:`NotImplementedError` (no array form).

        Returns:
            An array of shape ``(len(requests), ...)``, what the domain's
            :meth:`~dei_framework.contract.domain.Domain.evaluate_genomes` takes.
        """
        raise NotImplementedError

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Releases connections; called once when the node finishes."""

    def status(self) -> dict[str, Any]:
        """Live counters for the progress display (e.g. ``errors``, ``retries``)."""
        return {}


class TransientOperatorFailure(Exception):
    """A call failed after all retries, but the node may try again later.

    Attributes:
        attempts: How many attempts were made (counted in the ledger as attempts, not calls).
    """

    def __init__(self, message: str, *, attempts: int = 1) -> None:
        super().__init__(message)
        self.attempts = attempts


@attrs.frozen(kw_only=True)
class OperatorSettings(FactoryContext):
    """The context an operator factory receives for one node (from flags and the TOML config).

    Attributes:
        spec: What the user typed for ``--operator`` (a name or a model string).
        node: The node the operator serves.
        options: Everything else (``api_base``, ``temperature``, ``max_tokens``, ``timeout``,
            ``concurrency``, ...), already merged: node table over global table over flags.
        registry: The run's plugins (see :class:`~dei_framework.contract.context.FactoryContext`).
        seed: The run seed.
    """

    spec: str
    node: str


#: ``factory(ctx)`` returns the node's operator (``ctx.domain``: the run's domain) or raises
#: ``ConfigError``.
OperatorFactory = Callable[[OperatorSettings], Operator]


@attrs.frozen(kw_only=True)
class OperatorSpec:
    """An operator family a plugin registers through ``dei_operators``.

    Attributes:
        name: The name users type after ``--operator`` (e.g. ``"gp"``).
        factory: ``factory(ctx)`` builds the operator for one node; ``ctx`` is the node's
            :class:`OperatorSettings`, ``ctx.domain`` the run's domain.
        offline: ``False`` when it needs a network or a model server.
        accepts: Optional predicate claiming other ``--operator`` strings (the LLM plugin claims
            every ``provider/model`` string). Exact names always win over predicates.
        domains: Domains it works with; empty means any domain.
        description: One line for ``dei plugins``.
        default: Part of the offline default ensemble (``dei-run`` without ``--operator``)
            when offline; ``False`` keeps specialised operators out of it.
        ladder_option: The node option that makes this operator explore more or less (a
            model's sampling ``temperature``, an offline operator's mutation ``strength``), for
            the ``homo-temp`` experiment condition; ``None``: it has none.
        ladder_range: The lowest and highest value of ``ladder_option`` that ``homo-temp``
            spreads evenly across its nodes (one node: the midpoint).
    """

    name: str
    factory: OperatorFactory
    offline: bool = True
    accepts: Callable[[str], bool] | None = None
    domains: tuple[str, ...] = ()
    description: str = ""
    default: bool = True
    ladder_option: str | None = None
    ladder_range: tuple[float, float] = (0.5, 2.0)


#: The operator families: ``registry.lookup(OPERATORS, spec)`` is an :class:`OperatorSpec`.
OPERATORS: Kind[OperatorSpec] = Kind("dei_operators")
