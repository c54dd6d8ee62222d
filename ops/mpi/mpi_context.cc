#include "ops/mpi/mpi_context.h"

#include <cstdlib>
#include <string>

#include "ops/mpi/mpi_topology.h"

namespace chorus {

namespace {

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
  }
  return "an unknown thread level";
}

Status dup(MPI_Comm comm, MPI_Comm* out) {
  int rc = MPI_Comm_dup(comm, out);
  CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Comm_dup", rc));
  MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
  return Status::OK();
}

}  // namespace

Status MpiContext::create(std::unique_ptr<MpiContext>* out) {
  std::unique_ptr<MpiContext> context(new MpiContext());
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) {
    return Status::PreconditionFailed(
        "MPI has already been finalized in this process; Chorus cannot start again "
        "(initialise MPI in the application to init() and shutdown() Chorus repeatedly)");
  }
  int provided = 0;
  if (!initialized) {
    // Open MPI's progress engine busy-polls without yielding unless told
    // otherwise, and here it always shares a core: the background thread
    // runs beside the framework's compute thread. Yielding when idle made
    // training faster (docs/MEASUREMENTS.md, "MPI yield when idle"). A
    // user's own setting (mpirun --mca
    // reaches the ranks as this variable too) wins.
    if (std::getenv("OMPI_MCA_mpi_yield_when_idle") == nullptr) {
      setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
    }
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Init_thread", rc));
    context->owns_mpi_ = true;
  } else {
    MPI_Query_thread(&provided);
  }
  // The background thread calls MPI while the application may call it too.
  if (provided < MPI_THREAD_MULTIPLE) {
    return Status::PreconditionFailed(std::string("MPI provides ") + thread_level_name(provided) +
                                      "; Chorus needs MPI_THREAD_MULTIPLE (initialise MPI with "
                                      "MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...))");
  }
  CHORUS_RETURN_IF_ERROR(dup(MPI_COMM_WORLD, &context->control_));
  CHORUS_RETURN_IF_ERROR(dup(MPI_COMM_WORLD, &context->trigger_));
  CHORUS_RETURN_IF_ERROR(dup(MPI_COMM_WORLD, &context->data_));

  // Local and cross ranks follow the launcher's nodes (ops/mpi/mpi_topology.h).
  CHORUS_RETURN_IF_ERROR(discover_topology(context->control_, &context->topology_));

  CHORUS_RETURN_IF_ERROR(context->types_.create());
  *out = std::move(context);
  return Status::OK();
}

Status MpiContext::new_comm(MPI_Comm* out) {
  CHORUS_RETURN_IF_ERROR(dup(MPI_COMM_WORLD, out));
  extra_.push_back(*out);
  return Status::OK();
}

MpiContext::~MpiContext() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  types_.destroy();
  for (MPI_Comm* comm : {&control_, &trigger_, &data_}) {
    if (*comm != MPI_COMM_NULL) MPI_Comm_free(comm);
  }
  for (MPI_Comm& comm : extra_) MPI_Comm_free(&comm);
  if (owns_mpi_) MPI_Finalize();
}

}  // namespace chorus
