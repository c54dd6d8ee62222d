#include "options/launch_options.h"

#include <boost/program_options.hpp>
#include <charconv>
#include <cmath>
#include <sstream>

#include "options/host_list.h"
#include "options/runtime_settings.h"
#include "options/usage_error.h"

namespace po = boost::program_options;

namespace chorus::launcher {
namespace {

po::options_description make_description() {
  po::options_description general("chorusrun options");
  // Values are read as strings and checked here, so that every bad value
  // gets a message in our words rather than Boost's.
  general.add_options()
      ("help,h", "print this help")
      ("np", po::value<std::string>(), "number of ranks (-np also works); default: all slots, or SLURM_NTASKS")
      ("hosts,H", po::value<std::string>(), "hosts and slots: host1:2,host2:4 (default: localhost, or the Slurm allocation)")
      ("hostfile", po::value<std::string>(), "file of 'HOST slots=N' lines ('#' comments allowed)")
      ("launcher", po::value<std::string>(), "mpirun or srun (default: srun inside a Slurm allocation, else mpirun)")
      ("export,x", po::value<std::vector<std::string>>()->composing(), "forward a variable: -x NAME or -x NAME=VALUE (repeatable)")
      ("network-interface", po::value<std::string>(), "interfaces or subnets MPI's TCP traffic may use: eth0 or 10.0.0.0/24 (comma-separated)")
      ("mpi-args", po::value<std::string>(), "extra arguments for mpirun (or srun), as one quoted string")
      ("report-address", po::value<std::string>(), "address of this machine that every host can reach (default: found from the route to the hosts)")
      ("bind-to", po::value<std::string>(), "mpirun process binding: auto (default: on one machine with no more ranks than cores, each rank gets its own equal share of the cores; else none), none, core or socket")
      ("start-timeout", po::value<std::string>(), "seconds for every rank to reach chorus::init() (default: no limit)")
      ("tag-output", po::bool_switch(), "prefix each output line with its rank (default when -np > 1)")
      ("no-tag-output", po::bool_switch(), "do not prefix output lines")
      ("dry-run", po::bool_switch(), "print the command that would run, and exit")
      ("verbose", po::bool_switch(), "print the command, then run it")
      ("check-build", po::bool_switch(), "print what this build of Chorus supports, and exit");
  po::options_description elastic("elastic training (docs/DESIGN.md, \"Elastic training\")");
  elastic.add_options()
      ("elastic", po::bool_switch(), "restart the job on the surviving hosts when a host fails, and on more hosts when the discovery script lists them (the program commits its state: chorus::torch::ElasticState)")
      ("min-np", po::value<std::string>(), "with --elastic: stop when fewer ranks than this are left (default 1)")
      ("max-np", po::value<std::string>(), "with --elastic: never start more ranks than this (default: every slot)")
      ("host-discovery-script", po::value<std::string>(), "with --elastic: executable that prints the available hosts, one 'host[:slots]' a line")
      ("discovery-interval", po::value<std::string>(), "with --elastic: seconds between runs of the discovery script while the job runs (default 5)")
      ("host-cooldown", po::value<std::string>(), "with --elastic: seconds a failed host is left out before the discovery script may bring it back (default 60)")
      ("max-restarts", po::value<std::string>(), "with --elastic: restarts after failures before giving up (default 5)");
  po::options_description runtime("runtime options (passed to every rank as CHORUS_* variables)");
  for (const RuntimeFlag& flag : runtime_flags()) {
    if (flag.is_switch) {
      runtime.add_options()(flag.option, po::bool_switch(), flag.help);
    } else {
      runtime.add_options()(flag.option, po::value<std::string>(), flag.help);
    }
  }
  po::options_description all;
  all.add(general).add(elastic).add(runtime);
  return all;
}

// Where chorusrun's own arguments end: at "--", or at the first word that is
// neither an option nor an option's value.
size_t program_start(const po::options_description& description, std::vector<std::string>* args,
                     bool* saw_separator) {
  *saw_separator = false;
  for (size_t i = 0; i < args->size(); ++i) {
    std::string& arg = (*args)[i];
    if (arg == "--") {
      *saw_separator = true;
      return i;
    }
    if (arg == "-np") arg = "--np";  // mpirun's spelling
    if (arg.size() < 2 || arg[0] != '-') return i;
    const bool is_long = arg[1] == '-';
    if (is_long && arg.find('=') != std::string::npos) continue;
    if (!is_long && arg.size() > 2) continue;  // -x=... or -xNAME: value attached
    const std::string key = is_long ? arg.substr(2) : arg;
    const po::option_description* option = description.find_nothrow(key, false, false, false);
    if (option != nullptr && option->semantic()->max_tokens() > 0) ++i;  // skip its value
  }
  return args->size();
}

double parse_seconds(const std::string& text, const std::string& option) {
  double value = -1.0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || result.ec != std::errc() || result.ptr != text.data() + text.size() ||
      !std::isfinite(value) || value <= 0.0 || value > 86400.0) {
    throw UsageError(option + "='" + text + "' is invalid: expected a number of seconds in (0, 86400]");
  }
  return value;
}

void check_network_interface(const std::string& text) {
  std::stringstream stream(text);
  std::string item;
  bool any = false;
  while (std::getline(stream, item, ',')) {
    any = true;
    bool ok = !item.empty();
    for (char c : item) {
      ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                  c == '-' || c == '_' || c == ':' || c == '/');
    }
    if (!ok) {
      throw UsageError("--network-interface='" + text + "' is invalid at '" + item +
                       "': expected interface names or IPv4 subnets such as eth0 or 10.0.0.0/24, comma-separated");
    }
  }
  if (!any || text.back() == ',') {
    throw UsageError("--network-interface='" + text +
                     "' is invalid: expected interface names or IPv4 subnets such as eth0 or 10.0.0.0/24, comma-separated");
  }
}

int parse_count(const std::string& text, const std::string& option, bool allow_zero) {
  int value = 0;
  if (allow_zero && text == "0") return 0;
  if (!parse_positive_int(text, &value)) {
    throw UsageError(option + "='" + text + "' is invalid: expected " +
                     (allow_zero ? "an integer >= 0" : "a positive integer"));
  }
  return value;
}

// The elastic options, checked against each other and the rest.
ElasticOptions parse_elastic(const po::variables_map& values, const LaunchOptions& options) {
  auto text = [&](const char* name) { return values[name].as<std::string>(); };
  ElasticOptions elastic;
  elastic.enabled = values["elastic"].as<bool>();
  for (const char* name : {"min-np", "max-np", "host-discovery-script", "discovery-interval", "host-cooldown",
                           "max-restarts"}) {
    if (values.count(name) && !elastic.enabled) {
      throw UsageError(std::string("--") + name + " was given without --elastic: expected both (it only applies to elastic jobs)");
    }
  }
  if (!elastic.enabled) return elastic;
  if (values.count("min-np")) elastic.min_np = parse_count(text("min-np"), "--min-np", false);
  if (values.count("max-np")) elastic.max_np = parse_count(text("max-np"), "--max-np", false);
  if (elastic.max_np && elastic.min_np > *elastic.max_np) {
    throw UsageError("--min-np " + std::to_string(elastic.min_np) + " is above --max-np " +
                     std::to_string(*elastic.max_np) + ": expected --min-np <= --max-np");
  }
  if (options.np && (*options.np < elastic.min_np || (elastic.max_np && *options.np > *elastic.max_np))) {
    throw UsageError("-np " + std::to_string(*options.np) + " is outside --min-np " + std::to_string(elastic.min_np) +
                     " .. --max-np " + (elastic.max_np ? std::to_string(*elastic.max_np) : "(every slot)") +
                     ": with --elastic, -np is the number of ranks to start with");
  }
  if (values.count("host-discovery-script")) {
    elastic.discovery_script = text("host-discovery-script");
    if (elastic.discovery_script.empty()) {
      throw UsageError("--host-discovery-script is empty: expected the path of an executable that prints 'host[:slots]' lines");
    }
    if (!options.host_list.empty() || !options.hostfile.empty()) {
      throw UsageError("--host-discovery-script was given with -H or --hostfile: expected one source of hosts");
    }
    if (options.launcher == "srun") {
      throw UsageError("--host-discovery-script cannot be used with --launcher srun: srun places ranks in the Slurm "
                       "allocation; use --launcher mpirun");
    }
  }
  if (values.count("discovery-interval")) {
    elastic.discovery_interval_seconds = parse_seconds(text("discovery-interval"), "--discovery-interval");
  }
  if (values.count("host-cooldown")) elastic.host_cooldown_seconds = parse_seconds(text("host-cooldown"), "--host-cooldown");
  if (values.count("max-restarts")) elastic.max_restarts = parse_count(text("max-restarts"), "--max-restarts", true);
  return elastic;
}

}  // namespace

std::vector<std::string> split_words(const std::string& text, const std::string& origin) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote == '\'') {
      if (c == '\'') quote = 0; else word += c;
    } else if (quote == '"') {
      if (c == '"') {
        quote = 0;
      } else if (c == '\\' && i + 1 < text.size() && (text[i + 1] == '"' || text[i + 1] == '\\')) {
        word += text[++i];
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote != 0) throw UsageError(origin + " has an unclosed " + std::string(1, quote) + " quote");
  if (in_word) words.push_back(word);
  return words;
}

LaunchOptions parse_launch_options(const std::vector<std::string>& raw_args) {
  const po::options_description description = make_description();
  std::vector<std::string> args = raw_args;
  bool separator = false;
  const size_t start = program_start(description, &args, &separator);
  const std::vector<std::string> own(args.begin(), args.begin() + static_cast<long>(start));
  LaunchOptions options;
  options.program.assign(args.begin() + static_cast<long>(start + (separator ? 1 : 0)), args.end());

  po::variables_map values;
  try {
    po::store(po::command_line_parser(own).options(description).style(po::command_line_style::unix_style ^ po::command_line_style::allow_guessing).run(),
              values);
    po::notify(values);
  } catch (const po::error& e) {
    throw UsageError(std::string(e.what()) + " (chorusrun --help lists the options)");
  }
  auto text = [&](const char* name) -> std::string {
    return values.count(name) ? values[name].as<std::string>() : std::string();
  };

  options.help = values.count("help") > 0;
  options.dry_run = values["dry-run"].as<bool>();
  options.verbose = values["verbose"].as<bool>();
  options.check_build = values["check-build"].as<bool>();
  if (options.help || options.check_build) return options;

  if (values.count("np")) {
    int np = 0;
    if (!parse_positive_int(text("np"), &np)) {
      throw UsageError("-np='" + text("np") + "' is invalid: expected a positive integer number of ranks");
    }
    options.np = np;
  }
  options.host_list = text("hosts");
  options.hostfile = text("hostfile");
  if (values.count("hosts") && values.count("hostfile")) {
    throw UsageError("-H and --hostfile were both given: expected one of them");
  }
  if (values.count("hosts") && options.host_list.empty()) {
    throw UsageError("-H is empty: expected host[:slots],... such as 'node1:2,node2:2'");
  }
  if (values.count("launcher")) {
    options.launcher = text("launcher");
    if (options.launcher != "mpirun" && options.launcher != "srun") {
      throw UsageError("--launcher='" + options.launcher + "' is invalid: expected mpirun or srun");
    }
  }
  for (const RuntimeFlag& flag : runtime_flags()) {
    if (flag.is_switch) {
      if (values[flag.option].as<bool>()) options.runtime_variables.push_back(runtime_variable_for(flag.option, ""));
    } else if (values.count(flag.option)) {
      options.runtime_variables.push_back(runtime_variable_for(flag.option, text(flag.option)));
    }
  }
  // The log lists the autotuner's samples; without the autotuner it would
  // silently stay empty.
  if (values.count("autotune-log") && !values["autotune"].as<bool>()) {
    throw UsageError("--autotune-log was given without --autotune: expected both (the log lists the autotuner's samples)");
  }
  if (values.count("export")) options.exports = values["export"].as<std::vector<std::string>>();
  if (values.count("network-interface")) {
    options.network_interface = text("network-interface");
    check_network_interface(options.network_interface);
  }
  if (values.count("mpi-args")) options.mpi_args = split_words(text("mpi-args"), "--mpi-args");
  if (values.count("report-address")) {
    options.report_address = text("report-address");
    if (!is_valid_host_name(options.report_address)) {
      throw UsageError("--report-address='" + options.report_address +
                       "' is invalid: expected a host name or IPv4 address of this machine");
    }
  }
  if (values.count("bind-to")) {
    options.bind_to = text("bind-to");
    if (options.bind_to != "auto" && options.bind_to != "none" && options.bind_to != "core" &&
        options.bind_to != "socket") {
      throw UsageError("--bind-to='" + options.bind_to + "' is invalid: expected auto, none, core or socket");
    }
  }
  if (values.count("start-timeout")) options.start_timeout_seconds = parse_seconds(text("start-timeout"), "--start-timeout");
  const bool tag = values["tag-output"].as<bool>(), no_tag = values["no-tag-output"].as<bool>();
  if (tag && no_tag) throw UsageError("--tag-output and --no-tag-output were both given: expected one of them");
  if (tag || no_tag) options.tag_output = tag;
  options.elastic = parse_elastic(values, options);
  if (options.program.empty()) {
    throw UsageError("no program to run: expected chorusrun [options] [--] PROGRAM [ARGS...]");
  }
  return options;
}

std::string launch_usage() {
  std::ostringstream out;
  out << "Usage: chorusrun -np N [-H host:slots,... | --hostfile FILE] [options] [--] PROGRAM [ARGS...]\n"
      << "Starts N ranks of PROGRAM through mpirun (or srun inside a Slurm allocation), forwards the\n"
      << "runtime options as CHORUS_* variables, prefixes output with ranks and exits 0 only if every\n"
      << "rank did. See docs/LAUNCHER.md.\n"
      << "       chorusrun --elastic --min-np A --max-np B [-H ... | --hostfile FILE | --host-discovery-script PATH]\n"
      << "                 [options] [--] PROGRAM [ARGS...]\n"
      << "restarts the job on the hosts left (and grows it at a commit when more are listed); see docs/ELASTIC.md.\n\n"
      << make_description();
  return out.str();
}

}  // namespace chorus::launcher
