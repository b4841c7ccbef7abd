"""What a model charges: an operator plugin prices its calls with it, the ledger bills them.

Part of the contract: operator plugins (the LLM operator) import it from here.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from dei_framework.contract.errors import ConfigError


@attrs.frozen
class Price:
    """What a model charges, in US dollars per million tokens (as price lists quote it).

    Example:
        >>> Price.parse("0.4,1.6").cost(1000, 500)  # USD per million input and output tokens
        0.0012
    """

    #: USD per million prompt (input) tokens.
    input: float
    #: USD per million completion (output) tokens.
    output: float

    @classmethod
    def parse(cls, value: Any) -> Price:
        """Reads ``"IN,OUT"`` or ``[IN, OUT]`` in USD per **million** tokens.

        Raises:
            ConfigError: Not two non-negative numbers.
        """
        parts = value.split(",") if isinstance(value, str) else value
        try:
            numbers = [float(part) for part in parts]
            if len(numbers) != 2 or not all(math.isfinite(n) and n >= 0 for n in numbers):
                raise ValueError
        except (TypeError, ValueError):
            raise ConfigError(
                f"a price is two non-negative numbers, USD per million input and output "
                f"tokens, e.g. 0.4,1.6; got {value!r}"
            ) from None
        return cls(input=numbers[0], output=numbers[1])

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """The cost of the given tokens in USD."""
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1e6
