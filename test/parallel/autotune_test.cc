// Autotuning through the public API (CHORUS_AUTOTUNE=1) with a short budget:
// a training-like loop submits the same mix of tensors every step (sizes
// around the searched fusion thresholds, several dtypes and ops, so that a
// rank fusing or routing differently from another would corrupt results
// or hang). Checked:
//  - every step's results are bit-identical to the independent reference,
//    throughout the tuning period and after it;
//  - every rank logs the same "autotune: cycle C applies generation G ..."
//    lines (same cycles, same settings), one per sample plus the frozen one;
//  - rank 0's CSV has one row per sample, settings equal to the applied
//    ones, and a last "frozen" row equal to the final applied setting;
//  - explicitly set values never change, also one set on rank 0 only;
//  - CHORUS_AUTOTUNE that differs from rank 0's, and an unwritable log,
//    fail init() on every rank.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/harness.h"
#include "support/reference.h"

namespace chorus_test {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kSeed = 0xa070;
constexpr int kSamples = 8;
constexpr int kSteps = 45;  // 1 warm-up + 8 x (<= 1 change-over + 2 measured) fit easily

struct Spec {
  DataType dtype;
  int64_t elements;
  ReduceOp op;
};

// ~7 MiB per step: tensors below, around and above 1-4 MiB, so fusion
// thresholds from 1 to 128 MiB group them differently.
const std::vector<Spec>& specs() {
  static const std::vector<Spec> s = {
      {DataType::kFloat32, 150000, ReduceOp::kSum},  {DataType::kFloat32, 150001, ReduceOp::kSum},
      {DataType::kInt32, 400000, ReduceOp::kSum},    {DataType::kFloat32, 800000, ReduceOp::kSum},
      {DataType::kFloat64, 500, ReduceOp::kSum},     {DataType::kFloat64, 501, ReduceOp::kMax},
      {DataType::kFloat16, 30000, ReduceOp::kSum},   {DataType::kFloat32, 300000, ReduceOp::kMax},
      {DataType::kInt64, 70000, ReduceOp::kSum},     {DataType::kFloat32, 7, ReduceOp::kSum},
  };
  return s;
}

// Sums and maxima of kSmall values are exact in every dtype and any order.
Buffer exact(DataType dtype, const Shape& shape, const std::vector<double>& values) {
  Buffer b(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i) b.set(static_cast<int64_t>(i), values[i]);
  return b;
}

struct Gradient {
  std::string name;
  Buffer input;
  Buffer work;
  Buffer expected;
};

// Redirects this process's stderr (where the runtime logs) into a file.
class StderrToFile {
 public:
  explicit StderrToFile(const std::string& path) {
    std::fflush(stderr);
    saved_ = dup(2);
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 2);
      close(fd);
    }
  }
  ~StderrToFile() {
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
  }
  StderrToFile(const StderrToFile&) = delete;
  StderrToFile& operator=(const StderrToFile&) = delete;

 private:
  int saved_ = -1;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The "autotune: cycle ..." lines of a rank's log, without the rank prefix.
std::vector<std::string> applied_lines(const std::string& log) {
  std::vector<std::string> lines;
  std::stringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    const size_t at = line.find("autotune: cycle ");
    if (at != std::string::npos) lines.push_back(line.substr(at));
  }
  return lines;
}

// "fusion threshold F bytes, cycle time T ms, algorithm A" as the CSV's
// "F,T,A", to compare an applied line with a CSV row.
std::string settings_of_line(const std::string& line) {
  long long fusion = 0;
  char cycle[64] = {}, algorithm[16] = {};
  const size_t at = line.find("fusion threshold ");
  if (at == std::string::npos ||
      std::sscanf(line.c_str() + at, "fusion threshold %lld bytes, cycle time %63s ms, algorithm %15s", &fusion, cycle,
                  algorithm) != 3) {
    return "unparsed: " + line;
  }
  return std::to_string(fusion) + "," + cycle + "," + algorithm;
}

struct CsvRow {
  std::string sample, kind, settings, best;
};

std::vector<CsvRow> read_csv(const std::string& path) {
  std::vector<CsvRow> rows;
  std::stringstream in(read_file(path));
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "sample,kind,fusion_threshold_bytes,cycle_time_ms,algorithm,bytes_per_second,best");
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::string f[7];
    for (auto& field : f) std::getline(fields, field, ',');
    rows.push_back({f[0], f[1], f[2] + "," + f[3] + "," + f[4], f[6]});
  }
  return rows;
}

struct TunedRun {
  int failures = 0;
  std::string log_prefix;  // every rank's log is log_prefix + rank
  std::string csv;
};

// Runs kSteps steps with autotuning and `extra` settings, checking every
// result; stderr goes to a file per rank.
TunedRun run_tuned(const std::vector<std::pair<std::string, const char*>>& extra) {
  TunedRun run;
  const std::string token = shared_token();
  run.log_prefix = "/tmp/" + token + "_autotune_rank";
  run.csv = "/tmp/" + token + "_autotune.csv";
  const std::string steps_env = "2", samples_env = std::to_string(kSamples);
  std::vector<std::pair<std::string, const char*>> settings = {{"CHORUS_AUTOTUNE", "1"},
                                                              {"CHORUS_AUTOTUNE_LOG", run.csv.c_str()},
                                                              {"CHORUS_AUTOTUNE_WARMUP_STEPS", "1"},
                                                              {"CHORUS_AUTOTUNE_STEPS_PER_SAMPLE", steps_env.c_str()},
                                                              {"CHORUS_AUTOTUNE_SAMPLES", samples_env.c_str()},
                                                              {"CHORUS_AUTOTUNE_MIN_SAMPLE_MS", "0"},
                                                              {"CHORUS_LOG_LEVEL", "debug"}};
  settings.insert(settings.end(), extra.begin(), extra.end());

  std::deque<Gradient> tensors;
  for (size_t t = 0; t < specs().size(); ++t) {
    const Spec& spec = specs()[t];
    const auto inputs = make_inputs(spec.dtype, {spec.elements}, world_size(), static_cast<int>(t), kSeed);
    Gradient& tensor = tensors.emplace_back();
    tensor.name = "autotune.grad." + std::to_string(t);
    tensor.input = inputs[world_rank()];
    tensor.work = inputs[world_rank()];
    tensor.expected = exact(spec.dtype, {spec.elements}, reference_reduce(inputs, spec.op));
  }
  {
    StderrToFile capture(run.log_prefix + std::to_string(world_rank()));
    {
      ScopedEnv env(settings);
      if (!init_chorus()) {
        run.failures = -1;
        return run;
      }
    }
    for (int step = 0; step < kSteps; ++step) {
      std::vector<chorus::Handle> handles;
      for (size_t t = 0; t < tensors.size(); ++t) {
        Gradient& tensor = tensors[t];
        std::memcpy(tensor.work.data(), tensor.input.data(), tensor.input.bytes());
        chorus::AllreduceOptions options;
        options.op = specs()[t].op;
        handles.push_back(submit([&] { return chorus::allreduce_async(tensor.name, tensor.work.tensor(), options); }));
      }
      for (size_t t = 0; t < tensors.size(); ++t) {
        const chorus::Status status = finish(handles[t]);
        const auto same = same_bytes(tensors[t].work.tensor(), tensors[t].expected);
        if (!status.ok() || !same) {
          if (++run.failures <= 5) {
            ADD_FAILURE() << "step " << step << " " << tensors[t].name << ": " << is_ok(status).message() << " "
                          << same.message();
          }
        }
      }
    }
    shutdown_chorus();
  }
  test_barrier();  // every rank's log is complete
  return run;
}

void remove_files(const TunedRun& run) {
  test_barrier();
  if (world_rank() == 0) {
    for (int r = 0; r < world_size(); ++r) std::remove((run.log_prefix + std::to_string(r)).c_str());
    std::remove(run.csv.c_str());
  }
}

// Rank 0: every rank applied the same settings at the same cycles; returns
// rank 0's lines.
std::vector<std::string> same_lines_on_every_rank(const TunedRun& run) {
  const std::vector<std::string> mine = applied_lines(read_file(run.log_prefix + "0"));
  for (int r = 1; r < world_size(); ++r) {
    EXPECT_EQ(applied_lines(read_file(run.log_prefix + std::to_string(r))), mine) << "rank " << r << " vs rank 0";
  }
  return mine;
}

TEST(Autotune, EveryRankAppliesTheSameSettingsAtTheSameCycleAndResultsStayExact) {
  const TunedRun run = run_tuned({});
  ASSERT_GE(run.failures, 0) << "init() failed";
  EXPECT_EQ(run.failures, 0);
  if (world_rank() == 0) {
    const std::vector<std::string> lines = same_lines_on_every_rank(run);
    ASSERT_EQ(lines.size(), static_cast<size_t>(kSamples + 1)) << ::testing::PrintToString(lines);
    for (int g = 0; g < kSamples; ++g) {
      EXPECT_THAT(lines[g], HasSubstr(" applies generation " + std::to_string(g + 1) + " (sample " +
                                      std::to_string(g) + "): "));
    }
    EXPECT_THAT(lines.back(), HasSubstr(" applies generation " + std::to_string(kSamples + 1) + " (frozen): "));
    EXPECT_THAT(lines.front(), HasSubstr("autotune: cycle 1 applies generation 1"));

    const std::vector<CsvRow> rows = read_csv(run.csv);
    ASSERT_EQ(rows.size(), static_cast<size_t>(kSamples + 1));
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(rows[i].sample, std::to_string(i));
      EXPECT_EQ(rows[i].settings, settings_of_line(lines[i])) << "row " << i;
    }
    EXPECT_EQ(rows[0].kind, "start");
    EXPECT_EQ(rows[0].settings.substr(0, rows[0].settings.find(',')), "67108864");  // the default
    EXPECT_EQ(rows[1].kind, "random");
    EXPECT_EQ(rows.back().kind, "frozen");
    EXPECT_EQ(rows.back().best, "1");
    // The frozen setting is one that was measured and was best when measured.
    bool measured_best = false;
    for (size_t i = 0; i + 1 < rows.size(); ++i) measured_best |= rows[i].settings == rows.back().settings;
    EXPECT_TRUE(measured_best);
    // Several settings were really tried.
    std::set<std::string> tried;
    for (const CsvRow& row : rows) tried.insert(row.settings);
    EXPECT_GE(tried.size(), 4u);
  }
  remove_files(run);
}

TEST(Autotune, ExplicitValuesAreNeverChanged) {
  const TunedRun run = run_tuned({{"CHORUS_FUSION_THRESHOLD", "2097152"}, {"CHORUS_SHM_ALLREDUCE", "auto"}});
  ASSERT_GE(run.failures, 0) << "init() failed";
  EXPECT_EQ(run.failures, 0);
  if (world_rank() == 0) {
    const std::vector<std::string> lines = same_lines_on_every_rank(run);
    ASSERT_EQ(lines.size(), static_cast<size_t>(kSamples + 1));
    std::set<std::string> cycle_times, algorithms;
    for (const std::string& line : lines) {
      const std::string settings = settings_of_line(line);
      EXPECT_EQ(settings.substr(0, settings.find(',')), "2097152") << line;
      cycle_times.insert(settings.substr(settings.find(',') + 1, settings.rfind(',') - settings.find(',') - 1));
      algorithms.insert(settings.substr(settings.rfind(',') + 1));
    }
    EXPECT_EQ(algorithms.size(), 1u);  // set through CHORUS_SHM_ALLREDUCE
    EXPECT_GE(cycle_times.size(), 3u);  // the one free setting was searched
    for (const CsvRow& row : read_csv(run.csv)) EXPECT_EQ(row.settings.substr(0, 8), "2097152,") << row.settings;
  }
  remove_files(run);
}

TEST(Autotune, ACycleTimeSetOnRankZeroOnlyReachesEveryRankExactly) {
  // The cycle time is rank 0's alone, so it may be set there only: the other
  // ranks' grids then differ from rank 0's (theirs are searched), and only
  // values, not positions in a grid, say the same thing on every rank.
  const TunedRun run = run_tuned({{"CHORUS_CYCLE_TIME_MS", world_rank() == 0 ? "2.3" : nullptr}});
  ASSERT_GE(run.failures, 0) << "init() failed";
  EXPECT_EQ(run.failures, 0);
  if (world_rank() == 0) {
    const std::vector<std::string> lines = same_lines_on_every_rank(run);
    ASSERT_EQ(lines.size(), static_cast<size_t>(kSamples + 1));
    std::set<std::string> fusion_thresholds;
    for (const std::string& line : lines) {
      const std::string settings = settings_of_line(line);
      EXPECT_EQ(settings.substr(settings.find(','), 5), ",2.3,") << line;
      fusion_thresholds.insert(settings.substr(0, settings.find(',')));
    }
    EXPECT_GE(fusion_thresholds.size(), 3u);  // the free settings were searched
    for (const CsvRow& row : read_csv(run.csv)) EXPECT_EQ(row.settings.substr(row.settings.find(','), 5), ",2.3,");
  }
  remove_files(run);
}

TEST(Autotune, DifferentFromRankZeroFailsInitOnEveryRank) {
  const int odd = world_size() - 1;
  chorus::Status status;
  {
    ScopedEnv env("CHORUS_AUTOTUNE", world_rank() == odd ? "1" : "0");
    status = thrown_by([] { chorus::init(); });
  }
  ASSERT_FALSE(status.ok()) << "init() succeeded on rank " << world_rank();
  if (world_rank() == odd) {
    EXPECT_EQ(status.message(), "CHORUS_AUTOTUNE must be the same on every rank: rank " + std::to_string(odd) +
                                    " has 1, rank 0 has 0");
  } else {
    EXPECT_THAT(status.message(),
                HasSubstr("has CHORUS_AUTOTUNE different from rank 0 on rank(s) [" + std::to_string(odd) + "]"));
  }
  ASSERT_TRUE(init_chorus());
  shutdown_chorus();
}

TEST(Autotune, UnwritableLogOnRankZeroFailsInitOnEveryRank) {
  chorus::Status status;
  {
    ScopedEnv env({{"CHORUS_AUTOTUNE", "1"}, {"CHORUS_AUTOTUNE_LOG", "/nonexistent-chorus-dir/autotune.csv"}});
    status = thrown_by([] { chorus::init(); });
  }
  ASSERT_FALSE(status.ok()) << "init() succeeded on rank " << world_rank();
  if (world_rank() == 0) {
    EXPECT_EQ(status.message(), "CHORUS_AUTOTUNE_LOG: cannot open '/nonexistent-chorus-dir/autotune.csv' for "
                                "writing: No such file or directory");
  } else {
    EXPECT_THAT(status.message(), HasSubstr("could not start on rank(s) [0]"));
  }
}

}  // namespace
}  // namespace chorus_test
