"""Taking event lines apart quickly: the search loop's common lines by pattern, the rest as JSON.

Nearly every line of a run's ``events.jsonl`` is an ``evaluated`` event the search loop wrote in
one fixed layout (:meth:`dei_framework.search.scheduler.Admission.event` through
:func:`dei_framework.runtime.files.run_dir.dumps`)::

    {"event":"evaluated","id":"…","node":"…","round":3,"operator":"…","kind":"…",
     "parent":null,"slot":7,"status":"new","fitness":1.5,"descriptor":{…},"cell":[2,5],…}

Parsing such a line with :func:`json.loads` builds every field (descriptor, timings, …) as
Python objects, and on a run of hundreds of thousands of events that is most of the time a
cold start takes. A line in exactly this layout — plain strings (no escapes), a finite
fitness, a flat descriptor, a valid cell; the fields after the cell are not looked at — is
taken apart by one regular expression run over the whole chunk; its descriptor is kept as
JSON text and parsed only if the elite is shown. Every other line (invalid candidates, other
event kinds, other writers' layouts, damaged lines) is parsed with :func:`json.loads` as
before, so the fields read are the same either way, only faster for the common lines.

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from dei_framework.app.watch.tail import parse_lines

#: A JSON string without escapes (its content is the value). Possessive quantifiers (``*+``)
#: never give back what they matched: the next character cannot be one of them anyway.
_TEXT = r'"([^"\\\n]*+)"'
_LINE = re.compile(
    r'^\{"event":"evaluated","id":' + _TEXT + ',"node":' + _TEXT + r',"round":(\d+),'
    r'"operator":' + _TEXT + ',"kind":' + _TEXT + r',"parent":(?:null|"[^"\\\n]*+"),'
    r'(?:"slot":\d+,)?"status":"(new|improve_existing|not_added)",'
    r'"fitness":(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?),'
    r'"descriptor":(\{[^{}\n]*+\}),"cell":\[(\d++(?:,\d++)*+)\][,}][^\n]*+$'
    r"|^([^\n]*+)$",
    re.MULTILINE,
)


class Evaluated(NamedTuple):
    """The fields of an ``evaluated`` event that the watch model reads."""

    node: str
    round: int
    kind: str
    status: str
    fitness: float | None
    cell: tuple[int, ...] | None
    id: str
    operator: str
    #: A mapping, or its JSON text (parsed when needed).
    descriptor: Any
    error: Any = None


def events(text: str) -> Iterator[Evaluated | dict[str, Any]]:
    """The events of newline-separated ``text``, in order.

    Lines in the search loop's ``evaluated`` layout come as :class:`Evaluated`; other lines as
    their JSON object (lines that are not JSON objects are skipped).
    """
    make = tuple.__new__  # builds an Evaluated without the Python-level constructor
    cells: dict[str, tuple[int, ...]] = {}  # a grid has few cells: each is converted once
    for (
        elite_id,
        node,
        round_,
        operator,
        kind,
        status,
        fitness,
        descriptor,
        cell,
        other,
    ) in _LINE.findall(text):
        if status:
            cell_index = cells.get(cell)
            if cell_index is None:
                cell_index = cells[cell] = tuple(map(int, cell.split(",")))
            yield make(
                Evaluated,
                (
                    node,
                    int(round_),
                    kind,
                    status,
                    float(fitness),
                    cell_index,
                    elite_id,
                    operator,
                    descriptor,
                    None,
                ),
            )
        elif other and not other.isspace():
            yield from parse_lines(other)
