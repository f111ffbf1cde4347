#!/usr/bin/env python3
"""A short agent loop on berth_client: the harness keeps the agent outside, berth runs the sandboxes.

For each of --count tasks it creates a sandbox from a spec template (a grader included), and its
"agent" (a scripted policy standing in for a model) works through tool calls until it says it is
done: it reads the task, writes a script, runs it, checks the result. Then the harness releases
the sandbox (berth harvests, exports /workspace and grades it) and waits for the verdict. The
sandboxes are driven at the same time, --parallel at once.

    python3 example_agent.py --socket <state>/<instance>/api.sock --count 5
    python3 example_agent.py --url http://127.0.0.1:9465 --token-file token --count 5

--trace FILE writes every sandbox's tool calls, their answers, the workspace files read back and
the verdict as JSON (berth's tests replay the same calls with docker exec and docker cp on plain
containers and compare). Tasks with an odd number get a deliberately wrong solution, so both
verdicts show.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List

from berth_client import Berth

#: The grader: the answer is the sum of the task's two numbers.
GRADER = 'set -- $(cat /workspace/task.txt); test "$(cat /workspace/answer.txt)" = "$(($1 + $2))"'

TEMPLATE: Dict[str, Any] = {
    "apiVersion": "berth.dev/v1",
    "kind": "Attempt",
    "metadata": {"name": "template"},
    "spec": {
        "image": "berth/busybox:local",
        "sandbox": True,
        "deadlineSeconds": 600,
        "grade": {
            "image": "berth/busybox:local",
            "command": ["sh", "-c", GRADER],
        },
    },
}


def policy(task: int, history: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The agent: the next tool call from what it saw so far (a model would stand here)."""
    step = len(history)
    if step == 0:
        return {"tool": "exec", "cmd": ["cat", "/workspace/task.txt"]}
    if step == 1:
        a, b = history[0]["stdout"].split()
        op = "-" if task % 2 else "+"  # odd tasks: a wrong solution
        return {"tool": "write_file", "path": "/workspace/solve.sh", "data": f'set -- $(cat task.txt)\necho $(($1 {op} $2)) > answer.txt\necho "solved {a} and {b}"\n'}
    if step == 2:
        return {"tool": "exec", "cmd": ["sh", "solve.sh"], "cwd": "/workspace", "timeout": 30}
    if step == 3:
        return {"tool": "exec", "cmd": ["sh", "-c", "cat answer.txt; ls"], "cwd": "/workspace", "timeout": 30}
    return {"tool": "submit"}


def run_task(b: Berth, prefix: str, task: int) -> Dict[str, Any]:
    name = f"{prefix}{task}"
    b.create_from_template(TEMPLATE, name)  # sample init
    b.wait_running(name)
    calls: List[Dict[str, Any]] = []
    first = {"tool": "write_file", "path": "/workspace/task.txt", "data": f"{task * 7} {task + 3}\n"}
    b.write_file(name, first["path"], first["data"])
    calls.append(first)
    history: List[Dict[str, Any]] = []
    while True:
        call = policy(task, history)
        if call["tool"] == "submit":
            break
        if call["tool"] == "exec":
            r = b.exec(name, call["cmd"], cwd=call.get("cwd"), timeout=call.get("timeout"))
            seen = {"exitCode": r.exit_code, "stdout": r.stdout, "stderr": r.stderr}
        else:
            seen = {"bytes": b.write_file(name, call["path"], call["data"])}
        calls.append({**call, **seen})
        history.append(seen)
    files = {p: hashlib.sha256(b.read_file(name, p)).hexdigest() for p in ("/workspace/task.txt", "/workspace/solve.sh", "/workspace/answer.txt")}
    b.release(name, exit_code=0)
    status = b.wait_verdict(name)
    b.delete(name)  # sample cleanup
    return {
        "name": name,
        "calls": calls,
        "files": files,
        "phase": status.get("phase"),
        "outcome": status["result"]["outcome"],
        "touched": status.get("touched"),
    }


def main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--socket", help="the API's Unix socket, <state>/<instance>/api.sock")
    p.add_argument("--url", help="the API on TCP (berth reconcile --api-addr)")
    p.add_argument("--token-file", help="the bearer token's file for --url")
    p.add_argument("--count", type=int, default=3)
    p.add_argument("--parallel", type=int, default=10)
    p.add_argument("--prefix", default="agent-")
    p.add_argument("--trace", help="write every sandbox's calls, files and verdict here as JSON")
    a = p.parse_args(argv)
    token = open(a.token_file).read().strip() if a.token_file else None
    b = Berth(socket=a.socket, url=a.url, token=token)
    with ThreadPoolExecutor(a.parallel) as pool:
        results = list(pool.map(lambda t: run_task(b, a.prefix, t), range(a.count)))
    for r in results:
        print(f"{r['name']}: {r['phase']}, {r['outcome']} ({len(r['calls'])} tool calls)")
    if a.trace:
        with open(a.trace, "w") as f:
            json.dump({"grader": GRADER, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
