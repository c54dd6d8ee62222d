"""chorus.torch.elastic: horovod.torch.elastic's API for chorusrun --elastic.

    @hvd.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            ...
            state.commit()          # every few batches

    state = hvd.elastic.TorchState(model, optimizer, epoch=0, batch=0)
    state.register_reset_callbacks([rescale_learning_rate])
    train(state)

The same program as for Horovod; what happens underneath differs. Horovod
re-initializes the surviving workers in process and runs `train` again.
With Chorus, chorusrun --elastic ends the job when a host is lost (or, when
hosts are added, the ranks end themselves at a commit) and starts it again
on the hosts there are; in each new process run() loads the newest commit
from the hosts' disks before calling `train`. See docs/PYTHON.md,
"Elastic from Python"."""
import functools
import sys

from chorus import _chorus
from ..basics import shutdown
from .sampler import ElasticSampler
from .state import HostsUpdatedInterrupt, TorchState

# The status with which the ranks ask chorusrun --elastic to restart them
# (chorus::kElasticRestartExitCode).
RESTART_EXIT_CODE = _chorus.ELASTIC_RESTART_EXIT_CODE


def run(func):
    """Decorator for the elastic training function `func(state, ...)`.

    Before calling func, every rank loads the newest commit of this job
    (the state of the last commit before chorusrun restarted the job), or,
    when the job has none yet, takes rank 0's state (state.sync()), as
    Horovod syncs before func. After a commit was loaded,
    the state's reset callbacks run. When func raises HostsUpdatedInterrupt
    (from state.commit() or state.check_host_updates(), on every rank at the
    same commit), Chorus is shut down and the process exits with status 75,
    which chorusrun --elastic reads as "restart me on the new hosts".

    A collective that fails because a rank or host was lost raises
    HorovodInternalError out of func as without elastic: the process ends,
    chorusrun leaves the lost host out and restarts the job, and run()
    resumes from the last commit (Horovod instead restores the last commit in
    memory and calls func again in the same process). func's return value is
    returned on the attempt that finishes."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        if state._resume():
            state.on_reset()
        try:
            return func(state, *args, **kwargs)
        except HostsUpdatedInterrupt:
            shutdown()
            sys.exit(RESTART_EXIT_CODE)

    return wrapper


__all__ = ["TorchState", "ElasticSampler", "HostsUpdatedInterrupt", "run", "RESTART_EXIT_CODE"]
