"""The heartbeat seen from a Python program: test/faults/fault_probe's
heartbeat and slow modes with chorus.torch, for run_heartbeat_test.sh (which
gives the protocol of the lines printed), made as hard for the runtime as a
Python program can make it: the GIL is held by Python code the whole time.

    heartbeat_probe.py heartbeat <token> <victims>
        the victims submit 'hb.victim', the others 'hb.pending'; each
        survivor then waits by polling its handle in a Python loop (the main
        thread never leaves the GIL for long) while a second Python thread
        spins, holding the GIL whenever the first lets go. The heartbeat's
        thread is the runtime's and needs no GIL: the survivors must still
        get HorovodInternalError naming the lost rank in time, and the job
        must still end by itself (the probe then sleeps, its spinning thread
        still running).
    heartbeat_probe.py slow <token> <seconds>
        the last rank computes in pure Python, holding the GIL, for <seconds>
        before it joins an allreduce the others wait in: it must not be
        declared lost (its runtime beats without the GIL), and the average
        must be right.
In heartbeat mode every rank also catches SIGTERM in Python and carries on,
as a training script that checkpoints on SIGTERM may: the job must end by
the runtime's own abort, not by a launcher's SIGTERM.
<token> only marks the processes. A Python rank has no test device, so the
FAULT_HEARTBEAT line says device=none."""
import os
import signal
import socket
import sys
import threading
import time

import torch

import chorus.torch as hvd


def say(line):
    """One line in one write: the ranks share the launcher's output, and
    print() writes the text and its newline separately."""
    os.write(1, (line + "\n").encode())


def spin_forever():
    x = 0
    while True:
        x += 1


def heartbeat(victims):
    signal.signal(signal.SIGTERM, lambda *_: say("rank %d: SIGTERM caught, carrying on" % hvd.rank()))
    rank = hvd.rank()
    victim = rank in victims
    handle = hvd.allreduce_async(torch.ones(64), name="hb.victim" if victim else "hb.pending")
    hvd.barrier()
    say("FAULT_READY rank=%d pid=%d host=%s" % (rank, os.getpid(), socket.gethostname()))
    threading.Thread(target=spin_forever, daemon=True).start()
    error = "none: the allreduce succeeded"
    deadline = time.time() + 120
    while not hvd.poll(handle) and time.time() < deadline:
        pass
    try:
        hvd.synchronize(handle)
    except hvd.HorovodInternalError as e:
        error = str(e)
    line = "FAULT_HEARTBEAT rank=%d role=%s at=%.3f device=none error=%s\n" % (
        rank, "victim" if victim else "survivor", time.time(), error)
    say(line.rstrip("\n"))
    report_dir = os.environ.get("FAULT_REPORT_DIR")
    if report_dir:
        with open(os.path.join(report_dir, "rank-%d" % rank), "w") as f:
            f.write(line)
    time.sleep(120)


def slow(seconds):
    rank, size = hvd.rank(), hvd.size()
    if rank == size - 1:
        end = time.time() + seconds
        while time.time() < end:  # Python code: the GIL is held throughout
            pass
    start = time.time()
    try:
        result = hvd.allreduce(torch.full((64,), float(rank + 1)), name="slow.step")
        expected = (size + 1) / 2.0
        failure = "" if bool((result == expected).all()) else "wrong average %s" % result[0].item()
    except hvd.HorovodInternalError as e:
        failure = str(e)
    say("FAULT_SURVIVOR rank=%d %s%s after=%.3f" % (rank, "ok" if not failure else "FAILED: ", failure,
                                                    time.time() - start))
    hvd.shutdown()


def main():
    mode = sys.argv[1] if len(sys.argv) == 4 else ""
    if mode not in ("heartbeat", "slow"):
        sys.stderr.write("usage: heartbeat_probe.py heartbeat <token> <victims> | slow <token> <seconds>\n")
        return 2
    hvd.init()
    torch.set_num_threads(1)
    hvd.allreduce(torch.ones(4), name="fault.warm")  # later failures are not start-up ones
    if mode == "heartbeat":
        heartbeat({int(r) for r in sys.argv[3].split(",")})
    else:
        slow(float(sys.argv[3]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
