"""Checks before litellm is imported: a missing key, a server that is not there, a rejected key.

Importing litellm costs seconds of CPU (about 9 s on a 2-core machine), and a run that cannot
reach its model should not make its user wait for that to learn so. :func:`preflight` finds the
mistakes that need no litellm, using only the standard library:

* no API key: the provider needs one (:data:`REQUIRED_KEY_ENV_VARS`), no ``api_key`` option
  was given and its variable is unset (loopback servers behind ``openai/`` excepted: the
  operator sends them a placeholder key);
* an ``api_base`` whose host does not resolve, or where nothing accepts a connection;
* for OpenAI-compatible providers, a key the server rejects (401) or a key without permission
  (403), read from ``GET /models`` (a free, read-only request every OpenAI-compatible server
  answers); on OpenAI's own API also a model it does not know (404 from ``GET
  /models/{model}``).

Anything it cannot decide (a timeout, a server without ``/models``, a reply that is not a
model list) is left to the first real call: a preflight may only ever say "no" when the call
would certainly fail, never block a run that would work.
"""

from __future__ import annotations

import os
import socket
import urllib.error
import urllib.parse
import urllib.request

#: API-key environment variables litellm reads, by provider prefix (a small table of the
#: common ones; a provider not named here is not checked, litellm says it later).
KEY_ENV_VARS = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "xai": "XAI_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "fireworks_ai": "FIREWORKS_AI_API_KEY",
    "cohere": "COHERE_API_KEY",
    "hosted_vllm": "HOSTED_VLLM_API_KEY",
}
#: Providers whose calls fail without a key: all of the above but a self-hosted vLLM server,
#: which needs one only when it was started with one.
REQUIRED_KEY_ENV_VARS = {p: v for p, v in KEY_ENV_VARS.items() if p != "hosted_vllm"}

#: OpenAI-compatible providers whose key is checked with ``GET /models``, and their default
#: base URL (``None``: the server is always given with ``--api-base``).
OPENAI_COMPATIBLE_BASES = {"openai": "https://api.openai.com/v1", "hosted_vllm": None}

#: The one server whose ``GET /models/{model}`` answers 404 exactly when a chat call would:
#: proxies and local servers route models their list does not name, or answer 404 for any
#: model they do not list, so elsewhere an unknown model is left to the first call.
MODEL_LOOKUP_BASES = frozenset({"https://api.openai.com/v1"})

#: Seconds a preflight request may take before it is left to the real call.
PROBE_TIMEOUT = 4.0

_DEFAULT_PORTS = {"http": 80, "https": 443}


def is_loopback(url: str | None) -> bool:
    """True if ``url`` names this machine (``localhost``, ``127.x.y.z``, ``::1``)."""
    host = urllib.parse.urlsplit(url).hostname or "" if url else ""
    return host in ("localhost", "::1") or host.startswith("127.")


def preflight(
    model: str, *, api_base: str | None, api_key: str | None, api_key_env: str | None
) -> str | None:
    """The cause, in a few words, why every call to ``model`` would fail; ``None`` if unknown.

    Args:
        model: The litellm model string, ``provider/model``.
        api_base: The server URL, ``None`` for the provider's own.
        api_key: The key given as an option, if any.
        api_key_env: The variable the key was read from (for the message only).

    Returns:
        One line without the model's name (the caller prefixes it), e.g. ``"no API key: set
        OPENAI_API_KEY (or the api_key_env option)"`` or ``"connection refused (is the server
        running? check --api-base): [Errno 111] Connection refused"``; ``None`` when nothing
        was found wrong.
    """
    provider = model.split("/", 1)[0]
    required = REQUIRED_KEY_ENV_VARS.get(provider)
    key = api_key or (os.environ.get(required, "").strip() if required else None)
    if required and not key and not (provider == "openai" and is_loopback(api_base)):
        return f"no API key: set {required} (or the api_key_env option)"
    if api_base:
        unreachable = _unreachable(api_base)
        if unreachable is not None:
            return unreachable
    if provider in OPENAI_COMPATIBLE_BASES:
        base = api_base or OPENAI_COMPATIBLE_BASES[provider]
        if base:
            # Which key to check: the api_key_env variable, the api_key option, or the
            # provider's variable (None names the option in the message).
            source = api_key_env or (None if api_key else required)
            return _check_model_list(base, model.split("/", 1)[1], key, source)
    return None


def _unreachable(url: str) -> str | None:
    """``"DNS lookup failed for HOST …"`` or ``"connection refused …"``; ``None`` otherwise."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname
    if not host:
        return None
    try:
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme, 80)
    except ValueError:  # a port that is not a number: the real call says so
        return None
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        return f"DNS lookup failed for {host} (check --api-base): {exc.strerror or exc}"
    except OSError:
        return None
    refused: OSError | None = None
    for family, kind, proto, _, address in addresses:
        try:
            with socket.socket(family, kind, proto) as probe:
                probe.settimeout(PROBE_TIMEOUT)
                probe.connect(address)
            return None  # something listens: the rest is the HTTP check's business
        except ConnectionRefusedError as exc:
            refused = exc
        except OSError:
            return None  # unreachable network, timeout: maybe transient, let the call decide
    if refused is None:
        return None
    return (
        f"connection refused (is the server running? check --api-base): "
        f"{host}:{port}: {refused.strerror or refused}"
    )


def _check_model_list(base: str, model: str, key: str | None, key_env: str | None) -> str | None:
    """Reads ``GET {base}/models`` (401, 403) and, on OpenAI, ``GET {base}/models/{model}``."""
    base = base.rstrip("/")
    paths = ["/models"]
    if base in MODEL_LOOKUP_BASES:
        paths.append("/models/" + urllib.parse.quote(model, safe=""))
    for path in paths:
        request = urllib.request.Request(base + path)
        if key:
            request.add_header("Authorization", f"Bearer {key}")
        try:
            with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT):
                continue
        except urllib.error.HTTPError as exc:
            if exc.code == 401:
                check = f"check {key_env}" if key_env else "check the api_key option"
                return f"authentication failed ({check}): HTTP 401 from {base}{path}"
            if exc.code == 403:
                return f"permission denied: HTTP 403 from {base}{path}"
            if exc.code == 404 and path != "/models":
                return (
                    f"model not found (check the model string and --api-base): HTTP 404 "
                    f"from {base}{path}"
                )
            return None  # a server without /models, or a hiccup: the real call decides
        except (OSError, ValueError):
            return None  # unreachable, timed out, not HTTP: the real call decides
    return None
