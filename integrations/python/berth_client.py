"""A client of berth's HTTP API for a harness that drives sandboxes (standard library only).

berth's API (docs/CONTRACT.md, "Exec, copy and sandboxes") is served by `berth reconcile` on the
Unix socket <state>/<instance>/api.sock, or on `--api-addr HOST:PORT` with a bearer token. This
module wraps its routes in the calls a sandbox harness needs:

    b = Berth(socket="/var/lib/berth/default/api.sock")      # or Berth(url="http://127.0.0.1:9465", token=...)
    name = b.create_from_template(template, "task-1")         # POST /v1/attempts
    b.wait_running(name)                                      # GET /v1/attempts/NAME until Running
    r = b.exec(name, ["sh", "-c", "make test"], timeout=60)   # POST .../exec
    b.write_file(name, "/workspace/a.py", b"print(1)\n")      # PUT .../files?path=
    data = b.read_file(name, "/workspace/a.py")               # GET .../files?path=
    b.release(name, exit_code=0)                              # POST .../release
    verdict = b.wait_verdict(name)                            # GET until the run is judged
    b.delete(name)                                            # DELETE /v1/attempts/NAME

The token is sent only in the Authorization header; it is never part of an error's text.
"""

from __future__ import annotations

import copy
import http.client
import json
import socket
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union

__all__ = ["Berth", "BerthError", "ExecResult", "FINISHED_PHASES"]

#: Phases after which a run is over (berth's FINISHED_PHASES).
FINISHED_PHASES = ("Succeeded", "Failed", "TimedOut")


class BerthError(Exception):
    """An answer other than success: its HTTP status and berth's error text."""

    def __init__(self, status: int, message: str, body: Any = None):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.body = body


@dataclass
class ExecResult:
    exit_code: int
    stdout: str
    stderr: str
    truncated: bool = False
    timed_out: bool = False
    raw: Dict[str, Any] = field(default_factory=dict)

    @property
    def success(self) -> bool:
        return self.exit_code == 0


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: Optional[float]):
        super().__init__("berth", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if self.timeout is not None:
            s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


class Berth:
    """One berth instance's API: `socket` (a path) or `url` (http://HOST:PORT) with `token`."""

    def __init__(self, socket: Optional[str] = None, url: Optional[str] = None, token: Optional[str] = None, timeout: float = 120.0):
        if (socket is None) == (url is None):
            raise ValueError("give socket or url, not both")
        if url is not None and not token:
            raise ValueError("the API on TCP needs the bearer token (berth reconcile --api-token-file)")
        self._socket = socket
        self._url = urllib.parse.urlsplit(url) if url else None
        self._token = token
        self.timeout = timeout

    # -- transport -----------------------------------------------------------------------------

    def _connection(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        if self._socket is not None:
            return _UnixConnection(self._socket, timeout)
        assert self._url is not None
        return http.client.HTTPConnection(self._url.hostname or "127.0.0.1", self._url.port or 80, timeout=timeout)

    def _request(self, method: str, path: str, body: Optional[bytes] = None, content_type: Optional[str] = None, timeout: Optional[float] = None) -> tuple:
        headers = {"Host": "berth"}
        if self._token:
            headers["Authorization"] = "Bearer " + self._token
        if body is not None:
            headers["Content-Length"] = str(len(body))
            if content_type:
                headers["Content-Type"] = content_type
        conn = self._connection(self.timeout if timeout is None else timeout)
        try:
            conn.request(method, path, body=body, headers=headers)
            res = conn.getresponse()
            data = res.read()
            return res.status, data, res.getheader("content-type") or ""
        finally:
            conn.close()

    def _json(self, method: str, path: str, payload: Any = None, ok=(200,), timeout: Optional[float] = None) -> Any:
        body = None if payload is None else json.dumps(payload).encode()
        status, data, _ = self._request(method, path, body, "application/json" if body is not None else None, timeout)
        return _answer(status, data, ok)

    @staticmethod
    def _attempt(name: str, tail: str = "") -> str:
        return "/v1/attempts/" + urllib.parse.quote(name, safe="") + tail

    # -- the routes ----------------------------------------------------------------------------

    def get(self, name: str) -> Dict[str, Any]:
        """The attempt as `berth get NAME -o json` shows it."""
        return self._json("GET", self._attempt(name))

    def create(self, spec: Union[str, Dict[str, Any]]) -> str:
        """Creates an attempt (or a set) from a spec document (a dict, or YAML/JSON text) as a file in the specs folder would; its name."""
        text = spec if isinstance(spec, str) else json.dumps(spec)
        status, data, _ = self._request("POST", "/v1/attempts", text.encode(), "application/yaml")
        return _answer(status, data, (201,))["name"]

    def create_from_template(self, template: Dict[str, Any], name: str, **spec: Any) -> str:
        """`template` (an Attempt document as a dict) named `name`, with `spec` keys set over its spec."""
        doc = copy.deepcopy(template)
        doc.setdefault("apiVersion", "berth.dev/v1")
        doc.setdefault("kind", "Attempt")
        doc.setdefault("metadata", {})["name"] = name
        doc.setdefault("spec", {}).update(spec)
        return self.create(doc)

    def exec(
        self,
        name: str,
        cmd: List[str],
        input: Optional[Union[str, bytes]] = None,
        cwd: Optional[str] = None,
        env: Optional[Dict[str, str]] = None,
        timeout: Optional[float] = None,
    ) -> ExecResult:
        """Runs cmd in the attempt's container as its user; past `timeout` seconds it is killed there (exit code 124)."""
        payload: Dict[str, Any] = {"cmd": list(cmd)}
        if input is not None:
            payload["input"] = input.decode() if isinstance(input, bytes) else input
        if cwd is not None:
            payload["cwd"] = cwd
        if env:
            payload["env"] = dict(env)
        if timeout is not None:
            payload["timeout"] = timeout
        wait = None if timeout is None else max(self.timeout, timeout + 30)
        r = self._json("POST", self._attempt(name, "/exec"), payload, timeout=wait)
        return ExecResult(r["exitCode"], r.get("stdout", ""), r.get("stderr", ""), bool(r.get("truncated")), bool(r.get("timedOut")), r)

    def read_file(self, name: str, path: str) -> bytes:
        status, data, _ = self._request("GET", self._attempt(name, "/files?path=" + urllib.parse.quote(path, safe="/")))
        if status != 200:
            _answer(status, data, (200,))
        return data

    def write_file(self, name: str, path: str, data: Union[str, bytes]) -> int:
        """Writes data at path (folders on the way made); the bytes written."""
        raw = data.encode() if isinstance(data, str) else data
        status, body, _ = self._request("PUT", self._attempt(name, "/files?path=" + urllib.parse.quote(path, safe="/")), raw, "application/octet-stream")
        return _answer(status, body, (200, 201))["bytes"]

    def release(self, name: str, exit_code: int = 0) -> Dict[str, Any]:
        """Ends a sandbox as if its command had exited with exit_code: harvest, export, grade follow."""
        return self._json("POST", self._attempt(name, "/release"), {"exitCode": exit_code})

    def delete(self, name: str) -> Dict[str, Any]:
        """Removes an attempt that the API created (its resources go as a removed file's do)."""
        return self._json("DELETE", self._attempt(name))

    # -- waiting -------------------------------------------------------------------------------

    def wait_running(self, name: str, timeout: float = 300.0, poll: float = 0.2) -> Dict[str, Any]:
        """Waits for the attempt to be Running (a new one is not found until the controller has loaded it)."""
        return self._wait(name, timeout, poll, lambda st: st.get("phase") == "Running", "Running")

    def wait_verdict(self, name: str, timeout: float = 300.0, poll: float = 0.2) -> Dict[str, Any]:
        """Waits until the run is over and judged; its status (phase, result.outcome passed/failed/infra, grades, touched)."""

        def judged(st: Dict[str, Any]) -> bool:
            return st.get("phase") in FINISHED_PHASES and (st.get("result") or {}).get("outcome") not in (None, "unfinished")

        return self._wait(name, timeout, poll, judged, "judged")

    def _wait(self, name: str, timeout: float, poll: float, done, what: str) -> Dict[str, Any]:
        end = time.monotonic() + timeout
        last: Any = None
        while True:
            try:
                st = self.get(name).get("status") or {}
                last = st
                if done(st):
                    return st
                if what == "Running" and st.get("phase") in FINISHED_PHASES:
                    raise BerthError(409, f"attempt {name} is {st.get('phase')}, not Running", st)
            except BerthError as e:
                if e.status != 404:
                    raise
                last = e.message
            if time.monotonic() > end:
                raise TimeoutError(f"attempt {name} not {what} after {timeout} s (last seen: {last})")
            time.sleep(poll)


def _answer(status: int, data: bytes, ok) -> Any:
    try:
        body = json.loads(data.decode("utf8")) if data else {}
    except ValueError:
        body = {"error": data.decode("utf8", "replace")[:500]}
    if status not in ok:
        msg = body.get("error") if isinstance(body, dict) else None
        if msg is None and isinstance(body, dict) and body.get("errors"):
            msg = "; ".join(str(e) for e in body["errors"])
        raise BerthError(status, msg or f"HTTP {status}", body)
    return body
