// chorus._chorus: the Python binding of the runtime (lifecycle, topology,
// process sets, build flags) and of the LibTorch front end's collectives.
// Horovod's Python semantics (names, handles, autograd, the optimizer) live in
// the pure-Python package above it (chorus/torch/); this module only moves
// tensors in and out of the C++ API and maps its errors.
#include <torch/extension.h>

#include <pybind11/stl.h>

#include "chorus/checked_file.h"
#include "chorus/chorus.h"
#include "chorus/elastic.h"
#include "chorus/torch/checkpoint/elastic_commits.h"
#include "chorus/torch/ops.h"

#ifdef CHORUS_PY_WITH_NCCL
#include <nccl.h>
#endif

namespace py = pybind11;

namespace {

// The Python classes chorus::Error becomes: ChorusError (a RuntimeError, as
// Horovod's HorovodInternalError is), and ChorusValueError for bad arguments,
// which is also a ValueError.
PyObject* g_chorus_error = nullptr;
PyObject* g_chorus_value_error = nullptr;

chorus::ReduceOp reduce_op_of(int op) {
  switch (op) {
    case static_cast<int>(chorus::ReduceOp::kSum): return chorus::ReduceOp::kSum;
    case static_cast<int>(chorus::ReduceOp::kAverage): return chorus::ReduceOp::kAverage;
    case static_cast<int>(chorus::ReduceOp::kMin): return chorus::ReduceOp::kMin;
    case static_cast<int>(chorus::ReduceOp::kMax): return chorus::ReduceOp::kMax;
    case static_cast<int>(chorus::ReduceOp::kProduct): return chorus::ReduceOp::kProduct;
    case static_cast<int>(chorus::ReduceOp::kAdasum): return chorus::ReduceOp::kAdasum;
    default: break;
  }
  throw py::value_error("op " + std::to_string(op) +
                        " is not a reduce op of this build (expected Average, Sum, Min, Max, Product or Adasum)");
}

chorus::AllreduceOptions allreduce_options(int op, double prescale, double postscale, int set_id) {
  chorus::AllreduceOptions options;
  options.op = reduce_op_of(op);
  options.prescale_factor = prescale;
  options.postscale_factor = postscale;
  options.process_set.id = set_id;
  return options;
}

chorus::ProcessSet set_of(int id) {
  chorus::ProcessSet set;
  set.id = id;
  return set;
}

chorus::ReducescatterOptions reducescatter_options(int op, double prescale, double postscale,
                                                   int set_id) {
  chorus::ReducescatterOptions options;
  options.op = reduce_op_of(op);
  options.prescale_factor = prescale;
  options.postscale_factor = postscale;
  options.process_set.id = set_id;
  return options;
}

// The caller's end of one collective. wait() releases the GIL: other Python
// threads (a data loader, another rank's op on this process) keep running
// while this one waits for the other ranks.
class PyHandle {
 public:
  // `in_place`: the caller's tensor that an in-place op writes its result
  // into; wait() then returns it rather than a list of outputs.
  explicit PyHandle(chorus::torch::TorchHandle handle, torch::Tensor in_place = {})
      : handle_(std::move(handle)), in_place_(std::move(in_place)) {}

  // Waits without the GIL, then returns the outputs, or for an in-place op
  // the caller's own tensor: synchronize() then needs no Python wrapper of
  // its own per op, which the 4 KiB allreduce's latency from Python measured.
  py::object wait() const {
    {
      py::gil_scoped_release release;
      handle_.wait();  // throws the op's error; copies a result back
    }
    if (in_place_.defined()) return py::cast(in_place_);
    return py::cast(handle_.outputs());
  }
  bool poll() const { return handle_.test(); }
  std::vector<int64_t> received_splits() const {
    py::gil_scoped_release release;
    return handle_.received_splits();
  }

 private:
  chorus::torch::TorchHandle handle_;
  torch::Tensor in_place_;
};

py::dict build_flags() {
  py::dict flags;
  flags["mpi"] = true;
  flags["shared_memory"] = true;
#ifdef CHORUS_PY_WITH_CUDA
  flags["cuda"] = true;
#else
  flags["cuda"] = false;
#endif
  // Horovod's nccl_built() is the NCCL version code (e.g. 21805), 0 without.
#ifdef CHORUS_PY_WITH_NCCL
  flags["nccl"] = static_cast<int>(NCCL_VERSION_CODE);
#else
  flags["nccl"] = 0;
#endif
  flags["gloo"] = false;
  flags["ccl"] = false;
  return flags;
}

// What chorus.torch.elastic commits: its own payload (torch.save of the
// state's state_dicts and values), sealed in a checked file of this format,
// so that a C++ ElasticState's commits and a Python program's are told apart.
const chorus::CheckedFileFormat& python_commit_format() {
  static const chorus::CheckedFileFormat format{"CHORUS-PYTHON-ELASTIC-COMMIT 1", "Chorus Python elastic commit"};
  return format;
}

// chorus.torch.elastic's store: ElasticCommits with Python's payload. Every
// collective runs without the GIL; the decoder takes it back only to call
// Python, and a Python exception there becomes this rank's error, which the
// ranks then agree on.
void bind_elastic(py::module_& m) {
  namespace ct = chorus::torch;
  m.attr("ELASTIC_RESTART_EXIT_CODE") = chorus::kElasticRestartExitCode;
  py::class_<ct::ElasticCommits>(m, "ElasticCommits")
      .def(py::init([](const std::string& directory, int keep, bool every_rank_writes, const std::string& name) {
             ct::ElasticStateOptions options;
             options.directory = directory;
             options.keep = keep;
             options.every_rank_writes = every_rank_writes;
             options.name = name;
             return std::make_unique<ct::ElasticCommits>(python_commit_format(), options);
           }),
           py::arg("directory") = "", py::arg("keep") = 2, py::arg("every_rank_writes") = false,
           py::arg("name") = "elastic")
      .def("restore",
           [](ct::ElasticCommits& self, const py::function& decode) {
             py::gil_scoped_release release;
             return self.restore([&](const std::string& sealed, int64_t id, const std::string& what) {
               const std::string payload = chorus::open_checked(python_commit_format(), sealed, what);
               py::gil_scoped_acquire acquire;
               try {
                 decode(py::bytes(payload), id, what);
               } catch (py::error_already_set& e) {
                 throw std::runtime_error(py::str(e.value()).cast<std::string>());
               }
             });
           })
      .def("commit",
           [](ct::ElasticCommits& self, const py::bytes& payload) {
             const std::string bytes = payload;
             py::gil_scoped_release release;
             return self.commit([&](int64_t) { return chorus::seal_checked(python_commit_format(), bytes); });
           })
      .def("hosts_changed",
           [](ct::ElasticCommits& self) {
             py::gil_scoped_release release;
             return self.hosts_changed();
           })
      .def_property_readonly("last_commit", &ct::ElasticCommits::last_commit)
      .def_property_readonly("host_directory", &ct::ElasticCommits::host_directory)
      .def_property_readonly("job_directory", &ct::ElasticCommits::job_directory)
      .def_property_readonly("is_writer", &ct::ElasticCommits::is_writer)
      .def_static("restart_count", &ct::ElasticCommits::restart_count);
}

}  // namespace

PYBIND11_MODULE(_chorus, m) {
  m.doc() = "Chorus runtime and LibTorch collectives (use chorus.torch)";

  g_chorus_error = PyErr_NewExceptionWithDoc(
      "chorus._chorus.ChorusError",
      "A collective or the runtime failed; the message says what, where and why.",
      PyExc_RuntimeError, nullptr);
  py::object bases = py::make_tuple(py::handle(g_chorus_error), py::handle(PyExc_ValueError));
  g_chorus_value_error = PyErr_NewExceptionWithDoc(
      "chorus._chorus.ChorusValueError", "A bad argument, found by Chorus.",
      bases.ptr(), nullptr);
  m.attr("ChorusError") = py::handle(g_chorus_error);
  m.attr("ChorusValueError") = py::handle(g_chorus_value_error);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const chorus::Error& e) {
      PyErr_SetString(e.code() == chorus::StatusCode::kInvalidArgument ? g_chorus_value_error
                                                                         : g_chorus_error,
                      e.what());
    }
  });

  m.attr("OP_SUM") = static_cast<int>(chorus::ReduceOp::kSum);
  m.attr("OP_AVERAGE") = static_cast<int>(chorus::ReduceOp::kAverage);
  m.attr("OP_MIN") = static_cast<int>(chorus::ReduceOp::kMin);
  m.attr("OP_MAX") = static_cast<int>(chorus::ReduceOp::kMax);
  m.attr("OP_PRODUCT") = static_cast<int>(chorus::ReduceOp::kProduct);
  m.attr("OP_ADASUM") = static_cast<int>(chorus::ReduceOp::kAdasum);

  m.def("build_flags", &build_flags);
  m.def(
      "init",
      [](const std::vector<std::vector<int>>& process_sets) {
        chorus::InitOptions options;
        options.process_sets = process_sets;
        py::gil_scoped_release release;
        chorus::init(options);
      },
      py::arg("process_sets") = std::vector<std::vector<int>>{});
  m.def("shutdown", [] {
    py::gil_scoped_release release;
    chorus::shutdown();
  });
  m.def("is_initialized", &chorus::is_initialized);
  m.def("rank", &chorus::rank);
  m.def("size", &chorus::size);
  m.def("local_rank", &chorus::local_rank);
  m.def("local_size", &chorus::local_size);
  m.def("cross_rank", &chorus::cross_rank);
  m.def("cross_size", &chorus::cross_size);

  m.def("add_process_set", [](const std::vector<int>& ranks) {
    py::gil_scoped_release release;
    return chorus::add_process_set(ranks).id;
  });
  m.def("remove_process_set", [](int id) {
    py::gil_scoped_release release;
    chorus::remove_process_set(set_of(id));
  });
  m.def("process_set_ranks", [](int id) { return chorus::process_set_ranks(set_of(id)); });
  m.def("process_set_rank", [](int id) { return chorus::process_set_rank(set_of(id)); });
  m.def("process_set_size", [](int id) { return chorus::process_set_size(set_of(id)); });
  m.def("process_set_ids", [] {
    std::vector<int> ids;
    for (const auto& set : chorus::process_sets()) ids.push_back(set.id);
    return ids;
  });

  py::class_<PyHandle>(m, "Handle")
      .def("wait", &PyHandle::wait,
           "Waits (without the GIL) and returns the list of outputs, or an in-place op's tensor; raises "
           "ChorusError on failure.")
      .def("poll", &PyHandle::poll)
      .def("received_splits", &PyHandle::received_splits);

  namespace ct = chorus::torch;
  m.def("allreduce_async",
        [](const torch::Tensor& t, const std::string& name, int op, double pre, double post,
           int set, bool in_place) {
          auto options = allreduce_options(op, pre, post, set);
          return in_place ? PyHandle(ct::allreduce_async_(t, name, options), t)
                          : PyHandle(ct::allreduce_async(t, name, options));
        });
  // hvd.allreduce_(): submit and wait in one call, the GIL released
  // throughout; a blocking op needs no handle object on the Python side.
  m.def("allreduce_", [](const torch::Tensor& t, const std::string& name, int op, double pre, double post,
                         int set) {
    const auto options = allreduce_options(op, pre, post, set);
    py::gil_scoped_release release;
    ct::allreduce_(t, name, options);
  });
  m.def("grouped_allreduce_async",
        [](const std::vector<torch::Tensor>& ts, const std::string& name, int op, double pre,
           double post, int set, bool in_place) {
          auto options = allreduce_options(op, pre, post, set);
          return PyHandle(in_place ? ct::grouped_allreduce_async_(ts, name, options)
                                   : ct::grouped_allreduce_async(ts, name, options));
        });
  m.def("allgather_async", [](const torch::Tensor& t, const std::string& name, int set) {
    return PyHandle(ct::allgather_async(t, name, set_of(set)));
  });
  m.def("broadcast_async",
        [](const torch::Tensor& t, int root, const std::string& name, int set, bool in_place) {
          return in_place ? PyHandle(ct::broadcast_async_(t, root, name, set_of(set)), t)
                          : PyHandle(ct::broadcast_async(t, root, name, set_of(set)));
        });
  m.def("alltoall_async", [](const torch::Tensor& t, const std::vector<int64_t>& splits,
                             const std::string& name, int set) {
    return PyHandle(ct::alltoall_async(t, name, splits, set_of(set)));
  });
  m.def("grouped_allgather_async",
        [](const std::vector<torch::Tensor>& ts, const std::string& name, int set) {
          return PyHandle(ct::grouped_allgather_async(ts, name, set_of(set)));
        });
  m.def("reducescatter_async", [](const torch::Tensor& t, const std::string& name, int op,
                                  double pre, double post, int set) {
    return PyHandle(ct::reducescatter_async(t, name, reducescatter_options(op, pre, post, set)));
  });
  m.def("grouped_reducescatter_async",
        [](const std::vector<torch::Tensor>& ts, const std::string& name, int op, double pre,
           double post, int set) {
          return PyHandle(
              ct::grouped_reducescatter_async(ts, name, reducescatter_options(op, pre, post, set)));
        });
  m.def("barrier", [](int set) {
    py::gil_scoped_release release;
    chorus::barrier(set_of(set));
  });
  m.def("join", [] {
    py::gil_scoped_release release;
    return chorus::join();
  });
  m.def("start_timeline", [](const std::string& path, bool mark_cycles) {
    py::gil_scoped_release release;
    ct::start_timeline(path, mark_cycles);
  });
  m.def("stop_timeline", [] {
    py::gil_scoped_release release;
    ct::stop_timeline();
  });
  bind_elastic(m);
}
