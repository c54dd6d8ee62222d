"""A rank SIGKILLed while the others wait inside a chorus.torch collective:
runs rank_killed_probe.py under real mpirun (3 ranks, Open MPI told not to
end the job on a dead rank, so that only Chorus can notice) and checks from
outside that every survivor raised HorovodInternalError naming the dead rank
and its pid, soon (the local peer watch checks every 100 ms; the heartbeat,
at its default 30 s, would be far later), without holding the GIL while it
waited, that the job ended with a non-zero status within the deadline, and
that nothing of it is left: no process, no shared-memory segment in /dev/shm
(Chorus's or Open MPI's)."""
import os
import re
import subprocess
import sys
import time
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
MPIEXEC = os.environ.get("CHORUS_TEST_MPIEXEC", "mpirun")
PYTHON = os.environ.get("CHORUS_TEST_PYTHON", sys.executable)
NP = 3
VICTIM = NP - 1
DEADLINE = 60       # seconds for the whole job: a hang is a failure
NAMED_WITHIN = 10   # seconds from the kill to each survivor's error


def parse(output):
    pids = [int(p) for p in re.search(r"^PROBE_PIDS (.*)$", output, re.M).group(1).split()]
    jobid = int(re.search(r"^PROBE_JOBID (\d+)$", output, re.M).group(1))
    kill = re.search(r"^PROBE_KILL at=([\d.]+)$", output, re.M)
    survivors = {}
    for m in re.finditer(r"^PROBE_SURVIVOR rank=(\d+) raised=(\S+) horovod_internal_error=(\S+) "
                         r"started=([\d.]+) returned=([\d.]+) ticks=(\d+) topology_after=(\S+) message=(.*)$",
                         output, re.M):
        survivors[int(m.group(1))] = dict(raised=m.group(2), hie=m.group(3) == "True",
                                          started=float(m.group(4)), returned=float(m.group(5)),
                                          ticks=int(m.group(6)), topology_after=m.group(7),
                                          message=m.group(8))
    return pids, jobid, float(kill.group(1)) if kill else None, survivors


def alive(pid, token):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return token.encode() in f.read()
    except OSError:
        return False


def segments_of(pids, jobid):
    """/dev/shm names that belong to this job: Chorus's segments carry their
    creator's pid, Open MPI's shared-memory transport's its job id in hex."""
    names = os.listdir("/dev/shm")
    mine = [n for n in names if any(n.startswith("chorus-shm.%d." % p) for p in pids)]
    return mine + [n for n in names if n.startswith("vader_segment.") and (".%x." % jobid) in n]


@pytest.mark.parametrize("wait", ["allreduce", "synchronize", "data"])
def test_survivors_raise_naming_the_killed_rank_and_nothing_is_left(wait, tmp_path):
    token = "rank-killed-%s" % uuid.uuid4().hex[:12]
    command = [MPIEXEC, "-np", str(NP), "--oversubscribe", "--mca", "orte_abort_on_non_zero_status", "0",
               "-x", "CHORUS_STALL_CHECK_SECONDS=0", PYTHON, os.path.join(HERE, "rank_killed_probe.py"),
               wait, token, str(tmp_path)]
    start = time.time()
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    try:
        output, _ = job.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, 9)
        output, _ = job.communicate()
        pytest.fail("the job did not end within %d s (a survivor hangs):\n%s" % (DEADLINE, output))
    print(output)
    print("the job ended after %.2f s with status %d" % (time.time() - start, job.returncode))
    # The ranks' own report files, not the job's output: mpirun interleaves
    # the ranks' streams in chunks, and a survivor's line once came glued to
    # the end of another's traceback.
    pids, jobid, killed_at, survivors = parse("".join(
        report.read_text() for report in sorted(tmp_path.glob("report-*.txt"))))

    assert killed_at is not None, "the victim did not report its kill"
    # Every survivor reports: a runtime that notices the death ends the job
    # only after a grace (as the heartbeat does), long enough for the other
    # survivors' 100 ms peer checks to fail their own handles.
    assert set(survivors) == set(range(VICTIM)), "not every survivor reported: %s" % survivors
    for rank, report in survivors.items():
        assert report["raised"] == "ChorusError" and report["hie"], \
            "rank %d raised %s, not HorovodInternalError" % (rank, report["raised"])
        # The local peer watch's words (between cycles or in the negotiation's
        # MPI calls) or the shared-memory allreduce's (in its data path): each
        # names the rank, its pid and the survivor.
        expected = r"rank %d \(pid %d\) exited while rank %d was waiting .*; the job cannot continue$" \
                   % (VICTIM, pids[VICTIM], rank)
        assert re.search(expected, report["message"]), (rank, report["message"])
        after = report["returned"] - killed_at
        assert after < NAMED_WITHIN, "rank %d raised %.2f s after the kill" % (rank, after)
        # A Python thread of the survivor ran while its main thread waited
        # (a 10 ms tick over a wait of about 0.5 s or more; none if the
        # wait held the GIL).
        assert report["ticks"] >= 5, (rank, report["returned"] - report["started"], report["ticks"])
        # rank() and size() still answer after the error, as Horovod's do.
        assert report["topology_after"] == "%d/%d" % (rank, NP), (rank, report["topology_after"])
    assert job.returncode != 0, "the job ended with status 0 after a rank was killed"

    # Nothing left: every rank process ends (Open MPI reaps them as the job
    # ends; give the kernel a moment), and so do the job's segments.
    for _ in range(50):
        if not any(alive(p, token) for p in pids) and not segments_of(pids, jobid):
            break
        time.sleep(0.1)
    left = [p for p in pids if alive(p, token)]
    for p in left:
        os.kill(p, 9)
    assert not left, "rank processes left behind: %s" % left
    assert not segments_of(pids, jobid), "shared-memory segments left: %s" % segments_of(pids, jobid)
