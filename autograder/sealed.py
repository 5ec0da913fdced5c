"""Sealing for the grader <-> kernel verdict protocol: encrypt-and-MAC blobs and signed record lines (stdlib only).

The grader seals each test it sends (the kernel's execution machinery and the student's code see an opaque string)
and the kernel's signer thread signs each record it writes back. Both sides use these functions: the grader imports
this module; the sandboxed kernel's bootstrap (`kernel_boot.py`) runs this file's source in its private namespace
before any student code, so the names below are bound to the C implementations from the start.
Only C functions are called here (no library Python code a student could patch is reached from the signer).
"""
import _hashlib
import binascii

_SHA256 = _hashlib.openssl_sha256
_HMAC = _hashlib.hmac_digest
_SAME = _hashlib.compare_digest
_B64_ENCODE = binascii.b2a_base64
_B64_DECODE = binascii.a2b_base64
_HEX = binascii.hexlify

RECORD_MAGIC = "\x1einfopt-verdict "  # every signed line starts with this; what comes before it is not ours
_BLOCK = 32
_BUCKET = 1024  # sealed payloads are padded to a power-of-two multiple of this (probes look like tests)


def subkeys(key: bytes) -> tuple[bytes, bytes]:
    """(encryption key, MAC key) derived from the run's secret."""
    return _HMAC(key, b"infopt-encrypt", "sha256"), _HMAC(key, b"infopt-mac", "sha256")


def _keystream_xor(enc_key: bytes, nonce: bytes, data: bytes) -> bytes:
    """data XOR SHA-256(enc_key | nonce | counter) blocks (a stream cipher from the hash)."""
    stream = b"".join(_SHA256(enc_key + nonce + i.to_bytes(8, "big")).digest()
                      for i in range((len(data) + _BLOCK - 1) // _BLOCK))
    n = len(data)
    return (int.from_bytes(data, "big") ^ int.from_bytes(stream[:n], "big")).to_bytes(n, "big")


def _padded(payload: bytes) -> bytes:
    size = _BUCKET
    while size < len(payload) + 4:
        size *= 2
    return len(payload).to_bytes(4, "big") + payload + b"\0" * (size - len(payload) - 4)


def seal(key: bytes, nonce: bytes, payload: bytes) -> str:
    """An ASCII blob carrying `payload` encrypted and authenticated under `key` (nonce: 16 fresh random bytes)."""
    enc_key, mac_key = subkeys(key)
    body = nonce + _keystream_xor(enc_key, nonce, _padded(payload))
    return _B64_ENCODE(body + _HMAC(mac_key, body, "sha256"), newline=False).decode("ascii")


def unseal(key: bytes, blob: str) -> bytes | None:
    """The payload of a blob made by `seal` with the same key, or None when it was not (forged, altered, garbage)."""
    if type(blob) is not str or len(blob) > 64 * 2**20:
        return None
    try:
        raw = _B64_DECODE(blob.encode("ascii"))
    except (binascii.Error, UnicodeEncodeError):
        return None
    if len(raw) < 16 + 4 + 32:
        return None
    enc_key, mac_key = subkeys(key)
    body, tag = raw[:-32], raw[-32:]
    if not _SAME(_HMAC(mac_key, body, "sha256"), tag):
        return None
    plain = _keystream_xor(enc_key, body[:16], body[16:])
    size = int.from_bytes(plain[:4], "big")
    return plain[4:4 + size] if size <= len(plain) - 4 else None


def sign_line(mac_key: bytes, body: str) -> str:
    """One record line for the verdict channel: magic, MAC of `body` (hex), body, newline."""
    return RECORD_MAGIC + _HEX(_HMAC(mac_key, body.encode("utf-8"), "sha256")).decode("ascii") + " " + body + "\n"


def check_line(mac_key: bytes, line: str) -> tuple[str | None, bool]:
    """(body, clean) of one channel line: body is None unless the line ends in a correctly signed record;
    clean is False when anything else (unsigned bytes) came before it on the line."""
    line = line.rstrip("\n")
    at = line.rfind(RECORD_MAGIC)
    if at < 0:
        return None, False
    mac, _, body = line[at + len(RECORD_MAGIC):].partition(" ")
    try:
        good = _SAME(_HEX(_HMAC(mac_key, body.encode("utf-8"), "sha256")).decode("ascii"), mac)
    except (TypeError, UnicodeEncodeError):
        good = False
    return (body if good else None), at == 0 and good
