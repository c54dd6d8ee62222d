"""TorchState (horovod.torch.elastic.TorchState) over Chorus's commits.

Horovod keeps the committed state in each worker's memory and, when a worker
is lost or added, re-initializes the survivors in the same process and
broadcasts the state to the newcomers. Chorus cannot re-form an MPI job in
process (docs/DESIGN.md, "Elastic training"): chorusrun --elastic restarts
the ranks instead. So a commit here is written to every host's own disk by
the C++ store that ElasticState uses (ElasticCommits through
chorus._chorus: checked, atomic files, local rank 0 of each host writing),
and after a restart run() loads the newest commit any host holds.

What a commit holds: the state_dict of every model, optimizer and
ElasticSampler given to the state, and every other keyword value (epoch,
batch, ...), pickled with torch.save. Until the job's first commit,
restore() rolls back to a copy in memory, as Horovod's does. The commits are
the job's, not the object's: use one TorchState per job."""
import copy
import io
import pickle

import torch

from chorus import _chorus
from ..basics import rank, size
from ..functions import broadcast_object, broadcast_optimizer_state, broadcast_parameters
from .sampler import ElasticSampler

_FORMAT_VERSION = 1


class HostsUpdatedInterrupt(RuntimeError):
    """Raised on every rank, after a commit, when chorusrun --elastic has more
    hosts for the job: run() then ends the process with status 75 and
    chorusrun restarts the job on all hosts from that commit. skip_sync is
    Horovod's attribute; with Chorus the restarted ranks always load the
    commit."""

    def __init__(self, skip_sync=False, commit=-1):
        super().__init__("chorusrun reported that the hosts changed: the ranks stopped after commit %d to be "
                         "restarted on the new hosts" % commit)
        self.skip_sync = skip_sync
        self.commit = commit


def _signature(state_dict):
    """name -> (shape, dtype) of a module's tensors, for telling models apart."""
    return {k: (tuple(v.shape), str(v.dtype)) for k, v in state_dict.items() if isinstance(v, torch.Tensor)}


def _signature_difference(found, expected):
    for name in sorted(set(found) | set(expected)):
        if name not in expected:
            return "'%s' is not in this model" % name
        if name not in found:
            return "'%s' is missing" % name
        if found[name] != expected[name]:
            return "'%s' is %s %s vs %s %s" % (name, found[name][1], list(found[name][0]), expected[name][1],
                                               list(expected[name][0]))
    return ""


class _ModelHandler:
    def __init__(self, model):
        self.value = model

    def state(self):
        return self.value.state_dict()

    def check(self, name, state, what):
        difference = _signature_difference(_signature(state), _signature(self.value.state_dict()))
        if difference:
            raise ValueError("%s was written for another model (%s, checkpoint vs this run); expected model '%s' "
                             "with the same parameter and buffer names, shapes and dtypes" % (what, difference, name))

    def load(self, state):
        self.value.load_state_dict(state)

    def sync(self):
        broadcast_parameters(self.value.state_dict(), root_rank=0)


class _OptimizerHandler:
    def __init__(self, optimizer):
        self.value = optimizer

    def state(self):
        return self.value.state_dict()

    def check(self, name, state, what):
        groups, mine = len(state["param_groups"]), len(self.value.param_groups)
        if groups != mine:
            raise ValueError("%s holds optimizer '%s' with %d parameter groups; this run's has %d" %
                             (what, name, groups, mine))

    def load(self, state):
        self.value.load_state_dict(state)

    def sync(self):
        broadcast_optimizer_state(self.value, root_rank=0)


class _SamplerHandler:
    def __init__(self, sampler):
        self.value = sampler

    def state(self):
        return self.value.state_dict()

    def check(self, name, state, what):
        pass

    def load(self, state):
        self.value.load_state_dict(state)

    def sync(self):
        self.value.load_state_dict(broadcast_object(self.value.state_dict(), name="elastic.sampler"))


def _handler_for(value):
    if isinstance(value, torch.nn.Module):
        return _ModelHandler(value)
    if isinstance(value, torch.optim.Optimizer):
        return _OptimizerHandler(value)
    if isinstance(value, ElasticSampler):
        return _SamplerHandler(value)
    return None


class TorchState:
    """The training state an elastic job commits and resumes from.

    TorchState(model, optimizer, **kwargs): models (torch.nn.Module),
    optimizers (torch.optim.Optimizer, a DistributedOptimizer included) and
    ElasticSamplers, given as model=, optimizer= or any other keyword, are
    committed by their state_dict; any other keyword value (epoch=0,
    batch=0, ...) is committed as it is (pickled). Each is an attribute of
    the state (state.epoch = 3 sets what the next commit holds).

    The commit folder is $CHORUS_ELASTIC_DIR (default /tmp/chorus-elastic),
    per job (chorusrun's CHORUS_ELASTIC_JOB) and host, as for C++ programs;
    chorus.init() must have been called."""

    def __init__(self, model=None, optimizer=None, **kwargs):
        values = dict(kwargs, model=model, optimizer=optimizer)
        handlers, objects = {}, {}
        for name, value in values.items():
            handler = _handler_for(value)
            if handler is not None:
                handlers[name] = handler
            else:
                objects[name] = value
        object.__setattr__(self, "_handlers", handlers)
        object.__setattr__(self, "_object_names", sorted(objects))
        object.__setattr__(self, "_reset_callbacks", [])
        object.__setattr__(self, "_commits", _chorus.ElasticCommits(name="elastic.py"))
        object.__setattr__(self, "_restored_size", 0)
        for name, handler in handlers.items():
            object.__setattr__(self, name, handler.value)
        for name, value in objects.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_snapshot", None)
        self._take_snapshot()

    def __setattr__(self, name, value):
        # A new model or optimizer object replaces the one committed.
        if name in self._handlers:
            handler = _handler_for(value)
            if handler is None or type(handler) is not type(self._handlers[name]):
                raise TypeError("state.%s holds a %s; it cannot become a %s" %
                                (name, type(self._handlers[name].value).__name__, type(value).__name__))
            self._handlers[name] = handler
        object.__setattr__(self, name, value)

    # -- Horovod's State API --------------------------------------------------

    def register_reset_callbacks(self, callbacks):
        """Functions run (in order) after run() resumed from a commit, e.g. to
        set the learning rate for the new number of ranks (the optimizer's
        committed options hold the committing run's)."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def reset(self):
        """Override to adjust objects after a restart, before the callbacks."""

    def commit(self):
        """Collective. Writes the state as the next commit on every host, then
        raises HostsUpdatedInterrupt on every rank if chorusrun has more hosts
        for the job (run() exits so that chorusrun restarts it on them, from
        this commit). Costs a serialization and a file write per host:
        commit every few steps, not every step."""
        if self._write():
            raise HostsUpdatedInterrupt(commit=self._commits.last_commit)

    def save(self):
        """Collective. Writes the state as the next commit, without looking
        for new hosts (the next commit() or check_host_updates() does)."""
        self._write()

    def check_host_updates(self):
        """Collective. Raises HostsUpdatedInterrupt on every rank if chorusrun
        has more hosts for the job. The state is committed first, so that the
        restarted job goes on from here (as Horovod's goes on from its memory)."""
        if self._commits.hosts_changed():
            self._write()
            raise HostsUpdatedInterrupt(commit=self._commits.last_commit)

    def restore(self):
        """Collective. Undoes what changed since the last commit: loads the
        newest commit of this job that any host holds (on every rank, new
        hosts included) and returns True. Before the job's first commit,
        rolls each rank back to its state at the last sync() (or at
        construction), as Horovod's restore() does from memory, and returns
        False. Raises chorus.ChorusValueError on every rank when the commit
        cannot be loaded (another model's, unreadable)."""
        if self._commits.restore(self._decode) >= 0:
            return True
        if self._snapshot is not None:
            states, objects = self._snapshot
            for name, handler in self._handlers.items():
                handler.load(copy.deepcopy(states[name]))
            for name, value in objects.items():
                object.__setattr__(self, name, copy.deepcopy(value))
        return False

    def sync(self):
        """Collective. Makes every rank's state rank 0's."""
        for handler in self._handlers.values():
            handler.sync()
        if self._object_names:
            objects = broadcast_object({n: getattr(self, n) for n in self._object_names}, name="elastic.objects")
            for name, value in objects.items():
                object.__setattr__(self, name, value)
        self._take_snapshot()

    # -- Chorus's additions -----------------------------------------------------

    @property
    def last_commit(self):
        """The id of the last commit written or restored (-1: none yet)."""
        return self._commits.last_commit

    @property
    def committed_size(self):
        """The number of ranks that wrote the restored commit (0: none)."""
        return self._restored_size

    @property
    def commit_directory(self):
        """This host's commit folder."""
        return self._commits.host_directory

    @staticmethod
    def restart_count():
        """How often chorusrun --elastic restarted the job (0 in its first attempt)."""
        return _chorus.ElasticCommits.restart_count()

    # -- the payload ------------------------------------------------------------

    def _take_snapshot(self):
        """What restore() rolls back to while the job has no commit yet (a
        copy in memory, as Horovod keeps); once there is one, the commit is."""
        if self._commits.last_commit >= 0:
            return
        object.__setattr__(self, "_snapshot", (
            {name: copy.deepcopy(h.state()) for name, h in self._handlers.items()},
            {name: copy.deepcopy(getattr(self, name)) for name in self._object_names}))

    def _resume(self):
        """For run(): the newest commit (True), else rank 0's state (False)."""
        if self._commits.restore(self._decode) >= 0:
            return True
        self.sync()
        return False

    def _write(self):
        commits = self._commits
        payload = b""
        if commits.is_writer:
            doc = {"format": _FORMAT_VERSION, "commit": commits.last_commit + 1, "size": size(),
                   "states": {name: h.state() for name, h in self._handlers.items()},
                   "objects": {name: getattr(self, name) for name in self._object_names}}
            buffer = io.BytesIO()
            torch.save(doc, buffer, pickle_protocol=pickle.HIGHEST_PROTOCOL)
            payload = buffer.getvalue()
        hosts_changed = commits.commit(payload)
        object.__setattr__(self, "_snapshot", None)  # the commit is what restore() loads now
        return hosts_changed

    def _decode(self, payload, commit_id, what):
        doc = torch.load(io.BytesIO(payload))
        if not isinstance(doc, dict) or doc.get("format") != _FORMAT_VERSION:
            raise ValueError("%s is not a commit of chorus.torch.elastic.TorchState (format %d)" %
                             (what, _FORMAT_VERSION))
        if doc["commit"] != commit_id:
            raise ValueError("%s holds commit %d, not %d as its file name says; expected the file "
                             "TorchState.commit() wrote" % (what, doc["commit"], commit_id))
        states, objects = doc["states"], doc["objects"]
        found, expected = sorted(list(states) + list(objects)), sorted(list(self._handlers) + self._object_names)
        if found != expected:
            raise ValueError("%s holds the values %s; this run's TorchState has %s (expected the same names)" %
                             (what, found, expected))
        for name, handler in self._handlers.items():
            handler.check(name, states[name], what)
        for name, handler in self._handlers.items():
            handler.load(states[name])
        for name, value in objects.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_restored_size", int(doc["size"]))
        object.__setattr__(self, "_snapshot", None)
