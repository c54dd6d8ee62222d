// How every MNIST example's main() starts (train_mnist, train_mnist_cuda,
// tune_mnist): parse the command line, then initialise Chorus, with the same
// exit statuses and "<program>: error: ..." lines on stderr.
#pragma once

#include <cstdio>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "chorus/chorus.h"

namespace train_mnist {

// Parses argv with `parse` (which returns a struct of `std::optional<Options>
// options`, empty for --help, and `std::string help`; throws on a bad command
// line), then calls chorus::init(). Returns the status main() returns at
// once: 0 after printing the help, 2 for a bad command line, 1 when
// chorus::init() fails; std::nullopt, with *options set, to go on.
template <typename Options, typename Parse>
std::optional<int> start_example(const char* program, int argc, char** argv, Parse parse, Options* options) {
  try {
    const auto parsed = parse(std::vector<std::string>(argv + 1, argv + argc));
    if (!parsed.options) {
      std::cout << parsed.help;
      return 0;
    }
    *options = *parsed.options;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    return 2;
  }
  try {
    chorus::init();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: chorus::init() failed: %s\n", program, e.what());
    return 1;
  }
  return std::nullopt;
}

}  // namespace train_mnist
