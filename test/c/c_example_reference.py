#!/usr/bin/env python3
"""The lines examples/c/collectives.c prints, computed from its inputs alone.

   mpirun -np N c_collectives | c_example_reference.py N

reads the program's output, keeps the lines that start with "rank ", groups
them by rank (mpirun interleaves the ranks; each rank's own order is kept)
and compares them with what every rank must print at N ranks. Prints the
differences and exits 1 when there are any. The formulas here are the
collectives' definitions (docs and chorus.h), applied to the example's
inputs without Chorus or MPI."""
import sys
from fractions import Fraction


def g(value):
    """C's printf("%g") of an exactly representable value."""
    return "%g" % float(value)


def expected_lines(r, n):
    out = ["size %d" % n]
    out.append("allreduce_sum" + "".join(" " + g(sum(q + i for q in range(n))) for i in range(4)))
    average = [Fraction(sum(Fraction(1, 2) * (q + 1) * (i + 1) for q in range(n)), n) for i in range(3)]
    out.append("allreduce_average_prescaled" + "".join(" " + g(v) for v in average))
    out.append("allreduce_min" + "".join(" %d" % min((q * 3 + i) % 5 - 2 for q in range(n)) for i in range(5)))
    a = [sum(q * 100 + i for q in range(n)) for i in range(3)]
    b = [sum(Fraction(q, 4) + i for q in range(n)) for i in range(2)]
    out.append("grouped_allreduce_sum" + "".join(" %d" % v for v in a) + " |" + "".join(" " + g(v) for v in b))
    out.append("broadcast" + "".join(" %d" % ((n - 1) * 10 + i) for i in range(3)))
    gathered = [100 * q + 10 * row + c for q in range(n) for row in range(q + 1) for c in range(2)]
    out.append("allgather shape %d 2 values" % (n * (n + 1) // 2) + "".join(" %d" % v for v in gathered))
    received = [1000 * q + 10 * r + k for q in range(n) for k in range(r + 1)]
    out.append("alltoall shape %d values" % len(received) + "".join(" %d" % v for v in received))
    out.append("alltoall_received_splits" + " %d" % (r + 1) * n)
    rows = n + 1
    base, extra = divmod(rows, n)
    begin = r * base + min(r, extra)
    count = base + (1 if r < extra else 0)
    reduced = [sum(q * 10 + i for q in range(n)) for i in range(begin, begin + count)]
    out.append("reducescatter shape %d 1 values" % count + "".join(" " + g(v) for v in reduced))
    previous = (r + n - 1) % n
    out.append("recv from %d: %s %s" % (previous, g(previous * 7), g(previous * 7 + 0.5)))
    evens = list(range(0, n, 2))
    line = "process_set id 1 size %d rank %d" % (len(evens), evens.index(r) if r in evens else -1)
    if r in evens:
        line += " sum %d" % sum(q + 1 for q in evens)
    out.append(line)
    out.append("join a rank of the job joined last")
    return ["rank %d %s" % (r, text) for text in out]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: c_example_reference.py <number of ranks> < output")
    n = int(sys.argv[1])
    got = {r: [] for r in range(n)}
    for line in sys.stdin.read().splitlines():
        if not line.startswith("rank "):
            continue
        r = int(line.split()[1])
        got.setdefault(r, []).append(line)
    failures = 0
    for r in sorted(got):
        want = expected_lines(r, n) if r < n else []
        if got[r] != want:
            failures += 1
            print("rank %d printed:" % r)
            print("  " + "\n  ".join(got[r]))
            print("expected:")
            print("  " + "\n  ".join(want))
    if failures:
        sys.exit(1)
    print("c_example_reference: all %d ranks printed the expected %d lines" % (n, len(expected_lines(0, n))))


if __name__ == "__main__":
    main()
