"""`dei watch` and `dei-run --watch` over real HTTP, during real 4-node in-memory runs."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest
from watch_helpers import TOY, get, read_url, slow_toy_config, urlopen, wait_for, watched_run

from dei_framework.app.watch.server import WatchServer


def admitted(node: dict) -> int:
    return node["statuses"].get("new", 0) + node["statuses"].get("improve_existing", 0)


@pytest.fixture
def live_run(toy_env, tmp_path):
    with watched_run(toy_env, tmp_path, delay=0.25) as started:
        yield started


def test_api_state_advances_during_a_four_node_run(live_run) -> None:
    url, out, run = live_run
    assert url.startswith("http://127.0.0.1:")  # loopback unless --host says otherwise
    state_url = url + "api/state"
    first = wait_for(
        lambda s: len(s["nodes"]) == 4 and all(n["calls"] for n in s["nodes"]), state_url
    )
    assert first["run"]["status"] == "running"

    def advanced(state: dict) -> bool:  # every node made calls and the merged curve moved on
        return (
            all(
                after["calls"] > before["calls"]
                for before, after in zip(first["nodes"], state["nodes"], strict=True)
            )
            and sum(map(admitted, state["nodes"])) > sum(map(admitted, first["nodes"]))
            and state["merged"]["curve"][-1][0] > first["merged"]["curve"][-1][0]
        )

    # Waits for progress rather than for a fixed time: on a loaded machine 1.5 s may see none.
    second = wait_for(advanced, state_url)
    assert second["version"] > first["version"]
    for before, after in zip(first["nodes"], second["nodes"], strict=True):
        assert before["name"] == after["name"]
        assert after["calls"] > before["calls"]  # every node is making calls
        assert after["quota"] == 80
    assert sum(map(admitted, second["nodes"])) > sum(map(admitted, first["nodes"]))
    assert second["merged"]["curve"][-1][0] > first["merged"]["curve"][-1][0]
    # An operator's elite: its text is known at once (calls.jsonl); a re-evaluated opponent's
    # of the round in progress only from the next checkpoint.
    cell = next(c for n in second["nodes"] for c in n["cells"] if c["kind"] in ("new", "mutate"))
    elite = get(f"{url}api/elite?id={cell['id']}")
    assert elite["fitness"] == cell["fitness"] and elite["text"]
    assert run.wait(timeout=300) == 0, run.stderr.read()
    final = wait_for(lambda s: s["run"]["status"] == "finished", state_url)
    summary = json.loads((out / "summary.json").read_text())
    assert final["merged"]["qd_score"] == pytest.approx(summary["merged"]["qd_score"])
    assert [n["calls"] for n in final["nodes"]] == [80] * 4
    assert len(final["champions"]) == 16 and final["transfers"]


def test_since_returns_unchanged_when_nothing_happened(finished_run, toy_env) -> None:
    watch = subprocess.Popen(
        ["dei", "watch", str(finished_run), "--port", "0"],
        env=toy_env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        url = read_url(watch)
        state = get(url + "api/state")
        assert get(f"{url}api/state?since={state['version']}") == {
            "version": state["version"],
            "unchanged": True,
        }
        assert get(f"{url}api/state?since=0")["nodes"]
        assert get(url + "api/runs")["runs"] == [{"path": "", "condition": None, "repeat": None}]
        page = urlopen(url).read().decode()
        assert '<script src="/static/watch.js">' in page and "http" not in page.split("<body>")[
            1
        ].replace("http://www.w3.org", "")  # nothing fetched from elsewhere
        for name in ("watch.js", "watch.css"):
            assert urlopen(f"{url}static/{name}").status == 200
        for bad in ("static/../run.py", "nope", "api/state?run=..", "api/elite?run=/etc"):
            with pytest.raises(urllib.error.HTTPError) as caught:
                urlopen(url + bad)
            assert caught.value.code == 404
        request = urllib.request.Request(url + "api/state", method="POST", data=b"x")
        with pytest.raises(urllib.error.HTTPError) as caught:
            urlopen(request)
        assert caught.value.code == 405
    finally:
        watch.send_signal(signal.SIGINT)
        assert watch.wait(timeout=30) == 0


def test_dei_run_watch_serves_its_own_run_and_stays_up_until_ctrl_c(toy_env, tmp_path) -> None:
    out = tmp_path / "run"
    run = subprocess.Popen(
        [
            "dei-run",
            *TOY,
            "--progress",
            "quiet",
            "--nodes",
            "4",
            "--budget",
            "80",
            "--rounds",
            "2",
            "--config",
            str(slow_toy_config(tmp_path, 0.05)),
            "--out",
            str(out),
            "--watch",
        ],
        env=toy_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = read_url(run)
        final = wait_for(lambda s: s["run"]["status"] == "finished", url + "api/state")
        assert len(final["nodes"]) == 4 and final["run"]["calls"] == 80
        assert "still serving" in run.stderr.readline()
        assert run.poll() is None  # the page stays up after the run
    finally:
        run.send_signal(signal.SIGINT)
        assert run.wait(timeout=30) == 0
    assert "done: 4 nodes" in run.stdout.read()


def test_bad_watch_arguments_are_one_line_errors(tmp_path, cli) -> None:
    file = tmp_path / "file.txt"
    file.write_text("x")
    result = cli("dei", "watch", str(file), check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == f"error: {file} is a file; give a run or experiment directory"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = cli("dei", "watch", str(tmp_path), "--port", str(port), check=False)
    assert result.returncode == 1 and len(result.stderr.strip().splitlines()) == 1
    assert f"cannot serve on 127.0.0.1:{port}" in result.stderr
    assert "--port" in result.stderr
    result = cli("dei", "watch", str(tmp_path), "--port", "70000", check=False)
    assert result.returncode == 1 and "70000" in result.stderr and "Traceback" not in result.stderr


def test_requests_for_other_host_names_are_refused_on_loopback(finished_run) -> None:
    server = WatchServer(finished_run, port=0).start()
    try:
        port = int(server.url.rsplit(":", 1)[1].strip("/"))
        for host, status in (
            (f"127.0.0.1:{port}", 200),
            (f"localhost:{port}", 200),
            ("evil.example:80", 403),
            (f"attacker.test:{port}", 403),
        ):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            connection.putrequest("GET", "/api/runs", skip_host=True)
            connection.putheader("Host", host)
            connection.endheaders()
            assert connection.getresponse().status == status, host
            connection.close()
    finally:
        server.close()


def _status(port: int, target: str, host: str) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.putrequest("GET", target, skip_host=True)
        connection.putheader("Host", host)
        connection.endheaders()
        return connection.getresponse().status
    finally:
        connection.close()


def test_only_exact_loopback_names_and_allowed_ones_are_served(finished_run) -> None:
    server = WatchServer(finished_run, port=0, allowed_hosts=["devbox"]).start()
    try:
        port = int(server.url.rsplit(":", 1)[1].strip("/"))
        served = [
            "127.0.0.1",
            f"127.0.0.1:{port}",
            "localhost",
            f"localhost:{port}",
            "LocalHost",
            "[::1]",
            f"[::1]:{port}",
            "devbox",
            f"devbox:{port}",
        ]
        refused = [
            "127.0.0.1.attacker.example",
            f"127.0.0.1.attacker.example:{port}",
            "127.evil.com",
            "localhost.evil.com",
            "[::1",
            "[::1]x",
            "",
            "127.0.0.2",
            "localhost:abc",
            "localhost:99999",
            "localhost:",
            "devbox.evil.com",
            "127.0.0.1:8765:1",
        ]
        for host in served:
            assert _status(port, "/api/runs", host) == 200, host
        for host in refused:
            assert _status(port, "/api/runs", host) == 403, host
    finally:
        server.close()


def test_numeric_parameters_are_parsed_strictly(finished_run) -> None:
    server = WatchServer(finished_run, port=0).start()
    try:
        port = int(server.url.rsplit(":", 1)[1].strip("/"))
        assert _status(port, "/api/state?since=0", "127.0.0.1") == 200
        assert _status(port, "/api/state?since=", "127.0.0.1") == 200  # no version: all of it
        for since in ("%C2%B2", "abc", "-1", "1.5", "%EF%BC%91", "9" * 40):  # ² and a wide 1
            assert _status(port, f"/api/state?since={since}", "127.0.0.1") == 400, since
        assert _status(port, "//[/api/state", "127.0.0.1") in (400, 404)  # answered, not dropped
    finally:
        server.close()


def test_the_listen_backlog_holds_many_clients_at_once(finished_run) -> None:
    # Not serving yet: every connection waits in the kernel's accept queue, as a burst of
    # clients does while the server is busy. socketserver's default (5) holds about six.
    server = WatchServer(finished_run, port=0)
    port = int(server.url.rsplit(":", 1)[1].strip("/"))
    clients = []
    try:
        for _ in range(100):
            clients.append(socket.create_connection(("127.0.0.1", port), timeout=5))
    finally:
        for client in clients:
            client.close()
        server.close()
    assert len(clients) == 100


def test_infinite_values_in_a_log_still_give_parseable_json(tmp_path) -> None:
    events = [
        {
            "event": "evaluated",
            "id": "a-r0-s0",
            "node": "a",
            "round": 0,
            "kind": "mutate",
            "status": "new",
            "fitness": 1.0,
            "cell": [0, 0],
            "descriptor": {"x": float("inf")},
        },
        {
            "event": "round",
            "node": "a",
            "round": 0,
            "stats": {},
            "champion": {"id": "a-r0-s0", "fitness": float("nan"), "cell": [0, 0]},
        },
    ]
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    server = WatchServer(tmp_path, port=0).start()
    try:
        body = urlopen(server.url + "api/state").read().decode()
    finally:
        server.close()
    assert "Infinity" not in body and "NaN" not in body
    state = json.loads(body)
    assert state["nodes"][0]["cells"][0]["descriptor"] == {"x": None}
    assert state["champions"][0]["fitness"] is None
    assert state["space"]["inferred"] and state["space"]["shape"] == [1, 1]


def test_a_browser_that_goes_away_mid_request_prints_no_traceback(finished_run, capfd) -> None:
    import struct

    server = WatchServer(finished_run, port=0).start()
    try:
        port = int(server.url.rsplit(":", 1)[1].strip("/"))
        for _ in range(3):
            client = socket.create_connection(("127.0.0.1", port), timeout=30)
            client.sendall(b"GET /api/state HTTP/1.1\r\nHost: 127.0.0.1")  # no end of line
            # Closed with a reset (linger 0), as a killed browser's socket is.
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.close()
        time.sleep(0.5)  # the server's threads meet the resets
        body = urlopen(server.url + "api/runs").read()  # and it still serves
    finally:
        server.close()
    assert body
    assert "Traceback" not in capfd.readouterr().err
