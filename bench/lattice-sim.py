#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What the perf source's lattices do to a share, by simulation.

    python3 bench/lattice-sim.py [RUNS]

The kernel samples a thread at one period until cprof draws the next
(unwind/sampler.c, perf_gap and PERF_LATTICE): the samples between two
draws are a lattice.  A draw restarts the timer, so the next lattice begins
after a random part of a period.  Here work repeats every Q ms, in fn_a for
70% of each repetition; a run takes 100 samples (1 s at 100 Hz, as
diff-noise); the share of fn_a is estimated RUNS times (default 4000) for
  renewal    independent gaps from [0.5, 1.5) periods (the stop path's ticks)
  lattice L  lattices of L samples, each at a period from [0.53, 1.43)
and printed with its mean, its sd (binomial: 4.58 points) and how often it
is more than 14 points off.  Figures only: it never fails.
"""
import random
import statistics
import sys

P = 10.0         # the sampling period, ms
DUTY = 0.7       # fn_a's part of each repetition
N = 100          # samples a run
TAIL = 0.14      # "far off": more than this from DUTY


def run(q, lattice, rng):
    t = rng.uniform(0, 50 * q)
    hits = n = 0
    while n < N:
        if lattice == 0:
            t += rng.uniform(0.5 * P, 1.5 * P)
            hits += (t % q) < DUTY * q
            n += 1
            continue
        t += rng.uniform(0, P)               # the part of a period a draw loses
        p = rng.uniform(0.53 * P, 1.43 * P)  # the lattice's period
        for _ in range(lattice):
            if n == N:
                break
            t += p
            hits += (t % q) < DUTY * q
            n += 1
    return hits / N


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
    rng = random.Random(1)
    print("work repeating every Q ms, %d%% in fn_a; %d samples a run, %d runs" %
          (DUTY * 100, N, runs))
    print("%-8s %-10s %8s %8s %14s" % ("Q ms", "sampling", "mean %", "sd pt", "|d| > 14 pt %"))
    for q in (0.5, 3.0, 10.0, 20.0, 33.0):
        for lattice in (0, 3, 6, 8, 12):
            xs = [run(q, lattice, rng) for _ in range(runs)]
            far = sum(abs(x - DUTY) > TAIL for x in xs) / runs
            print("%-8g %-10s %8.1f %8.2f %14.2f" %
                  (q, "renewal" if lattice == 0 else "lattice %d" % lattice,
                   100 * statistics.mean(xs), 100 * statistics.pstdev(xs), 100 * far))


if __name__ == "__main__":
    main()
