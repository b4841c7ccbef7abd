"""``dei watch RUN_DIR`` and the ``dei-run --watch`` helper."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import click

from dei_framework.errors import ConfigError
from dei_framework.watch.server import DEFAULT_PORT, WatchServer, announce


def watch_command() -> click.Command:
    """Builds the ``dei watch`` command (:mod:`dei_framework.cli` registers it)."""
    from dei_framework.cli import user_errors

    @click.command("watch", context_settings={"help_option_names": ["-h", "--help"]})
    @click.argument("run_dir", type=click.Path(path_type=Path))
    @click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT,
                  show_default=True, help="Port to serve on (0 picks a free one).")
    @click.option("--host", default="127.0.0.1", show_default=True,
                  help="Interface to serve on. Anything but loopback (e.g. 0.0.0.0) shows the "
                       "run's programs to your network.")  # fmt: skip
    @user_errors
    def command(run_dir: Path, port: int, host: str) -> None:
        """Serve a live web view of a run or experiment directory (finished or in progress).

        Open the printed URL in a browser: one heatmap per node and one of the merged archive,
        the champions flowing between nodes, budgets, errors and coverage/QD-score curves.
        The JSON behind it is at /api/state (see docs/watch.md). Ctrl-C stops serving.
        """
        if run_dir.exists() and not run_dir.is_dir():
            raise ConfigError(f"{run_dir} is a file; give a run or experiment directory")
        if not run_dir.exists():
            click.echo(f"warning: {run_dir} does not exist yet; the page waits for it", err=True)
        server = WatchServer(run_dir, host=host, port=port)
        announce(server)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.close()

    return command


def watch_in_background(run_dir: Path) -> WatchServer:
    """Serves ``run_dir``'s page from a daemon thread (``dei-run --watch``) and prints its URL.

    Uses the default port, or a free one when that is taken.
    """
    try:
        server = WatchServer(run_dir, port=DEFAULT_PORT)
    except ConfigError:
        server = WatchServer(run_dir, port=0)
    announce(server.start())
    return server


def serve_until_interrupted(server: WatchServer) -> None:
    """Keeps a finished run's page up until Ctrl-C (``dei-run --watch`` after the run)."""
    click.echo(f"watch: still serving {server.url} (Ctrl-C to stop)", err=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    sys.stderr.flush()
