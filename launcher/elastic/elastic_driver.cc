#include "elastic/elastic_driver.h"

#include <iostream>
#include <limits>
#include <sstream>

#include "chorus/elastic.h"
#include "elastic/elastic_policy.h"
#include "elastic/host_discovery.h"
#include "options/usage_error.h"
#include "plan/slurm_environment.h"
#include "process/process_util.h"

namespace chorus::launcher {
namespace {

constexpr const char* kPrefix = "chorusrun: elastic: ";

std::string join(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

class ElasticJob {
 public:
  ElasticJob(const LaunchOptions& options, const Environment& env, const SystemFacts& facts,
             const AttemptSettings& settings)
      : options_(options), elastic_(options.elastic), env_(env), facts_(facts), settings_(settings) {
    if (options_.host_list.empty() && options_.hostfile.empty() && elastic_.discovery_script.empty()) {
      slurm_ = discover_slurm_allocation([&](const char* name) { return env_.get(name); });
    }
    srun_ = options_.launcher == "srun" || (options_.launcher.empty() && slurm_);
    // A static list cannot say that a failed host is back: it stays out.
    cooldown_ = elastic_.discovery_script.empty() ? std::numeric_limits<double>::infinity()
                                                  : elastic_.host_cooldown_seconds;
  }

  int run() {
    const std::string job_id = random_token();
    int restarts = 0;
    int last_status = 1;
    for (int attempt = 0;; ++attempt) {
      const double now = monotonic_seconds();
      std::vector<Host> available;
      try {
        available = discover();
      } catch (const UsageError& e) {
        if (attempt == 0) throw;  // chorusrun: error: ..., exit 2
        std::cerr << kPrefix << "cannot restart: " << e.what() << std::endl;
        return last_status;
      }
      const std::optional<int> wanted = attempt == 0 ? options_.np : std::nullopt;
      const Placement placement = place_ranks(available, blacklist_, now, wanted, elastic_.max_np);
      if (placement.np < elastic_.min_np) {
        std::string line = std::string(kPrefix) + "the job fell below --min-np " + std::to_string(elastic_.min_np) +
                           ": " + std::to_string(placement.available_slots) + " slot(s) available";
        const std::set<std::string> out = blacklist_.excluded(now);
        if (!out.empty()) line += " (failed hosts left out: " + join(out) + ")";
        std::cerr << line << "; stopping" << std::endl;
        return attempt == 0 ? 1 : last_status;
      }
      LaunchOptions attempt_options = options_;
      attempt_options.np = placement.np;
      attempt_options.hostfile.clear();
      attempt_options.host_list = srun_ ? "" : format_host_list(placement.hosts);
      if (srun_) attempt_options.launcher = "srun";
      JobPlan plan = plan_job(attempt_options, env_, facts_);
      plan.variables.push_back({kElasticJobVariable, job_id, true});
      plan.variables.push_back({kElasticRestartVariable, std::to_string(attempt), true});
      if (srun_) {
        const std::set<std::string> out = blacklist_.excluded(now);
        plan.excluded_nodes.assign(out.begin(), out.end());
        plan.srun_nodes = static_cast<int>(placement.hosts.size());
      }
      std::cerr << kPrefix << "attempt " << attempt << ": " << placement.np << " rank(s) on "
                << (srun_ ? "the Slurm allocation" : format_host_list(placement.hosts))
                << (plan.excluded_nodes.empty() ? "" : " without " + format_excluded(plan.excluded_nodes))
                << std::endl;

      AttemptSettings settings = settings_;
      if (!elastic_.discovery_script.empty()) {
        const int running = placement.np;
        settings.hosts_changed = [this, running] { return can_grow(running); };
        settings.poll_seconds = elastic_.discovery_interval_seconds;
      }
      const AttemptResult result = run_attempt(plan, settings);
      if (settings_.dry_run) return 0;
      const std::vector<std::string> rank_hosts =
          srun_ ? hosts_from_hellos(result.record) : hosts_by_slot(placement.hosts, placement.np);
      const AttemptVerdict verdict = judge_attempt(result.record, rank_hosts);
      say_lost_reports(result.record);
      if (!result.outcome.final_line.empty() && verdict.end != AttemptEnd::kHostsChanged) {
        std::cerr << result.outcome.final_line << std::endl;
      }
      if (result.outcome.exit_status != 0) last_status = result.outcome.exit_status;
      switch (verdict.end) {
        case AttemptEnd::kSucceeded:
          return 0;
        case AttemptEnd::kStopped:
          return result.outcome.exit_status;
        case AttemptEnd::kProgramError:
          std::cerr << kPrefix << "not restarting: the program failed by itself (no rank or host was lost), "
                    << "and a restart would fail the same way" << std::endl;
          return result.outcome.exit_status != 0 ? result.outcome.exit_status : 1;
        case AttemptEnd::kHostsChanged:
          std::cerr << kPrefix << "the ranks stopped at a commit to move onto the hosts now available; restarting"
                    << std::endl;
          continue;
        case AttemptEnd::kHostFailure:
          break;
      }
      const double failed_at = monotonic_seconds();
      for (const std::string& host : verdict.failed_hosts) blacklist_.add(host, failed_at + cooldown_);
      if (restarts >= elastic_.max_restarts) {
        std::cerr << kPrefix << "host(s) " << join(verdict.failed_hosts) << " failed; not restarting: "
                  << "--max-restarts " << elastic_.max_restarts << " reached" << std::endl;
        return last_status;
      }
      ++restarts;
      std::cerr << kPrefix << "host(s) " << join(verdict.failed_hosts) << " failed; left out "
                << (cooldown_ == std::numeric_limits<double>::infinity()
                        ? std::string("for the rest of the job")
                        : "for " + format_seconds(cooldown_) + " s")
                << "; restart " << restarts << " of at most " << elastic_.max_restarts << std::endl;
    }
  }

 private:
  std::vector<Host> discover() const {
    if (!elastic_.discovery_script.empty()) return run_discovery_script(elastic_.discovery_script);
    if (!options_.host_list.empty()) return parse_host_list(options_.host_list);
    if (!options_.hostfile.empty()) return read_hostfile(options_.hostfile);
    if (slurm_) return slurm_->hosts;
    // This machine alone: as many slots as ranks were asked for.
    const int slots = options_.np ? *options_.np : (elastic_.max_np ? *elastic_.max_np : facts_.cores);
    return {Host{"localhost", slots, "localhost"}};
  }

  // While an attempt runs: would the hosts listed now hold more ranks?
  bool can_grow(int running) const {
    if (elastic_.max_np && running >= *elastic_.max_np) return false;
    try {
      const std::vector<Host> hosts = run_discovery_script(elastic_.discovery_script);
      return place_ranks(hosts, blacklist_, monotonic_seconds(), std::nullopt, elastic_.max_np).np > running;
    } catch (const UsageError& e) {
      // The job runs on: a discovery failure here only delays growing.
      std::cerr << kPrefix << "while the job runs: " << e.what() << std::endl;
      return false;
    }
  }

  // What the survivors' runtimes said before the job ended (one line per
  // rank named, with the first rank that said so).
  static void say_lost_reports(const JobRecord& record) {
    std::set<int> said;
    for (const LostReport& report : record.lost_reports) {
      if (!said.insert(report.rank).second) continue;
      std::cerr << kPrefix << "rank " << report.reporter << " reported rank " << report.rank << " (host "
                << report.host << ") lost" << std::endl;
    }
  }

  static std::vector<std::string> hosts_from_hellos(const JobRecord& record) {
    std::vector<std::string> hosts(static_cast<size_t>(record.np));
    for (const auto& [rank, host] : record.hosts) {
      if (rank >= 0 && rank < record.np) hosts[static_cast<size_t>(rank)] = host;
    }
    return hosts;
  }

  static std::string format_excluded(const std::vector<std::string>& nodes) {
    std::string out;
    for (const std::string& node : nodes) out += (out.empty() ? "" : ",") + node;
    return out;
  }

  static std::string format_seconds(double seconds) {
    std::ostringstream out;
    out << seconds;
    return out.str();
  }

  const LaunchOptions& options_;
  const ElasticOptions& elastic_;
  const Environment& env_;
  const SystemFacts& facts_;
  const AttemptSettings& settings_;
  std::optional<SlurmAllocation> slurm_;
  bool srun_ = false;
  double cooldown_ = 0;
  HostBlacklist blacklist_;
};

}  // namespace

int run_elastic(const LaunchOptions& options, const Environment& env, const SystemFacts& facts,
                const AttemptSettings& settings) {
  ElasticJob job(options, env, facts, settings);
  return job.run();
}

}  // namespace chorus::launcher
