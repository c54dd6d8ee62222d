#!/usr/bin/env python3
"""Elastic training from Python, as a Horovod user writes it (horovod.torch's
elastic API, one changed import line), under chorusrun --elastic:

    chorusrun --elastic --min-np 2 --max-np 3 --host-discovery-script ./hosts.sh \\
        /usr/bin/python3 examples/python/elastic_train.py --epochs 8

A small MLP fits a synthetic regression problem (float64). The global batch
is fixed (--global-batch samples per step, split evenly over the ranks
there are), so the trained parameters do not depend on how many ranks
trained them or where the job was restarted: test/python/chorusrun/ compares
them with a single-process run of plain PyTorch.

When a host is lost, chorusrun restarts the job on the others and
hvd.elastic.run resumes from the newest commit; when hosts are added, the
ranks stop at their next commit and chorusrun restarts the job on all."""
import argparse
import json
import sys
import time

import torch

import chorus.torch as hvd  # was: import horovod.torch as hvd


def make_problem(seed, samples, features=8, hidden=16):
    """The data set and the initial model (the same on every rank and in the
    reference): y = tanh(X a) b + noise."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, features, generator=g, dtype=torch.float64)
    a = torch.randn(features, hidden, generator=g, dtype=torch.float64) / features ** 0.5
    b = torch.randn(hidden, 1, generator=g, dtype=torch.float64)
    y = torch.tanh(x @ a) @ b + 0.1 * torch.randn(samples, 1, generator=g, dtype=torch.float64)
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(features, hidden), torch.nn.Tanh(),
                                torch.nn.Linear(hidden, 1)).double()
    return torch.utils.data.TensorDataset(x, y), model


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--samples", type=int, default=1200)
    p.add_argument("--global-batch", type=int, default=12, help="samples per step over all ranks")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--commit-every", type=int, default=10, help="steps between commits")
    p.add_argument("--step-delay", type=float, default=0.0,
                   help="seconds each step sleeps (stretches a test run; 0 for real use)")
    p.add_argument("--summary-json", default="", help="rank 0 writes the final state here")
    return p.parse_args(argv)


def main():
    args = parse_args()
    hvd.init()
    torch.set_num_threads(1)
    dataset, model = make_problem(args.seed, args.samples)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=args.seed)
    state = hvd.elastic.TorchState(model=model, optimizer=optimizer, sampler=sampler, epoch=0, step=0)

    def per_rank_batch():
        if args.global_batch % hvd.size() != 0:
            raise ValueError("--global-batch %d is not divisible by the %d ranks; expected a multiple"
                             % (args.global_batch, hvd.size()))
        return args.global_batch // hvd.size()

    batch = {"size": per_rank_batch()}

    def on_reset():
        # After a restart the job may have another number of ranks.
        batch["size"] = per_rank_batch()
        if hvd.rank() == 0:
            print("elastic: reset: %d ranks, %d samples each per step" % (hvd.size(), batch["size"]), flush=True)

    state.register_reset_callbacks([on_reset])

    @hvd.elastic.run
    def train(state):
        if hvd.rank() == 0:
            if state.last_commit >= 0:
                print("elastic: attempt %d resumed from commit %d at epoch %d step %d (written on %d ranks), "
                      "now on %d ranks" % (state.restart_count(), state.last_commit, state.epoch, state.step,
                                           state.committed_size, hvd.size()), flush=True)
            else:
                print("elastic: attempt %d: no commit yet, starting on %d ranks"
                      % (state.restart_count(), hvd.size()), flush=True)
        loss_fn = torch.nn.MSELoss()
        while state.epoch < args.epochs:
            loader = torch.utils.data.DataLoader(dataset, batch_size=batch["size"], sampler=state.sampler)
            for x, y in loader:
                optimizer.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                state.sampler.record_batch(0, x.shape[0])
                state.step += 1
                if args.step_delay > 0:
                    time.sleep(args.step_delay)
                if state.step % args.commit_every == 0:
                    state.commit()
            state.epoch += 1
            state.sampler.set_epoch(state.epoch)
            if hvd.rank() == 0:
                print("elastic: epoch %d done at step %d on %d ranks" % (state.epoch, state.step, hvd.size()),
                      flush=True)
        with torch.no_grad():
            x, y = dataset.tensors
            return float(loss_fn(model(x), y))

    final_loss = train(state)
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    # Every rank must end with the same parameters (bitwise).
    gathered = hvd.allgather(params.unsqueeze(0), name="elastic_train.params")
    same = bool((gathered == gathered[0]).all())
    if hvd.rank() == 0:
        print("elastic: finished on %d ranks: step %d, loss %.12g, ranks agree: %s"
              % (hvd.size(), state.step, final_loss, same), flush=True)
        if args.summary_json:
            with open(args.summary_json, "w") as f:
                json.dump({"world_size": hvd.size(), "epochs": state.epoch, "step": state.step,
                           "loss": final_loss, "ranks_agree": same, "restarts": state.restart_count(),
                           "params": params.tolist()}, f)
    hvd.shutdown()
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
