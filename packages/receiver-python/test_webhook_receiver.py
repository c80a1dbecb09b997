"""Unit tests of webhook_receiver with real RSA signatures and an injected clock: python3 -m unittest."""

import base64
import json
import threading
import unittest
from concurrent.futures import ThreadPoolExecutor

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from webhook_receiver import (
    DEFAULT_TOLERANCE_SECONDS,
    MAX_CLOCK_SKEW_SECONDS,
    InvalidSignatureError,
    MalformedBodyError,
    MalformedHeaderError,
    MemorySeenStore,
    MissingHeaderError,
    Receiver,
    StaleTimestampError,
    verify_notification,
)

ACCEPTED = 1795301533.940  # 2026-11-21T22:52:13.940Z
BODY = b'{"Event":"Order.Shipped","Timestamp":"2026-11-21T22:52:13.940Z","OrderId":"ord_1","Carrier":"DHL"}'


def key_pair():
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, pem


CURRENT, CURRENT_PEM = key_pair()
NEXT, NEXT_PEM = key_pair()


def signed(body=BODY, key=CURRENT, job_id="ntf_1", attempt="0"):
    signature = base64.b64encode(key.sign(body, padding.PKCS1v15(), hashes.SHA256())).decode()
    return body, {"X-Signature": signature, "X-JobId": job_id, "X-JobAttempt": attempt}


def clock(offset=1.0):
    return lambda: ACCEPTED + offset


class VerifyTest(unittest.TestCase):
    def test_verified(self):
        body, headers = signed(attempt="2")
        lower = {name.lower(): value for name, value in headers.items()}
        notification = verify_notification(body, lower, [CURRENT_PEM], now=clock())
        self.assertEqual(notification.event, "Order.Shipped")
        self.assertEqual(notification.timestamp.isoformat(), "2026-11-21T22:52:13.940000+00:00")
        self.assertEqual((notification.job_id, notification.attempt, notification.key_index), ("ntf_1", 2, 0))
        self.assertEqual(notification.payload, {"OrderId": "ord_1", "Carrier": "DHL"})

    def test_rotation_accepts_either_key(self):
        body, headers = signed(key=NEXT)
        self.assertEqual(verify_notification(body, headers, [CURRENT_PEM, NEXT_PEM], now=clock()).key_index, 1)
        with self.assertRaises(InvalidSignatureError) as refused:
            verify_notification(body, headers, [CURRENT_PEM], now=clock())
        self.assertEqual((refused.exception.status, refused.exception.code), (401, "invalid_signature"))

    def test_tampered_or_reserialised_body(self):
        body, headers = signed()
        for changed in (body.replace(b"DHL", b"UPS"), json.dumps(json.loads(body)).encode()):
            with self.assertRaises(InvalidSignatureError):
                verify_notification(changed, headers, [CURRENT_PEM], now=clock())

    def test_headers(self):
        body, headers = signed()
        for name in headers:
            with self.assertRaises(MissingHeaderError) as missing:
                verify_notification(body, {k: v for k, v in headers.items() if k != name}, [CURRENT_PEM], now=clock())
            self.assertEqual((missing.exception.status, missing.exception.header), (400, name))
        for attempt in ("6", "-1", "01", "x"):
            with self.assertRaises(MalformedHeaderError):
                verify_notification(body, {**headers, "X-JobAttempt": attempt}, [CURRENT_PEM], now=clock())
        with self.assertRaises(InvalidSignatureError):
            verify_notification(body, {**headers, "X-Signature": "not base64!"}, [CURRENT_PEM], now=clock())

    def test_body(self):
        for text in (b"[1]", b"nope", b'{"Event":"Order.Shipped"}', b'{"Event":"x","Timestamp":"2026-11-21T22:52:13.940Z"}'):
            body, headers = signed(body=text)
            with self.assertRaises(MalformedBodyError):
                verify_notification(body, headers, [CURRENT_PEM], now=clock())

    def test_one_tolerance_for_every_attempt(self):
        for attempt in ("0", "5"):
            body, headers = signed(attempt=attempt)
            verify_notification(body, headers, [CURRENT_PEM], now=clock(DEFAULT_TOLERANCE_SECONDS))
            with self.assertRaises(StaleTimestampError) as stale:
                verify_notification(body, headers, [CURRENT_PEM], now=clock(DEFAULT_TOLERANCE_SECONDS + 1))
            self.assertEqual((stale.exception.status, stale.exception.code), (400, "stale_timestamp"))
        body, headers = signed()
        with self.assertRaises(StaleTimestampError):
            verify_notification(body, headers, [CURRENT_PEM], now=clock(-MAX_CLOCK_SKEW_SECONDS - 1))
        verify_notification(body, headers, [CURRENT_PEM], tolerance=None, now=clock(400 * 86400))

    def test_wiring_mistakes_are_type_errors(self):
        body, headers = signed()
        with self.assertRaises(TypeError):
            verify_notification(json.loads(body), headers, [CURRENT_PEM])
        with self.assertRaises(TypeError):
            verify_notification(body, headers, [])
        with self.assertRaises(TypeError):
            verify_notification(body, headers, ["-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n"])


class ReceiverTest(unittest.TestCase):
    def receiver(self, handler=lambda notification: None, **options):
        calls = []

        def on_notification(notification):
            calls.append(notification)
            handler(notification)

        return Receiver([CURRENT_PEM], on_notification, now=clock(), **options), calls

    def test_once_per_job(self):
        receiver, calls = self.receiver()
        first = receiver.handle(*signed())
        retry = receiver.handle(*signed(attempt="1"))
        self.assertEqual((first.status, json.loads(first.body)["status"]), (200, "processed"))
        self.assertEqual((retry.status, json.loads(retry.body)["status"]), (200, "duplicate"))
        self.assertEqual(len(calls), 1)

    def test_a_failed_handler_leaves_the_job_for_the_retry(self):
        failures = [1]

        def flaky(notification):
            if failures[0]:
                failures[0] -= 1
                raise RuntimeError("database down")

        receiver, calls = self.receiver(flaky)
        self.assertEqual(receiver.handle(*signed()).status, 500)
        self.assertEqual(receiver.handle(*signed(attempt="1")).status, 200)
        self.assertEqual(receiver.handle(*signed(attempt="2")).status, 200)
        self.assertEqual([call.attempt for call in calls], [0, 1])

    def test_concurrent_duplicates_are_refused_while_the_first_runs(self):
        entered, finish = threading.Event(), threading.Event()

        def slow(notification):
            entered.set()
            finish.wait(10)

        receiver, calls = self.receiver(slow)
        with ThreadPoolExecutor(max_workers=1) as pool:
            first = pool.submit(receiver.handle, *signed())
            entered.wait(10)
            duplicates = [receiver.handle(*signed(attempt="1")) for _ in range(20)]
            finish.set()
            self.assertEqual(first.result().status, 200)
        self.assertEqual({answer.status for answer in duplicates}, {409})
        self.assertEqual(duplicates[0].headers["Retry-After"], "30")
        self.assertEqual(len(calls), 1)

    def test_refusals_never_reach_the_handler(self):
        receiver, calls = self.receiver()
        body, headers = signed(key=NEXT)
        answer = receiver.handle(body, headers)
        self.assertEqual((answer.status, json.loads(answer.body)["error"]), (401, "invalid_signature"))
        self.assertEqual(calls, [])

    def test_deduplicate_by_body_stops_a_forged_job_id(self):
        receiver, calls = self.receiver(deduplicate_by="body")
        receiver.handle(*signed())
        self.assertEqual(json.loads(receiver.handle(*signed(job_id="ntf_forged")).body)["status"], "duplicate")
        by_job, job_calls = self.receiver()
        by_job.handle(*signed())
        by_job.handle(*signed(job_id="ntf_forged"))
        self.assertEqual((len(calls), len(job_calls)), (1, 2))

    def test_a_failing_seen_store_answers_503(self):
        class Down:
            def claim(self, key, lease_seconds):
                raise ConnectionError("down")

        receiver, calls = self.receiver(seen=Down())
        self.assertEqual(receiver.handle(*signed()).status, 503)
        self.assertEqual(calls, [])


class MemorySeenStoreTest(unittest.TestCase):
    def test_ttl_and_lease(self):
        now = [0.0]
        store = MemorySeenStore(ttl_seconds=10, now=lambda: now[0])
        claim = store.claim("a", 5)
        self.assertEqual(store.claim("a", 5).state, "in_progress")
        now[0] = 5
        takeover = store.claim("a", 5)
        self.assertEqual(takeover.state, "claimed")
        store.release("a", claim.token)
        self.assertEqual(store.claim("a", 5).state, "in_progress", "a stale token releases nothing")
        store.commit("a", takeover.token)
        now[0] = 14.9
        self.assertEqual(store.claim("a", 5).state, "done")
        now[0] = 15
        self.assertEqual(store.claim("a", 5).state, "claimed")

    def test_lru_keeps_claims(self):
        store = MemorySeenStore(max_entries=2)
        store.claim("busy", 60)
        store.commit("old", "t")
        store.commit("new", "t")
        self.assertEqual(len(store), 2)
        self.assertEqual(store.claim("busy", 60).state, "in_progress")
        self.assertEqual(store.claim("new", 60).state, "done")

    def test_one_of_fifty_concurrent_claims_wins(self):
        store = MemorySeenStore()
        with ThreadPoolExecutor(max_workers=50) as pool:
            states = list(pool.map(lambda _: store.claim("hot", 60).state, range(50)))
        self.assertEqual((states.count("claimed"), states.count("in_progress")), (1, 49))


if __name__ == "__main__":
    unittest.main()
