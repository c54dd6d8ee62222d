"""start_timeline()/stop_timeline(): rank 0's Chrome trace holds exactly the
collectives run between them, parsed here as JSON."""
import json
import os
import tempfile

import pytest
import torch

import chorus.torch as hvd


def shared_path(tag):
    # Every rank must pass the same path; rank 0 picks it.
    path = os.path.join(tempfile.gettempdir(), "chorus_py_%d_%s.json" % (os.getpid(), tag))
    return hvd.broadcast_object(path, 0, name="timeline.path." + tag)


def read_trace(path):
    """{lane (tensor name): [activity, ...]}, [args of each span], and the
    number of CYCLE_START markers."""
    with open(path) as f:
        events = json.load(f)
    assert isinstance(events, list)
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M"}
    lanes, args = {}, {}
    for e in events:
        if e["ph"] == "X":
            lane = names[e["tid"]]
            lanes.setdefault(lane, []).append(e["name"])
            args[(lane, e["name"])] = e.get("args")
    cycles = sum(1 for e in events if e["ph"] == "i" and e["name"] == "CYCLE_START")
    return lanes, args, cycles


def test_timeline_holds_what_ran_between_start_and_stop(rank, size):
    hvd.allreduce(torch.ones(3), name="tl.py.before")
    path = shared_path("cycles")
    hvd.start_timeline(path, mark_cycles=True)
    out = hvd.allreduce(torch.ones(3), op=hvd.Sum, name="tl.py.ar")
    # Grouped: negotiated as one unit, so both members (one dtype) are in one
    # fused allgather.
    gathered = hvd.grouped_allgather([torch.full((rank + 1,), float(rank)), torch.ones(2, 2)],
                                     name="tl.py.group")
    hvd.stop_timeline()
    hvd.allreduce(torch.ones(3), name="tl.py.after")
    assert torch.equal(out, torch.full((3,), float(size)))
    assert torch.equal(gathered[0], torch.cat([torch.full((r + 1,), float(r)) for r in range(size)]))
    again = shared_path("plain")
    hvd.start_timeline(again)
    hvd.allreduce(torch.ones(3), name="tl.py.again")
    hvd.stop_timeline()
    hvd.barrier()
    if rank == 0:
        lanes, args, cycles = read_trace(path)
        # Horovod's names: the op's kind, then the name (members: .0, .1).
        members = ("grouped_allgather.tl.py.group.0", "grouped_allgather.tl.py.group.1")
        assert set(lanes) == {"allreduce.tl.py.ar", *members}
        assert sorted(lanes["allreduce.tl.py.ar"]) == ["ALLREDUCE", "NEGOTIATE_ALLREDUCE",
                                                        "WAIT_FOR_OTHER_COLLECTIVES"]
        for member in members:
            assert "ALLGATHER" in lanes[member]
            assert args[(member, "ALLGATHER")] == {"fused_tensors": 2}
        assert cycles > 0
        lanes, _, cycles = read_trace(again)
        assert set(lanes) == {"allreduce.tl.py.again"} and cycles == 0
        os.remove(path)
        os.remove(again)


def test_timeline_misuse_fails_on_every_rank(rank, size):
    with pytest.raises(hvd.HorovodInternalError, match="no timeline is being written"):
        hvd.stop_timeline()
    path = shared_path("twice")
    hvd.start_timeline(path)
    try:
        # Horovod 0.28.1 lets a second start pass; Chorus says what is open.
        with pytest.raises(hvd.HorovodInternalError, match="already being written"):
            hvd.start_timeline(path)
    finally:
        hvd.stop_timeline()
    with pytest.raises(TypeError, match="file_path must be a str"):
        hvd.start_timeline(None)
    if rank == 0:
        os.remove(path)
