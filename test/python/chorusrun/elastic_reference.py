"""The reference for examples/python/elastic_train.py: the same problem
(make_problem: data and initial model) trained in one process by plain
PyTorch, no Chorus: each epoch's permutation (Python's random.Random(seed +
epoch), as ElasticSampler documents) cut into consecutive global batches, one
SGD step on each batch's mean loss. An elastic run that commits and restores
correctly (model, momentum, sampler position, step counter) computes the same
steps whatever its restarts were.

    elastic_reference.py SUMMARY_JSON [elastic_train.py options]

compares the run's summary with it; exits 1 naming what differs."""
import importlib.util
import json
import os
import random
import sys

import torch


def load_example():
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "..", "examples", "python", "elastic_train.py")
    spec = importlib.util.spec_from_file_location("elastic_train", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    summary_path, options = sys.argv[1], sys.argv[2:]
    example = load_example()
    args = example.parse_args(options)
    torch.set_num_threads(1)
    dataset, model = example.make_problem(args.seed, args.samples)
    x, y = dataset.tensors
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    loss_fn = torch.nn.MSELoss()
    steps = 0
    for epoch in range(args.epochs):
        order = list(range(args.samples))
        random.Random(args.seed + epoch).shuffle(order)
        for begin in range(0, args.samples, args.global_batch):
            batch = torch.tensor(order[begin:begin + args.global_batch])
            optimizer.zero_grad()
            loss_fn(model(x[batch]), y[batch]).backward()
            optimizer.step()
            steps += 1
    with torch.no_grad():
        loss = float(loss_fn(model(x), y))
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])

    summary = json.load(open(summary_path))
    got = torch.tensor(summary["params"], dtype=torch.float64)
    # The elastic run averages per-rank mean gradients (allreduce), the
    # reference takes one mean: float64 sums in another order, a few ulps
    # (~1e-16 relative) per gradient. Carried through `steps` SGD steps of
    # this small, well-conditioned fit that stays below ~1e-12; 1e-9 leaves a
    # wide margin and is still far below what one lost or repeated step, a
    # lost momentum buffer or a wrong batch changes (>= 1e-4 here).
    tolerance = 1e-9
    difference = float((got - params).abs().max())
    print("reference: %d steps, loss %.12g; elastic run: step %d, loss %.12g, on %d ranks after %d restarts; "
          "largest parameter difference %.3g" % (steps, loss, summary["step"], summary["loss"],
                                                  summary["world_size"], summary["restarts"], difference))
    failures = []
    if summary["step"] != steps:
        failures.append("the elastic run ended at step %d, the reference at %d" % (summary["step"], steps))
    if summary["epochs"] != args.epochs:
        failures.append("the elastic run ended at epoch %d, expected %d" % (summary["epochs"], args.epochs))
    if not summary["ranks_agree"]:
        failures.append("the ranks ended with different parameters")
    if not difference <= tolerance:
        failures.append("parameters differ from the reference by %.3g (tolerance %g)" % (difference, tolerance))
    if not abs(summary["loss"] - loss) <= tolerance * max(1.0, abs(loss)):
        failures.append("final loss %.12g, reference %.12g" % (summary["loss"], loss))
    for failure in failures:
        print("FAIL: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
