"""A node's ed25519 identity, and the signatures messages between nodes carry.

:class:`NodeIdentity` holds the key (generated, or read from and written to a PEM file);
:func:`canonical_bytes` is what a signature covers and :func:`verify_signature` checks one
against the key the message claims. Re-exported by :mod:`dei_framework.net.envelope`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from dei_framework.net._wire import HEX64, HEX128, EnvelopeError


@attrs.define(frozen=True, repr=False)
class NodeIdentity:
    """A node's ed25519 signing identity.

    Attributes:
        private_key: The ed25519 private key; never leaves the process except via :meth:`to_pem`.
    """

    private_key: Ed25519PrivateKey

    @classmethod
    def generate(cls) -> NodeIdentity:
        """Makes a fresh random identity (ephemeral unless saved)."""
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_pem(cls, data: bytes) -> NodeIdentity:
        """Loads an unencrypted PKCS#8 PEM key (as ``openssl genpkey -algorithm ed25519`` writes).

        Raises:
            EnvelopeError: the data is not an ed25519 private key (reason ``identity``).
        """
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise EnvelopeError(f"cannot load private key: {exc}", "identity") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise EnvelopeError("private key is not ed25519", "identity")
        return cls(key)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> NodeIdentity:
        """Loads a PEM private key file."""
        return cls.from_pem(Path(path).read_bytes())

    @classmethod
    def load_or_generate(cls, path: str | os.PathLike[str]) -> NodeIdentity:
        """Loads ``path`` if it exists, else generates a key and saves it there (mode 0600)."""
        if Path(path).exists():
            return cls.load(path)
        identity = cls.generate()
        identity.save(path)
        return identity

    def to_pem(self) -> bytes:
        """The private key as unencrypted PKCS#8 PEM."""
        return self.private_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the PEM key, readable by the owner only."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(self.to_pem())

    @property
    def public_key_hex(self) -> str:
        """The raw 32-byte public key as 64 lowercase hex characters (the envelope's ``key``)."""
        raw = self.private_key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        return raw.hex()

    def sign(self, data: bytes) -> bytes:
        """Signs ``data`` (64-byte ed25519 signature)."""
        return self.private_key.sign(data)

    def __repr__(self) -> str:
        return f"NodeIdentity(public_key_hex={self.public_key_hex!r})"


def canonical_bytes(body: Mapping[str, Any]) -> bytes:
    """The bytes a signature covers: ``body`` without ``sig``, sorted keys, compact, ASCII."""
    unsigned = {k: v for k, v in body.items() if k != "sig"}
    return json.dumps(
        unsigned, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    ).encode()


def verify_signature(body: Mapping[str, Any]) -> None:
    """Checks ``body["sig"]`` against the claimed ``body["key"]``.

    Raises:
        EnvelopeError: no signature (``unsigned``), or a bad key or signature (``forged``).
    """
    sig = body.get("sig")
    if sig is None:
        raise EnvelopeError("unsigned message", "unsigned")
    key = body.get("key")
    if not isinstance(key, str) or not HEX64.fullmatch(key):
        raise EnvelopeError("signed message without a valid 64-hex key", "forged")
    if not isinstance(sig, str) or not HEX128.fullmatch(sig):
        raise EnvelopeError("signature is not 128 hex characters", "forged")
    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(key)).verify(
            bytes.fromhex(sig), canonical_bytes(body)
        )
    except (InvalidSignature, ValueError):
        raise EnvelopeError("signature does not match the claimed key", "forged") from None
