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
  // This rank's node, 0..nodes-1, nodes numbered in the order of their
  // lowest world rank: the same on every rank of a node, which local and
  // cross ranks alone do not identify when nodes hold different numbers of
  // ranks or ranks are placed round robin.
  int node = 0;
  int nodes = 1;
};

}  // namespace chorus
