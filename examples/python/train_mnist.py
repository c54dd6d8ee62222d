#!/usr/bin/python3
"""Data-parallel MNIST training with chorus.torch, written the way a Horovod
user writes it: change `import chorus.torch as hvd` back to
`import horovod.torch as hvd` and it is a Horovod program.

The reference model of the C++ example (examples/train_mnist): a 784-128-10
MLP (or --model cnn), Adam with lr 1e-3 x the number of ranks, batch 64 per
rank, 5 epochs, on the IDX files of scripts/prepare_mnist.sh.

    scripts/prepare_mnist.sh
    chorusrun -np 2 /usr/bin/python3 examples/python/train_mnist.py
    mpirun -np 2 /usr/bin/python3 examples/python/train_mnist.py --data-dir data/mnist

(with the package on PYTHONPATH or installed; docs/PYTHON.md).
"""
import argparse
import hashlib
import json
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data.distributed

import chorus.torch as hvd

# Pixels become (p / 255 - mean) / std, as in the C++ example.
PIXEL_MEAN = 0.1307
PIXEL_STD = 0.3081
IMAGES_MAGIC = 0x00000803  # IDX: unsigned bytes, 3 dimensions
LABELS_MAGIC = 0x00000801  # IDX: unsigned bytes, 1 dimension
EVAL_CHUNK = 1000


class DataError(Exception):
    """A missing or malformed MNIST file: the message says which and why."""


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(28 * 28, 128)
        self.output = nn.Linear(128, 10)

    def forward(self, x):
        return self.output(F.relu(self.hidden(x.flatten(1))))


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, 5)
        self.conv2 = nn.Conv2d(10, 20, 5)
        self.hidden = nn.Linear(320, 50)
        self.output = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        return self.output(F.relu(self.hidden(x.flatten(1))))


def integer_in(low, high):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError("'%s' is not an integer from %d to %d" % (text, low, high))
        return value
    return parse


def learning_rate(text):
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0 < value <= 10:
        raise argparse.ArgumentTypeError("'%s' is not a number above 0 and at most 10" % text)
    return value


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Data-parallel MNIST training with chorus.torch (run it under chorusrun or "
                    "mpirun; every rank takes the same options).")
    p.add_argument("--epochs", type=integer_in(1, 100000), default=5, help="epochs to train (1-100000)")
    p.add_argument("--batch-size", type=integer_in(1, 65536), default=64,
                   help="samples per batch per rank (1-65536)")
    p.add_argument("--lr", type=learning_rate, default=0.001,
                   help="learning rate of one process; Adam runs with lr x number of ranks")
    p.add_argument("--seed", type=integer_in(0, 2**63 - 1), default=42,
                   help="seed of the initial parameters and of the data order")
    p.add_argument("--data-dir", default="data/mnist",
                   help="folder with the four MNIST IDX files (scripts/prepare_mnist.sh)")
    p.add_argument("--model", choices=("mlp", "cnn"), default="mlp", help="mlp (784-128-10) or cnn")
    p.add_argument("--threads", type=integer_in(1, 1024), default=1, help="torch threads per rank")
    p.add_argument("--summary-json", help="write a JSON summary of the run here (rank 0): accuracy, "
                                          "loss, samples/s and every rank's parameter digest")
    args = p.parse_args(argv)
    if not args.data_dir:
        p.error("argument --data-dir: expected a folder with the MNIST IDX files, got ''")
    return args


def read_idx(path, magic, what):
    """The dimensions and bytes of one IDX file, checked against its header."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise DataError("cannot open MNIST file '%s': %s (expected an IDX file; "
                        "scripts/prepare_mnist.sh prepares them)" % (path, e.strerror)) from None
    dims = magic & 0xFF
    header = 4 * (1 + dims)
    if len(data) < header:
        raise DataError("MNIST file '%s' is %d bytes, shorter than the %d-byte IDX header of %s"
                        % (path, len(data), header, what))
    found = int.from_bytes(data[0:4], "big")
    if found != magic:
        raise DataError("MNIST file '%s' has magic number 0x%08x, expected 0x%08x (IDX %s)"
                        % (path, found, magic, what))
    shape = [int.from_bytes(data[4 * (1 + d):4 * (2 + d)], "big") for d in range(dims)]
    payload = 1
    for n in shape:
        payload *= n
    expected = header + payload
    if len(data) != expected:
        raise DataError("MNIST file '%s' is %d bytes, expected %d (%d-byte header + %s bytes as its "
                        "header says): %s" % (path, len(data), expected, header,
                                               " x ".join(map(str, shape)),
                                               "truncated" if len(data) < expected else "trailing data"))
    return shape, torch.frombuffer(bytearray(data[header:]), dtype=torch.uint8)


def load_mnist(data_dir, split):
    prefix = "train" if split == "train" else "t10k"
    images_path = os.path.join(data_dir, prefix + "-images-idx3-ubyte")
    labels_path = os.path.join(data_dir, prefix + "-labels-idx1-ubyte")
    shape, pixels = read_idx(images_path, IMAGES_MAGIC, "images: N x rows x cols unsigned bytes")
    (count,), labels = read_idx(labels_path, LABELS_MAGIC, "labels: N unsigned bytes")
    if shape[1:] != [28, 28]:
        raise DataError("MNIST file '%s' holds %dx%d images, expected 28x28" % (images_path, shape[1], shape[2]))
    if shape[0] != count:
        raise DataError("MNIST files '%s' and '%s' disagree: %d images but %d labels (expected one label "
                        "per image)" % (images_path, labels_path, shape[0], count))
    if count == 0:
        raise DataError("MNIST file '%s' holds no images, expected at least one" % images_path)
    bad = (labels > 9).nonzero()
    if len(bad):
        i = int(bad[0])
        raise DataError("MNIST file '%s' has label %d at index %d, expected 0-9" % (labels_path, int(labels[i]), i))
    images = pixels.view(count, 1, 28, 28).float().div_(255).sub_(PIXEL_MEAN).div_(PIXEL_STD)
    return torch.utils.data.TensorDataset(images, labels.long())


def parameter_digest(model):
    """SHA-256 of every parameter's bytes in order: equal digests, equal models."""
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def evaluate(model, test_set):
    """Test loss and accuracy over the whole test set: rank r takes samples
    r, r + size, ...; the sums over ranks are the exact totals."""
    model.eval()
    images, labels = test_set.tensors
    mine = torch.arange(hvd.rank(), len(labels), hvd.size())
    loss_sum, correct = 0.0, 0.0
    with torch.no_grad():
        for begin in range(0, len(mine), EVAL_CHUNK):
            rows = mine[begin:begin + EVAL_CHUNK]
            logits = model(images[rows])
            loss_sum += F.cross_entropy(logits, labels[rows], reduction="sum").item()
            correct += logits.argmax(1).eq(labels[rows]).sum().item()
    totals = hvd.allreduce(torch.tensor([loss_sum, correct], dtype=torch.float64), op=hvd.Sum,
                           name="test_sums")
    return totals[0].item() / len(labels), totals[1].item() / len(labels)


def train(args, rank):
    torch.set_num_threads(args.threads)
    train_set = load_mnist(args.data_dir, "train")
    test_set = load_mnist(args.data_dir, "test")

    # Each rank trains on its own shard of every epoch's permutation.
    train_sampler = torch.utils.data.distributed.DistributedSampler(
        train_set, num_replicas=hvd.size(), rank=hvd.rank(), shuffle=True, seed=args.seed)
    train_loader = torch.utils.data.DataLoader(train_set, batch_size=args.batch_size, sampler=train_sampler)

    torch.manual_seed(args.seed)
    model = Mlp() if args.model == "mlp" else Cnn()
    # Adam's learning rate grows with the number of replicas.
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr * hvd.size())
    # Every rank starts from rank 0's parameters and optimizer state.
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())

    summary = {"world_size": hvd.size(), "model": args.model, "epochs": args.epochs,
               "batch_size_per_rank": args.batch_size}
    trained_seconds, trained_samples = 0.0, 0
    for epoch in range(args.epochs):
        epoch_start = time.perf_counter()
        model.train()
        train_sampler.set_epoch(epoch)
        loss_sum, samples = 0.0, 0
        for images, labels in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            loss_sum += loss.item() * len(labels)
            samples += len(labels)
        seconds = time.perf_counter() - epoch_start
        sums = hvd.allreduce(torch.tensor([loss_sum, samples], dtype=torch.float64), op=hvd.Sum,
                             name="train_sums")
        train_loss = sums[0].item() / sums[1].item()
        trained_seconds += seconds
        trained_samples += int(sums[1].item())
        test_loss, test_accuracy = evaluate(model, test_set)
        if rank == 0:
            print("epoch %d/%d  train loss %.4f  test loss %.4f  test accuracy %.4f  %.0f samples/s  %.2f s"
                  % (epoch + 1, args.epochs, train_loss, test_loss, test_accuracy, sums[1].item() / seconds,
                     time.perf_counter() - epoch_start), flush=True)
    summary.update(final_test_loss=test_loss, final_test_accuracy=test_accuracy,
                   samples_per_second=trained_samples / trained_seconds,
                   parameter_digests=hvd.allgather_object(parameter_digest(model)))
    if rank == 0 and args.summary_json:
        with open(args.summary_json, "w") as f:
            json.dump(summary, f, indent=2)
            f.write("\n")


def main(argv):
    args = parse_args(argv)
    hvd.init()
    # Read once: after the last collective another rank may already have shut
    # down, and then Chorus refuses calls on this one (rank() included).
    rank = hvd.rank()
    status = 0
    try:
        train(args, rank)
    except (DataError, hvd.HorovodInternalError, OSError) as e:
        # Shutting down tells the other ranks, whose pending collectives then
        # fail naming this rank instead of waiting for it.
        # One write, so that ranks sharing a terminal do not interleave.
        sys.stderr.write("train_mnist.py: rank %d: error: %s\n" % (rank, e))
        sys.stderr.flush()
        status = 1
    hvd.shutdown()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
