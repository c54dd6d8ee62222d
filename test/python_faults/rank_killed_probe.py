"""Run by test_rank_killed.py under mpirun: the last rank is SIGKILLed while
the others wait inside a collective of chorus.torch. Each survivor reports
what it raised, then lets the error end it as it would end a user's script.

Usage: rank_killed_probe.py <wait> <token> <report dir>
  wait: allreduce    the victim never submits: the survivors wait inside
                     hvd.allreduce (blocking) for the next negotiation cycle
        synchronize  the same inside hvd.synchronize() of an allreduce_async
                     handle
        data         every rank runs 16 MB allreduces in a loop and the victim
                     dies at some point of one (in the shared-memory data
                     path, between cycles or inside a negotiation, whichever
                     it hits)
  token: only marks the processes, so the driver can find leftovers.
  report dir: where each rank writes its lines (report-<rank>.txt, below).
While a survivor waits, a Python thread of its own counts 10 ms ticks: the
wait must not hold the GIL.

Lines for the driver, printed and written to the rank's report file (mpirun
forwards each rank's stdout and stderr in chunks of its own choosing, so in
the job's output a line can be cut by another rank's traceback):
"PROBE_PIDS <pid of rank 0> <pid of rank 1> ...",
"PROBE_JOBID <Open MPI job id>", "PROBE_KILL at=<wall clock>" (the victim,
just before it dies) and "PROBE_SURVIVOR rank=<r> raised=<class or nothing>
horovod_internal_error=<bool> started=<wall clock> returned=<wall clock>
ticks=<n> topology_after=<rank()/size() after the error, or raised:<class>>
message=<text>"."""
import os
import signal
import sys
import threading
import time

import torch

import chorus.torch as hvd


REPORT = None  # this rank's report file, named once its rank is known


def say(line):
    print(line, flush=True)
    # Appended and flushed line by line: the victim's last line must be on
    # disk before its SIGKILL.
    with open(REPORT, "a") as report:
        report.write(line + "\n")


def main():
    wait = sys.argv[1]
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    global REPORT
    # (rank() raises once the runtime stopped on the error.)
    REPORT = os.path.join(sys.argv[3], "report-%d.txt" % rank)
    victim = size - 1
    pids = hvd.allgather_object(os.getpid())
    if rank == 0:
        say("PROBE_PIDS " + " ".join(str(p) for p in pids))
        say("PROBE_JOBID " + os.environ.get("OMPI_MCA_ess_base_jobid", "unknown"))
    # One collective every rank completes, so that the survivors' allreduce
    # below is the next one and the runtime is between negotiation cycles.
    hvd.allreduce(torch.ones(4), name="probe.warmup")

    def die(delay):
        time.sleep(delay)
        say("PROBE_KILL at=%.6f" % time.time())
        os.kill(os.getpid(), signal.SIGKILL)

    if rank == victim and wait != "data":
        die(1.0)  # late enough that the survivors wait inside the collective
    if rank == victim:
        # From a thread, while this rank's main thread is in its allreduces.
        threading.Thread(target=die, args=(0.5,), daemon=True).start()

    # A thread of the survivor's own: it counts while the main thread waits.
    ticks = [0]
    stop = threading.Event()

    def tick():
        while not stop.wait(0.01):
            ticks[0] += 1
    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    started = time.time()
    raised = None
    try:
        if wait == "allreduce":
            hvd.allreduce(torch.full((1000,), float(rank)), name="probe.pending")
        elif wait == "synchronize":
            handle = hvd.allreduce_async(torch.full((1000,), float(rank)), name="probe.pending")
            hvd.synchronize(handle)
        else:
            big = torch.full((4 << 20,), float(rank))
            for i in range(1000):
                hvd.allreduce(big, name="probe.data.%d" % i)
    except Exception as e:  # noqa: BLE001 (the driver checks the class)
        raised = e
    returned = time.time()
    # Horovod's rank() and size() still answer after such an error, so that a
    # handler can say where it runs.
    try:
        topology = "%d/%d" % (hvd.rank(), hvd.size())
    except Exception as e:  # noqa: BLE001 (the driver checks it)
        topology = "raised:" + type(e).__name__
    stop.set()
    ticker.join()
    say("PROBE_SURVIVOR rank=%d raised=%s horovod_internal_error=%s started=%.6f returned=%.6f ticks=%d "
        "topology_after=%s message=%s" % (rank, type(raised).__name__ if raised else "nothing",
                        isinstance(raised, hvd.HorovodInternalError), started, returned, ticks[0], topology,
                        str(raised).replace("\n", " ") if raised else ""))
    if raised is not None:
        raise raised  # ends this process as an uncaught error ends a script


if __name__ == "__main__":
    main()
