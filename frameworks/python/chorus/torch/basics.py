"""Lifecycle, topology, build flags and process sets (horovod.torch's names)."""
from chorus import _chorus
from . import horovod_environment

_flags = _chorus.build_flags()


class ProcessSet:
    """A subset of the job's ranks that collectives can run over.

    Made before init() (then passed to init(process_sets=...)) or with
    add_process_set() after it; process_set_id is None until registered."""

    def __init__(self, ranks_or_comm):
        if not isinstance(ranks_or_comm, (list, tuple, range)):
            raise TypeError("ProcessSet takes a list of ranks, got %s" % type(ranks_or_comm).__name__)
        self.ranks = sorted(int(r) for r in ranks_or_comm)
        if len(set(self.ranks)) != len(self.ranks):
            raise ValueError("ProcessSet ranks %s contain a duplicate" % list(ranks_or_comm))
        self.process_set_id = None

    def _require_id(self):
        if self.process_set_id is None:
            raise ValueError("process set %s is not registered: pass it to init(process_sets=...) "
                             "or add_process_set()" % self.ranks)
        return self.process_set_id

    def size(self):
        return _chorus.process_set_size(self._require_id())

    def rank(self):
        """This process's rank within the set, or -1 when it is not a member."""
        return _chorus.process_set_rank(self._require_id()) if self.included() else -1

    def included(self):
        return _chorus.rank() in _chorus.process_set_ranks(self._require_id())

    def __eq__(self, other):
        return isinstance(other, ProcessSet) and self.process_set_id == other.process_set_id \
            and self.ranks == other.ranks

    def __hash__(self):
        return hash((self.process_set_id, tuple(self.ranks)))

    def __repr__(self):
        return "ProcessSet(process_set_id=%s, ranks=%s)" % (self.process_set_id, self.ranks)


class _GlobalProcessSet(ProcessSet):
    """Every rank of the job (id 0); its ranks are known after init()."""

    def __init__(self):
        self.process_set_id = 0

    @property
    def ranks(self):
        return list(range(_chorus.size())) if _chorus.is_initialized() else []

    def __eq__(self, other):
        return isinstance(other, ProcessSet) and other.process_set_id == 0

    def __hash__(self):
        return hash(0)


global_process_set = _GlobalProcessSet()
_registered = {}  # id -> ProcessSet, the sets this process registered
# rank(), size(), ... as init() found them. The topology is fixed from init to
# shutdown, and a runtime stopped by an error (a lost peer, a stall) refuses
# every call; Horovod's rank() still answers then, so an error handler can
# say which rank it runs on.
_topology = {}
_TOPOLOGY = ("rank", "size", "local_rank", "local_size", "cross_rank", "cross_size")
# What the modules above this one forget at shutdown() (mpi_ops: its pending
# ops and the counts of unnamed ones), registered by them, so that this module
# imports none of them.
_on_shutdown = []


def init(comm=None, process_sets=None):
    """Starts Chorus (idempotent). process_sets: ProcessSet objects created on
    every rank before init, in the same order; "dynamic" is accepted and
    changes nothing (Chorus always allows add_process_set)."""
    if comm is not None:
        raise ValueError("init(comm=...) is not supported by Chorus: it uses MPI_COMM_WORLD")
    if _chorus.is_initialized():
        return
    static_sets = []
    if process_sets is not None and process_sets != "dynamic":
        for ps in process_sets:
            if not isinstance(ps, ProcessSet):
                raise TypeError("init(process_sets=...) takes ProcessSet objects, got %s" % type(ps).__name__)
            static_sets.append(ps)
    horovod_environment.apply_and_warn()
    _chorus.init([ps.ranks for ps in static_sets])
    _remember_topology()
    _registered.clear()
    for i, ps in enumerate(static_sets):
        ps.process_set_id = i + 1
        _registered[ps.process_set_id] = ps


def shutdown():
    _chorus.shutdown()
    _topology.clear()
    for forget in _on_shutdown:
        forget()
    for ps in _registered.values():
        ps.process_set_id = None
    _registered.clear()


def is_initialized():
    return _chorus.is_initialized()


def _checked(fn):
    def wrapper():
        if not _chorus.is_initialized():
            raise ValueError("Chorus has not been initialized; use chorus.torch.init().")
        return fn()
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


def _remember_topology():
    _topology.clear()
    _topology.update((name, getattr(_chorus, name)()) for name in _TOPOLOGY)


def _topology_query(name):
    def query():
        if not _topology:  # started by the C++ API in this process, not by init()
            _remember_topology()
        return _topology[name]
    query.__name__ = name
    query.__doc__ = getattr(_chorus, name).__doc__
    return _checked(query)


rank = _topology_query("rank")
size = _topology_query("size")
local_rank = _topology_query("local_rank")
local_size = _topology_query("local_size")
cross_rank = _topology_query("cross_rank")
cross_size = _topology_query("cross_size")


@_checked
def is_homogeneous():
    """True when every node runs the same number of ranks."""
    return size() == local_size() * cross_size()


@_checked
def mpi_threads_supported():
    # Chorus always runs MPI with MPI_THREAD_MULTIPLE (init refuses less).
    return True


def mpi_built():
    return _flags["mpi"]


def mpi_enabled():
    return _flags["mpi"]


def gloo_built():
    return _flags["gloo"]


def gloo_enabled():
    return False


def nccl_built():
    """The NCCL version code this build's GPU backend uses (e.g. 21805), or 0."""
    return _flags["nccl"]


def ddl_built():
    return False


def ccl_built():
    return _flags["ccl"]


def cuda_built():
    return _flags["cuda"]


def rocm_built():
    return False


def start_timeline(file_path, mark_cycles=False):
    """Rank 0 writes the Chrome trace of the collectives from here on to
    file_path (CYCLE_START markers too with mark_cycles). Collective: every
    rank calls it with the same arguments."""
    if not isinstance(file_path, str):
        raise TypeError("file_path must be a str, got %s" % type(file_path).__name__)
    _chorus.start_timeline(file_path, bool(mark_cycles))


def stop_timeline():
    """Ends the trace start_timeline() began; rank 0's file is complete JSON
    once this returns. Collective."""
    _chorus.stop_timeline()


def add_process_set(process_set):
    """Registers a new process set on every rank (a collective over the job)."""
    ps = process_set if isinstance(process_set, ProcessSet) else ProcessSet(process_set)
    if ps.process_set_id is not None:
        raise ValueError("process set %s is already registered with id %d" % (ps.ranks, ps.process_set_id))
    ps.process_set_id = _chorus.add_process_set(ps.ranks)
    _registered[ps.process_set_id] = ps
    return ps


def remove_process_set(process_set):
    """Removes a registered process set (a collective over the job). Returns
    False for the global set or an unregistered one, as Horovod does."""
    if process_set.process_set_id in (None, 0):
        return False
    _chorus.remove_process_set(process_set.process_set_id)
    _registered.pop(process_set.process_set_id, None)
    process_set.process_set_id = None
    return True
