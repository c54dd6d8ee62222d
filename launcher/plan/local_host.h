// Facts about this machine: its cores, whether a host name means this
// machine, and the address at which ranks on other hosts can reach the
// report listener.
#pragma once

#include <string>

#include "plan/job_plan.h"

namespace chorus::launcher {

int online_cores();
// True when this process may run on fewer CPUs than are online (taskset, a
// cpuset): mpirun binds by the whole machine's CPUs and would ignore that.
bool cpus_restricted();
std::string this_host_name();
// localhost, 127.x.x.x, this machine's host name (short or full), or a name
// or address that resolves to one of this machine's interface addresses.
bool is_local_host(const std::string& host);
bool is_executable_file(const std::string& path);

// The address ranks report to: --report-address, else 127.0.0.1 when every
// host is this machine, else the address of --network-interface, else the
// source address of the route to the first remote host, else the address of
// this machine's host name, else the first non-loopback interface address.
// Throws UsageError when none is found.
std::string choose_report_address(const JobPlan& plan);

// The path of the running executable (/proc/self/exe).
std::string this_executable();

}  // namespace chorus::launcher
