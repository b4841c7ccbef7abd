"""Replaying a recorded run: an operator that only serves the replies in ``calls.jsonl``."""

from __future__ import annotations

from dei_framework.errors import OperatorError
from dei_framework.operators import Operator, OperatorReply, OperatorRequest


class RecordedOperator(Operator):
    """Stands in for a node's operator during ``--replay``.

    The search loop serves recorded replies itself, in order; this operator is only asked when
    the record has run out, which means the replayed run diverged from the recorded one.
    """

    offline = True

    def __init__(self, *, label: str) -> None:
        self.label = label
        self.max_in_flight = 4

    async def propose(self, request: OperatorRequest) -> OperatorReply:
        raise OperatorError(
            f"replay: no recorded reply left for {request.key}; the record is incomplete"
        )
