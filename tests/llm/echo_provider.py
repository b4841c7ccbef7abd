"""A tiny provider plugin for the tests: ``echoprov/<anything>`` answers in-process.

It shows the pattern a real provider plugin follows: import litellm inside the hook (the hook
is only called when an LLM operator is created), subclass ``litellm.CustomLLM``, return
``(provider_name, handler)`` pairs.
"""

from __future__ import annotations

from typing import Any

from dei_framework.plugin.hookspecs import hookimpl

#: Every call the handler answered, as ``(model, last user message)``.
CALLS: list[tuple[str, str]] = []


def make_handler() -> Any:
    """An ``EchoLLM`` instance (built lazily so importing this module stays cheap)."""
    import litellm

    class EchoLLM(litellm.CustomLLM):
        """Replies with a fenced warrior that names the model and echoes the prompt length."""

        async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any):
            last = str(messages[-1]["content"]) if messages else ""
            CALLS.append((model, last))
            text = f"echo from {model}\n```redcode\nMOV 0, 1\n```\n"
            return litellm.ModelResponse(
                model=model,
                choices=[
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": text},
                    }
                ],
                usage={
                    "prompt_tokens": len(last.split()),
                    "completion_tokens": 5,
                    "total_tokens": len(last.split()) + 5,
                },
            )

        def completion(self, *args: Any, **kwargs: Any):
            raise NotImplementedError("the DEI operator only calls acompletion")

    return EchoLLM()


@hookimpl
def dei_llm_providers() -> list[Any]:
    return [("echoprov", make_handler())]
