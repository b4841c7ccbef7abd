"""The python domain's prompt, section by section, as ``config.yaml``'s ``prompt`` settings ask
(OpenEvolve's names; its defaults when the task gives none):

- the program to change (the parent, or the initial program for a new one), with its score,
  features and the evaluator's metrics;
- its artifacts (``include_artifacts``, at most ``max_artifact_bytes``): what the evaluator
  returned besides numbers and what the evaluation printed;
- its evolution history: its nearest ancestors (up to :data:`HISTORY`), each with its score and
  metrics and what the next generation changed in the score;
- the best programs found so far (``num_top_programs``) and programs of other cells
  (``num_diverse_programs``), each with its score and evolve block;
- the other elites the parent selector drew, the last error of the lineage, and the form of
  the answer.

The sections are written here (nothing is read from OpenEvolve's templates).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dei_python.blocks import END, START, split

from dei_framework.contract.errors import InvalidProgram
from dei_framework.contract.records import Candidate, Message

#: Ancestors the evolution history shows (OpenEvolve shows its last three attempts).
HISTORY = 3


def messages(
    *,
    system: str,
    shown: str,
    parent: Candidate | None,
    others: Sequence[Candidate],
    feedback: str | None,
    inspirations: Sequence[Candidate],
    top: int,
    artifacts: bool,
    artifact_bytes: int,
    diffs: bool,
) -> list[Message]:
    """The chat messages of one request (system message first).

    Args:
        system: The system message.
        shown: The program to change (the parent's text, or the initial program's).
        parent: The parent (``None`` for a new program).
        others: The elites the parent selector drew besides it.
        feedback: The last error of the parent's lineage.
        inspirations: The top programs (the first ``top`` of them at most), then the diverse
            ones, as the scheduler chose them.
        top: How many top programs the domain asked for (where the diverse ones begin).
        artifacts: Whether the parent's artifacts are shown.
        artifact_bytes: Bytes of the artifacts section at most.
        diffs: Whether the answer is asked as SEARCH/REPLACE edits.
    """
    if parent is not None:
        heading = f"The current program ({scores(parent)}):"
    else:
        heading = "The task's program; write a new, different version of its evolve block:"
    parts = [
        f"Only the code between the lines `{START}` and `{END}` changes; the rest of "
        "the program is fixed.",
        "",
        heading,
        f"```python\n{shown}```",
    ]
    if parent is not None:
        parts += _metrics(parent)
        if artifacts:
            parts += _artifacts(parent, artifact_bytes)
        parts += _history(parent)
    # Fewer top programs than asked means the archive holds no other: none is diverse then.
    best, diverse = list(inspirations[:top]), list(inspirations[top:])
    if best:
        parts += ["", "## The best programs found so far"]
        for number, candidate in enumerate(best, 1):
            parts += _program(f"Top program {number}", candidate)
    if diverse:
        parts += ["", "## Programs from other cells of the archive (different approaches)"]
        for number, candidate in enumerate(diverse, 1):
            parts += _program(f"Diverse program {number}", candidate)
    seen = {c.id for c in inspirations if c.id}
    for number, other in enumerate((o for o in others if not o.id or o.id not in seen), 1):
        parts += [
            "",
            f"Another program in the archive ({scores(other)}), its evolve block {number}:",
            f"```python\n{block_of(other.text)}```",
        ]
    if feedback:
        parts += ["", f"The last attempt from this program was invalid: {feedback}"]
    if diffs:
        parts += [
            "",
            "Answer with edits of the evolve block, each in this form (SEARCH "
            "holds lines copied exactly from the block):",
            "<<<<<<< SEARCH",
            "(lines of the current block)",
            "=======",
            "(their replacement)",
            ">>>>>>> REPLACE",
        ]
    else:
        parts += [
            "",
            "Answer with the new code of the evolve block only (without the "
            "marker lines), in one ```python fenced block.",
        ]
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(parts)}]


def scores(candidate: Candidate) -> str:
    """``score 0.5; distance 0.2, magnitude 0.1`` (its fitness and features)."""
    fitness = "unscored" if candidate.fitness is None else f"score {candidate.fitness:.6g}"
    features = ", ".join(f"{name} {value:.4g}" for name, value in candidate.descriptor.items())
    return fitness + (f"; {features}" if features else "")


def block_of(text: str) -> str:
    """A program's evolve block (the whole text when it has none)."""
    try:
        return split(text).block
    except InvalidProgram:
        return text


def _metrics_of(candidate: Candidate) -> Mapping[str, Any]:
    metrics = (candidate.info or {}).get("metrics")
    return metrics if isinstance(metrics, Mapping) else {}


def _format_metrics(metrics: Mapping[str, Any]) -> str:
    return ", ".join(
        f"{name} {value:.6g}" if isinstance(value, int | float) else f"{name} {value}"
        for name, value in metrics.items()
    )


def _metrics(parent: Candidate) -> list[str]:
    metrics = _metrics_of(parent)
    return [f"Its metrics: {_format_metrics(metrics)}."] if metrics else []


def _artifacts(parent: Candidate, limit: int) -> list[str]:
    """What the parent's evaluation returned besides numbers and printed, within ``limit``
    bytes (the end of a stream: where errors are)."""
    info = parent.info or {}
    entries: list[str] = []
    returned = info.get("artifacts")
    if isinstance(returned, Mapping):
        entries += [f"{name}: {value}" for name, value in returned.items()]
    for stream in ("stderr", "stdout"):
        text = info.get(stream)
        if isinstance(text, str) and text.strip():
            name = "output" if stream == "stdout" else "error"
            entries.append(f"its standard {name}:\n{text.rstrip()}")
    if not entries:
        return []
    body = "\n".join(entries)
    data = body.encode()
    if len(data) > limit:
        body = data[:limit].decode(errors="ignore") + "\n… (cut at max_artifact_bytes)"
    return ["", "## What the evaluation of the current program returned (artifacts)", body]


def _history(parent: Candidate) -> list[str]:
    """The parent's nearest ancestors, oldest last, each with what its child then scored."""
    ancestors = parent.lineage[:HISTORY]
    if not ancestors:
        return []
    lines = ["", "## Evolution history: the current program's ancestors, nearest first"]
    child = parent
    for depth, ancestor in enumerate(ancestors, 1):
        line = f"- {depth} generation{'s' if depth > 1 else ''} back: {scores(ancestor)}"
        metrics = _metrics_of(ancestor)
        if metrics:
            line += f" (metrics: {_format_metrics(metrics)})"
        if ancestor.fitness is not None and child.fitness is not None:
            change = child.fitness - ancestor.fitness
            verdict = "improved" if change > 0 else "did not improve" if change == 0 else "worsened"
            line += f"; its child {verdict} the score by {change:+.6g}"
        lines.append(line)
        child = ancestor
    return lines


def _program(title: str, candidate: Candidate) -> list[str]:
    metrics = _metrics_of(candidate)
    about = scores(candidate) + (f"; metrics: {_format_metrics(metrics)}" if metrics else "")
    block = block_of(candidate.text)
    return ["", f"{title} ({about}), its evolve block:", f"```python\n{block}```"]
