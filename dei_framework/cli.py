"""The command line: ``dei-run`` (the main job) and the ``dei`` group (plugins, reports, ...).

Every error a user can cause ends as one line on stderr and exit status 1.
"""

from __future__ import annotations

import functools
import json
import secrets
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import click

from dei_framework.config import RunConfig, build_nodes, load_toml
from dei_framework.errors import ConfigError, DEIError
from dei_framework.plugins import PluginRegistry, load_plugins
from dei_framework.presets import PRESETS, get_preset, overridden

#: Defaults of ``dei-run`` options that a config file may also set.
DEFAULTS: dict[str, Any] = {
    "transport": "inmemory",
    "rounds": 3,
    "seed": 0,
    "sharing": "champion",
    "new_fraction": 0.1,
    "max_champions": 20,
    "checkpoint_seconds": 2.0,
}
#: Calls per node when neither ``--budget`` nor ``--iterations`` is given.
DEFAULT_CALLS_PER_NODE = 40
#: Nodes of the offline default run (operators cycled).
DEFAULT_NODES = 4


def fail(message: str, status: int = 1) -> None:
    """Prints one error line and exits with ``status``."""
    click.echo(f"error: {message}", err=True)
    sys.exit(status)


def user_errors(function: Callable) -> Callable:
    """Turns DEIError (and Ctrl-C) into one line and a non-zero exit, never a traceback."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except DEIError as exc:
            fail(str(exc), exc.exit_code)
        except KeyboardInterrupt:
            click.echo("interrupted; continue with: dei-run --resume <run dir>", err=True)
            sys.exit(130)

    return wrapper


@functools.cache
def registry() -> PluginRegistry:
    """The plugins, loaded once per process; problems are reported once on stderr."""
    loaded = load_plugins()
    for problem in loaded.problems:
        click.echo(f"warning: {problem}", err=True)
    return loaded


def _key_values(pairs: tuple[str, ...], flag: str) -> dict[str, Any]:
    """``KEY=VALUE`` flags into a dict; values parse as JSON where they can (numbers, bools)."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"{flag} takes KEY=VALUE, got {pair!r}")
        try:
            options[key.replace("-", "_")] = json.loads(value)
        except json.JSONDecodeError:
            options[key.replace("-", "_")] = value
    return options


# --- dei-run --------------------------------------------------------------------------------------

RUN_OPTIONS = [
    click.option("--domain", help="Search domain (see `dei plugins`)."),
    click.option("--transport", help="How nodes share champions: inmemory (default) or axl."),
    click.option("--nodes", type=int, help="Number of nodes (default: one per --operator; "
                 f"{DEFAULT_NODES} for the offline default)."),
    click.option("--operator", "operators", multiple=True, metavar="SPEC",
                 help="Operator of a node, repeatable and cycled over nodes: an offline operator "
                      "name (e.g. gp) or a litellm model string (e.g. openai/gpt-4.1-mini)."),
    click.option("--api-base",
                 help="Base URL for LLM operators (local OpenAI-compatible servers)."),
    click.option("--budget", type=int, help="Total operator calls, split equally across nodes."),
    click.option("--iterations", type=int,
                 help="Operator calls per node per round (instead of --budget)."),
    click.option("--rounds", type=int, help="Red Queen rounds per node (default 3)."),
    click.option("--sharing", help="Champion-sharing policy (default: champion)."),
    click.option("--axes", help="Comma-separated descriptor axes (default: the domain's)."),
    click.option("--seed", type=int, help="Run seed (default 0)."),
    click.option("--human-set", type=click.Path(file_okay=False),
                 help="Folder of reference programs for generality (Core War: human warriors)."),
    click.option("--domain-option", "domain_option", multiple=True, metavar="KEY=VALUE",
                 help="A domain option, repeatable."),
    click.option("--transport-option", "transport_option", multiple=True, metavar="KEY=VALUE",
                 help="A transport option, repeatable."),
    click.option("--axl-api", help="AXL node API URL for --transport axl "
                                   "(default http://127.0.0.1:9002)."),
    click.option("--common-ground", is_flag=True, default=None,
                 help="Re-evaluate merged-archive elites and champions against the domain's "
                      "reference set (always on in experiments)."),
    click.option("--eval-workers", type=int,
                 help="Evaluation worker processes (default: one per core; 0: in-process)."),
    click.option("--out", type=click.Path(file_okay=False),
                 help="Run directory (default: a new folder under ./runs/)."),
    click.option("--resume", type=click.Path(file_okay=False, exists=True),
                 help="Continue the run in this directory from its last checkpoint."),
    click.option("--replay", type=click.Path(file_okay=False, exists=True),
                 help="Rerun a recorded run from its recorded replies, without any network."),
    click.option("--config", "config_file", type=click.Path(dir_okay=False),
                 help="TOML file with any of these options (flags override it)."),
    click.option("--preset", type=click.Choice(sorted(PRESETS)),
                 help="A named protocol under the file and flags: dei-paper sets the DEI "
                      "paper's settings (docs/paper-protocol.md)."),
    click.option("--progress", type=click.Choice(["auto", "live", "lines", "json", "quiet"]),
                 default="auto", show_default=True,
                 help="Live display, one line per round, JSON lines on stdout, or nothing."),
    click.option("--no-report", is_flag=True, help="Do not write report.md and plots at the end."),
]  # fmt: skip


def run_options(function: Callable) -> Callable:
    for option in reversed(RUN_OPTIONS):
        function = option(function)
    return function


def resolve_config(flags: dict[str, Any], plugins: PluginRegistry) -> RunConfig:
    """Merges defaults, the TOML file and flags (in that order of precedence, flags last)."""
    file: dict[str, Any] = load_toml(flags["config_file"]) if flags.get("config_file") else {}
    file = {key.replace("-", "_"): value for key, value in file.items()}
    known = {"domain", "transport", "nodes", "operator", "operators", "api_base", "budget",
             "iterations", "rounds", "sharing", "axes", "seed", "human_set", "eval_workers",
             "new_fraction", "max_champions", "checkpoint_seconds", "node", "domain_options",
             "transport_options", "sharing_options", "operator_options", "axl_api", "out",
             "common_ground", "preset"}
    unknown = set(file) - known
    if unknown:
        raise ConfigError(f"config file: unknown keys {sorted(unknown)}")

    preset = get_preset(flags.get("preset") or file.get("preset"))

    def mine(name: str) -> Any:
        value = flags.get(name)
        if value is None or value == ():
            value = file.get(name)
        return value

    def pick(name: str) -> Any:
        value = mine(name)
        if value is None and preset is not None:
            value = preset.settings.get(name)
        return DEFAULTS.get(name) if value is None else value

    domain = pick("domain")
    if not domain:
        raise ConfigError("no domain given: use --domain (see `dei plugins`)")
    plugins.domain(domain)
    operators = list(flags.get("operators") or file.get("operators") or file.get("operator") or [])
    if isinstance(operators, str):
        operators = [operators]
    node_tables = list(file.get("node", []))
    count = pick("nodes")
    if not operators and not node_tables:
        operators = default_operators(plugins, domain)
        count = count or DEFAULT_NODES
    common = {**(preset.operator_options if preset else {}), **file.get("operator_options", {})}
    if pick("api_base"):
        common["api_base"] = pick("api_base")
    nodes = build_nodes(count=count, operators=operators, node_tables=node_tables,
                        common_options=common)  # fmt: skip
    if pick("transport") != "inmemory" and not any("name" in table for table in node_tables):
        # One node per process across machines: every draw derives from (seed, node name), so
        # identical default names would make same-operator nodes search identically.
        suffix = secrets.token_hex(3)
        nodes = tuple(attrs.evolve(node, name=f"{node.name}-{suffix}") for node in nodes)
    iterations = pick("iterations")
    budget = mine("budget") if iterations is not None else pick("budget")
    if budget is None and iterations is None:
        budget = DEFAULT_CALLS_PER_NODE * len(nodes)
    domain_options = {**(preset.domain_options if preset else {}),
                      **file.get("domain_options", {})}  # fmt: skip
    if pick("human_set"):
        domain_options["human_set"] = str(Path(pick("human_set")).resolve())
    domain_options.update(_key_values(flags.get("domain_option") or (), "--domain-option"))
    transport_options = dict(file.get("transport_options", {}))
    if pick("axl_api"):
        transport_options["axl_api"] = pick("axl_api")
    transport_options.update(_key_values(flags.get("transport_option") or (),
                                         "--transport-option"))  # fmt: skip
    if preset is not None:
        chosen = {name: mine(name) for name in preset.settings}
        chosen["domain_options"] = {**file.get("domain_options", {}),
                                    **_key_values(flags.get("domain_option") or (), "")}
        changed = overridden(preset, chosen)
        if changed:
            click.echo(f"warning: not the {preset.name} protocol any more: "
                       + ", ".join(changed), err=True)  # fmt: skip
    axes = pick("axes") or ()
    if isinstance(axes, str):
        axes = tuple(a.strip() for a in axes.split(",") if a.strip())
    return RunConfig(
        domain=domain, transport=pick("transport"), nodes=nodes, rounds=pick("rounds"),
        budget=budget, iterations=iterations, seed=pick("seed"), sharing=pick("sharing"),
        sharing_options=file.get("sharing_options", {}), axes=axes,
        new_fraction=pick("new_fraction"), max_champions=pick("max_champions"),
        eval_workers=pick("eval_workers"), domain_options=domain_options,
        transport_options=transport_options, checkpoint_seconds=pick("checkpoint_seconds"),
        common_ground=bool(pick("common_ground")),
    )  # fmt: skip


def warn_ignored(flags: dict[str, Any], *, keep: tuple[str, ...]) -> None:
    """Warns about flags a recorded configuration overrides (on --resume and --replay)."""
    ignored = sorted(
        f"--{name.replace('_', '-')}" for name, value in flags.items()
        if name not in keep and value not in (None, (), False)
    )  # fmt: skip
    if ignored:
        click.echo("warning: the recorded configuration is used; ignoring " + ", ".join(ignored),
                   err=True)  # fmt: skip


def default_operators(plugins: PluginRegistry, domain: str) -> list[str]:
    """The offline operators that work with ``domain`` (the offline default ensemble)."""
    names = [
        name for name, entry in sorted(plugins.operators.items())
        if entry.spec.offline and entry.spec.default
        and (not entry.spec.domains or domain in entry.spec.domains)
    ]  # fmt: skip
    if not names:
        raise ConfigError(f"no offline operator is registered for domain {domain!r}; "
                          "give one with --operator")  # fmt: skip
    return names


def default_out(domain: str) -> Path:
    return Path("runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-{domain}"


@click.command(name="dei-run", context_settings={"help_option_names": ["-h", "--help"]})
@run_options
@user_errors
def dei_run(**flags: Any) -> None:
    """Run a DEI ensemble: N nodes, each bound to its own operator, sharing round champions.

    With only --domain, runs a small offline ensemble of the domain's offline operators.
    """
    from dei_framework.ensemble import run
    from dei_framework.progress import make_progress
    from dei_framework.runlog import RunDir

    plugins = registry()
    resume_dir, replay_dir = flags.get("resume"), flags.get("replay")
    if resume_dir and replay_dir:
        raise ConfigError("--resume and --replay exclude each other")
    if resume_dir or replay_dir:
        warn_ignored(flags, keep=("resume", "replay", "out", "progress", "no_report"))
    if resume_dir:
        config = RunConfig.from_json(RunDir(resume_dir).read_config())
        out = Path(resume_dir)
    elif replay_dir:
        config = RunConfig.from_json(RunDir(replay_dir).read_config())
        out = Path(flags["out"]) if flags.get("out") else Path(replay_dir) / "replay"
    else:
        config = resolve_config(flags, plugins)
        out = Path(flags["out"]) if flags.get("out") else default_out(config.domain)
        if (out / "config.json").exists():
            raise ConfigError(f"{out} already holds a run; use --resume {out} or another --out")
    progress = make_progress(flags.get("progress") or "auto", config)
    with progress:
        summary = run(config, out, registry=plugins, resume=bool(resume_dir),
                      replay_from=replay_dir, progress=progress.update)  # fmt: skip
    for name, node in summary["nodes"].items():
        if node.get("stopped"):
            click.echo(f"warning: node {name} stopped early: {node['stopped']}", err=True)
    report = None
    if not flags.get("no_report"):
        report = write_report(out)
    budget = summary["budget"]
    click.echo(
        f"done: {len(summary['nodes'])} nodes, {budget['calls']}/{budget['limit']} calls, "
        f"merged coverage {summary['merged'].get('coverage', 0):.1%}, "
        f"QD-score {summary['merged'].get('qd_score', 0):.2f}"
    )
    click.echo(f"summary: {out / 'summary.json'}")
    if report:
        click.echo(f"report: {report}")


def write_report(run_dir: Path) -> Path | None:
    """Writes the run's report if the report module is available; returns its path."""
    try:
        from dei_framework.report import write_run_report
    except ImportError:
        return None
    return write_run_report(run_dir)


# click >= 8.2 raises this for a bare group invocation; it is a request for help, not an error.
_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())


def _standalone(command: click.Command, prog_name: str) -> None:
    """Runs a click command so that usage errors too end as one line and exit status 1."""
    try:
        result = command.main(prog_name=prog_name, standalone_mode=False)
    except _NO_ARGS_IS_HELP as exc:
        click.echo(exc.format_message())
        sys.exit(0)
    except click.ClickException as exc:
        hint = f" (see {prog_name} --help)" if isinstance(exc, click.UsageError) else ""
        fail(f"{exc.format_message()}{hint}")
    except click.exceptions.Abort:
        fail("aborted")
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    sys.exit(result if isinstance(result, int) else 0)


def dei_run_main() -> None:
    """Console script entry point of ``dei-run``."""
    _standalone(dei_run, "dei-run")


# --- dei ------------------------------------------------------------------------------------------


class PluginGroup(click.Group):
    """The ``dei`` group: built-in commands plus those plugins contribute."""

    def _plugin_commands(self) -> dict[str, click.Command]:
        return {command.name: command for command in registry().cli_commands()
                if isinstance(command, click.Command) and command.name}  # fmt: skip

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._plugin_commands()})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        return super().get_command(ctx, name) or self._plugin_commands().get(name)


@click.group(cls=PluginGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="dei-framework")
def dei() -> None:
    """DEI: quality-diversity search with heterogeneous operator ensembles."""


@dei.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable listing.")
@user_errors
def plugins_command(as_json: bool) -> None:
    """List registered domains, operators, transports, sharing policies and axes."""
    listing = registry().listing()
    if as_json:
        click.echo(json.dumps(listing, indent=1))
        return
    for kind, rows in listing.items():
        click.echo(f"{kind}:")
        for row in rows:
            flag = "" if row.get("offline", True) else " [needs a model server]"
            click.echo(f"  {row['name']:<16} {row['plugin']:<28} {row['description']}{flag}")


@dei.command("report")
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True))
@user_errors
def report_command(run_dir: str) -> None:
    """Write report.md and plots for a run or experiment directory."""
    path = write_report(Path(run_dir))
    if path is None:
        raise ConfigError("reports need matplotlib; install dei-framework with its dependencies")
    click.echo(f"report: {path}")


# Built in its own module from the dei-run options above, so registered after them.
from dei_framework.experiment import experiment_command  # noqa: E402

dei.add_command(experiment_command())


def main() -> None:
    """Console script entry point of ``dei``."""
    _standalone(dei, "dei")
