#!/usr/bin/env python3
"""Summarise the CPU samples of JFR recordings as text: where a node spends its time.

    deploy/bench/jfr-summary.py target/bench/profile/<pid>.jfr [more.jfr ...] [--top 25]

For each recording (`clawfleet bench --profile` writes one per node) it prints the Java
samples by thread, the share of samples whose top frame (self time) is in each group of
packages, the methods with the most self samples, the innermost Clawfleet method of each sample
(what Clawfleet code the time is spent for, plumbing it called included), and the Clawfleet
methods with the most samples anywhere on the stack (inclusive time). It reads `jfr print --json`, so it needs the
JDK's `jfr` tool: $JAVA_HOME/bin/jfr, else `jfr` on PATH.

JFR samples Java frames only: JIT compiler and GC threads, and native or kernel time, are not
in it (the bench report's "CPU ms per message by thread" line shows those).
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys

# Self samples are grouped by the first prefix that matches the frame's class.
GROUPS = [
    ("clawfleet", "io.clawfleet."),
    ("pg client", "io.vertx.pgclient."),
    ("sql client", "io.vertx.sqlclient."),
    ("vert.x web", "io.vertx.ext.web."),
    ("vert.x core", "io.vertx.core."),
    ("vert.x other", "io.vertx."),
    ("netty", "io.netty."),
    ("jackson", "com.fasterxml.jackson."),
    ("hazelcast", "com.hazelcast."),
    ("micrometer", "io.micrometer."),
    ("opentelemetry", "io.opentelemetry."),
    ("jdk (java.*, javax.*, jdk.*, sun.*)", ("java.", "javax.", "jdk.", "sun.")),
]


def jfr_tool():
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "jfr"), os.X_OK):
        return os.path.join(home, "bin", "jfr")
    found = shutil.which("jfr")
    if not found:
        sys.exit("jfr-summary: no `jfr` tool; set JAVA_HOME to a JDK 21+")
    return found


def samples(path):
    out = subprocess.run(
        [jfr_tool(), "print", "--json", "--events", "jdk.ExecutionSample", "--stack-depth", "64", path],
        check=True, capture_output=True, text=True).stdout
    for event in json.loads(out)["recording"]["events"]:
        values = event["values"]
        thread = (values.get("sampledThread") or {}).get("javaName") or "?"
        frames = []
        for frame in (values.get("stackTrace") or {}).get("frames") or []:
            method = frame["method"]
            cls = method["type"]["name"].replace("/", ".")
            # a lambda's class carries its address (Foo$$Lambda.0x0000...): one name for all its samples
            frames.append(re.sub(r"\$\$Lambda[./]0x[0-9a-f]+", "$$Lambda", cls) + "." + method["name"])
        if frames:
            yield thread, frames


def group_of(frame):
    for name, prefix in GROUPS:
        if frame.startswith(prefix):
            return name
    return "other"


def thread_kind(name):
    return re.sub(r"\d+", "N", name)


def summarise(path, top):
    threads, groups, self_time, innermost, inclusive = (collections.Counter() for _ in range(5))
    total = 0
    for thread, frames in samples(path):
        total += 1
        threads[thread_kind(thread)] += 1
        groups[group_of(frames[0])] += 1
        self_time[frames[0]] += 1
        ours = [f for f in frames if f.startswith("io.clawfleet.") and "$$Lambda" not in f]
        innermost[ours[0] if ours else "(no Clawfleet frame in the 64 innermost)"] += 1
        for frame in set(ours):
            inclusive[frame] += 1
    print(f"== {path}: {total} Java samples")
    if not total:
        return

    def table(title, counter, limit):
        print(f"-- {title}")
        for key, n in counter.most_common(limit):
            print(f"{100.0 * n / total:6.1f} %  {n:6d}  {key}")

    table("samples by thread", threads, 12)
    table("self samples by package group", groups, len(GROUPS) + 1)
    table(f"top {top} methods by self samples", self_time, top)
    table(f"top {top} innermost Clawfleet methods (self time plus the libraries they called)", innermost, top)
    table(f"top {top} Clawfleet methods anywhere on the stack (inclusive)", inclusive, top)
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recordings", nargs="+")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    for path in args.recordings:
        summarise(path, args.top)


if __name__ == "__main__":
    main()
