"""ElasticSampler (horovod.torch.elastic.ElasticSampler): deals the samples of
an epoch not yet trained round-robin over the ranks there are now.

The sampler's state is the epoch and how many samples of that epoch's
permutation the job has trained (processed_num), which is the same number on
every rank and does not depend on how many ranks trained them: the ranks that
each trained k samples together trained the permutation's next k x size. So a
TorchState commits it, and after chorusrun restarts the job on another number
of ranks the rest of the epoch is dealt over the new ranks (the same model as
the C++ DistributedSampler's global position)."""
import math
import random

import torch.utils.data

from ..basics import rank, size


class ElasticSampler(torch.utils.data.Sampler):
    """Partitions the dataset's indices over the ranks, skipping the ones of
    the current epoch already trained.

    Use it as Horovod's: put it in the TorchState, call record_batch() after
    each batch and set_epoch() at the end of each epoch (not at its start, so
    that a resumed epoch keeps its progress).

    Args:
        dataset: the dataset (its size must not change).
        shuffle: a permutation per epoch (seed + epoch), else dataset order.
        seed: the same on every rank."""

    def __init__(self, dataset, shuffle=True, seed=0):
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_num = 0
        self.num_replicas = 0
        self.rank = 0
        self.remaining_indices = []
        self.num_samples = 0
        self.total_size = 0
        self.reset()

    def set_epoch(self, epoch):
        """Starts epoch `epoch` from its first sample."""
        self.epoch = epoch
        self.processed_num = 0
        self.reset()

    def record_batch(self, batch_idx, batch_size):
        """Records that every rank trained `batch_size` more samples."""
        self.processed_num += batch_size * self.num_replicas

    def state_dict(self):
        return {"epoch": self.epoch, "processed_num": self.processed_num}

    def load_state_dict(self, state_dict):
        self.epoch = state_dict["epoch"]
        self.processed_num = state_dict["processed_num"]
        self.reset()

    def reset(self):
        """Re-deals the epoch's remaining samples over the current ranks."""
        self.num_replicas = size()
        self.rank = rank()
        order = list(range(len(self.dataset)))
        if self.shuffle:
            # Python's own generator, seeded alike on every rank, as Horovod's
            # sampler: the same order for the same seed and epoch.
            random.Random(self.seed + self.epoch).shuffle(order)
        self.remaining_indices = order[self.processed_num:]
        self.num_samples = int(math.ceil(len(self.remaining_indices) / self.num_replicas))
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self):
        indices = list(self.remaining_indices)
        # Padded with the first ones, so that every rank gets num_samples.
        indices += indices[:self.total_size - len(indices)]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples
