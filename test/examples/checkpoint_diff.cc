// mnist_checkpoint_diff A B [mlp|cnn]: loads two train_mnist checkpoints (a
// checkpoint folder means its newest checkpoint) of
// the same model and prints how far their parameters are apart:
//   max_abs_diff <largest |a - b| over all parameters>
//   max_abs_parameter <largest |a| over all parameters of A>
// For the end-to-end test, which compares a 2-rank run with the equivalent
// single-process run. Exit status 1 (message on stderr) when a file cannot
// be loaded.
#include <cstdio>
#include <exception>
#include <string>

#include <torch/torch.h>

#include "checkpoint.h"
#include "models.h"

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: mnist_checkpoint_diff A.ckpt B.ckpt [mlp|cnn]\n");
    return 2;
  }
  try {
    const train_mnist::ModelKind kind = train_mnist::parse_model_kind(argc == 4 ? argv[3] : "mlp");
    auto a = train_mnist::make_model(kind);
    auto b = train_mnist::make_model(kind);
    torch::optim::Adam adam_a(a->parameters()), adam_b(b->parameters());
    train_mnist::load_checkpoint(argv[1], *a, adam_a);
    train_mnist::load_checkpoint(argv[2], *b, adam_b);
    double max_diff = 0, max_abs = 0;
    const auto pa = a->named_parameters();
    const auto pb = b->named_parameters();
    for (const auto& item : pa) {
      max_diff = std::max(max_diff, (item.value() - pb[item.key()]).abs().max().item<double>());
      max_abs = std::max(max_abs, item.value().abs().max().item<double>());
    }
    std::printf("max_abs_diff %.9g\nmax_abs_parameter %.9g\n", max_diff, max_abs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mnist_checkpoint_diff: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
