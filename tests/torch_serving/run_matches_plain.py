#!/usr/bin/env python3
"""End-to-end check of `memplan run` on an example loop (examples/).

Runs an example script (e.g. examples/infer_torchvision.py) twice with the
same arguments, once plainly and once under `memplan run` with
MEMPLAN_STATS=1, and fails unless
  1. both runs exit 0 (the script itself fails when its passes disagree);
  2. the saved output tensors are the same bytes;
  3. the drop-in served requests from its slab: the statistics line on stderr
     says `served N` with N > 0, and so does memplan_replay_served() as the
     script reports it. Identical outputs with nothing served would prove
     nothing about the replay allocator. With --pooled-suffices (before the
     script's arguments) requests served from the small-request pools
     (`pooled N`, memplan_replay_pooled()) count too: for short runs of
     programs whose tensors vary in number, where no plan is expected.

Usage: run_matches_plain.py MEMPLAN_BINARY INFER_SCRIPT WORKDIR [--pooled-suffices] [SCRIPT ARGS...]
"""
import json
import os
import re
import subprocess
import sys

STATS = re.compile(r"memplan replay: threads (\d+), iterations (\d+), profiled (\d+), served (\d+), "
                   r"unplanned (\d+), fallback (\d+)")


def run(command, env=None):
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"FAIL: {' '.join(command)} exited with {result.returncode}\n"
                 f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result


def summary(stdout):
    return json.loads(stdout.strip().splitlines()[-1])


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    memplan, script, workdir = sys.argv[1:4]
    script_args = sys.argv[4:]
    pooled_suffices = bool(script_args) and script_args[0] == "--pooled-suffices"
    if pooled_suffices:
        script_args = script_args[1:]
    os.makedirs(workdir, exist_ok=True)
    plain_out = os.path.join(workdir, "plain.bin")
    replay_out = os.path.join(workdir, "replay.bin")
    python = sys.executable

    plain = run([python, script, *script_args, "--quiet", "--save-output", plain_out])
    env = dict(os.environ, MEMPLAN_STATS="1")
    replay = run([memplan, "run", "--", python, script, *script_args, "--quiet", "--save-output", replay_out], env)

    plain_summary, replay_summary = summary(plain.stdout), summary(replay.stdout)
    with open(plain_out, "rb") as f:
        plain_bytes = f.read()
    with open(replay_out, "rb") as f:
        replay_bytes = f.read()
    if not plain_bytes or plain_bytes != replay_bytes:
        sys.exit(f"FAIL: outputs differ ({len(plain_bytes)} and {len(replay_bytes)} bytes; sha256 "
                 f"{plain_summary['output_sha256']} plain, {replay_summary['output_sha256']} under memplan run)")
    # The last line is the main process's: child processes (DataLoader
    # workers) inherit the drop-in and print theirs first, when they exit.
    matches = list(STATS.finditer(replay.stderr))
    match = matches[-1] if matches else None
    if not match:
        sys.exit(f"FAIL: no statistics line from the drop-in on stderr:\n{replay.stderr}")
    served = int(match.group(4))
    pooled_match = re.search(r"pooled (\d+)", replay.stderr[match.start():])
    pooled = int(pooled_match.group(1)) if pooled_match else 0
    if pooled_suffices:
        if served + pooled == 0 or not (replay_summary["memplan_served"] or replay_summary.get("memplan_pooled")):
            sys.exit(f"FAIL: nothing was served from the slab or the small-request pool ({match.group(0)}, "
                     f"pooled {pooled}; memplan_replay_served() = {replay_summary['memplan_served']}, "
                     f"memplan_replay_pooled() = {replay_summary.get('memplan_pooled')})")
    elif served == 0 or not replay_summary["memplan_served"]:
        sys.exit(f"FAIL: nothing was served from the slab ({match.group(0)}; "
                 f"memplan_replay_served() = {replay_summary['memplan_served']})")
    if plain_summary["memplan_served"] is not None:
        sys.exit("FAIL: the plain run had memplan loaded (is LD_PRELOAD set in the test environment?)")
    fraction = re.search(r"served fraction ([0-9.]+)", replay.stderr)
    print(f"outputs identical ({len(plain_bytes)} bytes, sha256 {plain_summary['output_sha256']}); "
          f"{match.group(0)}, pooled {pooled}; served fraction {fraction.group(1) if fraction else '?'}")


if __name__ == "__main__":
    main()
