// A command to run: variables to set in its environment, then argv.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace chorus::launcher {

struct Command {
  std::vector<std::pair<std::string, std::string>> environment;  // set on top of ours
  std::vector<std::string> argv;

  // "NAME=VALUE ... argv..." quoted for a POSIX shell: pasting it into a
  // shell (with the same environment) runs exactly this command.
  std::string to_shell() const;
};

// Quotes one word for a POSIX shell only when it needs quoting.
std::string shell_quote(const std::string& word);

}  // namespace chorus::launcher
