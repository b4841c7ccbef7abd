"""The command line: ``dei-run`` (the main job) and the ``dei`` group (plugins, reports, ...).

Every error a user can cause ends as one line on stderr starting with ``error:`` and exit
status 1. ``dei-run`` also exits :data:`EXIT_PARTIAL` when some nodes stopped early and
:data:`EXIT_INTERRUPTED` after Ctrl-C or SIGTERM (docs/cli.md lists them all).

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import attrs
import click

from dei_framework.analysis.formatting import plus_minus
from dei_framework.app.cli_experiment import plan_from_flags
from dei_framework.app.watch.server import DEFAULT_PORT as DEFAULT_WATCH_PORT
from dei_framework.app.watch.server import serve, serve_until_interrupted, watch_in_background
from dei_framework.contract.backend import EvaluatorLost
from dei_framework.contract.errors import ConfigError, DEIError
from dei_framework.contract.run_summary import NodeSummary, RunSummary
from dei_framework.evaluation.semaphores import exit_leaving_no_semaphore, releasing_semaphore
from dei_framework.experiment import runner as experiment
from dei_framework.experiment.plan import (
    BUILTIN_CONDITIONS,
    DEFAULT_CONDITIONS,
    ExperimentPlan,
    load_plan,
)
from dei_framework.experiment.portfolio import plan_main, plan_options
from dei_framework.plugin.manager import DISABLE_PLUGINS_VARIABLE, PluginRegistry, load_plugins
from dei_framework.runtime.config.resolve import chosen_out, resolve_config, with_option_flags
from dei_framework.runtime.config.run_config import SETTINGS, RunConfig
from dei_framework.runtime.files import run_layout
from dei_framework.runtime.files.run_layout import CONFIG_FILE, EXPERIMENT_FILE, SUMMARY_FILE
from dei_framework.runtime.files.run_lock import RunLock, lock_run_dir

#: Exit status: the run finished (every node spent its quota).
EXIT_OK = 0
#: Exit status: an error (bad option, configuration, no operator call completed at all).
EXIT_ERROR = 1
#: Exit status: the run finished, but some nodes stopped early (their reason is printed).
EXIT_PARTIAL = 3
#: Exit status: Ctrl-C or SIGTERM; the run is checkpointed and ``--resume`` continues it.
EXIT_INTERRUPTED = 130


def fail(message: str, status: int = EXIT_ERROR) -> None:
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
            interrupted()

    return wrapper


def interrupted() -> NoReturn:
    """Ctrl-C before a run exists: one line and :data:`EXIT_INTERRUPTED`."""
    click.echo("interrupted", err=True)
    sys.exit(EXIT_INTERRUPTED)


class Interrupts:
    """Ctrl-C and SIGTERM during a run: the first stops it cleanly, the second at once.

    The first signal asks the ensemble to stop (every node stops, the run checkpoints and
    kills its evaluation workers, :meth:`Ensemble.run` raises ``KeyboardInterrupt``). Before
    the ensemble exists it simply raises ``KeyboardInterrupt``. The second signal kills the
    workers, prints ``last_words`` and leaves with :data:`EXIT_INTERRUPTED` on the spot: no
    cleanup that could hang, and nothing is lost, because the checkpoint on disk is always
    consistent.

    An inherited "ignore SIGINT" (a job started in the background by a shell) is respected.
    """

    def __init__(self) -> None:
        self.ensemble: Any = None
        self.last_words = "interrupted"
        self.count = 0
        self._saved: dict[int, Any] = {}

    def __enter__(self) -> Interrupts:
        for number in (signal.SIGINT, signal.SIGTERM):
            previous = signal.getsignal(number)
            if number == signal.SIGINT and previous == signal.SIG_IGN:
                continue
            self._saved[number] = previous
            signal.signal(number, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for number, previous in self._saved.items():
            signal.signal(number, previous)

    def _handle(self, number: int, frame: types.FrameType | None) -> None:
        self.count += 1
        if self.count == 1:
            if self.ensemble is None:
                raise KeyboardInterrupt
            _say(
                "stopping: checkpointing and ending the workers (press Ctrl-C again to quit "
                "at once)"
            )
            self.ensemble.stop()
            return
        if self.count < 20 and releasing_semaphore(frame):
            # This thread was stopped half-way through releasing a pool's semaphore (unlinked,
            # its resource tracker not yet told): leaving now would have the tracker warn about
            # a "leaked semaphore" after our last words. Let it finish; the same signal comes
            # back in 50 ms (at most 18 times: a release that hangs does not keep us here).
            threading.Timer(0.05, os.kill, (os.getpid(), number)).start()
            return
        if self.ensemble is not None:
            self.ensemble.kill_workers()
        _say(self.last_words)
        exit_leaving_no_semaphore(EXIT_INTERRUPTED)


def _say(line: str) -> None:
    """One line on stderr, written at once (also from a signal handler, before ``_exit``)."""
    sys.stdout.flush()
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


@functools.cache
def registry() -> PluginRegistry:
    """The plugins, loaded once per process; problems are reported once on stderr."""
    disabled = os.environ.get(DISABLE_PLUGINS_VARIABLE, "")
    loaded = load_plugins(disabled=[name.strip() for name in disabled.split(",") if name.strip()])
    for problem in loaded.problems:
        click.echo(f"warning: {problem}", err=True)
    return loaded


def sound_registry() -> PluginRegistry:
    """The plugins, for a command that searches: a broken plugin stops it before it starts.

    A plugin that failed to load or breaks the contract (a misspelled hook, an argument its
    hook does not pass) would otherwise run silently without the part that is broken.

    Raises:
        ConfigError: Naming the first problem and how to leave the plugin out.
    """
    loaded = registry()
    if loaded.problems:
        more = len(loaded.problems) - 1
        also = f" (and {more} more problem{'s' if more > 1 else ''} above)" if more else ""
        raise ConfigError(
            f"refusing to start with a broken plugin: {loaded.problems[0]}{also}; fix it, or "
            f"leave it out with {DISABLE_PLUGINS_VARIABLE}=<plugin>"
        )
    return loaded


# --- dei-run --------------------------------------------------------------------------------------


def setting_option(key: str) -> Callable:
    """The click option of the run setting ``key``, as its ``RunConfig`` field's metadata (or
    :data:`~dei_framework.runtime.config.settings.NOT_FIELDS`) describes it."""
    item = SETTINGS[key]
    kwargs = dict(item.option)
    if "choices" in kwargs:
        kwargs["type"] = click.Choice(list(kwargs.pop("choices")))
    if kwargs.pop("path", None) == "dir":
        kwargs["type"] = click.Path(file_okay=False)
    return click.option(item.flag, item.key, help=item.help, **kwargs)


#: ``dei-run``'s core options, in the order of its ``--help``: every run setting's (derived from
#: ``RunConfig``) and the flags that are no setting (``settings.FLAG_ONLY`` says why).
RUN_OPTIONS = [
    *map(
        setting_option,
        (
            "domain",
            "transport",
            "delivery",
            "nodes",
            "operators",
            "api_base",
            "budget",
            "iterations",
            "compute_axis",
            "max_cost_usd",
            "max_attempts_per_node",
            "max_attempts_per_call",
            "rounds",
            "lifecycle",
            "new_fraction",
            "lag",
            "max_champions",
            "max_peer_champions",
            "sharing",
            "allocation",
            "axes",
            "selector",
            "archive",
            "seed",
        ),
    ),
    click.option(
        "--domain-option",
        "domain_option",
        multiple=True,
        metavar="KEY=VALUE",
        help="A domain option, repeatable.",
    ),
    click.option(
        "--transport-option",
        "transport_option",
        multiple=True,
        metavar="KEY=VALUE",
        help="A transport option, repeatable.",
    ),
    *map(
        setting_option,
        (
            "common_ground",
            "common_seeds",
            "array_path",
            "eval_workers",
            "evaluator",
            "evaluator_address",
            "sandbox",
            "eval_timeout",
            "eval_memory",
            "eval_file_size",
            "eval_processes",
            "members",
            "checkpoint_seconds",
            "out",
        ),
    ),
    click.option(
        "--resume",
        type=click.Path(file_okay=False, exists=True),
        help="Continue the run in this directory from its last checkpoint.",
    ),
    click.option(
        "--replay",
        type=click.Path(file_okay=False, exists=True),
        help="Rerun a recorded run from its recorded replies, without any network.",
    ),
    click.option(
        "--reask-mismatched",
        is_flag=True,
        help="With --replay: ask the operator again for calls whose request no longer "
        "matches the record, instead of stopping at the first.",
    ),
    click.option(
        "--config",
        "config_file",
        type=click.Path(dir_okay=False),
        help="TOML file with any of these options (flags override it).",
    ),
    setting_option("preset"),
    click.option(
        "--progress",
        type=click.Choice(["auto", "live", "lines", "json", "quiet"]),
        default="auto",
        show_default=True,
        help="Live display, one line per round, JSON lines on stdout, or nothing.",
    ),
    click.option("--no-report", is_flag=True, help="Do not write report.md and plots at the end."),
]


def run_options(function: Callable) -> Callable:
    """Adds the core ``dei-run`` options (plugins add theirs through :class:`RunCommand`)."""
    for option in reversed(RUN_OPTIONS):
        function = option(function)
    return function


#: ``dei experiment``'s own help for options it shares with ``dei-run``.
EXPERIMENT_HELP = {
    "out": "Experiment directory (default: a new folder under ./experiments/).",
    "resume": "Continue the experiment in this directory: finished repeats are kept, "
    "unfinished runs resume from their checkpoints (--repeats may be raised).",
    "iterations": "With --compute-axis tokens only: the calls per node and round of the "
    "condition with the most nodes (equal compute is otherwise a total --budget).",
}
#: ``dei-run`` options an experiment refuses: parsed, so that the refusal says what to do
#: instead, but left out of its help.
EXPERIMENT_HIDDEN = ("replay", "reask_mismatched")


def experiment_options(function: Callable) -> Callable:
    """:func:`run_options` in ``dei experiment``'s words (its help is not dei-run's)."""
    function = run_options(function)
    for param in function.__click_params__:  # fresh Option objects: dei-run's are untouched
        if param.name in EXPERIMENT_HELP:
            param.help = EXPERIMENT_HELP[param.name]
        param.hidden = param.hidden or param.name in EXPERIMENT_HIDDEN
    return function


class RunCommand(click.Command):
    """A command taking ``dei-run``'s options plus those plugins add (``dei_run_options``).

    Plugin options are looked up when the command parses or shows help, so a plugin option
    behaves like a core one; one whose name or flag is already taken is left out with a warning.
    """

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        own = list(self.params)
        help_option = self.get_help_option(ctx)
        taken = {name for param in own for name in (param.name, *param.opts)}
        if help_option is not None:
            taken |= {help_option.name, *help_option.opts}
        added: list[click.Parameter] = []
        for name, entry in registry().run_options.items():
            option = entry.spec.option
            clash = taken & {option.name, *option.opts}
            if clash:
                _warn_once(
                    f"plugin {entry.plugin!r} adds option {name!r} that "
                    f"{self.name} already has ({', '.join(sorted(clash))}); ignored"
                )
                continue
            taken |= {option.name, *option.opts}
            added.append(option)
        return [*own, *added, *([help_option] if help_option is not None else [])]


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        click.echo(f"warning: {message}", err=True)


def _warn_bare_members(members: Sequence[str]) -> None:
    """Warns once about membership entries that are a bare key (the deprecated form).

    A bare key is still accepted (older run.toml files keep working) but binds no name: it
    may sign champions under any name no other key is bound to.
    """
    bare = [entry for entry in members if "=" not in entry]
    if bare:
        _warn_once(
            f"members: {len(bare)} of {len(members)} entries are a bare key, which may "
            "claim any name not bound to another key (deprecated): write them "
            "as name=key"
        )


def warn_ignored(flags: dict[str, Any], *, keep: tuple[str, ...]) -> None:
    """Warns about flags a recorded configuration overrides (on --resume and --replay)."""
    ignored = sorted(
        f"--{name.replace('_', '-')}"
        for name, value in flags.items()
        if name not in keep and value not in (None, (), False)
    )
    if ignored:
        click.echo(
            "warning: the recorded configuration is used; ignoring " + ", ".join(ignored), err=True
        )


#: Flags that choose where evaluations run, not what they compute: a resumed or replayed run
#: (and a resumed experiment) takes them over its recorded configuration.
PLACEMENT_FLAGS = ("evaluator", "evaluator_address", "eval_workers")


def placed(config: RunConfig, flags: Mapping[str, Any], plugins: PluginRegistry) -> RunConfig:
    """``config`` with the evaluation placement the flags give (the rest stays recorded)."""
    changes = {name: flags[name] for name in PLACEMENT_FLAGS if flags.get(name) is not None}
    if "evaluator" in changes:
        plugins.evaluator(changes["evaluator"])
        changes.setdefault("evaluator_address", None)  # an address belongs to its backend
    return attrs.evolve(config, **changes) if changes else config


def default_out(domain: str) -> Path:
    return Path("runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-{domain}"


@click.command(
    name="dei-run", cls=RunCommand, context_settings={"help_option_names": ["-h", "--help"]}
)
@run_options
@click.option(
    "--watch",
    is_flag=True,
    help="Serve the run's live web page (as `dei watch`) and "
    "print its URL; after the run it keeps serving until Ctrl-C.",
)
@user_errors
def dei_run(**flags: Any) -> None:
    """Run a DEI ensemble: N nodes, each bound to its own operator, sharing round champions.

    With only --domain, runs a small offline ensemble of the domain's offline operators.
    """
    with Interrupts() as interrupts:
        request = _dei_run(flags)
        with _given_up_unless_written(request.lock, request.out / CONFIG_FILE):
            _run_locked(request, interrupts)


@attrs.frozen(kw_only=True)
class RunRequest:
    """What ``dei-run``'s flags (or ``dei node``'s) ask for, resolved: the run's configuration
    and its directory, locked for this command. :func:`_dei_run` and :func:`_node_request`
    handle the flags; :func:`_run_in_process` runs it.

    Attributes:
        config: The run's configuration (flags over config file over preset over defaults; or
            the recorded one, placed anew, for ``--resume`` and ``--replay``).
        out: The run directory.
        lock: The lock of :attr:`run_dir`, held by this command.
        plugins: The loaded plugins.
        flags: The flags, for what is read while the run goes (progress, report, watch).
        resume_dir: ``--resume``'s directory, if given.
        replay_dir: ``--replay``'s directory, if given.
        node: The one node this process runs (``dei node --name``); ``None``: every node.
    """

    config: RunConfig
    out: Path
    lock: RunLock
    plugins: PluginRegistry
    flags: Mapping[str, Any]
    resume_dir: str | None = None
    replay_dir: str | None = None
    node: str | None = None

    @property
    def run_dir(self) -> Path:
        """Where this process writes: the run directory, or its node's process directory."""
        return self.out if self.node is None else run_layout.process_dir(self.out, self.node)

    @property
    def resume_command(self) -> str:
        """The command that continues this run (or this node) from its checkpoint."""
        if self.node is None:
            return f"dei-run --resume {_shell_path(self.out)}"
        return f"dei node --resume {_shell_path(self.out)} --name {self.node}"


def _dei_run(flags: dict[str, Any]) -> RunRequest:
    """``dei-run``'s flag handling: the flags checked and resolved into a :class:`RunRequest`,
    the run directory locked (before the recorded configuration of ``--resume`` is read: one
    writer at a time). Nothing runs yet."""
    from dei_framework.runtime.files.run_dir import RunDir

    plugins = sound_registry()
    resume_dir, replay_dir = flags.get("resume"), flags.get("replay")
    if resume_dir and replay_dir:
        raise ConfigError("--resume and --replay exclude each other")
    if flags.get("reask_mismatched") and not replay_dir:
        raise ConfigError("--reask-mismatched only applies to --replay")
    if resume_dir or replay_dir:
        warn_ignored(
            flags,
            keep=(
                "resume",
                "replay",
                "out",
                "progress",
                "no_report",
                "watch",
                "reask_mismatched",
                *PLACEMENT_FLAGS,
            ),
        )
    if resume_dir:
        out = Path(resume_dir)
        lock, config = _lock_recorded(out)
        config = placed(config, flags, plugins)
    elif replay_dir:
        config = placed(RunDir(replay_dir).read_config(), flags, plugins)
        out = Path(flags["out"]) if flags.get("out") else _fresh_replay_dir(Path(replay_dir))
        lock = _lock_fresh(out, f"a run; use --resume {out} or another --out")
    else:
        config = resolve_config(flags, plugins)
        out = chosen_out(flags) or default_out(config.domain)
        lock = _lock_fresh(out, f"a run; use --resume {out} or another --out")
    return RunRequest(
        config=config,
        out=out,
        lock=lock,
        plugins=plugins,
        flags=flags,
        resume_dir=resume_dir,
        replay_dir=replay_dir,
    )


def _lock_fresh(directory: Path, refusal: str) -> RunLock:
    """Locks ``directory`` for a new run (fresh or replayed, or a node's first start): refused,
    saying it already holds ``refusal``, when it holds one.

    The lock comes first and the check second, so that of two commands started together on
    one directory the second is refused whichever looked first.
    """
    lock = lock_run_dir(directory)
    if (directory / CONFIG_FILE).exists():
        raise ConfigError(f"{directory} already holds {refusal}")
    return lock


def _lock_recorded(directory: Path) -> tuple[RunLock, RunConfig]:
    """Locks the recorded run in ``directory`` to continue it, then reads its configuration
    (after the lock: one writer at a time); a failure gives the directory up as it was."""
    from dei_framework.runtime.files.run_dir import RunDir

    lock = lock_run_dir(directory)
    with _given_up_unless_written(lock, directory / CONFIG_FILE):
        return lock, RunDir(directory).read_config()


def _fresh_replay_dir(recorded: Path) -> Path:
    """Where a replay of ``recorded`` goes without ``--out``: ``replay/``, or ``replay-N/``
    with the first N that holds no run (a replay never appends to an earlier one)."""
    candidate, number = recorded / "replay", 1
    while (candidate / CONFIG_FILE).exists():
        number += 1
        candidate = recorded / f"replay-{number}"
    return candidate


@contextlib.contextmanager
def _given_up_unless_written(lock: RunLock, marker: Path) -> Iterator[None]:
    """Gives the directory up (lock file, and the directory when the lock made it) if the
    command fails before ``marker`` exists: a failed start leaves no directory behind."""
    try:
        yield
    except BaseException:
        if not marker.exists():
            lock.abandon()
        raise


def _run_locked(request: RunRequest, interrupts: Interrupts) -> None:
    """The run of ``dei-run`` once its flags are handled and its directory is locked."""
    from dei_framework.runtime.node.launcher import local_network

    config, out, plugins, flags = request.config, request.out, request.plugins, request.flags
    resume_dir, replay_dir = request.resume_dir, request.replay_dir

    _warn_bare_members(config.members)
    watching = watch_in_background(out) if flags.get("watch") else None
    network = None if replay_dir else local_network(config, plugins, out)
    if network is not None:
        # A transport that runs one node per process (AXL): one `dei node` process per node.
        summary = _launch(config, out, network, plugins, flags, interrupts, resume=bool(resume_dir))
    else:
        summary = _run_in_process(request, interrupts)
    stopped = _say_how_nodes_ended(summary, out)
    report = None
    if not flags.get("no_report"):
        report = write_report(out)
    _say_done(summary, out, report)
    if watching is not None:
        interrupts.ensemble, interrupts.count = None, 0  # the run is over: Ctrl-C ends the page
        serve_until_interrupted(watching)
    if stopped:
        click.echo(
            f"warning: incomplete run: {len(stopped)} of {len(summary.nodes)} nodes "
            f"stopped early (exit status {EXIT_PARTIAL})",
            err=True,
        )
        sys.exit(EXIT_PARTIAL)


def _run_in_process(request: RunRequest, interrupts: Interrupts) -> RunSummary:
    """Runs the request's nodes (every one, or its one node) in this process; returns the
    summary. An interrupt or a failure after the run started ends the command with one line
    saying what is kept."""
    from dei_framework.runtime.ensemble import Ensemble
    from dei_framework.runtime.files.run_dir import RunDir
    from dei_framework.runtime.progress import make_progress

    config, replay_dir, flags = request.config, request.replay_dir, request.flags
    progress = make_progress(flags.get("progress") or "auto", config)
    hint = (
        f"interrupted; the replay in {request.out} is incomplete (replay again into a new --out)"
        if replay_dir
        else f"interrupted; continue with: {request.resume_command}"
    )
    ensemble = Ensemble(
        config,
        RunDir(request.run_dir),
        registry=request.plugins,
        resume=bool(request.resume_dir),
        replay_from=RunDir(replay_dir) if replay_dir else None,
        progress=progress.update,
        local=request.node,
        reask_mismatched=bool(flags.get("reask_mismatched")),
    )
    interrupts.last_words, interrupts.ensemble = hint, ensemble
    try:
        with progress:
            return ensemble.run()
    except KeyboardInterrupt:
        # A node's process directory is never discarded (it holds the key its launcher made).
        kept = ensemble.started or request.node is not None
        _say(hint if kept else "interrupted before the run started; nothing written")
        sys.exit(EXIT_INTERRUPTED)
    except EvaluatorLost as exc:
        if not ensemble.started:
            raise
        from dei_framework.evaluation.local import WorkersKeepDying

        elsewhere = (
            ""
            if isinstance(exc, WorkersKeepDying)
            else " (--evaluator-address ADDRESS or --evaluator local to evaluate elsewhere)"
        )
        fail(f"{exc}; the run is checkpointed: continue with {request.resume_command}{elsewhere}")
    except DEIError as exc:
        if not ensemble.started:
            raise
        fail(f"{exc} (the partial run is in {request.run_dir})")


def _say_how_nodes_ended(summary: RunSummary, out: Path) -> dict[str, str]:
    """Says on stderr which nodes ended at a cap, stopped early or have no price; fails when
    no call completed at all. Returns the nodes that stopped early (not at a cap)."""
    stopped = {name: node.stopped for name, node in summary.nodes.items() if node.stopped}
    budget = summary.budget
    if budget["calls"] == 0 and budget["limit"] != 0:
        # One cause per distinct reason: nodes of one model share "no API key: ...".
        causes = sorted(
            {
                _with_last_failure(reason, summary.nodes[name], budget, name)
                for name, reason in stopped.items()
            }
        ) or ["no operator call succeeded"]
        fail(f"no operator call completed: {'; '.join(causes)} (the record of the run is in {out})")
    # A node that reached a cap the user set (money, tokens, attempts, its share on the
    # tokens/cost axis) ended as asked: said on stderr, but not an incomplete run.
    capped = {
        name: reason
        for name, reason in stopped.items()
        if budget["nodes"].get(name, {}).get("exhausted")
    }
    for name, reason in capped.items():
        click.echo(f"node {name} ended at its cap: {reason}", err=True)
    stopped = {name: reason for name, reason in stopped.items() if name not in capped}
    for name, reason in stopped.items():
        click.echo(f"warning: node {name} stopped early: {reason}", err=True)
    for name in budget.get("unpriced_nodes", []):
        model = budget["nodes"][name]["model"]
        click.echo(
            f"warning: node {name}: cost unknown (no price for {model}; give one with "
            "--price MODEL=IN,OUT)",
            err=True,
        )
    return stopped


def _say_done(summary: RunSummary, out: Path, report: Path | None) -> None:
    """The run's last lines on stdout: its figures, and where its summary and report are."""
    budget = summary.budget
    cost = "unknown" if budget["cost_usd"] is None else f"${budget['cost_usd']:.4f}"
    spent = (
        f"{budget['calls']}/{budget['limit']} calls"
        if budget.get("axis", "calls") == "calls"
        else f"{budget['calls']} calls, {budget['spent']}/{budget['limit']} {budget['axis']}"
    )
    click.echo(
        f"done: {len(summary.nodes)} nodes, {spent}, cost {cost}, "
        f"merged coverage {summary.merged.stats.coverage:.1%}, "
        f"QD-score {summary.merged.stats.qd_score:.2f}"
    )
    if summary.no_elite:
        click.echo(summary.no_elite)
    click.echo(f"summary: {out / SUMMARY_FILE}")
    if report:
        click.echo(f"report: {report}")


def _with_last_failure(reason: str, node: NodeSummary, budget: Mapping[str, Any], name: str) -> str:
    """A node's stop reason, with its operator's last failure when a cap stopped it.

    A cap (``--max-attempts-per-node``) says that the node ended, not why no call completed;
    the failures that used up its attempts do.
    """
    last = (node.operator_status or {}).get("last_error")
    if last and budget["nodes"].get(name, {}).get("exhausted"):
        return f"{reason} (last failure: {last})"
    return reason


def _shell_path(path: Path) -> str:
    """The absolute path, quoted for a shell when it needs to be."""
    import shlex

    return shlex.quote(str(path.resolve()))


def _launch(
    config: RunConfig,
    out: Path,
    network: Any,
    plugins: PluginRegistry,
    flags: dict[str, Any],
    interrupts: Interrupts,
    *,
    resume: bool,
) -> RunSummary:
    """Runs every node as a `dei node` process over the transport's local network."""
    from dei_framework.runtime.node.launcher import Launcher

    quiet = flags.get("progress") in ("quiet", "json")
    child_args = (
        ("--eval-workers", str(config.eval_workers))
        if config.eval_workers is not None and not resume
        else ()
    )
    launcher = Launcher(
        config=config,
        run_dir=out,
        network=network,
        registry=plugins,
        resume=resume,
        child_args=child_args,
        echo=None if quiet else _say,
    )
    hint = f"interrupted; continue with: dei-run --resume {_shell_path(out)}"
    interrupts.last_words, interrupts.ensemble = hint, launcher
    try:
        summary = launcher.run()
    except KeyboardInterrupt:
        _say(hint)
        sys.exit(EXIT_INTERRUPTED)
    for name, cause in launcher.failed.items():
        click.echo(
            f"error: node {name} failed ({cause}); continue it with: "
            f"dei-run --resume {_shell_path(out)}",
            err=True,
        )
    return summary


def write_report(run_dir: Path) -> Path | None:
    """Writes the run's report if the report module is available; returns its path."""
    try:
        from dei_framework.report.write import write_run_report
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
    except DEIError as exc:  # outside a command: loading the plugins for its options or name
        fail(str(exc), exc.exit_code)
    except click.exceptions.Abort as exc:
        # click turns a Ctrl-C outside our commands (while plugins add their options, say)
        # into Abort; it is an interruption like any other.
        if isinstance(exc.__cause__, KeyboardInterrupt):
            interrupted()
        fail("aborted")
    except KeyboardInterrupt:
        interrupted()
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
        return {
            command.name: command
            for command in registry().cli_commands()
            if isinstance(command, click.Command) and command.name
        }

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
    """List registered domains, operators, transports, sharing policies, budget allocators,
    descriptor axes, parent selectors, archives and evaluation backends (evaluators)."""
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
    plots = path.parent / "plots"
    figures = len(list(plots.glob("*.png"))) if plots.is_dir() else 0
    click.echo(f"report: {path}" + (f" (plots: {figures} in {plots})" if figures else ""))


@dei.command("export")
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    required=True,
    help="Folder to write the program files and programs.jsonl to (with --best: "
    "the file to write).",
)
@click.option(
    "--what",
    type=click.Choice(["champions", "elites", "all"]),
    default=None,
    help="Every round's champions, the last round's elites, or both (default: all).",
)
@click.option(
    "--best",
    is_flag=True,
    help="Write only the run's best program (the highest common-ground fitness in "
    "its merged archive, else the highest raw fitness) to the file --out.",
)
@user_errors
def export_command(run_dir: Path, out: Path, what: str | None, best: bool) -> None:
    """Write the champions and elites of a run or experiment as files in the domain's format
    (Core War: .red), plus programs.jsonl; or, with --best, the run's best program."""
    from dei_framework.report.export import (
        JSONL_NAME,
        export_best,
        export_programs,
        unfinished_runs,
    )

    if best:
        if what is not None:
            raise ConfigError("--best writes one program; it takes no --what")
        path, chosen = export_best(run_dir, out, registry())
        click.echo(chosen.line)
        click.echo(f"wrote {path}")
        return
    written = export_programs(run_dir, out, registry(), what=what or "all")
    for unfinished in unfinished_runs(run_dir):
        click.echo(f"warning: {unfinished} has not finished (no summary.json): left out", err=True)
    click.echo(f"exported {len(written)} programs to {out} (index: {out / JSONL_NAME})")


@dei.command("experiment", cls=RunCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--conditions",
    metavar="LIST",
    help="Comma-separated built-in conditions: "
    + "; ".join(f"{name} ({what})" for name, what in BUILTIN_CONDITIONS.items())
    + f" (default: {','.join(DEFAULT_CONDITIONS)} unless --condition is given).",
)
@click.option(
    "--condition",
    multiple=True,
    metavar="NAME=OP,OP,...",
    help="A custom condition, one node per listed operator; repeatable.",
)
@click.option("--repeats", type=int, help="Runs per condition; repeat k uses seed+k (default 1).")
@click.option(
    "--parallel",
    type=int,
    default=1,
    show_default=True,
    metavar="N",
    help="Runs at once, each in its own process; the summary is the sequential one's.",
)
@experiment_options
@user_errors
def experiment_command(**flags: Any) -> None:
    """Equal-compute experiment: Solo vs Homo vs Diverse ensembles over repeated seeds.

    --budget is the total operator calls of every condition: Solo runs 1 node with all
    of it, Homo --nodes (default 4) nodes of the first --operator, Diverse --nodes nodes
    cycling the --operator values. --out is the experiment directory; --resume DIR
    continues an interrupted experiment (--repeats may then be raised).
    """
    plugins = sound_registry()
    if flags.get("resume"):
        warn_ignored(
            flags, keep=("resume", "repeats", "progress", "no_report", "parallel", *PLACEMENT_FLAGS)
        )
        out = Path(flags["resume"])
        lock = lock_run_dir(out)  # before anything is read or written: one writer at a time
        with _given_up_unless_written(lock, out / EXPERIMENT_FILE):
            plan = load_plan(out)
        plan = attrs.evolve(plan, base=placed(plan.base, flags, plugins))
        if flags.get("repeats"):
            plan = attrs.evolve(plan, repeats=flags["repeats"])
    else:
        plan = plan_from_flags(flags, plugins)
        out = chosen_out(flags) or Path("experiments") / default_out(plan.base.domain).name
        lock = lock_run_dir(out)  # first, then the check: two starts cannot both pass it
        if (out / EXPERIMENT_FILE).exists() or (out / CONFIG_FILE).exists():
            raise ConfigError(
                f"{out} already holds a run or experiment; use --resume {out} or another --out"
            )
    with _given_up_unless_written(lock, out / EXPERIMENT_FILE):
        _experiment_locked(plan, out, plugins, flags)


@dei.command("plan", context_settings={"help_option_names": ["-h", "--help"]})
@plan_options
@user_errors
def plan_command(**flags: Any) -> None:
    """Choose K of the candidate operators from short pilots: coverage, pairwise
    complementarity, the best expected merged coverage per unit of cost (docs/adaptive.md)."""
    plan_main(flags, sound_registry())


def _experiment_locked(
    plan: ExperimentPlan, out: Path, plugins: PluginRegistry, flags: dict[str, Any]
) -> None:
    """The experiment of ``dei experiment`` once its directory is locked."""
    progress = flags.get("progress") or "auto"
    # Runs show their own progress; the experiment's lines go to stderr, so that
    # --progress json keeps stdout machine-readable.
    announce = (
        (lambda line: None) if progress == "quiet" else (lambda line: click.echo(line, err=True))
    )
    try:
        summary = experiment.run_experiment(
            plan,
            out,
            registry=plugins,
            progress=progress,
            announce=announce,
            parallel=flags.get("parallel", 1),
        )
    except KeyboardInterrupt:
        click.echo(f"interrupted; continue with: dei experiment --resume {out}", err=True)
        sys.exit(130)
    except EvaluatorLost as exc:  # the run under way is checkpointed
        fail(
            f"{exc}; continue with: dei experiment --resume {_shell_path(out)} "
            "(--evaluator-address ADDRESS or --evaluator local to evaluate elsewhere)"
        )
    report = None if flags.get("no_report") else write_report(out)
    for line in _condition_table(summary["conditions"]):
        click.echo(line)
    click.echo(f"summary: {out / SUMMARY_FILE}")
    if report:
        click.echo(f"report: {report}")


def _condition_table(conditions: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per condition, its columns aligned whatever the names' lengths."""
    rows = []
    for name, cond in conditions.items():
        cov, qd = cond["merged"]["coverage"], cond["merged"]["qd_score"]
        common = cond["merged"].get("common") or {}
        rows.append(
            [
                name,
                f"{cond['nodes']} node(s)",
                f"common ground: coverage {plus_minus(common.get('coverage') or {}, '.1%')}",
                f"QD-score {plus_minus(common.get('qd_score') or {}, '.2f')}",
                f"(raw: {plus_minus(cov, '.1%')}, {plus_minus(qd, '.2f')})",
                f"calls {cond['budget']['calls']}",
            ]
        )
    widths = [max(len(cell) for cell in column) for column in zip(*rows, strict=True)]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


@dei.command("node", cls=RunCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    help="The shared run configuration: a TOML file naming every node ([[node]] "
    "tables with name = ...), or a run directory's config.json.",
)
@click.option("--name", required=True, help="The node of the configuration this process runs.")
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    help="The run directory; this node writes processes/<name>/ in it.",
)
@click.option(
    "--resume",
    type=click.Path(file_okay=False, exists=True),
    help="Continue this node in the run directory DIR from its last checkpoint.",
)
@click.option(
    "--transport-option",
    "transport_option",
    multiple=True,
    metavar="KEY=VALUE",
    help="A transport option, repeatable (overrides the configuration's).",
)
@click.option(
    "--eval-workers", type=int, help="Evaluation worker processes (default: the configuration's)."
)
@click.option(
    "--evaluator",
    metavar="NAME",
    help="Where this node's evaluations run, as for dei-run (default: the configuration's).",
)
@click.option(
    "--evaluator-address",
    metavar="ADDRESS",
    help="The evaluation backend's address, as for dei-run, e.g. the Dask scheduler "
    "tcp://host:8786 (default: the configuration's).",
)
@click.option(
    "--progress",
    type=click.Choice(["auto", "live", "lines", "json", "quiet"]),
    default="auto",
    show_default=True,
    help="As for dei-run.",
)
@user_errors
def node_command(**flags: Any) -> None:
    """Run one node of a shared run in this process (one process per node, e.g. over AXL).

    Every node of the run is started with the same configuration and its own --name; on one
    machine `dei-run --transport axl` starts them all (and their AXL nodes) for you.
    """
    with Interrupts() as interrupts:
        request = _node_request(flags)
        with _given_up_unless_written(request.lock, request.run_dir / CONFIG_FILE):
            _node_locked(request, interrupts)


def _node_request(flags: dict[str, Any]) -> RunRequest:
    """``dei node``'s flag handling, as :func:`_dei_run`'s: the shared configuration (or the
    recorded one on ``--resume``) with this command's flags over it, the node's process
    directory locked. Nothing runs yet."""
    plugins = registry()
    name = flags["name"]
    if flags.get("resume"):
        if flags.get("config_file") or flags.get("out"):
            raise ConfigError(
                "--resume DIR takes the configuration recorded in DIR; drop --config and --out"
            )
        out = Path(flags["resume"])
        node_dir = run_layout.process_dir(out, name)
        if not node_dir.is_dir():
            raise ConfigError(f"{node_dir} holds no run of node {name!r} to resume")
        lock, config = _lock_recorded(node_dir)
    else:
        if not flags.get("config_file"):
            raise ConfigError("give the shared run configuration with --config (or --resume)")
        path = Path(flags["config_file"])
        if path.suffix == ".json":
            from dei_framework.runtime.files.run_files import read_config

            config = read_config(path)
        else:
            config = resolve_config({"config_file": str(path)}, plugins)
        out = chosen_out(flags) or default_out(config.domain)
        lock = _lock_fresh(
            run_layout.process_dir(out, name),
            f"node {name!r}; use dei node --resume {out} --name {name}",
        )
    config = with_option_flags(config, flags, plugins)  # plugins' options, --transport-option
    config = placed(config, flags, plugins)  # --evaluator, --evaluator-address, --eval-workers
    return RunRequest(
        config=config,
        out=out,
        lock=lock,
        plugins=plugins,
        flags=flags,
        resume_dir=flags.get("resume"),
        node=name,
    )


def _node_locked(request: RunRequest, interrupts: Interrupts) -> None:
    """The node of ``dei node`` once its process directory is locked."""
    from dei_framework.runtime.files.run_dir import write_json_atomic

    config, name = request.config, request.node
    if name not in config.node_names:
        raise ConfigError(
            f"node {name!r} is not in the run's nodes ({', '.join(config.node_names)})"
        )
    spec = request.plugins.transport(config.transport)
    if spec.local_network is None and config.sharing != "none":
        raise ConfigError(
            f"transport {config.transport!r} connects only nodes of one process; "
            "a node in its own process needs a networked one (--transport axl)"
        )
    if not (request.out / CONFIG_FILE).exists():
        write_json_atomic(request.out / CONFIG_FILE, config.to_json())
    _warn_bare_members(config.members)
    summary = _run_in_process(request, interrupts)
    node = summary.nodes[name]
    if node.stopped:
        click.echo(f"warning: node {name} stopped early: {node.stopped}", err=True)
    click.echo(
        f"done: node {name} (pid {node.pid}), {node.calls}/{node.quota} calls, "
        f"{(node.sharing or {}).get('accepted', 0)} champions received"
    )
    click.echo(f"summary: {request.run_dir / SUMMARY_FILE}")


@dei.command("merge", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--no-report", is_flag=True, help="Do not write report.md and plots.")
@user_errors
def merge_command(run_dir: Path, no_report: bool) -> None:
    """Merge the node processes of a run (RUN_DIR/processes/<node>/) into one summary and report.

    `dei-run --transport axl` does this itself; after a run over several machines, copy each
    machine's processes/<node>/ into one directory (with the shared config.json) and merge.
    """
    from dei_framework.runtime.files.run_dir import RunDir
    from dei_framework.runtime.node.join import merge_node_processes

    lock_run_dir(run_dir)  # a run still writing (its launcher, another merge): refused
    directory = RunDir(run_dir)
    config = directory.read_config()
    missing = [n for n in config.node_names if not directory.process_path(n).is_dir()]
    if len(missing) == len(config.node_names):
        raise ConfigError(f"{run_dir} has no node process directories (processes/<node>/)")
    if missing:
        click.echo(f"warning: no process directory for {', '.join(missing)}", err=True)
    summary = merge_node_processes(config, directory, registry())
    report = None if no_report else write_report(run_dir)
    budget = summary.budget
    click.echo(
        f"merged: {len(summary.nodes)} nodes, {budget['calls']}/{budget['limit']} "
        f"calls, merged coverage {summary.merged.stats.coverage:.1%}"
    )
    click.echo(f"summary: {run_dir / SUMMARY_FILE}")
    if report:
        click.echo(f"report: {report}")


@dei.command("watch", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_WATCH_PORT,
    show_default=True,
    help="Port to serve on (0 picks a free one).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Interface to serve on. Anything but loopback (e.g. 0.0.0.0) shows the run's "
    "programs to your network.",
)
@click.option(
    "--allow-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="Another name the page may be opened under on loopback (besides localhost, "
    "127.0.0.1 and [::1]), repeatable; requests naming any other host get 403.",
)
@user_errors
def watch_command(run_dir: Path, port: int, host: str, allowed_hosts: tuple[str, ...]) -> None:
    """Serve a live web view of a run or experiment directory (finished or in progress).

    Open the printed URL in a browser: one heatmap per node and one of the merged archive,
    the champions flowing between nodes, budgets, errors and coverage/QD-score curves.
    The JSON behind it is at /api/state (see docs/watch.md). Ctrl-C stops serving.
    """
    if run_dir.exists() and not run_dir.is_dir():
        raise ConfigError(f"{run_dir} is a file; give a run or experiment directory")
    if not run_dir.exists():
        click.echo(f"warning: {run_dir} does not exist yet; the page waits for it", err=True)
    serve(run_dir, host=host, port=port, allowed_hosts=allowed_hosts)


def main() -> None:
    """Console script entry point of ``dei``."""
    _standalone(dei, "dei")
