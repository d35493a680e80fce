#!/usr/bin/env python3
"""A worker that breaks the protocol on demand, for the fault tests: the step actions ``crash`` (exits with a
message on stderr), ``garbage`` (answers a line that is not JSON), ``hang`` (never answers) and ``refuse`` (a
well-formed error answer); ``score`` answers with ``score`` instead of ``reward``, as older workers do; any other
action is answered normally."""

import json
import sys
import time


def send(answer):
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    command = json.loads(line)
    if command["cmd"] == "init":
        send({"status": "ok", "observation": f"ready for {command['env_id']}", "reward": 0.0, "done": False})
        continue
    action = command["action"]
    if action == "crash":
        print("Traceback (most recent call last):\nRuntimeError: the world fell over", file=sys.stderr, flush=True)
        sys.exit(3)
    if action == "garbage":
        sys.stdout.write("this is not json\n")
        sys.stdout.flush()
    elif action == "hang":
        time.sleep(3600)
    elif action == "refuse":
        send({"status": "error", "message": "the world does not know how to refuse"})
    elif action == "score":  # an older worker's answer: "score" where "reward" is missing
        send({"status": "ok", "observation": "scored", "score": 0.5, "done": False, "moves": 1})
    else:
        send({"status": "ok", "observation": f"you did {action}", "reward": 0.0, "done": False})
