// Recording, gathering and writing pipeline spans.
#include "chorus/torch/pipeline/pipeline_trace.h"

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "chorus/chorus.h"
#include "chorus/torch/ops.h"

namespace chorus {
namespace torch {
namespace {

constexpr int64_t kFields = 9;  // kind rank stage pipeline step micro_batch start end, spare

double micros(PipelineTrace::Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

// Microseconds rounded to the nanosecond, the trace's resolution.
double to_nanoseconds(double us) { return std::round(us * 1000.0) / 1000.0; }

}  // namespace

PipelineTrace::PipelineTrace(const PipelineLayout& layout) : layout_(layout) {
  barrier();
  origin_ = Clock::now();
}

void PipelineTrace::record(PipelineSpan::Kind kind, int64_t step, int micro_batch,
                           Clock::time_point start, Clock::time_point end) {
  PipelineSpan span;
  span.kind = kind;
  span.rank = layout_.rank;
  span.stage = layout_.stage;
  span.pipeline = layout_.pipeline;
  span.step = step;
  span.micro_batch = micro_batch;
  span.start_us = micros(start - origin_);
  span.end_us = micros(end - origin_);
  spans_.push_back(span);
}

std::vector<PipelineSpan> PipelineTrace::gather() const {
  // float64 rows: exact for every field (times in microseconds stay well
  // below 2^53), and allgather concatenates rows of any count per rank.
  auto rows = ::torch::zeros({static_cast<int64_t>(spans_.size()), kFields}, ::torch::kFloat64);
  auto a = rows.accessor<double, 2>();
  for (size_t i = 0; i < spans_.size(); ++i) {
    const auto& s = spans_[i];
    const auto r = static_cast<int64_t>(i);
    a[r][0] = static_cast<double>(s.kind);
    a[r][1] = s.rank;
    a[r][2] = s.stage;
    a[r][3] = s.pipeline;
    a[r][4] = static_cast<double>(s.step);
    a[r][5] = s.micro_batch;
    a[r][6] = s.start_us;
    a[r][7] = s.end_us;
  }
  auto all = allgather(rows, "pipeline.trace");
  auto b = all.accessor<double, 2>();
  std::vector<PipelineSpan> spans;
  for (int64_t r = 0; r < all.size(0); ++r) {
    PipelineSpan s;
    s.kind = static_cast<PipelineSpan::Kind>(static_cast<int>(b[r][0]));
    s.rank = static_cast<int>(b[r][1]);
    s.stage = static_cast<int>(b[r][2]);
    s.pipeline = static_cast<int>(b[r][3]);
    s.step = static_cast<int64_t>(b[r][4]);
    s.micro_batch = static_cast<int>(b[r][5]);
    s.start_us = b[r][6];
    s.end_us = b[r][7];
    spans.push_back(s);
  }
  return spans;
}

void PipelineTrace::write(const std::string& path) const {
  const auto spans = gather();
  int ok = 1;
  if (rank() == 0) {
    std::ofstream out(path, std::ios::trunc);
    out << chrome_trace_json(spans);
    out.flush();
    ok = out.good() ? 1 : 0;
  }
  auto flag = ::torch::tensor({ok}, ::torch::kInt32);
  broadcast_(flag, 0, "pipeline.trace.written");
  if (flag.item<int>() == 0) {
    throw Error(Status::InvalidArgument("rank 0 could not write the pipeline trace to '" + path +
                                        "'"));
  }
}

std::string chrome_trace_json(const std::vector<PipelineSpan>& spans) {
  // Insertion order keeps each event readable ("name" first).
  using Json = nlohmann::ordered_json;
  Json events = Json::array();
  // Names for the rows: pipeline g, stage s (rank r).
  for (const auto& s : spans) {
    if (s.step != spans.front().step || s.micro_batch != 0 ||
        s.kind != PipelineSpan::Kind::kForward) {
      continue;
    }
    events.push_back(Json{{"name", "thread_name"},
                          {"ph", "M"},
                          {"pid", s.pipeline},
                          {"tid", s.stage},
                          {"args", Json{{"name", "stage " + std::to_string(s.stage) + " (rank " +
                                                     std::to_string(s.rank) + ")"}}}});
  }
  for (const auto& s : spans) {
    const bool forward = s.kind == PipelineSpan::Kind::kForward;
    const double start = to_nanoseconds(s.start_us);
    events.push_back(Json{{"name", (forward ? "F" : "B") + std::to_string(s.micro_batch)},
                          {"cat", forward ? "forward" : "backward"},
                          {"ph", "X"},
                          {"ts", start},
                          {"dur", to_nanoseconds(s.end_us - s.start_us)},
                          {"pid", s.pipeline},
                          {"tid", s.stage},
                          {"args", Json{{"step", s.step}, {"micro_batch", s.micro_batch}, {"rank", s.rank}}}});
  }
  return Json{{"displayTimeUnit", "ms"}, {"traceEvents", std::move(events)}}.dump() + "\n";
}

}  // namespace torch
}  // namespace chorus
