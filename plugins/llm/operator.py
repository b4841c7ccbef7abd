"""The LLM operator: proposes programs by calling a chat model through litellm, with retries.

One :class:`LLMOperator` serves one node and is bound to one model string (``openai/gpt-4.1-mini``,
``anthropic/claude-haiku-4-5``, ``ollama/qwen2.5-coder``, ``hosted_vllm/...``, or a provider a
plugin registers through ``dei_llm_providers``). It sends the domain's chat messages unchanged
and returns the raw reply text with the provider's usage and the cost of all the call's
attempts (``None`` when the model's price is unknown: ``price`` option, ``--price``, or
litellm's bundled table). Every attempt is opened on the request's meter with its worst-case
cost before it goes out and settled afterwards with the usage the provider reported, failed
attempts included, so the ledger's money caps hold under concurrency.

Failures fall into three groups:

* transient (429, 5xx, timeouts, dropped connections, malformed replies): retried with
  exponential backoff and jitter, honouring ``Retry-After``; after ``max_retries`` retries the
  call raises :class:`~dei_framework.contract.operators.TransientOperatorFailure` so the core gives
  the budget slot back;
* request-specific (the prompt exceeds the context window, a content filter refused it): not
  retried, also a transient failure, because the next request may well succeed;
* fatal (no key, wrong key, permission denied, unknown model, bad request, connection
  refused, a host name that does not resolve): raised at once as
  :class:`~dei_framework.contract.errors.OperatorError` with one line naming the model, the URL and
  the cause. Nothing listening at the address, or no such host, is a configuration mistake
  far more often than an outage, and retrying it for half an hour helps nobody.

Transient failures are bounded too: ``max_consecutive_failures`` failed attempts in a row
(20 by default; rate limits count towards the time bound only), or
``max_seconds_without_reply`` seconds of failing attempts without a completed call (300 by
default), make the provider fatal for the node, with one line naming the node, the
statuses and their count, the URL and the model
(``node-0: HTTP 500 × 20 from http://127.0.0.1:8000/v1/chat/completions
(openai/qwen)``). A call given back to the budget is made again, so without this bound a
server that answers every request with a 500 would be asked for ever.

litellm is imported lazily (:func:`import_litellm`): it takes seconds to import and must not
slow down ``dei`` commands that never call a model.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import math
import os
import random
import re
import socket
import sys
import time
import urllib.parse
import weakref
from collections.abc import Mapping
from typing import Any

import attrs
import tenacity
from dei_llm.preflight import KEY_ENV_VARS, is_loopback, preflight

from dei_framework.contract.errors import BudgetExhausted, ConfigError, OperatorError
from dei_framework.contract.operators import (
    Operator,
    OperatorReply,
    OperatorRequest,
    OperatorSettings,
    TransientOperatorFailure,
    UsageMeter,
)
from dei_framework.contract.price import Price

#: Statuses worth retrying: timeouts, conflicts, too early, rate limits and server errors.
RETRYABLE_STATUSES = frozenset({408, 409, 425, 429})

#: A failed attempt's short cause when the provider limits our rate (see ``_count_failure``).
RATE_LIMITED = "HTTP 429"

#: How litellm and the SDKs say that no API key was configured at all.
_MISSING_KEY = re.compile(
    r"missing credentials|api_key client option must be set|no api key|missing \w+ api key|"
    r"api[ _-]?key (is )?(not (found|set|provided)|missing|required)",
    re.IGNORECASE,
)

#: Seconds the first call may be out before a line says that the run is waiting for it (and
#: how often, while no call has completed, a line says which failures it is retrying after).
FIRST_REPLY_NOTICE = 5.0

#: The mock request URLs litellm puts on errors it raises without a real request (its
#: ``exceptions.py``): never where a request went.
_PLACEHOLDER_URLS = frozenset(
    {"https://litellm.ai", "https://api.openai.com/v1", "https://cloud.google.com/vertex-ai"}
)

_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Proxy", "LiteLLM Router", "litellm", "httpx", "openai")
_MESSAGE_LIMIT = 240
_OBJECT_REPR = re.compile(r"\S*<[^<>]* object at 0x[0-9a-fA-F]+>")


def import_litellm() -> Any:
    """Imports litellm configured for offline, quiet use, and returns the module.

    The first call takes a few seconds. litellm fetches its model price map from the network at
    import unless ``LITELLM_LOCAL_MODEL_COST_MAP`` is set; the bundled map is what we want
    (runs must not depend on the network beyond the provider itself).
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banners on errors
    litellm.telemetry = False
    for name in _LITELLM_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level < logging.WARNING:
            logger.setLevel(logging.WARNING)
    return litellm


@attrs.frozen(kw_only=True)
class LLMOptions:
    """The per-node options of an LLM operator (from flags and TOML, already merged).

    Attributes:
        api_base: Server URL (local servers, proxies); ``None`` for the provider's default.
        api_key: API key; normally ``None`` so that litellm reads the provider's env var.
        api_key_env: Name of the environment variable the key was read from (``api_key_env``
            option: a per-node key without writing the key itself into a config file).
        temperature: Sampling temperature (1.0 as in the DEI paper).
        max_tokens: Completion token limit per call.
        timeout: Hard per-attempt timeout in seconds.
        concurrency: Calls in flight at once (the operator's ``max_in_flight``).
        max_retries: Retries after the first attempt before a call is given back.
        max_consecutive_failures: Failed attempts in a row (across the node's calls, rate
            limits not counted) after which the provider counts as unusable and the node
            stops; 0 for no bound.
        max_seconds_without_reply: Seconds of failing attempts without a completed call after
            which the node stops; 0 for no bound.
        retry_base: Backoff base in seconds (wait ~ ``retry_base * 2**n`` with jitter).
        retry_max: Upper bound of one backoff wait, ``Retry-After`` included, in seconds.
        params: Extra keyword arguments passed to ``litellm.acompletion`` (e.g. ``top_p``).
        price: The model's price (``price = [IN, OUT]`` in USD per million tokens), overriding
            litellm's price table; ``None`` to look the model up there.
        prices: Prices by model string (``--price MODEL=IN,OUT``); ``price`` wins.
    """

    api_base: str | None = None
    api_key: str | None = attrs.field(default=None, repr=False)
    api_key_env: str | None = None
    temperature: float = 1.0
    max_tokens: int = 2048
    timeout: float = 120.0
    concurrency: int = 4
    max_retries: int = 6
    max_consecutive_failures: int = 20
    max_seconds_without_reply: float = 300.0
    retry_base: float = 1.0
    retry_max: float = 60.0
    params: Mapping[str, Any] = attrs.field(factory=dict)
    price: Price | None = None
    prices: Mapping[str, Price] = attrs.field(factory=dict)

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> LLMOptions:
        """Validates user options; keys this operator does not use are ignored.

        Raises:
            ConfigError: An option has the wrong type or an impossible value.
        """
        values: dict[str, Any] = {}
        for name in ("api_base", "api_key"):
            value = options.get(name)
            if value is not None:
                if not isinstance(value, str) or not value.strip():
                    raise ConfigError(f"option {name} must be a non-empty string")
                values[name] = value.strip()
        env = options.get("api_key_env")
        if env is not None:
            if not isinstance(env, str) or not env.strip():
                raise ConfigError("option api_key_env must name an environment variable")
            env = env.strip()
            key = os.environ.get(env, "").strip()
            if not key:
                raise ConfigError(f"api_key_env: environment variable {env} is not set")
            values["api_key"], values["api_key_env"] = key, env
        numbers = {
            "temperature": (float, 0.0),
            "timeout": (float, 1e-3),
            "retry_base": (float, 0.0),
            "retry_max": (float, 0.0),
            "max_seconds_without_reply": (float, 0.0),
            "max_tokens": (int, 1),
            "concurrency": (int, 1),
            "max_retries": (int, 0),
            "max_consecutive_failures": (int, 0),
        }
        for name, (kind, minimum) in numbers.items():
            value = options.get(name)
            if value is None:
                continue
            try:
                if isinstance(value, bool) or (kind is int and float(value) != int(value)):
                    raise ValueError
                number = kind(value)
            except (TypeError, ValueError):
                raise ConfigError(f"option {name} must be a number, got {value!r}") from None
            if number < minimum:
                raise ConfigError(f"option {name} must be at least {minimum}, got {value!r}")
            values[name] = number
        params = options.get("params")
        if params is not None:
            if not isinstance(params, Mapping):
                raise ConfigError("option params must be a table of litellm arguments")
            values["params"] = dict(params)
        if options.get("price") is not None:
            values["price"] = _price("price", options["price"])
        prices = options.get("prices")
        if prices is not None:
            if not isinstance(prices, Mapping):
                raise ConfigError("option prices must be a table of model = [IN, OUT]")
            values["prices"] = {
                str(model): _price(f"price of {model}", value) for model, value in prices.items()
            }
        return cls(**values)


def _price(name: str, value: Any) -> Price:
    try:
        return Price.parse(value)
    except ConfigError as exc:
        raise ConfigError(f"option {name}: {exc}") from None


#: Models whose unknown price was already reported (one warning per model and process).
_UNPRICED_WARNED: set[str] = set()


@attrs.define
class _Stats:
    calls: int = 0
    errors: int = 0
    retries: int = 0
    transient_failures: int = 0
    in_flight: int = 0
    last_error: str = ""


@attrs.define
class _Streak:
    """The failed attempts since the node's last successful one.

    Attributes:
        count: Failed attempts in a row.
        causes: Their short causes (``HTTP 500``, ``timeout``) with counts, first seen first.
        started: ``time.monotonic()`` when the first of them went out.
        url: The request URL of the latest failure that named one.
    """

    count: int = 0
    causes: dict[str, int] = attrs.field(factory=dict)
    started: float = 0.0
    url: str | None = None

    def add(self, cause: str, started: float, url: str | None) -> None:
        """Counts one failed attempt that went out at ``started``."""
        if not self.count:
            self.started = started
        self.count += 1
        self.causes[cause] = self.causes.get(cause, 0) + 1
        self.url = url or self.url

    def summary(self) -> str:
        """``HTTP 500 × 20`` (or ``HTTP 500 × 12, timeout × 8``)."""
        return ", ".join(f"{cause} × {n}" for cause, n in self.causes.items())

    def last_cause(self) -> str:
        return next(reversed(self.causes), "a failure")


class LLMOperator(Operator):
    """Proposes programs with a chat model reached through litellm.

    Args:
        model: The litellm model string, ``provider/model``.
        options: The node's options.
        node: The node served (used in messages only).

    Example:
        >>> op = LLMOperator("openai/gpt-4.1-mini", LLMOptions(temperature=0.7))
        >>> reply = await op.propose(request)  # doctest: +SKIP
    """

    offline = False
    #: A typical chat completion of a program, for virtual-time delivery (seconds per call).
    nominal_latency = 10.0

    def __init__(self, model: str, options: LLMOptions | None = None, *, node: str = "") -> None:
        self.model = model
        self.label = model
        self.node = node
        self.options = options or LLMOptions()
        self.max_in_flight = self.options.concurrency
        self.metered = True
        self._stats = _Stats()
        self._fatal: OperatorError | None = None
        self._first_reply_notice: asyncio.TimerHandle | None = None
        self._streak = _Streak()
        self._noticed = -1  # the streak length last shown (-1: nothing shown yet)
        # One semaphore per event loop: asyncio primitives bind to the loop that first
        # contends for them, and tests (or a library user) may drive us from several loops.
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._semaphores = weakref.WeakKeyDictionary()
        cause = preflight(
            model,
            api_base=self.options.api_base,
            api_key=self.options.api_key,
            api_key_env=self.options.api_key_env,
        )
        if cause is not None:
            # Every call would fail: the first one says so at once, and litellm (seconds to
            # import) is never loaded. Nothing will be called, so there is nothing to price.
            self._fatal = OperatorError(_truncate(f"{self._where()}: {cause}", 400))
            self._litellm = None
            self.price, self.priced = None, True
            return
        self._litellm = import_litellm()
        self.price = self._find_price()
        self.priced = self.price is not None

    @classmethod
    def from_settings(cls, model: str, settings: OperatorSettings) -> LLMOperator:
        """Builds the operator for one node from its merged settings."""
        return cls(model, LLMOptions.from_mapping(settings.options), node=settings.node)

    # --- the contract -------------------------------------------------------------------------

    async def propose(self, request: OperatorRequest) -> OperatorReply:
        """Answers one request, retrying transient failures.

        Raises:
            OperatorError: The failure cannot be fixed by retrying (key, permission, model).
            TransientOperatorFailure: Retries are used up, or this request cannot succeed
                (context window, content filter); ``attempts`` says how many were made.
        """
        messages = [dict(message) for message in request.messages]
        meter = request.meter if request.meter is not None else _NoMeter()
        async with self._semaphore():
            if self._fatal is not None:
                # A wrong key or model stays wrong: calls queued behind the one that found out
                # fail at once instead of each knocking on the provider's door.
                raise OperatorError(str(self._fatal))
            self._stats.in_flight += 1
            self._watch_first_reply()
            try:
                return await self._propose(messages, meter)
            finally:
                self._stats.in_flight -= 1
                done = self._stats.calls or self._fatal is not None
                if done and self._first_reply_notice is not None:
                    self._first_reply_notice.cancel()

    async def aclose(self) -> None:
        """Nothing to release: litellm owns (and shares across nodes) its HTTP clients."""

    def status(self) -> dict[str, Any]:
        """``calls``, ``errors`` (failed attempts), ``retries``, ``transient_failures``,
        ``in_flight`` and ``last_error`` (one line, empty when none)."""
        return attrs.asdict(self._stats)

    # --- internals ----------------------------------------------------------------------------

    def _where(self) -> str:
        """The model and, when given, the server: ``openai/m at http://host/v1``."""
        return f"{self.model} at {self.options.api_base}" if self.options.api_base else self.model

    def _watch_first_reply(self) -> None:
        """Until a call completes, says every :data:`FIRST_REPLY_NOTICE` s what the node is
        waiting for: the first reply, or, while attempts fail, the failure it retries after.

        A silent wait for a slow or unreachable server looks like a hang; a timeout or the
        retries behind it can take minutes (``timeout``, ``max_retries``). A line is printed
        only when there is something new to say (a first wait, more failed attempts).
        """
        if self._first_reply_notice is not None or self._stats.calls:
            return
        started = time.monotonic()
        loop = asyncio.get_running_loop()
        who = f"[{self.node}] " if self.node else ""

        def notice() -> None:
            if self._stats.calls or self._fatal is not None:
                return
            failed = self._streak.count
            if failed > max(self._noticed, 0):
                print(
                    f"{who}retrying after {self._streak.last_cause()} ({failed}): no reply "
                    f"yet from {self._where()}",
                    file=sys.stderr,
                    flush=True,
                )
                self._noticed = failed
            elif self._noticed < 0:
                print(
                    f"{who}waiting for the first reply of {self._where()} "
                    f"({time.monotonic() - started:.0f} s so far; timeout "
                    f"{self.options.timeout:g} s per attempt)",
                    file=sys.stderr,
                    flush=True,
                )
                self._noticed = 0
            self._first_reply_notice = loop.call_later(FIRST_REPLY_NOTICE, notice)

        self._first_reply_notice = loop.call_later(FIRST_REPLY_NOTICE, notice)

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            semaphore = self._semaphores[loop] = asyncio.Semaphore(self.options.concurrency)
        return semaphore

    async def _propose(self, messages: list[dict[str, Any]], meter: UsageMeter) -> OperatorReply:
        options = self.options
        attempts = 0
        billed = _Billed()
        prompt_bound = _prompt_token_bound(messages)
        worst = None if self.price is None else self.price.cost(prompt_bound, options.max_tokens)

        def on_retry(state: tenacity.RetryCallState) -> None:
            self._stats.retries += 1

        def worth_retrying(exc: BaseException) -> bool:
            # Not once a call beside this one found the provider unusable (wrong key, no
            # server): the retry would only knock on the same door.
            return self._fatal is None and _classify(exc)[0] == "retry"

        retrying = tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception(worth_retrying),
            stop=tenacity.stop_after_attempt(options.max_retries + 1),
            wait=_Backoff(options.retry_base, options.retry_max),
            before_sleep=on_retry,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    if self._fatal is not None:  # found out while this call waited to retry
                        raise OperatorError(str(self._fatal))
                    await meter.open_attempt(
                        prompt_tokens=prompt_bound, max_tokens=options.max_tokens, cost_usd=worst
                    )
                    attempts += 1
                    usage: tuple[int, int] | None = None
                    sent = time.monotonic()
                    try:
                        response = await self._attempt(messages)
                        usage = _usage_of(response)
                        reply = self._reply(response, attempts)
                    except Exception as exc:
                        usage = usage or _usage_of_error(exc)
                        self._stats.errors += 1
                        self._stats.last_error = self._describe(exc)
                        if _being_cancelled():
                            # The call is being cancelled (its node stops) and a library
                            # reported a failure instead: it ends cancelled, never retried.
                            raise asyncio.CancelledError from exc
                        self._count_failure(exc, sent)
                        raise
                    else:  # a reply: the streak of failures, if any, is over
                        self._streak = _Streak()
                    finally:
                        # Every attempt is settled, failed and cancelled ones too: a provider
                        # that reports usage on a failure has billed it.
                        cost = billed.add(usage, self.price)
                        meter.settle_attempt(
                            prompt_tokens=usage and usage[0],
                            completion_tokens=usage and usage[1],
                            cost_usd=cost,
                        )
        except BudgetExhausted as exc:
            # A cap refused the next attempt: the call ends here, what it used is settled.
            raise BudgetExhausted(str(exc)) from None
        except OperatorError:
            raise
        except Exception as exc:
            kind, _ = _classify(exc)
            if kind != "fatal" and self._fatal is not None:
                # This failure, or one beside it, ended the node's streak of failures (or
                # found the provider unusable): the call is not given back to be made again.
                raise OperatorError(str(self._fatal)) from exc
            if kind == "fatal":
                self._fatal = OperatorError(self._fatal_message(exc))
                raise self._fatal from exc
            self._stats.transient_failures += 1
            what = "gave up after" if kind == "retry" else "not retried, failed after"
            raise TransientOperatorFailure(
                f"{self.model}: {what} {attempts} attempt(s): {self._describe(exc)}",
                attempts=attempts,
            ) from exc
        self._stats.calls += 1
        return attrs.evolve(
            reply,
            prompt_tokens=billed.prompt,
            completion_tokens=billed.completion,
            cost_usd=billed.cost,
        )

    def _count_failure(self, exc: BaseException, sent: float) -> None:
        """Adds a failed attempt to the streak; past a bound, the provider is fatal.

        Fatal failures are not counted: they stop the node on their own, with their cause.
        Rate limits (429) count towards the time bound only: they say "later", not "broken",
        and a provider that keeps saying it (an exhausted quota) is ended by the time bound.
        """
        if _classify(exc)[0] == "fatal" or self._fatal is not None:
            return
        self._streak.add(_short_cause(exc), sent, self._request_url(exc))
        options, streak = self.options, self._streak
        failing = time.monotonic() - streak.started
        broken = streak.count - streak.causes.get(RATE_LIMITED, 0)
        if options.max_consecutive_failures and broken >= options.max_consecutive_failures:
            why = ""
        elif options.max_seconds_without_reply and failing >= options.max_seconds_without_reply:
            why = f"no completed call in {failing:.0f} s: "
        else:
            return
        who = f"{self.node}: " if self.node else ""
        url = streak.url or self.options.api_base or "the provider's default endpoint"
        self._fatal = OperatorError(
            _truncate(f"{who}{why}{streak.summary()} from {url} ({self.model})", 400)
        )

    def _request_url(self, exc: BaseException) -> str | None:
        """The URL the failed request went to, as the HTTP client reports it (``None``: not
        known).

        litellm attaches a placeholder request to errors it builds without one (see
        :data:`_PLACEHOLDER_URLS`), which must not be reported as where the request went; with
        an ``api_base``, only a URL under it is believed.
        """
        base = self.options.api_base
        for cause in _causes(exc):
            try:
                url = str(cause.response.request.url)  # type: ignore[attr-defined]
            except (AttributeError, RuntimeError):  # no response, or httpx has no request
                continue
            if url.rstrip("/") in _PLACEHOLDER_URLS:
                continue
            if base is None or url.startswith(base.rstrip("/")):
                return url
        return None

    async def _attempt(self, messages: list[dict[str, Any]]) -> Any:
        options = self.options
        kwargs: dict[str, Any] = dict(options.params)
        kwargs.update(
            model=self.model,
            messages=messages,
            temperature=options.temperature,
            max_tokens=options.max_tokens,
            timeout=options.timeout,
            # Retries are ours (counted, budgeted, with Retry-After); neither litellm nor the
            # OpenAI SDK underneath may retry on its own or the attempt counts would lie.
            num_retries=0,
            max_retries=0,
        )
        if options.api_base:
            kwargs["api_base"] = options.api_base
        if options.api_key:
            kwargs["api_key"] = options.api_key
        elif self._needs_placeholder_key():
            # Local OpenAI-compatible servers (llama.cpp, MLX, LM Studio) accept any key, but
            # the OpenAI SDK refuses to send a request without one.
            kwargs["api_key"] = "sk-no-key-local-server"
        # litellm's own timeout does not cover every provider path (custom handlers, slow
        # streaming of headers); asyncio.timeout makes the limit hard. Not wait_for: on
        # Python 3.11 it runs the call in a task of its own, and when the call is cancelled
        # just as its reply fails, it drops the cancellation and re-raises the failure inside
        # its `except CancelledError`, which overwrites the failure's __context__ — a refused
        # connection then lost the ConnectionRefusedError that marks it fatal, looked
        # transient and was retried after its node had stopped.
        try:
            async with asyncio.timeout(options.timeout):
                return await self._litellm.acompletion(**kwargs)
        except TimeoutError as exc:
            raise _HardTimeout(f"no reply within {options.timeout:g} s") from exc

    def _needs_placeholder_key(self) -> bool:
        """True for ``openai/...`` at a loopback ``api_base`` with no key anywhere."""
        if not self.model.startswith("openai/") or not self.options.api_base:
            return False
        if os.environ.get("OPENAI_API_KEY"):
            return False
        return is_loopback(self.options.api_base)

    def _reply(self, response: Any, attempts: int) -> OperatorReply:
        try:
            choice = response.choices[0]
            text = choice.message.content
        except (AttributeError, IndexError, KeyError, TypeError) as exc:
            raise _MalformedReply(f"reply without choices: {exc!r}") from exc
        usage = getattr(response, "usage", None)
        prompt_tokens = _int(getattr(usage, "prompt_tokens", 0))
        completion_tokens = _int(getattr(usage, "completion_tokens", 0))
        return OperatorReply(
            text=text if isinstance(text, str) else "",
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            attempts=attempts,
            model=str(getattr(response, "model", "") or ""),
        )

    def _find_price(self) -> Price | None:
        """The model's price: the ``price``/``prices`` option, else litellm's bundled table;
        ``None`` (with one warning per model) when neither knows it."""
        options = self.options
        price = options.price or options.prices.get(self.model)
        if price is not None:
            return price
        try:
            info = self._litellm.get_model_info(self.model)
            price = Price(
                input=float(info["input_cost_per_token"]) * 1e6,
                output=float(info["output_cost_per_token"]) * 1e6,
            )
        except Exception:  # not in the table (local servers, custom providers, new models)
            price = None
        if price is None or not (math.isfinite(price.input) and math.isfinite(price.output)):
            if self.model not in _UNPRICED_WARNED:
                _UNPRICED_WARNED.add(self.model)
                print(
                    f"warning: {self.model} has no known price: its cost is recorded as unknown "
                    f"(null); give one with --price {self.model}=IN,OUT (USD per million "
                    "tokens)",
                    file=sys.stderr,
                )
            return None
        return price

    def _describe(self, exc: BaseException) -> str:
        bug = _plugin_bug(exc)
        if bug is not None:
            exc = bug
        status = getattr(exc, "status_code", None)
        text = str(getattr(exc, "message", None) or exc or type(exc).__name__)
        text = _one_line(_OBJECT_REPR.sub("", text.split("Traceback (most recent call last)")[0]))
        # litellm prefixes "litellm.RateLimitError: RateLimitError: OpenAIException - "; keep
        # the provider's own words.
        text = re.sub(r"^(litellm\.\w+:\s*)?(\w+Error:\s*)?(\w+Exception\s*-\s*)?", "", text)
        prefix = f"{type(exc).__name__}"
        if isinstance(status, int):
            prefix += f" ({status})"
        return _truncate(f"{prefix}: {text}" if text else prefix)

    def _fatal_message(self, exc: BaseException) -> str:
        _, cause = _classify(exc)
        provider = self.model.split("/", 1)[0]
        url = self.options.api_base
        where = f" at {url}" if url else ""
        if cause == "no API key":
            # The provider's own words add nothing and name a dozen variables; name ours.
            key = self.options.api_key_env or KEY_ENV_VARS.get(provider)
            hint = f"set {key}" if key else "set the provider's API key variable"
            return f"{self.model}{where}: no API key: {hint} (or the api_key_env option)"
        if cause == "authentication failed":
            if self.options.api_key_env:
                cause += f" (check {self.options.api_key_env})"
            elif self.options.api_key:
                cause += " (check the api_key option)"
            elif provider in KEY_ENV_VARS:
                cause += f" (check {KEY_ENV_VARS[provider]})"
            else:
                cause += " (check the provider's API key)"
        elif cause == "model not found":
            cause += " (check the model string and --api-base)"
        elif cause in ("connection refused", "DNS lookup failed"):
            # litellm's own words ("InternalServerError (500): Connection error.") would
            # mislead: no server answered at all. The socket error says what happened.
            host = urllib.parse.urlsplit(url).hostname if url else None
            # The socket's own error: the wrappers around it add object reprs (aiohttp's
            # "ssl:<ssl.SSLContext object at 0x…>", even for a plain-http URL).
            socket_error = next(
                c for c in _causes(exc) if isinstance(c, ConnectionRefusedError | socket.gaierror)
            )
            detail = _OBJECT_REPR.sub("", socket_error.strerror or str(socket_error)).strip()
            hint = "is the server running? " if cause == "connection refused" else ""
            if cause == "DNS lookup failed" and host:
                cause += f" for {host}"
            return _truncate(f"{self.model}{where}: {cause} ({hint}check --api-base): {detail}")
        return _truncate(f"{self.model}{where}: {cause}: {self._describe(exc)}", 400)


class _HardTimeout(Exception):
    """The call outlived ``timeout`` (asyncio.wait_for fired before litellm's own timeout)."""


class _MalformedReply(Exception):
    """The provider answered 200 with something that is not a chat completion."""


def _classify(exc: BaseException) -> tuple[str, str]:
    """``("retry" | "giveup" | "fatal", cause)`` for a failed attempt.

    The HTTP status decides where there is one, because litellm maps the same status to
    different exception classes depending on the provider (a 403 from an OpenAI-compatible
    server arrives as a plain ``APIError``).
    """
    name = type(exc).__name__
    if name in ("ContextWindowExceededError", "ContentPolicyViolationError"):
        # Request-specific: retrying the same prompt cannot help, the next prompt may work.
        return "giveup", "context window exceeded" if "Context" in name else "content refused"
    if isinstance(exc, _HardTimeout | _MalformedReply | TimeoutError | json.JSONDecodeError):
        return "retry", "transient"
    if _plugin_bug(exc) is not None:
        return "fatal", "provider plugin error"
    if _MISSING_KEY.search(str(getattr(exc, "message", None) or exc)):
        # litellm reports a key missing on our side as a 500; retrying cannot conjure one.
        return "fatal", "no API key"
    unreachable = _unreachable(exc)
    if unreachable is not None:
        return "fatal", unreachable
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and not name.startswith(("APIConnection", "Timeout")):
        if status == 401 or name == "AuthenticationError":
            return "fatal", "authentication failed"
        if status == 403 or name == "PermissionDeniedError":
            return "fatal", "permission denied"
        if status == 404 or name == "NotFoundError":
            return "fatal", "model not found"
        if status == 402:
            return "fatal", "payment required"
        if status in RETRYABLE_STATUSES or status >= 500:
            return "retry", "transient"
        if 400 <= status < 500:
            return "fatal", "request rejected"
    if name in ("AuthenticationError", "PermissionDeniedError", "NotFoundError"):
        return "fatal", {
            "AuthenticationError": "authentication failed",
            "PermissionDeniedError": "permission denied",
            "NotFoundError": "model not found",
        }[name]
    if name in (
        "BadRequestError",
        "UnprocessableEntityError",
        "UnsupportedParamsError",
        "LiteLLMUnknownProvider",
        "BudgetExceededError",
    ):
        return "fatal", "request rejected"
    module = type(exc).__module__ or ""
    if module.startswith(("litellm", "openai", "httpx", "httpcore", "aiohttp")) or isinstance(
        exc, OSError | ConnectionError
    ):
        # Connection resets, timeouts, unparsable bodies and provider hiccups.
        return "retry", "transient"
    # Anything else is a bug (ours, a custom provider's): retrying would only hide it.
    return "fatal", "unexpected error"


def _short_cause(exc: BaseException) -> str:
    """A failed attempt in a few words, for counting: ``HTTP 500``, ``timeout``, ..."""
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    if isinstance(exc, _HardTimeout | TimeoutError) or name.startswith("Timeout"):
        return "timeout"
    if isinstance(exc, _MalformedReply | json.JSONDecodeError):
        return "malformed reply"
    if name.startswith("APIConnection"):
        return "connection error"
    if isinstance(status, int):
        return f"HTTP {status}"
    if name in ("ContextWindowExceededError", "ContentPolicyViolationError"):
        return _classify(exc)[1]
    return name


def _being_cancelled() -> bool:
    """True if the running task has been asked to stop (whatever the code below it made of it)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _unreachable(exc: BaseException) -> str | None:
    """``"connection refused"`` or ``"DNS lookup failed"`` if that is what ``exc`` comes from.

    litellm wraps these in a 500 ``InternalServerError`` whose message is only "Connection
    error."; the socket error is further down the chain of causes.
    """
    for cause in _causes(exc):
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, socket.gaierror):
            return "DNS lookup failed"
    return None


def _causes(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from, outermost first."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


#: Exceptions that mean a programming error when raised by code outside these libraries.
_BUG_TYPES = (
    TypeError,
    ValueError,
    KeyError,
    AttributeError,
    NameError,
    IndexError,
    AssertionError,
    NotImplementedError,
)
_LIBRARY_MODULES = (
    "litellm",
    "openai",
    "httpx",
    "httpcore",
    "anyio",
    "asyncio",
    "aiohttp",
    "pydantic",
    "json",
    "tenacity",
    "dei_llm",
)


def _plugin_bug(exc: BaseException) -> BaseException | None:
    """The programming error behind ``exc`` if it was raised in a custom provider's code.

    litellm wraps whatever a ``CustomLLM`` raises into ``APIConnectionError``, which looks
    retryable; a ``KeyError`` in a plugin is a bug that retrying would only hide.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if type(current).__module__ == "builtins" and isinstance(current, _BUG_TYPES):
            frame = current.__traceback__
            while frame is not None and frame.tb_next is not None:
                frame = frame.tb_next
            module = str(frame.tb_frame.f_globals.get("__name__", "")) if frame else ""
            if module and not module.startswith(_LIBRARY_MODULES):
                return current
        current = current.__cause__ or current.__context__
    return None


def _retry_after(exc: BaseException | None) -> float | None:
    """Seconds the server asked us to wait (``Retry-After`` / ``retry-after-ms``), if any."""
    if exc is None:
        return None
    for headers in (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
        getattr(exc, "headers", None),
    ):
        if not headers:
            continue
        try:
            millis = headers.get("retry-after-ms") or headers.get("Retry-After-Ms")
            value = headers.get("retry-after") or headers.get("Retry-After")
        except AttributeError:
            continue
        if millis is not None:
            try:
                return max(float(millis) / 1000.0, 0.0)
            except ValueError:
                pass
        if value is not None:
            try:
                return max(float(value), 0.0)
            except ValueError:
                parsed = email.utils.parsedate_to_datetime(value) if value.strip() else None
                if parsed is not None:
                    return max(parsed.timestamp() - time.time(), 0.0)
    return None


@attrs.frozen
class _Backoff:
    """Wait before retry ``n``: the server's ``Retry-After`` if given, else ``base * 2**(n-1)``
    with "equal jitter" (half fixed, half random) so that nodes hitting the same limit spread
    out; both capped at ``cap``."""

    base: float
    cap: float

    def __call__(self, state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        asked = _retry_after(exc)
        if asked is not None:
            # A little jitter on top so concurrent calls told the same thing do not stampede.
            return min(asked + random.uniform(0, self.base * 0.1), self.cap)
        step = min(self.base * 2 ** (state.attempt_number - 1), self.cap)
        return step / 2 + random.uniform(0, step / 2)


class _NoMeter:
    """Stands in for the ledger's meter when the operator is used without one (library use)."""

    async def open_attempt(self, **_: Any) -> None:
        return None

    def settle_attempt(self, **_: Any) -> None:
        return None


@attrs.define
class _Billed:
    """What one call's attempts were billed so far (tokens as reported; cost at the price)."""

    prompt: int = 0
    completion: int = 0
    cost: float | None = 0.0

    def add(self, usage: tuple[int, int] | None, price: Price | None) -> float | None:
        """Adds one attempt's usage; returns its cost (``None``: unknown price)."""
        if usage is None:
            return 0.0  # nothing reported, nothing to price
        self.prompt += usage[0]
        self.completion += usage[1]
        if price is None:
            if usage[0] or usage[1]:
                self.cost = None
                return None
            return 0.0
        cost = price.cost(*usage)
        if self.cost is not None:
            self.cost += cost
        return cost


def _usage_of(response: Any) -> tuple[int, int] | None:
    """``(prompt_tokens, completion_tokens)`` a response reported, or ``None``."""
    usage = (
        response.get("usage") if isinstance(response, Mapping) else getattr(response, "usage", None)
    )
    if usage is None:
        return None
    if isinstance(usage, Mapping):
        return _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens"))
    return _int(getattr(usage, "prompt_tokens", 0)), _int(getattr(usage, "completion_tokens", 0))


def _usage_of_error(exc: BaseException) -> tuple[int, int] | None:
    """The usage a failed attempt's HTTP reply reported (some providers bill failures)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        response = getattr(current, "response", None)
        try:
            body = json.loads(response.text) if response is not None else None
        except Exception:  # not JSON, not an httpx response, or a body already consumed
            body = None
        if isinstance(body, Mapping) and isinstance(body.get("usage"), Mapping):
            return _usage_of(body)
        current = current.__cause__ or current.__context__
    return None


def _prompt_token_bound(messages: list[dict[str, Any]]) -> int:
    """An upper bound of the prompt's tokens for any tokenizer: one per UTF-8 byte (no token
    is shorter than a byte) plus a margin for the chat template's tokens."""
    size = sum(len(str(message.get("content", "")).encode()) for message in messages)
    return size + 8 * len(messages) + 16


def _int(value: Any) -> int:
    try:
        return max(int(value or 0), 0)
    except (TypeError, ValueError):
        return 0


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _truncate(text: str, limit: int = _MESSAGE_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
