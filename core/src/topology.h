// Where this process sits in the job: world rank and size, and its place
// among the processes of its host (local) and among the hosts (cross).
#pragma once

namespace chorus {

struct Topology {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;
  int cross_size = 1;
};

}  // namespace chorus
