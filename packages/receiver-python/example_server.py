"""A minimal notification receiver on http.server: verifies, processes each job once, prints it.

Usage: python3 example_server.py [--port 9000] [--fail-first] KEY.pem [NEXT_KEY.pem]

Give it the subscription's signatureKey as a PEM file (during a key rotation, nextSignatureKey too).
Each processed notification is printed as one JSON line. --fail-first answers 500 to each job's first
delivery, to watch the service retry it and the receiver process it once.
"""

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from webhook_receiver import MemorySeenStore, Receiver, VerifiedNotification

MAX_BODY_BYTES = 2 * 1024 * 1024


def make_handler(receiver: Receiver) -> type:
    class NotificationHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self.send_response(413)
                self.send_header("Connection", "close")
                self.send_header("Content-Length", "0")
                self.end_headers()
                self.close_connection = True
                return
            body = self.rfile.read(length)  # the raw bytes: the signature covers exactly these
            answer = receiver.handle(body, self.headers)
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # stdout carries one JSON line per processed notification

    return NotificationHandler


class QuietServer(ThreadingHTTPServer):
    """A client that hangs up mid-request is no error of ours: no traceback for it."""

    def handle_error(self, request: object, client_address: object) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


_output = threading.Lock()


def emit(line: dict) -> None:
    """One JSON line on stdout. Requests run on their own threads: a line is written whole, never interleaved."""
    with _output:
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--fail-first", action="store_true", help="answer 500 to each job's first delivery")
    parser.add_argument("keys", nargs="+", help="PEM files: signatureKey, and during a rotation nextSignatureKey")
    args = parser.parse_args()
    keys = [open(path, encoding="ascii").read() for path in args.keys]
    failed = set()
    failing = threading.Lock()

    def fails_first(job_id: str) -> bool:
        with failing:
            if job_id in failed:
                return False
            failed.add(job_id)
            return True

    def on_notification(notification: VerifiedNotification) -> None:
        if args.fail_first and fails_first(notification.job_id):
            raise RuntimeError("failing the first delivery on purpose (--fail-first)")
        line = {
            "processed": notification.job_id,
            "event": notification.event,
            "timestamp": notification.timestamp.isoformat(),
            "attempt": notification.attempt,
            "keyIndex": notification.key_index,
            "payload": notification.payload,
        }
        emit(line)

    def on_error(error: BaseException, stage: str) -> None:
        emit({"refused" if stage == "verify" else "failed": type(error).__name__, "message": str(error)})

    receiver = Receiver(keys, on_notification, seen=MemorySeenStore(), on_error=on_error)
    server = QuietServer(("127.0.0.1", args.port), make_handler(receiver))
    emit({"listening": server.server_address[1]})
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        sys.stdout.flush()


if __name__ == "__main__":
    main()
