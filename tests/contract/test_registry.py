"""The plugin registry: typed lookups that name what is registered, every registration
attributed to its plugin, and observers that fail muted instead of stopping the caller
(:mod:`dei_framework.contract.registry`, loaded by :mod:`dei_framework.plugin.manager`)."""

from __future__ import annotations

import pytest

from dei_framework.contract.domain import DomainSpec
from dei_framework.contract.errors import ConfigError
from dei_framework.contract.operators import OperatorSpec
from dei_framework.plugin.hookspecs import hookimpl
from dei_framework.plugin.manager import load_plugins


def _domain(name: str, description: str = "") -> DomainSpec:
    return DomainSpec(name=name, factory=lambda options: None, description=description)


def _operator(name: str, **fields) -> OperatorSpec:
    return OperatorSpec(name=name, factory=lambda ctx: None, **fields)


class Domains:
    """Registers two domains (out of name order) and an operator family."""

    @hookimpl
    def dei_domains(self):
        return [_domain("beta", "the second"), _domain("alpha", "the first")]

    @hookimpl
    def dei_operators(self):
        return [
            _operator("remote", accepts=lambda spec: spec.startswith("remote/")),
            _operator("remote/exact"),
            _operator("local", offline=True),
        ]


class Again:
    """Registers a domain another plugin registered first, and one without a name."""

    @hookimpl
    def dei_domains(self):
        return [_domain("alpha", "a second alpha"), _domain("")]


class NotAList:
    @hookimpl
    def dei_domains(self):
        return {"name": "gamma"}


@pytest.fixture(scope="module")
def registry():
    return load_plugins([Domains()], entry_points=False)


# --- lookups -------------------------------------------------------------------------------------


def test_a_lookup_gives_the_registered_spec(registry) -> None:
    assert registry.domain("alpha").description == "the first"
    assert registry.domains["alpha"].plugin == f"{__name__}.Domains"


LOOKUPS = {
    "domain": ("domain", "domains"),
    "transport": ("transport", "transports"),
    "sharing_policy": ("sharing policy", "sharing"),
    "allocator": ("budget allocator", "allocators"),
    "selector": ("parent selector", "selectors"),
    "archive": ("archive", "archives"),
    "evaluator": ("evaluation backend", "evaluators"),
    "operator": ("operator", "operators"),
}


@pytest.mark.parametrize("lookup", LOOKUPS)
def test_an_unknown_name_is_one_config_error_listing_what_is_registered(
    registry, lookup: str
) -> None:
    kind, table = LOOKUPS[lookup]
    known = ", ".join(sorted(getattr(registry, table))) or "none"

    with pytest.raises(ConfigError) as refused:
        getattr(registry, lookup)("nope")

    assert str(refused.value) == f"unknown {kind} 'nope'; registered: {known}"


def test_the_lists_are_sorted_and_an_empty_one_says_none(registry) -> None:
    with pytest.raises(ConfigError, match="^unknown domain 'x'; registered: alpha, beta$"):
        registry.domain("x")
    with pytest.raises(ConfigError, match="^unknown transport 'x'; registered: none$"):
        registry.transport("x")


def test_an_unknown_name_mentions_the_plugins_that_failed() -> None:
    registry = load_plugins([Domains(), NotAList()], entry_points=False)
    with pytest.raises(ConfigError) as refused:
        registry.domain("gamma")
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(
        "unknown domain 'gamma'; registered: alpha, beta (plugin "
        f"problems: plugin '{__name__}.NotAList' failed in dei_domains: "
        "TypeError('expected a list, got dict')"
    )


def test_an_operator_is_found_by_name_first_then_by_the_family_claiming_it(registry) -> None:
    assert registry.operator("remote/exact").name == "remote/exact"
    assert registry.operator("remote/gpt-4").name == "remote"
    with pytest.raises(ConfigError, match="registered: local, remote, remote/exact$"):
        registry.operator("other/gpt-4")


# --- registration --------------------------------------------------------------------------------


def test_a_name_registered_twice_keeps_the_plugin_pluggy_calls_first() -> None:
    # pluggy calls the plugin registered last first (as pytest does): it wins a name.
    registry = load_plugins([Again(), Domains()], entry_points=False)

    assert registry.domain("alpha").description == "the first"
    kept, again = f"{__name__}.Domains", f"{__name__}.Again"
    assert registry.problems == [
        f"plugin {again!r} registers domain 'alpha', already registered by {kept!r}; "
        f"keeping {kept!r}'s (pluggy asks the plugin registered last first)",
        f"plugin {again!r} registered a domain without a name",
    ]


def test_two_plugins_of_one_class_get_names_that_tell_them_apart() -> None:
    registry = load_plugins([Again(), Again()], entry_points=False)
    name = f"{__name__}.Again"
    assert registry.domains["alpha"].plugin == f"{name}#2"
    assert (
        f"plugin {name!r} registers domain 'alpha', already registered by '{name}#2'; "
        f"keeping '{name}#2''s (pluggy asks the plugin registered last first)"
    ) in registry.problems


def test_the_listing_attributes_each_entry_to_its_plugin_in_name_order(registry) -> None:
    listing = registry.listing()
    assert [row["name"] for row in listing["domains"]] == ["alpha", "beta"]
    assert listing["domains"][0] == {
        "name": "alpha",
        "plugin": f"{__name__}.Domains",
        "description": "the first",
    }
    assert {row["name"]: row["offline"] for row in listing["operators"]}["local"] is True


# --- observers -----------------------------------------------------------------------------------


class Counting:
    def __init__(self) -> None:
        self.seen: list[dict] = []

    @hookimpl
    def dei_candidate_evaluated(self, event):
        self.seen.append(event)


class Failing:
    def __init__(self) -> None:
        self.calls = 0

    @hookimpl
    def dei_candidate_evaluated(self, event):
        self.calls += 1
        raise RuntimeError("observer bug")


def test_a_failing_observer_is_reported_once_and_muted_and_the_others_go_on(capsys) -> None:
    counting, failing = Counting(), Failing()
    registry = load_plugins([failing, counting], entry_points=False)  # counting is called first

    for index in range(3):
        registry.notify("dei_candidate_evaluated", event={"index": index})

    assert [event["index"] for event in counting.seen] == [0, 1, 2]
    assert failing.calls == 1
    message = (
        f"plugin '{__name__}.Failing' failed in dei_candidate_evaluated: "
        "RuntimeError('observer bug'); its dei_candidate_evaluated is disabled"
    )
    assert registry.problems == [message]
    assert capsys.readouterr().err == f"warning: {message}\n"


def test_observers_after_a_failing_one_still_get_the_event_once(capsys) -> None:
    # pluggy calls the last registered first: both failing observers run before `counting`,
    # and stop pluggy's call each time they raise.
    counting, first, second = Counting(), Failing(), Failing()
    registry = load_plugins([counting, first, second], entry_points=False)

    for index in range(3):
        registry.notify("dei_candidate_evaluated", event={"index": index})

    assert [event["index"] for event in counting.seen] == [0, 1, 2]  # each once, none lost
    assert (first.calls, second.calls) == (1, 1)
    assert len(registry.problems) == 2
