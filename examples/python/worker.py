#!/usr/bin/env python3
"""A Sluice external worker in plain Python 3 (standard library only).

It speaks the external worker protocol (API.md, "External worker protocol"):

- claim: ``POST /queues/:name/claim {workerId, max, waitMs, leaseMs}``, a long
  poll that answers as soon as a job is there (or an empty list after waitMs);
- heartbeat: ``POST /jobs/:id/heartbeat {lockToken, progress?, logs?}`` every
  third of the lease, from a thread of its own per job; it answers
  ``{leaseExpiresAt, cancelRequested}``, or 409 ``lease_lost`` (the lease
  expired and the job went to someone else: stop, report nothing);
- complete: ``POST /jobs/:id/complete {lockToken, result}``;
- fail: ``POST /jobs/:id/fail {lockToken, error: {message, stack?}, retryable}``.
  Retryable with attempts left, the job is retried after its backoff;
  otherwise it goes to the dead-letter queue. A job whose cancel was
  requested (``DELETE /jobs/:id`` while it runs) is reported as failed with
  message ``cancelled`` at once, and the server ends it ``cancelled``;
- release: ``POST /jobs/:id/release {lockToken, delayMs?}`` (API.md v1.2)
  gives the job back without using an attempt: ``waiting`` at once (or
  ``delayed`` by ``delayMs``), to run again elsewhere.

As a script::

    SLUICE_URL=http://127.0.0.1:3000 SLUICE_API_KEY=sk_... \\
        python3 worker.py --queue py --concurrency 4 [--handlers my_handlers.py]

``--handlers`` names a Python file with a ``register(worker)`` function that
adds handlers with ``@worker.handler("type")``. Without it the example
``resize`` handler below is served. SIGTERM or SIGINT stops claiming, gives the
running jobs ``--grace-ms`` to finish, releases the rest (back to ``waiting``
with their attempt not counted; they run again elsewhere) and exits 0; a
second signal skips the rest of the grace.

As a library::

    from worker import Worker, Job
    w = Worker("images", concurrency=4)

    @w.handler("resize")
    def resize(job: Job) -> dict:
        job.progress(50)
        job.check()            # raises Cancelled when a cancel was requested
        return {"ok": True}

    w.run()                    # blocks; w.stop() from another thread ends it

A handler gets a :class:`Job` and returns the result (any JSON value). Raising
:class:`PermanentError` fails the job without retry; any other exception fails
it retryable. Python threads cannot be interrupted: a long handler should call
``job.check()`` (or read ``job.cancelled``) now and then. Its result is
dropped when the job was settled meanwhile (cancelled, lease lost, shutdown).

Requests refused with 429 or 503 and connection errors are retried with
exponential backoff and full jitter, waiting at least what a ``Retry-After``
header asks. A 429, or a 503 while Redis is unreachable, did nothing; a 503
after the server's answer deadline (a stalled Redis) may have: every call here
is safe to repeat (the lease calls carry the lock token, a repeated complete
answers 200, a claim answered 503 hands its jobs back). 401/403 on a claim stop the worker (a wrong or
revoked key, or a key without the ``worker`` role). Payloads, results and the
API key never reach the log.
"""
from __future__ import annotations

import argparse
import email.utils
import http.client
import importlib.util
import json
import logging
import os
import random
import signal
import socket
import ssl
import sys
import threading
import time
import traceback
import urllib.parse
from typing import Any, Callable, Dict, List, Optional

log = logging.getLogger("sluice.worker")

#: Statuses that mean "refused, nothing done: try again later".
RETRY_STATUSES = frozenset({429, 502, 503, 504})
#: Longest single wait between two tries, seconds (a larger Retry-After is capped).
MAX_RETRY_SLEEP_S = 60.0

Handler = Callable[["Job"], Any]


class ApiError(Exception):
    """An HTTP answer other than 2xx: ``status``, error ``code`` and ``message`` of the API.md envelope."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class LeaseLost(ApiError):
    """409 ``lease_lost``: the lock token is stale (the job is someone else's now) or the attempt is over."""


class Cancelled(Exception):
    """Raised by :meth:`Job.check` when the job must stop (cancel requested, lease lost, shutdown past its grace)."""


class PermanentError(Exception):
    """Raise from a handler to fail the job without retry (straight to the dead-letter queue).

    Any exception with an attribute ``retryable = False`` does the same.
    """

    retryable = False


# --------------------------------------------------------------------------- HTTP


class Client:
    """The protocol's four calls over HTTP(S), with retries.

    ``base_url`` e.g. ``http://127.0.0.1:3000``; ``api_key`` is sent as
    ``Authorization: Bearer <key>`` when set. Every call retries 429/502/503/504
    and connection errors with exponential backoff (``backoff_s`` doubled per
    try, capped at ``max_backoff_s``, full jitter), never sooner than a
    ``Retry-After`` header asks, until ``deadline`` (epoch seconds; default 60 s
    from the call). Other non-2xx answers raise :class:`ApiError`
    (:class:`LeaseLost` for 409 ``lease_lost``).
    """

    def __init__(self, base_url: str, api_key: Optional[str] = None, *, backoff_s: float = 0.5, max_backoff_s: float = 30.0) -> None:
        u = urllib.parse.urlsplit(base_url.rstrip("/"))
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"SLUICE_URL must be an http(s) URL, got {base_url!r}")
        self.scheme = u.scheme
        self.host = u.hostname
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.base_path = u.path
        self.api_key = api_key or None
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        # Re-entrant: abort_claims() may run in a signal handler while the same thread holds it.
        self._lock = threading.RLock()
        self._open: set = set()

    def claim(self, queue: str, worker_id: str, max_jobs: int, wait_ms: int, lease_ms: int, abort: Optional[threading.Event] = None) -> List[Dict[str, Any]]:
        """Claims up to ``max_jobs`` jobs, long-polling up to ``wait_ms``; each job carries ``lockToken`` and ``leaseExpiresAt``.

        Once ``abort`` is set, the call (and its retries) raise :class:`Aborted`; :meth:`abort_claims` cuts a long poll short.
        """
        body = {"workerId": worker_id, "max": max_jobs, "waitMs": wait_ms, "leaseMs": lease_ms}
        res = self.request("POST", f"/queues/{urllib.parse.quote(queue, safe='')}/claim", body, timeout_s=wait_ms / 1000 + 15, abortable=True, abort=abort)
        return list(res.get("jobs", []))

    def heartbeat(self, job_id: str, lock_token: str, progress: Any = None, logs: Optional[List[str]] = None, deadline: Optional[float] = None) -> Dict[str, Any]:
        """Renews the lease; returns ``{leaseExpiresAt, cancelRequested}``. Raises :class:`LeaseLost`."""
        body: Dict[str, Any] = {"lockToken": lock_token}
        if progress is not None:
            body["progress"] = progress
        if logs:
            body["logs"] = logs
        return self.request("POST", f"/jobs/{job_id}/heartbeat", body, deadline=deadline)

    def complete(self, job_id: str, lock_token: str, result: Any = None) -> Dict[str, Any]:
        """Completes the attempt; returns the job (``cancelled`` when a cancel was requested). Raises :class:`LeaseLost`."""
        return self.request("POST", f"/jobs/{job_id}/complete", {"lockToken": lock_token, "result": result})

    def fail(self, job_id: str, lock_token: str, message: str, stack: Optional[str] = None, retryable: bool = True) -> Dict[str, Any]:
        """Fails the attempt; returns the job (``delayed``, ``failed`` or ``cancelled``). Raises :class:`LeaseLost`."""
        error: Dict[str, Any] = {"message": (message or "error")[:10000]}
        if stack:
            error["stack"] = stack[:10000]
        return self.request("POST", f"/jobs/{job_id}/fail", {"lockToken": lock_token, "error": error, "retryable": retryable})

    def release(self, job_id: str, lock_token: str, delay_ms: int = 0) -> Dict[str, Any]:
        """Gives the job back without using an attempt; returns the job (``waiting``, ``delayed`` with ``delay_ms``, or
        ``cancelled`` when a cancel was requested). Raises :class:`LeaseLost`."""
        body: Dict[str, Any] = {"lockToken": lock_token}
        if delay_ms:
            body["delayMs"] = delay_ms
        return self.request("POST", f"/jobs/{job_id}/release", body)

    def abort_claims(self) -> None:
        """Cuts the claims in flight short (the long poll at shutdown): they raise :class:`Aborted` at once.

        The server releases what it claimed for a client that has gone; should
        the answer already be on its way, those jobs come back when their lease
        expires. Safe to call from a signal handler.
        """
        with self._lock:
            conns = list(self._open)
        for conn in conns:
            conn._sluice_aborted = True
            sock = getattr(conn, "sock", None)
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        timeout_s: float = 30.0,
        deadline: Optional[float] = None,
        abortable: bool = False,
        abort: Optional[threading.Event] = None,
    ) -> Any:
        """One API call with retries (see the class doc); returns the decoded JSON body (None when empty).

        ``abortable`` calls are cut short by :meth:`abort_claims`; once ``abort``
        is set no try starts and a wait between tries ends: both raise
        :class:`Aborted` (never retried).
        """
        deadline = time.time() + 60 if deadline is None else deadline
        tries = 0
        while True:
            tries += 1
            if abort is not None and abort.is_set():
                raise Aborted("aborted")
            retry_after: Optional[float] = None
            try:
                status, headers, raw = self._send(method, path, body, timeout_s, abortable)
            except (OSError, http.client.HTTPException) as e:
                if isinstance(e, Aborted):
                    raise
                what = f"{type(e).__name__}: {e}"
            else:
                if 200 <= status < 300:
                    return json.loads(raw) if raw else None
                err = _decode_error(status, raw)
                if status not in RETRY_STATUSES:
                    raise err
                what = str(err)
                retry_after = parse_retry_after(headers.get("retry-after"))
            sleep_s = random.uniform(0, min(self.max_backoff_s, self.backoff_s * 2 ** (tries - 1)))
            if retry_after is not None:
                sleep_s = max(sleep_s, min(retry_after, MAX_RETRY_SLEEP_S))
            if time.time() + sleep_s > deadline:
                raise RetriesExhausted(f"{method} {path}: gave up after {tries} tries: {what}")
            log.warning("%s %s: %s; retrying in %.1f s", method, path.split("?")[0], what, sleep_s)
            if abort is not None:
                if abort.wait(sleep_s):
                    raise Aborted("aborted")
            else:
                time.sleep(sleep_s)

    def _send(self, method: str, path: str, body: Any, timeout_s: float, abortable: bool):
        cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        kwargs: Dict[str, Any] = {"timeout": timeout_s}
        if self.scheme == "https":
            kwargs["context"] = ssl.create_default_context()
        conn = cls(self.host, self.port, **kwargs)
        headers = {"Accept": "application/json", "User-Agent": "sluice-python-worker/1"}
        data = None
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        if abortable:
            with self._lock:
                self._open.add(conn)
        try:
            conn.request(method, self.base_path + path, body=data, headers=headers)
            if getattr(conn, "_sluice_aborted", False):  # aborted while connecting
                raise Aborted("aborted")
            resp = conn.getresponse()
            raw = resp.read()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, raw
        except (OSError, http.client.HTTPException) as e:
            if getattr(conn, "_sluice_aborted", False):
                raise Aborted("aborted") from e
            raise
        finally:
            with self._lock:
                self._open.discard(conn)
            conn.close()


class Aborted(OSError):
    """A call cut short by :meth:`Client.abort_claims`."""


class RetriesExhausted(Exception):
    """Every retry of a call failed before its deadline."""


def _decode_error(status: int, raw: bytes) -> ApiError:
    code, message = f"http_{status}", raw[:200].decode("utf-8", "replace")
    try:
        env = json.loads(raw).get("error", {})
        code, message = env.get("code", code), env.get("message", message)
    except (ValueError, AttributeError):
        pass
    cls = LeaseLost if status == 409 and code == "lease_lost" else ApiError
    return cls(status, code, message)


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """``Retry-After`` as seconds to wait: delta-seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


# --------------------------------------------------------------------------- jobs


class Job:
    """One claimed job as a handler sees it.

    Fields: ``id``, ``type``, ``queue``, ``payload``, ``attempts`` (this attempt,
    1-based), ``max_attempts``, ``concurrency_key`` (None when the job has none),
    ``dependencies`` (a flow job's dependencies as the claim carries them:
    ``[{"ref", "id", "status"}]``, API.md v1.2 "Workflows"; [] otherwise),
    ``raw`` (the claim's job object). Events:
    ``cancelled`` (a client asked to cancel), ``lease_lost``, ``stopping`` (the
    worker is shutting down: finish soon). :meth:`progress` and :meth:`log` are
    sent with the next heartbeat.
    """

    def __init__(self, raw: Dict[str, Any]) -> None:
        self.raw = raw
        self.id: str = raw["id"]
        self.type: str = raw.get("type", "")
        self.queue: str = raw.get("queue", "")
        self.payload: Any = raw.get("payload")
        self.attempts: int = int(raw.get("attempts") or 1)
        self.max_attempts: int = int(raw.get("maxAttempts") or 1)
        self.concurrency_key: Optional[str] = raw.get("concurrencyKey")
        self.dependencies: List[Dict[str, Any]] = list(raw.get("dependencies") or [])
        self.lock_token: str = raw["lockToken"]
        self.cancel_event = threading.Event()
        self.lease_lost_event = threading.Event()
        self.stopping_event = threading.Event()
        self.done = threading.Event()
        self._lock = threading.Lock()
        self._settled = False
        self._progress: Any = None
        self._logs: List[str] = []

    @property
    def cancelled(self) -> bool:
        """True once a cancel was requested (the job is already reported; stop working)."""
        return self.cancel_event.is_set()

    @property
    def stopping(self) -> bool:
        """True while the worker shuts down: a handler that can checkpoint should finish now."""
        return self.stopping_event.is_set()

    def check(self) -> None:
        """Raises :class:`Cancelled` when this job must stop (cancel requested, lease lost, or settled by shutdown)."""
        if self.cancel_event.is_set() or self.lease_lost_event.is_set() or self.settled:
            raise Cancelled(self.id)

    def progress(self, value: Any) -> None:
        """Sets the job's progress (0..100 or a small JSON object), sent with the next heartbeat."""
        with self._lock:
            self._progress = value

    def log(self, line: str) -> None:
        """Adds a log line to the job's history (level info), sent with the next heartbeat."""
        with self._lock:
            self._logs.append(str(line)[:4000])

    @property
    def settled(self) -> bool:
        """True once complete, fail or release was sent (or the lease was lost): nothing more is reported."""
        with self._lock:
            return self._settled

    def _take_updates(self):
        with self._lock:
            p, logs = self._progress, self._logs[:100]
            self._progress, self._logs = None, self._logs[100:]
            return p, logs

    def _settle(self) -> bool:
        """Marks the job settled; True for the one caller that gets to report it."""
        with self._lock:
            if self._settled:
                return False
            self._settled = True
            return True


# --------------------------------------------------------------------------- worker


class Worker:
    """Claims jobs of one queue and runs them on up to ``concurrency`` threads.

    ``lease_ms`` is the lease asked at claim (heartbeats every third of it);
    ``wait_ms`` the long poll (≤ 30000); ``grace_ms`` how long :meth:`run`
    waits for running jobs after :meth:`stop` before releasing them (their
    attempt is not counted).
    ``client`` defaults to one on ``SLUICE_URL`` (default
    ``http://127.0.0.1:3000``) with ``SLUICE_API_KEY``.
    """

    def __init__(
        self,
        queue: str,
        *,
        client: Optional[Client] = None,
        concurrency: int = 1,
        lease_ms: int = 30000,
        wait_ms: int = 20000,
        grace_ms: int = 30000,
        worker_id: Optional[str] = None,
    ) -> None:
        if concurrency < 1 or concurrency > 100:
            raise ValueError("concurrency must be 1..100")
        if lease_ms < 300:
            raise ValueError("lease_ms must be at least 300")
        self.queue = queue
        self.client = client or Client(os.environ.get("SLUICE_URL", "http://127.0.0.1:3000"), os.environ.get("SLUICE_API_KEY"))
        self.concurrency = concurrency
        self.lease_ms = lease_ms
        self.wait_ms = max(0, min(wait_ms, 30000))
        self.grace_ms = grace_ms
        self.worker_id = worker_id or f"py-{socket.gethostname()}-{os.getpid()}"
        self.handlers: Dict[str, Handler] = {}
        self._stop = threading.Event()
        self._hurry = threading.Event()
        self._slots = threading.BoundedSemaphore(concurrency)
        self._running: Dict[str, Job] = {}
        # Re-entrant: stop() may run in a signal handler while the main thread holds it.
        self._running_lock = threading.RLock()

    def handler(self, job_type: str) -> Callable[[Handler], Handler]:
        """Decorator: ``@worker.handler("resize")`` registers the function for that job type."""

        def register(fn: Handler) -> Handler:
            self.handlers[job_type] = fn
            return fn

        return register

    # ---- lifecycle

    def run(self, install_signals: bool = True) -> None:
        """Claims and runs jobs until :meth:`stop`; then waits up to ``grace_ms`` for running jobs.

        With ``install_signals`` (main thread only) SIGTERM and SIGINT call
        :meth:`stop`. Raises :class:`ApiError` on 401/403 from the claim (after
        settling what runs).
        """
        if install_signals and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda signum, _frame: self.stop(signal.Signals(signum).name))
        log.info("worker %s claiming from queue %r, concurrency %d, lease %d ms", self.worker_id, self.queue, self.concurrency, self.lease_ms)
        fatal: Optional[ApiError] = None
        try:
            self._claim_loop()
        except ApiError as e:
            fatal = e
            log.error("claim refused: %s; stopping", e)
            self._stop.set()
        self._drain()
        if fatal:
            raise fatal

    def stop(self, reason: str = "stop") -> None:
        """Stops claiming (cuts the long poll short); a second call skips the rest of the grace. Safe from a signal handler."""
        if self._stop.is_set():
            log.warning("%s again: releasing running jobs now", reason)
            self._hurry.set()
            return
        self._stop.set()
        self.client.abort_claims()
        with self._running_lock:
            for job in self._running.values():
                job.stopping_event.set()
        log.info("%s: no more claims; %d job(s) running get %d ms", reason, len(self._running), self.grace_ms)

    def _claim_loop(self) -> None:
        failures = 0
        while not self._stop.is_set():
            if not self._slots.acquire(timeout=0.2):
                continue
            free = 1
            while free < self.concurrency and self._slots.acquire(blocking=False):
                free += 1
            try:
                jobs = self.client.claim(self.queue, self.worker_id, free, self.wait_ms, self.lease_ms, abort=self._stop)
                failures = 0
            except ApiError as e:
                for _ in range(free):
                    self._slots.release()
                if e.status in (401, 403, 404, 400):
                    raise
                failures += 1
                self._stop.wait(min(30.0, 0.5 * 2 ** failures))
                continue
            except (Aborted, RetriesExhausted, OSError, http.client.HTTPException) as e:
                for _ in range(free):
                    self._slots.release()
                if not self._stop.is_set():
                    failures += 1
                    log.warning("claim failed (%s); again shortly", e)
                    self._stop.wait(min(30.0, 0.5 * 2 ** failures))
                continue
            for _ in range(free - len(jobs)):
                self._slots.release()
            for raw in jobs:
                job = Job(raw)
                if self._stop.is_set():
                    job.stopping_event.set()
                with self._running_lock:
                    self._running[job.id] = job
                threading.Thread(target=self._run_job, args=(job,), name=f"job-{job.id[:8]}", daemon=True).start()

    def _drain(self) -> None:
        deadline = time.monotonic() + self.grace_ms / 1000
        while time.monotonic() < deadline and not self._hurry.is_set():
            with self._running_lock:
                if not self._running:
                    break
            self._hurry.wait(0.05)
        with self._running_lock:
            late = list(self._running.values())
        for job in late:
            self._report(job, "release")
            job.done.set()
        log.info("worker %s stopped (%d job(s) handed back)", self.worker_id, len(late))

    # ---- one job

    def _run_job(self, job: Job) -> None:
        beat = threading.Thread(target=self._heartbeat_loop, args=(job,), name=f"hb-{job.id[:8]}", daemon=True)
        beat.start()
        try:
            fn = self.handlers.get(job.type)
            if fn is None:
                self._report(job, "fail", message=f"no handler for job type {job.type!r} in this worker", retryable=False)
                return
            try:
                result = fn(job)
            except Cancelled:
                self._report(job, "fail", message="cancelled", retryable=False)
            except Exception as e:  # noqa: BLE001 - any handler error fails the attempt
                retryable = getattr(e, "retryable", True) is not False
                self._report(job, "fail", message=str(e) or type(e).__name__, stack=traceback.format_exc(), retryable=retryable)
            else:
                self._flush_updates(job)
                self._report(job, "complete", result=result)
        finally:
            job.done.set()
            with self._running_lock:
                self._running.pop(job.id, None)
            self._slots.release()

    def _heartbeat_loop(self, job: Job) -> None:
        interval = self.lease_ms / 3000
        lease_until = time.time() + self.lease_ms / 1000
        while not job.done.wait(interval):
            if job.settled:
                return
            progress, logs = job._take_updates()
            try:
                res = self.client.heartbeat(job.id, job.lock_token, progress, logs, deadline=lease_until - interval / 2)
            except LeaseLost:
                job.lease_lost_event.set()
                if job._settle():  # else the job was reported meanwhile: the attempt is simply over
                    log.warning("job %s: lease lost; dropping it", job.id)
                return
            except (ApiError, RetriesExhausted, OSError, http.client.HTTPException) as e:
                log.warning("job %s: heartbeat failed (%s)", job.id, e)
                continue
            lease_until = time.time() + self.lease_ms / 1000
            if res.get("cancelRequested"):
                log.info("job %s: cancel requested", job.id)
                job.cancel_event.set()
                self._report(job, "fail", message="cancelled", retryable=False)
                return

    def _flush_updates(self, job: Job) -> None:
        progress, logs = job._take_updates()
        if progress is None and not logs:
            return
        try:
            self.client.heartbeat(job.id, job.lock_token, progress, logs)
        except (ApiError, RetriesExhausted, OSError, http.client.HTTPException) as e:
            log.warning("job %s: last progress not sent (%s)", job.id, e)

    def _report(self, job: Job, outcome: str, *, result: Any = None, message: str = "", stack: Optional[str] = None, retryable: bool = True) -> None:
        """Sends complete, fail or release once per job; a later outcome (e.g. the handler's after a cancel) is dropped."""
        if not job._settle():
            return
        try:
            if outcome == "complete":
                res = self.client.complete(job.id, job.lock_token, result)
            elif outcome == "release":
                res = self.client.release(job.id, job.lock_token)
            else:
                res = self.client.fail(job.id, job.lock_token, message, stack, retryable)
            log.info("job %s (%s): %s -> %s", job.id, job.type, outcome, (res or {}).get("status"))
        except LeaseLost:
            log.warning("job %s: lease lost before %s; the job is someone else's now", job.id, outcome)
        except (ApiError, RetriesExhausted, OSError, http.client.HTTPException) as e:
            log.error("job %s: %s not reported (%s); its lease will expire and it runs again", job.id, outcome, e)


# --------------------------------------------------------------------------- example handler and CLI


def register_examples(worker: Worker) -> None:
    """Registers the example ``resize`` handler: payload ``{"w": int, "h"?: int}``, result the new size."""

    @worker.handler("resize")
    def resize(job: Job) -> Dict[str, Any]:
        w = int(job.payload.get("w", 64)) if isinstance(job.payload, dict) else 64
        h = int(job.payload.get("h", w)) if isinstance(job.payload, dict) else w
        if w < 1 or h < 1:
            raise PermanentError("w and h must be positive")
        for step in range(1, 5):
            time.sleep(0.1)  # the work
            job.check()
            job.progress(step * 25)
        job.log(f"resized to {w}x{h}")
        return {"width": w, "height": h}


def load_handlers(path: str, worker: Worker) -> None:
    """Imports the Python file at ``path`` and calls its ``register(worker)``. Raises SystemExit when it has none."""
    spec = importlib.util.spec_from_file_location("sluice_handlers", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"--handlers: cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    register = getattr(module, "register", None)
    if not callable(register):
        raise SystemExit(f"--handlers: {path} has no register(worker) function")
    register(worker)


def main(argv: Optional[List[str]] = None) -> int:
    """The command line; returns the exit code (0 after a clean stop, 2 when the server refuses the key)."""
    p = argparse.ArgumentParser(description="Sluice external worker (SLUICE_URL, SLUICE_API_KEY from the environment)")
    p.add_argument("--queue", required=True, help="queue to claim from (mark it external: PUT /queues/:name {\"external\": true})")
    p.add_argument("--concurrency", type=int, default=1, help="jobs run at once (threads), default 1")
    p.add_argument("--lease-ms", type=int, default=30000, help="lease asked at claim, ms; heartbeats every third of it")
    p.add_argument("--wait-ms", type=int, default=20000, help="long poll per claim, ms (<= 30000)")
    p.add_argument("--grace-ms", type=int, default=30000, help="on SIGTERM/SIGINT: time running jobs get before they are released (attempt not counted)")
    p.add_argument("--worker-id", default=None, help="default py-<host>-<pid>")
    p.add_argument("--handlers", action="append", default=[], help="Python file with register(worker); repeatable")
    p.add_argument("--log-level", default=os.environ.get("LOG_LEVEL", "info"))
    a = p.parse_args(argv)
    # Run as a script this module is __main__: a handlers file's `from worker import PermanentError` must get these classes.
    sys.modules.setdefault("worker", sys.modules[__name__])
    logging.basicConfig(level=a.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    worker = Worker(a.queue, concurrency=a.concurrency, lease_ms=a.lease_ms, wait_ms=a.wait_ms, grace_ms=a.grace_ms, worker_id=a.worker_id)
    register_examples(worker)
    for path in a.handlers:
        load_handlers(path, worker)
    try:
        worker.run()
    except ApiError as e:
        hint = " (set SLUICE_API_KEY to a key with the worker role)" if e.status in (401, 403) else ""
        print(f"sluice worker: {e}{hint}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
