#include "bench_options.h"

#include <boost/program_options.hpp>

#include <climits>
#include <sstream>

#include "bench_util.h"

namespace po = boost::program_options;

namespace chorus_bench {
namespace {

// Splits every token at commas, so both "--sizes 4K 64K" and "--sizes 4K,64K" work.
bool parse_size_list(const std::vector<std::string>& tokens, std::vector<size_t>* out,
                     std::string* error, const char* option = "--sizes") {
  out->clear();
  for (const std::string& token : tokens) {
    std::stringstream stream(token);
    std::string item;
    while (std::getline(stream, item, ',')) {
      if (item.empty()) continue;
      size_t bytes = 0;
      if (!parse_size(item, &bytes) || bytes == 0 || bytes % 4 != 0 ||
          bytes / 4 > static_cast<size_t>(INT_MAX)) {
        *error = std::string(option) + ": '" + item +
                 "' is not a size: expected a positive multiple of 4 bytes (float32), up to 8 GiB, "
                 "written as bytes or with a K, KiB, M, MiB, G or GiB suffix (e.g. 4KiB,64KiB,1MiB)";
        return false;
      }
      out->push_back(bytes);
    }
  }
  if (out->empty()) {
    *error = std::string(option) + ": no sizes given";
    return false;
  }
  return true;
}

}  // namespace

ParseResult parse_options(int argc, char** argv, Options* options, std::string* usage,
                          std::string* error) {
  std::vector<std::string> size_tokens;
  std::vector<std::string> p2p_size_tokens;
  po::options_description desc(
      "chorus_bench: Chorus allreduce vs raw MPI_Allreduce, run under mpirun.\n"
      "Usage: mpirun -np N chorus_bench [options]\nOptions");
  desc.add_options()
      ("help", "print this help and exit")
      ("mode", po::value<std::string>(&options->mode)->default_value(options->mode),
       "allreduce (allreduce figures) or p2p (send/recv ping-pong between ranks 0 and 1 against "
       "MPI_Send/Recv and MPI_Isend/Irecv; --repeats and --warmup apply)")
      ("p2p-sizes", po::value<std::vector<std::string>>(&p2p_size_tokens)->multitoken(),
       "message sizes of --mode p2p, like --sizes (default: 256B 4KiB 64KiB 1MiB 4MiB)")
      ("sizes", po::value<std::vector<std::string>>(&size_tokens)->multitoken(),
       "allreduce sizes in bytes, space or comma separated, with optional K/KiB/M/MiB/G/GiB "
       "suffix; multiples of 4 (default: 4KiB 64KiB 1MiB 16MiB 64MiB)")
      ("repeats", po::value<int>(&options->repeats)->default_value(options->repeats),
       "timed rounds per measurement (1..100000)")
      ("warmup", po::value<int>(&options->warmup)->default_value(options->warmup),
       "untimed rounds before each measurement (0..10000)")
      ("latency-repeats",
       po::value<int>(&options->latency_repeats)->default_value(options->latency_repeats),
       "timed rounds of the 4 KiB latency measurement (1..1000000)")
      ("idle-seconds", po::value<double>(&options->idle_seconds)->default_value(options->idle_seconds),
       "length of the idle-CPU window in seconds (0..600; 0 skips it)")
      ("json", po::value<std::string>(&options->json_path), "also write every figure as JSON to PATH")
      ("skip-large", po::bool_switch(&options->skip_large),
       "leave out the sizes above 16 MiB")
      ("process-set", po::value<std::string>(&options->process_set),
       "also run the allreduce sweep on a process set, beside the world's at each size: 'half' "
       "(the first size/2 ranks) or a comma-separated rank list (e.g. 0,2)");
  std::ostringstream help;
  help << desc;
  *usage = help.str();

  po::variables_map vm;
  try {
    // No positional arguments: a stray word is an error, not silently ignored.
    const po::positional_options_description none;
    po::store(po::command_line_parser(argc, argv).options(desc).positional(none).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    *error = std::string(e.what()) + " (try --help)";
    return ParseResult::kError;
  }
  if (vm.count("help") != 0) return ParseResult::kHelp;

  if (options->mode != "allreduce" && options->mode != "p2p") {
    *error = "--mode '" + options->mode + "': expected allreduce or p2p";
    return ParseResult::kError;
  }
  if (p2p_size_tokens.empty()) {
    options->p2p_sizes = {256, size_t{4} << 10, size_t{64} << 10, size_t{1} << 20, size_t{4} << 20};
  } else if (!parse_size_list(p2p_size_tokens, &options->p2p_sizes, error, "--p2p-sizes")) {
    return ParseResult::kError;
  }
  if (size_tokens.empty()) {
    options->sizes = {size_t{4} << 10, size_t{64} << 10, size_t{1} << 20, size_t{16} << 20,
                      size_t{64} << 20};
  } else if (!parse_size_list(size_tokens, &options->sizes, error)) {
    return ParseResult::kError;
  }
  if (options->skip_large) {
    std::vector<size_t> kept;
    for (size_t bytes : options->sizes) {
      if (bytes <= kLargeBytes) kept.push_back(bytes);
    }
    if (kept.empty()) {
      *error = "--skip-large leaves no sizes: every size given is above 16 MiB";
      return ParseResult::kError;
    }
    options->sizes = kept;
  }
  if (options->repeats < 1 || options->repeats > 100000) {
    *error = "--repeats " + std::to_string(options->repeats) + ": expected 1..100000";
    return ParseResult::kError;
  }
  if (options->warmup < 0 || options->warmup > 10000) {
    *error = "--warmup " + std::to_string(options->warmup) + ": expected 0..10000";
    return ParseResult::kError;
  }
  if (options->latency_repeats < 1 || options->latency_repeats > 1000000) {
    *error = "--latency-repeats " + std::to_string(options->latency_repeats) +
             ": expected 1..1000000";
    return ParseResult::kError;
  }
  if (!(options->idle_seconds >= 0.0 && options->idle_seconds <= 600.0)) {
    *error = "--idle-seconds " + std::to_string(options->idle_seconds) + ": expected 0..600";
    return ParseResult::kError;
  }
  if (vm.count("json") != 0 && options->json_path.empty()) {
    *error = "--json: expected a file path, got an empty string";
    return ParseResult::kError;
  }
  return ParseResult::kRun;
}

}  // namespace chorus_bench
