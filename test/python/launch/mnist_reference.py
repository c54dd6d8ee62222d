#!/usr/bin/python3
"""examples/python/train_mnist.py's distributed computation done in one
process without Chorus, so that a launched run can be compared bit for bit.

Replica r's batch is the r-th shard of torch's DistributedSampler (the
sampler the example uses) for each epoch; each replica's mean cross-entropy
gradient is computed through the same operations as on its rank, the
replicas' gradients are averaged in Chorus's documented order (summed in rank
order, then times 1/R rounded to float32: test/support/chorus_average.h; with
--hosts H > 1, the ranks being H hosts of R/H consecutive ranks, the
hierarchical allreduce's order: each host's ranks in order, then the hosts'
sums in node order, docs/DESIGN.md "Deterministic reductions"),
and Adam steps with lr x R. Before training, Adam takes one step on zero
gradients, as Horovod's (and chorus.torch's) broadcast_optimizer_state does
to create the state it sends. The test loss and accuracy are summed as the
example's evaluation does: replica r's samples r, r + R, ... in chunks of
1000, the replicas' sums added in rank order.

Writes the same summary keys as the example's --summary-json.
    mnist_reference.py --np 2 [--hosts 1] --data-dir DIR --epochs 2 --summary-json OUT
"""
import argparse
import hashlib
import json
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data.distributed


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(784, 128)
        self.output = nn.Linear(128, 10)

    def forward(self, x):
        return self.output(F.relu(self.hidden(x.flatten(1))))


def read(path, header):
    with open(path, "rb") as f:
        return torch.frombuffer(bytearray(f.read()[header:]), dtype=torch.uint8)


def load(data_dir, prefix):
    pixels = read(os.path.join(data_dir, prefix + "-images-idx3-ubyte"), 16)
    labels = read(os.path.join(data_dir, prefix + "-labels-idx1-ubyte"), 8).long()
    images = pixels.view(-1, 1, 28, 28).float().div_(255).sub_(0.1307).div_(0.3081)
    return images, labels


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--np", type=int, required=True)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.001)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--hosts", type=int, default=1)
    p.add_argument("--summary-json", required=True)
    a = p.parse_args()
    if a.hosts < 1 or a.np % a.hosts:
        p.error("--hosts must divide --np")
    per_host = a.np // a.hosts
    torch.set_num_threads(1)
    images, labels = load(a.data_dir, "train")
    test_images, test_labels = load(a.data_dir, "t10k")
    dataset = torch.utils.data.TensorDataset(images, labels)
    samplers = [torch.utils.data.distributed.DistributedSampler(dataset, num_replicas=a.np, rank=r,
                                                                shuffle=True, seed=a.seed)
                for r in range(a.np)]
    torch.manual_seed(a.seed)
    model = Mlp()
    params = list(model.parameters())
    adam = torch.optim.Adam(params, lr=a.lr * a.np)
    for q in params:
        q.grad = torch.zeros_like(q)
    adam.step()
    factor = torch.tensor(1.0 / a.np, dtype=torch.float32)
    for epoch in range(a.epochs):
        model.train()
        shards = []
        for s in samplers:
            s.set_epoch(epoch)
            shards.append(torch.tensor(list(iter(s))))
        for begin in range(0, len(shards[0]), a.batch_size):
            grads = []
            for shard in shards:
                rows = shard[begin:begin + a.batch_size]
                for q in params:
                    q.grad = None
                F.cross_entropy(model(images[rows]), labels[rows]).backward()
                grads.append([q.grad.clone() for q in params])
            for i, q in enumerate(params):
                total = None
                for h in range(a.hosts):
                    host = grads[h * per_host][i].clone()
                    for g in grads[h * per_host + 1:(h + 1) * per_host]:
                        host = host + g[i]
                    total = host if total is None else total + host
                q.grad = total * factor
            adam.step()
    model.eval()
    sums = []
    with torch.no_grad():
        for r in range(a.np):
            mine = torch.arange(r, len(test_labels), a.np)
            loss_sum, correct = 0.0, 0.0
            for begin in range(0, len(mine), 1000):
                rows = mine[begin:begin + 1000]
                logits = model(test_images[rows])
                loss_sum += F.cross_entropy(logits, test_labels[rows], reduction="sum").item()
                correct += logits.argmax(1).eq(test_labels[rows]).sum().item()
            sums.append((loss_sum, correct))

    def combine(values):  # the allreduce's order, as for the gradients
        hosts = [sum(values[h * per_host + 1:(h + 1) * per_host], values[h * per_host]) for h in range(a.hosts)]
        return sum(hosts[1:], hosts[0])
    loss_total = combine([x[0] for x in sums])
    correct_total = combine([x[1] for x in sums])
    h = hashlib.sha256()
    for q in params:
        h.update(q.detach().contiguous().numpy().tobytes())
    summary = {"world_size": a.np, "epochs": a.epochs,
               "final_test_loss": loss_total / len(test_labels),
               "final_test_accuracy": correct_total / len(test_labels),
               "parameter_digests": [h.hexdigest()[:16]] * a.np}
    with open(a.summary_json, "w") as f:
        json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
