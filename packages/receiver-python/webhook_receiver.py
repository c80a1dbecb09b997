"""Receive the webhook notification service's notifications: verify, check freshness, process once.

The Python counterpart of the Node package @webhooks/receiver, with the same semantics:

- ``verify_notification`` checks ``X-Signature`` (Base64 RSASSA-PKCS1-v1_5 SHA-256 over the raw body)
  with every key given, then the body, then its ``Timestamp`` against one tolerance for every attempt.
- ``Receiver`` adds de-duplication by ``X-JobId`` through a ``SeenStore`` with a claim/commit/release
  protocol, so a failing handler never marks a job seen and the service's retry can still succeed.

Needs only the standard library and ``cryptography`` (Debian: python3-cryptography).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Mapping, Optional, Protocol, Sequence, Union

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

__all__ = [
    "DEFAULT_TOLERANCE_SECONDS",
    "MAX_CLOCK_SKEW_SECONDS",
    "Claim",
    "InvalidSignatureError",
    "MalformedBodyError",
    "MalformedHeaderError",
    "MemorySeenStore",
    "MissingHeaderError",
    "Receiver",
    "Response",
    "SeenStore",
    "StaleTimestampError",
    "VerifiedNotification",
    "WebhookVerificationError",
    "load_keys",
    "verify_notification",
]

# 30 hours for every attempt: the default retry schedule (1m, 10m, 1h, 6h, 16h, each +-20 %) sends
# the fifth retry up to 23h11m x 1.2 = 27h50m after the Timestamp, which every retry resends unchanged.
# X-JobAttempt is not signed, so windows per attempt would only hand a replay the widest one.
DEFAULT_TOLERANCE_SECONDS = 30 * 3600.0
# How far in the future a Timestamp may lie: clocks drift apart.
MAX_CLOCK_SKEW_SECONDS = 300.0
MAX_ATTEMPT = 5
DEFAULT_LEASE_SECONDS = 300.0
IN_PROGRESS_RETRY_AFTER_SECONDS = 30

SIGNATURE_HEADER = "X-Signature"
JOB_ID_HEADER = "X-JobId"
JOB_ATTEMPT_HEADER = "X-JobAttempt"

_EVENT = re.compile(r"^[A-Za-z][A-Za-z0-9]{0,63}\.[A-Za-z][A-Za-z0-9]{0,63}$")
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
_ATTEMPT = re.compile(r"^\d$")
_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")


class WebhookVerificationError(Exception):
    """A request that is not an authentic, fresh notification; ``status`` is the 4xx to answer."""

    status = 400
    code = "invalid"


class InvalidSignatureError(WebhookVerificationError):
    """No key verifies X-Signature over the raw body: tampered, wrong key, or not from the service."""

    status = 401
    code = "invalid_signature"


class MissingHeaderError(WebhookVerificationError):
    status = 400
    code = "missing_header"

    def __init__(self, header: str) -> None:
        super().__init__(f"the {header} header is missing")
        self.header = header


class MalformedHeaderError(WebhookVerificationError):
    status = 400
    code = "malformed_header"

    def __init__(self, header: str, reason: str) -> None:
        super().__init__(f"the {header} header {reason}")
        self.header = header


class MalformedBodyError(WebhookVerificationError):
    """The signed body is not a JSON object with an Event and a Timestamp."""

    status = 400
    code = "malformed_body"


class StaleTimestampError(WebhookVerificationError):
    """Timestamp is older than the tolerance, or further in the future than clocks drift."""

    status = 400
    code = "stale_timestamp"

    def __init__(self, timestamp: datetime, age_seconds: float, message: str) -> None:
        super().__init__(message)
        self.timestamp = timestamp
        self.age_seconds = age_seconds


@dataclass(frozen=True)
class VerifiedNotification:
    event: str
    """Event of the body, e.g. Order.Created."""
    timestamp: datetime
    """Timestamp of the body: when the service accepted the event (the same on every attempt)."""
    job_id: str
    """X-JobId: the same on every attempt. Not covered by the signature."""
    attempt: int
    """X-JobAttempt: 0, then 1..5 for retries. Not covered by the signature."""
    payload: dict
    """The event's own fields: the body without Event and Timestamp."""
    key_index: int
    """Index of the key that verified: during a rotation it tells the old key from the new."""


KeyInput = Union[str, bytes, rsa.RSAPublicKey]


def load_keys(keys: Iterable[KeyInput]) -> list:
    """PEM public keys (the subscription's signatureKey) as key objects; raises TypeError on anything else."""
    loaded = []
    for key in keys:
        if isinstance(key, rsa.RSAPublicKey):
            loaded.append(key)
            continue
        try:
            public_key = serialization.load_pem_public_key(key.encode() if isinstance(key, str) else key)
        except (ValueError, TypeError) as error:
            raise TypeError(f"keys: not a PEM public key (the subscription's signatureKey): {error}") from None
        if not isinstance(public_key, rsa.RSAPublicKey):
            raise TypeError("keys: the service signs with RSA keys")
        loaded.append(public_key)
    if not loaded:
        raise TypeError("keys: give at least one key (the subscription's signatureKey)")
    return loaded


def _header(headers: Mapping[str, str], name: str) -> Optional[str]:
    """One header by name in any case; works for dicts and for http.server's message headers."""
    wanted = name.lower()
    values = [value for key, value in headers.items() if key.lower() == wanted]
    if len(values) > 1:
        raise MalformedHeaderError(name, "is sent more than once")
    value = values[0].strip() if values else ""
    return value or None


def _require(headers: Mapping[str, str], name: str) -> str:
    value = _header(headers, name)
    if value is None:
        raise MissingHeaderError(name)
    return value


def verify_notification(
    body: bytes,
    headers: Mapping[str, str],
    keys: Sequence[KeyInput],
    tolerance: Optional[float] = DEFAULT_TOLERANCE_SECONDS,
    now: Callable[[], float] = time.time,
) -> VerifiedNotification:
    """Verifies the signature over the raw bytes with each key, then the body, then its Timestamp.

    ``tolerance`` is the maximum age of Timestamp in seconds, for every attempt; None accepts any age.
    Raises a WebhookVerificationError subclass; a TypeError means the caller's wiring is wrong.
    """
    if not isinstance(body, (bytes, bytearray, memoryview)):
        raise TypeError("body: pass the raw request bytes; a parsed and re-serialised body cannot be verified")
    body = bytes(body)
    public_keys = load_keys(keys)
    signature_text = _require(headers, SIGNATURE_HEADER)
    job_id = _require(headers, JOB_ID_HEADER)
    attempt_text = _require(headers, JOB_ATTEMPT_HEADER)
    if not _ATTEMPT.match(attempt_text) or int(attempt_text) > MAX_ATTEMPT:
        raise MalformedHeaderError(JOB_ATTEMPT_HEADER, f"must be an integer from 0 to {MAX_ATTEMPT}")
    try:
        if not _BASE64.match(signature_text):
            raise binascii.Error("not Base64")
        signature = base64.b64decode(signature_text, validate=True)
    except binascii.Error:
        raise InvalidSignatureError(f"{SIGNATURE_HEADER} is not Base64") from None
    key_index = _verifying_key(body, signature, public_keys)

    event, timestamp, payload = _parse_body(body)
    _assert_fresh(timestamp, now(), tolerance)
    return VerifiedNotification(event, timestamp, job_id, int(attempt_text), payload, key_index)


def _verifying_key(body: bytes, signature: bytes, public_keys: list) -> int:
    for index, key in enumerate(public_keys):
        try:
            key.verify(signature, body, padding.PKCS1v15(), hashes.SHA256())
            return index
        except InvalidSignature:
            continue
    raise InvalidSignatureError(f"{SIGNATURE_HEADER} does not verify over the raw body with any of the {len(public_keys)} keys")


def _parse_body(body: bytes) -> tuple:
    try:
        value = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise MalformedBodyError(f"the body is not UTF-8 JSON: {error}") from None
    if not isinstance(value, dict):
        raise MalformedBodyError("the body is not a JSON object")
    payload = dict(value)
    event = payload.pop("Event", None)
    timestamp_text = payload.pop("Timestamp", None)
    if not isinstance(event, str) or not _EVENT.match(event):
        raise MalformedBodyError("the body's Event is not an event name like Order.Created")
    if not isinstance(timestamp_text, str) or not _TIMESTAMP.match(timestamp_text):
        raise MalformedBodyError("the body's Timestamp is not an ISO 8601 UTC time like 2026-11-21T22:52:13.940Z")
    try:
        timestamp = datetime.strptime(timestamp_text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    except ValueError:
        raise MalformedBodyError("the body's Timestamp is not a valid time") from None
    return event, timestamp, payload


def _assert_fresh(timestamp: datetime, now: float, tolerance: Optional[float]) -> None:
    age = now - timestamp.timestamp()
    if age < -MAX_CLOCK_SKEW_SECONDS:
        raise StaleTimestampError(timestamp, age, f"the Timestamp {timestamp.isoformat()} lies {-age:.0f} s in the future")
    if tolerance is not None and age > tolerance:
        raise StaleTimestampError(timestamp, age, f"the Timestamp {timestamp.isoformat()} is {age:.0f} s old, older than {tolerance:.0f} s")


# --- De-duplication ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    state: str
    """"claimed" (this caller owns the job now), "in_progress" (another live claim does) or "done"."""
    token: Optional[str] = None


class SeenStore(Protocol):
    """Where processed jobs are remembered.

    ``claim`` before the handler ("claimed" with a token, "in_progress" or "done"; a claim lapses after
    ``lease_seconds`` so a crashed handler does not block the job forever); ``commit`` after it
    succeeded; ``release`` after it failed, leaving the job unseen for the service's next attempt.
    """

    def claim(self, key: str, lease_seconds: float) -> Claim: ...

    def commit(self, key: str, token: str) -> None: ...

    def release(self, key: str, token: str) -> None: ...


@dataclass
class _Entry:
    mode: str  # "CLAIMED" (token, until = lease end) or "DONE" (until = expiry)
    until: float
    token: Optional[str] = None


class MemorySeenStore:
    """One process's jobs: a bounded LRU with a TTL, safe across threads. Forgets everything on restart.

    Modes of a job: absent -claim-> CLAIMED; CLAIMED -claim before lease end-> "in_progress";
    CLAIMED -claim at or after lease end-> CLAIMED with a new token; CLAIMED -commit-> DONE;
    CLAIMED -release with its own token-> absent; DONE -claim before expiry-> "done";
    DONE -expiry, or eviction as least recently seen past max_entries-> absent. CLAIMED is never evicted.
    """

    def __init__(
        self,
        ttl_seconds: float = DEFAULT_TOLERANCE_SECONDS + MAX_CLOCK_SKEW_SECONDS,
        max_entries: int = 100_000,
        now: Callable[[], float] = time.time,
    ) -> None:
        if ttl_seconds <= 0 or max_entries <= 0:
            raise ValueError("ttl_seconds and max_entries must be above 0")
        self._ttl = ttl_seconds
        self._max = max_entries
        self._now = now
        self._entries: "OrderedDict[str, _Entry]" = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def claim(self, key: str, lease_seconds: float) -> Claim:
        with self._lock:
            now = self._now()
            entry = self._entries.get(key)
            if entry is not None and entry.mode == "DONE":
                if now < entry.until:
                    self._entries.move_to_end(key)
                    return Claim("done")
                del self._entries[key]
                entry = None
            if entry is not None and entry.mode == "CLAIMED" and now < entry.until:
                return Claim("in_progress")
            token = uuid.uuid4().hex
            self._set(key, _Entry("CLAIMED", now + lease_seconds, token))
            return Claim("claimed", token)

    def commit(self, key: str, token: str) -> None:
        with self._lock:
            self._set(key, _Entry("DONE", self._now() + self._ttl))

    def release(self, key: str, token: str) -> None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.mode == "CLAIMED" and entry.token == token:
                del self._entries[key]

    def _set(self, key: str, entry: _Entry) -> None:
        self._entries[key] = entry
        self._entries.move_to_end(key)
        if len(self._entries) <= self._max:
            return
        for candidate in [k for k, e in self._entries.items() if e.mode == "DONE"]:
            if len(self._entries) <= self._max:
                break
            del self._entries[candidate]


# --- The receiver -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict = field(default_factory=dict)
    body: bytes = b""


class Receiver:
    """Verifies, de-duplicates and dispatches one request; ``handle`` never raises.

    Answers: 200 processed (handler called); 200 duplicate (processed before, handler not called);
    409 with Retry-After while the same job is in the handler (not held open: the service's retry then
    finds it processed, or processes it if the handler failed); the error's 4xx when refused; 500 when
    the handler raised (the job stays unseen); 503 when the seen-store failed to claim.
    """

    def __init__(
        self,
        keys: Union[Sequence[KeyInput], Callable[[], Sequence[KeyInput]]],
        on_notification: Callable[[VerifiedNotification], Any],
        seen: Optional[SeenStore] = None,
        tolerance: Optional[float] = DEFAULT_TOLERANCE_SECONDS,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        deduplicate_by: str = "job_id",
        on_error: Optional[Callable[[BaseException, str], None]] = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        if deduplicate_by not in ("job_id", "body"):
            raise ValueError('deduplicate_by: "job_id" or "body"')
        self._keys = keys if callable(keys) else (lambda fixed=load_keys(keys): fixed)
        self._on_notification = on_notification
        self._seen = seen if seen is not None else MemorySeenStore(now=now)
        self._tolerance = tolerance
        self._lease = lease_seconds
        self._by_body = deduplicate_by == "body"
        self._on_error = on_error
        self._now = now

    def handle(self, body: bytes, headers: Mapping[str, str]) -> Response:
        try:
            notification = verify_notification(body, headers, self._keys(), self._tolerance, self._now)
        except WebhookVerificationError as error:
            self._report(error, "verify")
            return _answer(error.status, {"error": error.code, "message": str(error)})
        except Exception as error:  # wiring: a parsed body, a bad key
            self._report(error, "verify")
            return _answer(500, {"error": "receiver_misconfigured"})

        key = "sha256:" + hashlib.sha256(body).hexdigest() if self._by_body else notification.job_id
        try:
            claim = self._seen.claim(key, self._lease)
        except Exception as error:
            self._report(error, "seen-store")
            return _answer(503, {"error": "seen_store_unavailable"})
        if claim.state == "done":
            return _answer(200, {"status": "duplicate", "jobId": notification.job_id})
        if claim.state != "claimed" or claim.token is None:
            return _answer(409, {"status": "in_progress", "jobId": notification.job_id}, {"Retry-After": str(IN_PROGRESS_RETRY_AFTER_SECONDS)})

        try:
            self._on_notification(notification)
        except Exception as error:
            self._report(error, "handler")
            try:
                self._seen.release(key, claim.token)
            except Exception as release_error:  # the claim lapses after lease_seconds instead
                self._report(release_error, "seen-store")
            return _answer(500, {"error": "handler_failed", "jobId": notification.job_id})
        try:
            self._seen.commit(key, claim.token)
        except Exception as error:
            # Processed but not remembered: still 200, since a retry would run the handler again.
            self._report(error, "seen-store")
        return _answer(200, {"status": "processed", "jobId": notification.job_id})

    def _report(self, error: BaseException, stage: str) -> None:
        if self._on_error is not None:
            try:
                self._on_error(error, stage)
            except Exception:
                pass


def _answer(status: int, body: dict, headers: Optional[dict] = None) -> Response:
    return Response(status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(body).encode())
