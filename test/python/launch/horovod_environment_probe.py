#!/usr/bin/python3
"""A Horovod launch script's variables, under mpirun with chorus.torch: run
with HOROVOD_TIMELINE=PATH, HOROVOD_TIMELINE_MARK_CYCLES=1,
HOROVOD_FUSION_THRESHOLD=1048576 and HOROVOD_NUM_NCCL_STREAMS=2 (a setting
Chorus does not have). Checks that init() warns about the last one by name,
that the CHORUS_* equivalents hold the others, that rank 0 can read the
timeline while the job runs, that two ops of different
kinds may share a name while both are in flight (Horovod prefixes the name
with the op's kind), and on rank 0, after shutdown, that PATH is the
timeline Horovod's test_timeline.py expects: Horovod's lane and span names
and the cycle markers.
    mpirun -np 2 ... python3 horovod_environment_probe.py
"""
import json
import os
import sys
import time
import warnings

import torch

import chorus.torch as hvd


def fail(what):
    print("horovod_environment_probe: FAILED: " + what, file=sys.stderr)
    sys.exit(1)


path = os.environ.get("HOROVOD_TIMELINE", "")
if not path:
    fail("run it with HOROVOD_TIMELINE set")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    hvd.init()
notes = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
if not any("HOROVOD_NUM_NCCL_STREAMS" in n and "ignored" in n for n in notes):
    fail("no warning named HOROVOD_NUM_NCCL_STREAMS as ignored; warnings: %s" % notes)
for name, want in (("CHORUS_TIMELINE", path), ("CHORUS_TIMELINE_MARK_CYCLES", "1"),
                   ("CHORUS_FUSION_THRESHOLD", "1048576")):
    if os.environ.get(name) != want:
        fail("%s is %r, expected %r (from the HOROVOD_* variable)" % (name, os.environ.get(name), want))

rank, size = hvd.rank(), hvd.size()
out = hvd.allreduce(torch.tensor([1.0, 2.0, 3.0]), name="test_allreduce", op=hvd.Sum)
if not torch.equal(out, torch.tensor([1.0, 2.0, 3.0]) * size):
    fail("allreduce gave %s" % out)
if rank == 0:
    # Readable while the job runs, as Horovod's test reads it (after 0.1 s):
    # the runtime flushes the trace after each cycle.
    deadline = time.monotonic() + 5.0
    while True:
        with open(path) as f:
            live = f.read()
        if "allreduce.test_allreduce" in live and "NEGOTIATE_ALLREDUCE" in live:
            break
        if time.monotonic() > deadline:
            fail("the running job's timeline did not show the allreduce within 5 s: %r" % live)
        time.sleep(0.01)
# One name, three kinds of op in flight at once.
t = torch.full((2,), float(rank))
handles = (hvd.allreduce_async(t, name="shared", op=hvd.Sum), hvd.allgather_async(t, name="shared"),
           hvd.broadcast_async(t, 0, name="shared"))
summed, gathered, broadcast = (hvd.synchronize(h) for h in handles)
expected_sum = torch.full((2,), float(sum(range(size))))
expected_gather = torch.cat([torch.full((2,), float(r)) for r in range(size)])
if not (torch.equal(summed, expected_sum) and torch.equal(gathered, expected_gather)
        and torch.equal(broadcast, torch.zeros(2))):
    fail("ops sharing a name gave %s, %s, %s" % (summed, gathered, broadcast))
hvd.shutdown()

if rank == 0:
    with open(path) as f:
        events = json.load(f)
    lanes = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M"}
    spans = {}
    for e in events:
        if e["ph"] == "X":
            spans.setdefault(lanes[e["tid"]], set()).add(e["name"])
    want = {"allreduce.test_allreduce": {"NEGOTIATE_ALLREDUCE", "ALLREDUCE"},
            "allreduce.shared": {"NEGOTIATE_ALLREDUCE", "ALLREDUCE"},
            "allgather.shared": {"NEGOTIATE_ALLGATHER", "ALLGATHER"},
            "broadcast.shared": {"NEGOTIATE_BROADCAST", "BROADCAST"}}
    for lane, activities in want.items():
        if not activities <= spans.get(lane, set()):
            fail("lane %r has %s, expected at least %s; lanes: %s" % (lane, spans.get(lane), activities,
                                                                     sorted(spans)))
    if not any(e["ph"] == "i" and e["name"] == "CYCLE_START" for e in events):
        fail("no CYCLE_START marker with HOROVOD_TIMELINE_MARK_CYCLES=1")
    os.remove(path)
print("horovod_environment_probe: rank %d ok" % rank)
