"""chorus.torch.elastic in one job (the restarts themselves are tested under
chorusrun --elastic in chorusrun/elastic_netns_test.sh): TorchState commits
and restores models, optimizers, samplers and values through the C++ commit
store, refuses another model's commits, falls back from a damaged newest
commit, agrees on chorusrun's notice; ElasticSampler deals an epoch's rest
over any number of ranks. All ranks run on one host here, so local rank 0
writes the host's commits."""
import copy
import glob
import os
import random
import shutil
import tempfile

import pytest
import torch

import chorus
import chorus.torch as hvd
from chorus.torch.elastic import ElasticSampler, HostsUpdatedInterrupt, TorchState


@pytest.fixture
def commit_dir(request):
    """A fresh commit folder and job id, the same on every rank (rank 0's
    temporary folder: the ranks share this host's /tmp)."""
    path = hvd.broadcast_object(tempfile.mkdtemp(prefix="chorus-elastic-test-") if hvd.rank() == 0 else None,
                                name="elastic.test.dir")
    saved = {k: os.environ.get(k) for k in ("CHORUS_ELASTIC_DIR", "CHORUS_ELASTIC_JOB", "CHORUS_ELASTIC_NOTICE")}
    os.environ["CHORUS_ELASTIC_DIR"] = path
    os.environ["CHORUS_ELASTIC_JOB"] = request.node.name.replace("[", "-").replace("]", "")
    yield path
    hvd.barrier()
    if hvd.rank() == 0:
        shutil.rmtree(path, ignore_errors=True)
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def make_model(seed=0, hidden=5):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(3, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 2))


def train_steps(model, opt, steps, seed):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        opt.zero_grad()
        x = torch.randn(4, 3, generator=g)
        model(x).square().mean().backward()
        opt.step()


def snapshot(model, opt):
    return copy.deepcopy(model.state_dict()), copy.deepcopy(opt.state_dict())


def assert_state_equal(model, opt, expected):
    params, opt_state = expected
    for k, v in model.state_dict().items():
        assert torch.equal(v, params[k]), k
    got = opt.state_dict()
    assert got["param_groups"] == opt_state["param_groups"]
    for i, s in opt_state["state"].items():
        for k, v in s.items():
            assert torch.equal(got["state"][i][k], v) if torch.is_tensor(v) else got["state"][i][k] == v


def test_commit_then_restore_brings_back_the_committed_state(commit_dir):
    model = make_model()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    sampler = ElasticSampler(list(range(24)), seed=3)
    state = TorchState(model, opt, sampler=sampler, epoch=2, batch=7, note="kept")
    train_steps(model, opt, 3, seed=1)
    sampler.record_batch(0, 2)
    committed = snapshot(model, opt)
    state.commit()
    assert state.last_commit == 0
    # Everything moves on after the commit...
    train_steps(model, opt, 2, seed=2)
    sampler.set_epoch(5)
    state.epoch, state.batch, state.note = 9, 9, "changed"
    # ... and restore() takes it back to the commit (Adam's moments included).
    assert state.restore()
    assert_state_equal(model, opt, committed)
    assert (state.epoch, state.batch, state.note) == (2, 7, "kept")
    assert sampler.state_dict() == {"epoch": 0, "processed_num": 2 * hvd.size()}
    assert state.committed_size == hvd.size()
    # Only local rank 0 writes (all ranks share this host): one file.
    files = glob.glob(os.path.join(commit_dir, "*", "*", "commit-*.ckpt"))
    assert len(files) == 1 and files[0].endswith("commit-000000000000.ckpt")


def test_restore_in_a_new_process_state_loads_the_newest_commit(commit_dir):
    # As after a restart: a fresh model/optimizer/state finds the commit.
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    state = TorchState(model, opt, step=0)
    for i in range(3):
        train_steps(model, opt, 1, seed=i)
        state.step = i + 1
        state.commit()
    committed = snapshot(model, opt)

    fresh_model = make_model(seed=5)
    fresh_opt = torch.optim.SGD(fresh_model.parameters(), lr=0.5, momentum=0.9)
    fresh = TorchState(fresh_model, fresh_opt, step=0)
    assert fresh.restore()
    assert fresh.last_commit == 2 and fresh.step == 3
    assert_state_equal(fresh_model, fresh_opt, committed)
    # The next commit continues the numbering; only the newest 2 are kept.
    fresh.commit()
    names = sorted(os.path.basename(f) for f in glob.glob(os.path.join(commit_dir, "*", "*", "commit-*.ckpt")))
    assert names == ["commit-000000000002.ckpt", "commit-000000000003.ckpt"]


def test_without_a_commit_restore_rolls_back_to_the_last_sync_and_run_starts_from_rank_0(commit_dir):
    model = make_model(seed=hvd.rank())
    opt = torch.optim.SGD(model.parameters(), lr=0.1 * (hvd.rank() + 1), momentum=0.9)
    state = TorchState(model, opt, epoch=hvd.rank())
    # Before any commit, as Horovod's: restore() undoes changes since construction...
    constructed = snapshot(model, opt)
    train_steps(model, opt, 2, seed=hvd.rank())
    state.epoch = 50
    assert not state.restore()
    assert_state_equal(model, opt, constructed)
    assert state.epoch == hvd.rank()
    # ... and run() starts every rank from rank 0's state.
    reference_model = make_model(seed=0)
    epochs = hvd.elastic.run(lambda s: s.epoch)(state)
    assert epochs == 0 and state.last_commit == -1
    for k, v in model.state_dict().items():
        assert torch.equal(v, reference_model.state_dict()[k]), k
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1)
    # After that sync, restore() rolls back to it.
    synced = snapshot(model, opt)
    train_steps(model, opt, 1, seed=9)
    state.epoch = 3
    assert not state.restore()
    assert_state_equal(model, opt, synced)
    assert state.epoch == 0


def test_a_damaged_newest_commit_falls_back_to_the_one_before(commit_dir):
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    state = TorchState(model, opt, step=0)
    state.step = 1
    state.commit()
    first = snapshot(model, opt)
    train_steps(model, opt, 1, seed=4)
    state.step = 2
    state.commit()
    hvd.barrier()
    if hvd.rank() == 0:
        newest = sorted(glob.glob(os.path.join(commit_dir, "*", "*", "commit-*.ckpt")))[-1]
        data = bytearray(open(newest, "rb").read())
        data[-1] ^= 0x40  # a flipped bit in the payload: the checksum fails
        open(newest, "wb").write(bytes(data))
    hvd.barrier()
    assert state.restore()
    assert state.last_commit == 0 and state.step == 1
    assert_state_equal(model, opt, first)


def test_another_models_commit_is_refused_on_every_rank(commit_dir):
    model = make_model(hidden=5)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    TorchState(model, opt).commit()
    other = make_model(hidden=6)
    state = TorchState(other, torch.optim.SGD(other.parameters(), lr=0.1))
    with pytest.raises(chorus.ChorusValueError) as error:
        state.restore()
    message = str(error.value)
    assert "Elastic commit 0 (read by rank 0) was written for another model ('0.bias' is torch.float32 [5] vs " \
           "torch.float32 [6], checkpoint vs this run)" in message
    assert "holds another program's commits: give this job another --elastic-dir or job id" in message
    # Other values than were committed: named too.
    state = TorchState(make_model(hidden=5), None, epoch=0)
    with pytest.raises(chorus.ChorusValueError, match=r"holds the values \['model', 'optimizer'\]; this run's "
                                                      r"TorchState has \['epoch', 'model', 'optimizer'\]"):
        state.restore()


def test_the_notice_on_one_rank_interrupts_every_rank_after_the_commit(commit_dir):
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    state = TorchState(model, opt, step=5)
    state.commit()  # no notice: no interrupt
    state.check_host_updates()
    notice = os.path.join(commit_dir, "notice")
    absent = os.path.join(commit_dir, "no-notice")
    if hvd.rank() == 0:
        open(notice, "w").close()
    hvd.barrier()
    # chorusrun's wrapper sets the variable on every rank; the file appears
    # on each host when it hears of new hosts: here only the last rank's.
    os.environ["CHORUS_ELASTIC_NOTICE"] = notice if hvd.rank() == hvd.size() - 1 else absent
    with pytest.raises(HostsUpdatedInterrupt) as interrupt:
        state.commit()
    assert interrupt.value.commit == 1 and state.last_commit == 1
    state.step = 6
    with pytest.raises(HostsUpdatedInterrupt) as interrupt:
        state.check_host_updates()  # commits first: the restart goes on from here
    assert interrupt.value.commit == 2
    os.environ["CHORUS_ELASTIC_NOTICE"] = absent
    fresh_model = make_model(seed=1)
    fresh = TorchState(fresh_model, torch.optim.SGD(fresh_model.parameters(), lr=0.1), step=0)
    assert fresh.restore() and fresh.step == 6 and fresh.last_commit == 2


def test_run_resumes_and_calls_the_reset_callbacks(commit_dir):
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    state = TorchState(model, opt, epoch=0)
    calls = []
    state.register_reset_callbacks([lambda: calls.append(("reset", state.epoch))])
    first = hvd.elastic.run(lambda s, extra: (s.epoch, extra))
    assert first(state, "x") == (0, "x") and calls == []  # no commit: nothing to reset
    state.epoch = 4
    state.commit()
    state.epoch = 7
    assert first(state, "y") == (4, "y") and calls == [("reset", 4)]


@pytest.mark.parametrize("before,after", [(2, 3), (3, 2), (1, 4)])
def test_elastic_sampler_deals_the_rest_of_the_epoch_over_the_new_ranks(before, after, monkeypatch):
    """Independent reference: the epoch's permutation by hand; after k
    batches of b samples on `before` ranks, the first k * b * before are
    trained, and the new ranks together get exactly the rest."""
    import chorus.torch.elastic.sampler as sampler_module
    n, b, k, seed, epoch = 60, 2, 3, 7, 1
    order = list(range(n))
    random.Random(seed + epoch).shuffle(order)

    def sampler_on(world, r, state=None):
        monkeypatch.setattr(sampler_module, "size", lambda: world)
        monkeypatch.setattr(sampler_module, "rank", lambda: r)
        s = ElasticSampler(list(range(n)), shuffle=True, seed=seed)
        if state is None:
            s.set_epoch(epoch)
        else:
            s.load_state_dict(state)
        return s

    trained = []
    for r in range(before):
        s = sampler_on(before, r)
        mine = list(s)
        trained += mine[:k * b]
        for i in range(k):
            s.record_batch(i, b)
    state = s.state_dict()
    assert state == {"epoch": epoch, "processed_num": k * b * before}
    assert sorted(trained) == sorted(order[:k * b * before])
    rest = []
    for r in range(after):
        s = sampler_on(after, r, state)
        assert len(s) == -(-(n - k * b * before) // after)
        rest += list(s)
    # Every remaining sample once, plus at most after - 1 repeated as padding.
    assert set(rest) == set(order[k * b * before:])
    assert len(rest) - len(order[k * b * before:]) < after
