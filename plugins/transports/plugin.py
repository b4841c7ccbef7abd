"""The transports plugin: registers the ``inmemory`` and ``axl`` transports and ``--axl-api``.

Options (``--transport-opt KEY=VALUE`` or a mapping from the run configuration) are shared by
both transports where they concern GossipSub: ``d``, ``d_low``, ``d_high``, ``d_lazy``,
``heartbeat`` (seconds), ``mcache_len``, ``mcache_gossip``, ``seen_ttl``, ``prune_backoff``,
``fanout_ttl`` (heartbeats), ``flood_publish``, ``seed``. The in-memory hub adds ``loss``
(probability), ``latency`` (seconds, or ``"low,high"``); AXL adds ``axl_api`` (URL of the local
node's API), ``allow_remote_api``, ``poll_interval``, ``max_poll_interval``, ``send_retries``,
``send_timeout``, ``send_attempt_timeout``, ``start_timeout`` and ``members`` (the run's
membership: AXL public keys allowed on the topic; the ensemble fills it from the run config's
``members``). The in-memory hub only connects the run's own nodes, so it has no membership to
enforce (the envelope check still applies the run's ``members`` to signing keys).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click
from dei_transports.gossipsub import GossipSubParams, GossipSubRouter
from dei_transports.inmemory import Hub

from dei_framework.contract.cli_options import RunOption
from dei_framework.contract.context import FactoryContext
from dei_framework.contract.errors import ConfigError
from dei_framework.contract.transport import LocalNetwork, Transport, TransportSpec
from dei_framework.plugin.hookspecs import hookimpl


def _latency(value: Any) -> tuple[float, float]:
    if value is None:
        return (0.0, 0.0)
    if isinstance(value, int | float):
        return (float(value), float(value))
    if isinstance(value, str):
        parts = [float(v) for v in value.replace(":", ",").split(",") if v.strip()]
    else:
        parts = [float(v) for v in value]
    if len(parts) == 1:
        parts = parts * 2
    if len(parts) != 2 or parts[0] < 0 or parts[1] < parts[0]:
        raise ConfigError(f"latency must be SECONDS or LOW,HIGH (got {value!r})")
    return (parts[0], parts[1])


def _params(options: Mapping[str, Any]) -> GossipSubParams:
    try:
        return GossipSubParams.from_options(dict(options))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"invalid GossipSub option: {exc}") from None


def make_inmemory(node_names: Sequence[str], options: Mapping[str, Any]) -> list[Transport]:
    """One hub, one GossipSub router per node name (peer id = the node name).

    With default options nothing is lost or delayed.
    """
    params = _params(options)
    seed = int(options.get("seed", 0) or 0)
    loss = float(options.get("loss", 0.0) or 0.0)
    if not 0.0 <= loss < 1.0:
        raise ConfigError(f"loss must be in [0, 1) (got {loss})")
    if len(set(node_names)) != len(node_names):
        raise ConfigError("node names must be unique")
    hub = Hub(loss=loss, latency=_latency(options.get("latency")), seed=seed)
    for groups, start, end in _windows(options.get("partition"), "partition"):
        hub.partition([g.split(",") for g in groups.split("|")], start, end)
    for node, start, end in _windows(options.get("outage"), "outage"):
        if node not in node_names:
            raise ConfigError(f"outage: unknown node {node!r}")
        hub.outage(node, start, end)
    return [
        GossipSubRouter(hub.link(name), params, seed=seed * 7919 + index)
        for index, name in enumerate(node_names)
    ]


def _windows(value: Any, option: str) -> list[tuple[str, float, float]]:
    """Parses fault windows ``WHAT@START-END`` (seconds of hub time), ``;``-separated.

    ``partition=node-0,node-1|node-2@1-3`` splits the nodes in two groups from 1 s to 3 s;
    ``outage=node-2@0.5-2`` crashes ``node-2`` (it loses everything) from 0.5 s to 2 s.
    """
    windows = []
    for item in filter(None, str(value or "").split(";")):
        what, _, span = item.partition("@")
        start, _, end = span.partition("-")
        try:
            windows.append((what.strip(), float(start), float(end)))
        except ValueError:
            raise ConfigError(f"{option} takes WHAT@START-END in seconds, got {item!r}") from None
    return windows


def make_axl(node_names: Sequence[str], options: Mapping[str, Any]) -> list[Transport]:
    """One GossipSub router over the local AXL node given by ``axl_api`` (one node per process)."""
    from dei_transports.axl import AxlLink

    if len(node_names) != 1:
        raise ConfigError(
            f"the axl transport runs one node per process (got {len(node_names)}); "
            "start one dei-run per AXL node"
        )
    from dei_framework.net.envelope import EnvelopeError, parse_members

    api = options.get("axl_api") or "http://127.0.0.1:9002"
    try:
        members = parse_members(options.get("members"))
        link = AxlLink(
            api=str(api),
            allow_remote_api=_flag(options.get("allow_remote_api", False)),
            poll_interval=float(options.get("poll_interval", 0.005)),
            max_poll_interval=float(options.get("max_poll_interval", 0.1)),
            send_retries=int(options.get("send_retries", 4)),
            send_timeout=float(options.get("send_timeout", 10.0)),
            send_attempt_timeout=float(options.get("send_attempt_timeout", 1.0)),
            start_timeout=float(options.get("start_timeout", 5.0)),
        )
    except (TypeError, ValueError, EnvelopeError) as exc:
        raise ConfigError(f"invalid axl transport option: {exc}") from None
    if link.max_poll_interval < link.poll_interval or link.poll_interval <= 0:
        raise ConfigError("need 0 < poll_interval <= max_poll_interval")
    if link.send_attempt_timeout <= 0:
        raise ConfigError("send_attempt_timeout must be positive")
    return [GossipSubRouter(link, _params(options), seed=options.get("seed"), members=members)]


def axl_local_network(
    node_names: Sequence[str], options: Mapping[str, Any], home: Path
) -> LocalNetwork | None:
    """The one-machine AXL network of a run, unless an ``axl_api`` is given (the user's node)."""
    if options.get("axl_api"):
        return None
    from dei_transports.axlnode import AxlLocalNetwork

    return AxlLocalNetwork(names=list(node_names), home=home)


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in {"1", "true", "yes", "on"}
    return bool(value)


def _inmemory(ctx: FactoryContext) -> list[Transport]:
    """The ``inmemory`` factory: :func:`make_inmemory` for the run's nodes."""
    return make_inmemory(ctx.node_names, ctx)


def _axl(ctx: FactoryContext) -> list[Transport]:
    """The ``axl`` factory: :func:`make_axl` for the node of this process."""
    return make_axl(ctx.node_names, ctx)


@hookimpl
def dei_transports() -> list[TransportSpec]:
    """The transports this plugin provides."""
    return [
        TransportSpec(
            name="inmemory",
            factory=_inmemory,
            description="in-process: by virtual time (deterministic); with --delivery wallclock, "
            "GossipSub over a hub (options: loss, latency, seed, d, ...)",
            in_process=True,
        ),
        TransportSpec(
            name="axl",
            factory=_axl,
            description="GossipSub over a local AXL node's HTTP API (option axl_api=URL)",
            local_network=axl_local_network,
        ),
    ]


@hookimpl
def dei_run_options() -> list[RunOption]:
    """``--axl-api URL``: stored as the transport option ``axl_api``."""
    return [
        RunOption(
            option=click.Option(
                ["--axl-api"],
                help="With --transport axl: run one node over the AXL node at this API URL "
                "(without it, dei-run starts a loopback AXL node for every node).",
            ),
            target="transport_options",
        )
    ]
