"""JsonlTail: only appended complete lines are parsed, torn lines wait, rewrites are noticed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dei_framework.app.watch.tail import JsonlTail, Rewound


def append(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)


def test_reads_only_what_was_appended_and_waits_for_a_partial_line(tmp_path) -> None:
    path = tmp_path / "events.jsonl"
    tail = JsonlTail(path)
    assert tail.read() == []  # not there yet
    append(path, '{"a": 1}\n{"a": 2}\n{"a": ')
    assert tail.read() == [{"a": 1}, {"a": 2}]
    assert tail.offset == len('{"a": 1}\n{"a": 2}\n')
    assert tail.behind == len('{"a": ')
    assert tail.read() == []  # still torn
    append(path, "3}\n")
    assert tail.read() == [{"a": 3}]
    assert tail.read() == []
    assert tail.behind == 0


def test_damaged_lines_are_skipped_not_fatal(tmp_path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"a": 1}\nnot json\n[1, 2]\n\n{"a": 2}\n')
    assert JsonlTail(path).read() == [{"a": 1}, {"a": 2}]


def test_max_bytes_bounds_each_read_to_whole_lines(tmp_path) -> None:
    path = tmp_path / "events.jsonl"
    lines = [json.dumps({"i": i, "pad": "x" * 50}) for i in range(100)]
    path.write_text("".join(line + "\n" for line in lines))
    tail = JsonlTail(path)
    chunks = []
    while batch := tail.read(max_bytes=500):
        chunks.append(batch)
    assert len(chunks) > 10  # it really read in steps
    assert [e["i"] for chunk in chunks for e in chunk] == list(range(100))
    # A line longer than max_bytes is still read whole.
    append(path, json.dumps({"i": 100, "pad": "y" * 2000}) + "\n")
    assert [e["i"] for e in tail.read(max_bytes=100)] == [100]


def test_a_truncated_file_raises_rewound_and_starts_over(tmp_path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n')
    tail = JsonlTail(path)
    assert len(tail.read()) == 2
    path.write_text('{"a": 1}\n')  # what `dei-run --resume` does: cut back to the checkpoint
    with pytest.raises(Rewound):
        tail.read()
    assert tail.read() == [{"a": 1}]


def test_a_rewritten_file_of_the_same_size_is_noticed(tmp_path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"a": 1}\n')
    tail = JsonlTail(path)
    assert tail.read() == [{"a": 1}]
    # Cut back and regrown past the old offset between two reads.
    path.write_text('{"b": 7}\n{"b": 8}\n')
    with pytest.raises(Rewound):
        tail.read()
    assert tail.read() == [{"b": 7}, {"b": 8}]


def test_a_removed_file_raises_rewound(tmp_path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"a": 1}\n')
    tail = JsonlTail(path)
    tail.read()
    path.unlink()
    with pytest.raises(Rewound):
        tail.read()
    assert tail.read() == []
