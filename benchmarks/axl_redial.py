"""Measures how long two AXL nodes on separate hosts take to peer again after their link heals.

Usage (as root, Linux, ``ip`` from iproute2)::

    python benchmarks/axl_redial.py --cuts 10,40,45 --trials 2 --json
    python benchmarks/axl_redial.py --cuts 90 --no-cap     # Yggdrasil's default backoff

Each trial makes two namespaced hosts (``tests/transports/netns.py``) with one AXL node each,
``b`` peering with ``a`` over ``a``'s address (with ``?maxbackoff=30s`` unless ``--no-cap``),
sends ``b -> a`` over the AXL API every 0.3 s (traffic, so that the cut is noticed, as in a
run), takes ``b``'s bridge port down for the cut's length and brings it back. Recorded per
trial: the seconds from the cut until ``b``'s AXL node reported its peering down (``lost``,
polled every 0.5 s), and from the heal until it reported it up again (``repeered``).

The wait after the heal is Yggdrasil's redial backoff (2, 4, 8, 16 ... s after the peering
dropped, capped by ``maxbackoff``): it depends on where the heal falls between two redials, so
it varies with the cut's length. Prints one JSON object with every trial and, per cut, n, the
median, minimum and maximum of ``repeered``. The machine is shared: report n and the spread.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "transports"))


def _trial(binary: str, cut: float, cap: bool, home: Path) -> dict[str, Any]:
    import httpx
    from axl_hosts import MAX_BACKOFF, start_hosted_nodes
    from dei_transports.axlnode import up_peers
    from netns import lan

    from dei_framework.net.envelope import NodeIdentity

    keys = {}
    for name in ("a", "b"):
        keys[name] = home / f"{name}.pem"
        NodeIdentity.generate().save(keys[name])
    with lan(2) as net:
        nodes = start_hosted_nodes(
            binary, net.hosts, keys, home / "axl", peer_options=MAX_BACKOFF if cap else ""
        )
        a, b = nodes["a"], nodes["b"]
        target = a.public_key
        stop = threading.Event()

        def traffic() -> None:
            def send() -> None:
                try:
                    httpx.post(
                        f"{b.api}/send",
                        content=b"x",
                        timeout=1.0,
                        trust_env=False,
                        headers={"X-Destination-Peer-Id": target},
                    )
                except httpx.HTTPError:
                    pass

            while not stop.is_set():
                b.host.call(send)
                stop.wait(0.3)

        sender = threading.Thread(target=traffic, daemon=True)
        sender.start()
        try:
            net.partition(b.host)
            cut_at = time.monotonic()
            lost = None
            while time.monotonic() - cut_at < cut:
                if lost is None and up_peers(b.topology()) == 0:
                    lost = time.monotonic() - cut_at
                time.sleep(0.5)
            net.heal(b.host)
            healed_at = time.monotonic()
            repeered = None
            while time.monotonic() - healed_at < 300:
                if up_peers(b.topology()) >= 1:
                    repeered = time.monotonic() - healed_at
                    break
                time.sleep(0.5)
        finally:
            stop.set()
            sender.join(5)
            for node in nodes.values():
                node.stop()
    return {"cut": cut, "capped": cap, "lost": _round(lost), "repeered": _round(repeered)}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cuts", default="10,40,45", help="cut lengths (s), comma-separated")
    parser.add_argument("--trials", type=int, default=1, help="trials per cut length")
    parser.add_argument("--no-cap", action="store_true", help="peer without ?maxbackoff=30s")
    parser.add_argument("--json", action="store_true", help="one line of JSON")
    args = parser.parse_args(argv)
    from dei_transports.axlnode import build_binary
    from netns import unavailable

    reason = unavailable()
    if reason is not None:
        print(f"axl_redial: {reason}", file=sys.stderr)
        return 2
    binary = build_binary()
    trials = []
    for cut in [float(c) for c in args.cuts.split(",") if c.strip()]:
        for _ in range(args.trials):
            with tempfile.TemporaryDirectory(prefix="dei-redial-") as home:
                trials.append(_trial(binary, cut, not args.no_cap, Path(home)))
    summary = {}
    for cut in sorted({t["cut"] for t in trials}):
        values = [t["repeered"] for t in trials if t["cut"] == cut and t["repeered"] is not None]
        summary[str(cut)] = {
            "n": len(values),
            "median": statistics.median(values) if values else None,
            "min": min(values, default=None),
            "max": max(values, default=None),
        }
    result = {"capped": not args.no_cap, "trials": trials, "repeered_after_heal_s": summary}
    print(json.dumps(result) if args.json else json.dumps(result, indent=1))
    return 0 if all(t["repeered"] is not None for t in trials) else 1


if __name__ == "__main__":
    sys.exit(main())
