"""DEI's own stand-in for OpenEvolve's ``EvaluationResult``: what an evaluator written for
OpenEvolve imports as ``from openevolve.evaluation_result import EvaluationResult`` and
returns. :mod:`dei_python.stand_in` serves this module under that name when OpenEvolve is
not installed; the harness reads any object with ``metrics`` (and ``artifacts``) the same way.
"""

from __future__ import annotations

from typing import Any

import attrs


@attrs.define
class EvaluationResult:
    """An evaluation's numbers and its side channel of text (or bytes) for the prompt.

    Mutable, as evaluators written for OpenEvolve update ``artifacts`` in place.

    Attributes:
        metrics: Values by name (``combined_score`` among them where given).
        artifacts: Anything else worth showing: error text, a traceback, a summary.
    """

    metrics: dict[str, Any]
    artifacts: dict[str, Any] = attrs.field(factory=dict)

    @classmethod
    def from_dict(cls, metrics: dict[str, Any]) -> EvaluationResult:
        """A result of metrics alone (what a plain dict return means)."""
        return cls(metrics=metrics)

    def to_dict(self) -> dict[str, Any]:
        """The metrics alone."""
        return self.metrics

    def has_artifacts(self) -> bool:
        """Whether there is any artifact."""
        return bool(self.artifacts)

    def get_artifact_keys(self) -> list[str]:
        """The artifacts' names."""
        return list(self.artifacts)

    def get_artifact_size(self, key: str) -> int:
        """Bytes of one artifact (its UTF-8 form for text), 0 when absent."""
        if key not in self.artifacts:
            return 0
        value = self.artifacts[key]
        return len(value) if isinstance(value, bytes) else len(str(value).encode("utf-8"))

    def get_total_artifact_size(self) -> int:
        """Bytes of all artifacts."""
        return sum(self.get_artifact_size(key) for key in self.artifacts)
