#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Reads `go tool pprof -raw PROFILE` on stdin and prints, as JSON, what the
# kernel-frame tests check: the samples (by cpu value) with kernel frames,
# those whose kernel frames sit under a given user function, any sample
# where a kernel frame comes after a user one, the kernel functions named.
import json
import re
import sys

under = set(sys.argv[1].split(",")) if len(sys.argv) > 1 else set()
sect, samples, locs, maps, cur = "head", [], {}, {}, None
for line in sys.stdin:
    line = line.rstrip("\n")
    if line.startswith("Samples:"):
        sect = "samples"
        continue
    if line.startswith("Locations"):
        sect = "locations"
        continue
    if line.startswith("Mappings"):
        sect = "mappings"
        continue
    if sect == "samples":
        m = re.match(r"^\s*(\d+)\s+(\d+):\s*(.*)$", line)
        if m:
            samples.append((int(m.group(2)), [int(x) for x in m.group(3).split()]))
    elif sect == "locations":
        m = re.match(r"^\s*(\d+):\s+0x[0-9a-f]+\s+M=(\d+)\s*(\S*)", line)
        if m:
            cur = int(m.group(1))
            locs[cur] = (int(m.group(2)), [m.group(3)] if m.group(3) else [])
        elif cur is not None and line.startswith("             "):
            locs[cur][1].append(line.split()[0])
    elif sect == "mappings":
        m = re.match(r"^(\d+):\s+\S+\s+(\S+)", line)
        if m:
            maps[int(m.group(1))] = m.group(2)

def kernel(loc):
    return maps.get(locs[loc][0], "").startswith("[kernel.kallsyms]")

def name(loc):
    # the physical function is the last line of a location
    return locs[loc][1][-1] if locs[loc][1] else ""

total = sum(v for v, _ in samples)
out = {"total": total, "kernel": 0, "under": 0, "misplaced": 0, "names": [],
       "kernel_locations": 0, "kernel_unnamed": 0}
names = set()
for v, ids in samples:
    k = [kernel(i) for i in ids]
    if any(k):
        out["kernel"] += v
    n = 0
    while n < len(k) and k[n]:
        n += 1
    if any(k[n:]):
        out["misplaced"] += v
    if n and n < len(ids) and name(ids[n]) in under:
        out["under"] += v
    names.update(name(i) for i in ids if kernel(i))
for i in locs:
    if kernel(i):
        out["kernel_locations"] += 1
        out["kernel_unnamed"] += not locs[i][1]
out["names"] = sorted(n for n in names if n)
print(json.dumps(out))
