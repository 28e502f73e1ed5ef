#!/usr/bin/env python3
"""Helpers of tests/bench/graph_run.sh (benchmark of the sampler graph; prints data, never pass/fail).

  graph_bench.py run EVENTS_FILE LOG_FILE -- COMMAND...
      Runs COMMAND (vidgraph-run ... --json-events), stamps every stdout line with the seconds since
      the command started (the events carry no time of their own), writes {"t": s, "event": {...}}
      lines to EVENTS_FILE, appends stderr to LOG_FILE, and exits with the command's status.

  graph_bench.py report OUT_JSON LABEL=EVENTS_FILE[:METHOD,METHOD...] ...
      One entry per run found in the files (a file from a --sweep holds several runs: METHODs name
      them in order). Per run: node times, per-step sampler times (from the progress events' arrival:
      step 1 counts from the sampler's start), and the "peak GPU memory" line of each model node.
      Writes OUT_JSON and prints a table.
"""
import json
import re
import statistics
import subprocess
import sys
import threading
import time

PEAK = re.compile(r"peak GPU memory ([0-9.]+) GiB \(([^;]+); ([0-9.]+) GiB allocated now\)")


def run(events_file, log_file, command):
    start = time.monotonic()
    with open(events_file, "w") as events, open(log_file, "a") as log:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                errors="replace")

        def pump_stderr():
            for line in proc.stderr:
                log.write(line)
                log.flush()

        reader = threading.Thread(target=pump_stderr)
        reader.start()
        for line in proc.stdout:
            stamp = time.monotonic() - start
            try:
                event = json.loads(line)
            except ValueError:
                event = {"event": "text", "message": line.rstrip("\n")}
            events.write(json.dumps({"t": round(stamp, 4), "event": event}) + "\n")
            events.flush()
            if event.get("event") in ("node_failed", "error", "run_finished"):
                print("  " + json.dumps(event), flush=True)
        reader.join()
        return proc.wait()


def split_runs(lines):
    """Yields (run_id, [(t, event)]) in the order the runs started."""
    runs, order = {}, []
    for t, e in lines:
        rid = e.get("run_id", 0)
        if e.get("event") == "run_started":
            runs[rid] = []
            order.append(rid)
        if rid in runs:
            runs[rid].append((t, e))
    return [(rid, runs[rid]) for rid in order]


def summarize(label, method, events):
    started, nodes, peaks, steps, status = {}, {}, {}, [], None
    last_step_t = None
    for t, e in events:
        kind, node = e.get("event"), e.get("node")
        if kind == "node_started":
            started[node] = t
            if e.get("type") == "WanSampler":
                last_step_t = t
        elif kind in ("node_finished", "node_cached", "node_failed"):
            nodes[node] = {"type": e.get("type"), "outcome": kind[5:],
                           "seconds": e.get("seconds", 0.0)}
        elif kind == "node_progress" and e.get("type") == "WanSampler" and last_step_t is not None:
            steps.append(round(t - last_step_t, 4))
            last_step_t = t
        elif kind == "log" and node:
            m = PEAK.search(e.get("message", ""))
            if m:
                peaks[node] = {"stage": m.group(2), "peak_gib": float(m.group(1)),
                               "allocated_after_gib": float(m.group(3))}
        elif kind == "run_finished":
            status = e.get("status")
    return {"label": label, "attention": method, "status": status, "nodes": nodes,
            "sampler_step_seconds": steps,
            "sampler_step_median_s": statistics.median(steps) if steps else None,
            "sampler_steps_after_first_median_s": statistics.median(steps[1:]) if len(steps) > 1 else None,
            "peak_gpu_memory": peaks}


def report(out_json, specs):
    runs = []
    for spec in specs:
        label, rest = spec.split("=", 1)
        path, _, methods = rest.partition(":")
        methods = methods.split(",") if methods else []
        with open(path) as f:
            lines = [(r["t"], r["event"]) for r in map(json.loads, f) if "event" in r]
        for i, (_, events) in enumerate(split_runs(lines)):
            method = methods[i] if i < len(methods) else None
            runs.append(summarize(label, method, events))
    with open(out_json, "w") as f:
        json.dump({"runs": runs}, f, indent=2)
    print(f"{'run':<10} {'attention':<9} {'status':<10} {'steps (s)':<28} {'median':>7}  peak GPU memory per stage")
    for r in runs:
        steps = " ".join(f"{s:.2f}" for s in r["sampler_step_seconds"])
        med = r["sampler_step_median_s"]
        peaks = ", ".join(f"{v['stage']} {v['peak_gib']:.2f}" for v in r["peak_gpu_memory"].values())
        print(f"{r['label']:<10} {str(r['attention']):<9} {str(r['status']):<10} {steps:<28} "
              f"{(f'{med:.2f}' if med is not None else '-'):>7}  {peaks or '-'} (GiB)")
    return 0 if runs and all(r["status"] == "succeeded" for r in runs) else 1


def main(argv):
    if len(argv) >= 5 and argv[1] == "run" and argv[4] == "--":
        return run(argv[2], argv[3], argv[5:])
    if len(argv) >= 4 and argv[1] == "report":
        return report(argv[2], argv[3:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
