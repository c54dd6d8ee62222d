// chorus_settings_doc: prints docs/CONFIGURATION.md, made from the runtime's
// settings table; with --check FILE, fails when FILE differs from it (the
// test that keeps the committed page current).
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "about/settings_page.h"

namespace {

// The first line where the two texts differ, 1-based.
int first_difference(const std::string& a, const std::string& b) {
  std::istringstream left(a), right(b);
  std::string x, y;
  for (int line = 1;; ++line) {
    const bool more_left = static_cast<bool>(std::getline(left, x));
    const bool more_right = static_cast<bool>(std::getline(right, y));
    if (!more_left && !more_right) return line;
    if (more_left != more_right || x != y) return line;
  }
}

int check(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << path << " cannot be read: expected the settings page; write it with\n  "
              << chorus::launcher::kRegenerateSettingsPage << "\n";
    return 1;
  }
  std::ostringstream committed;
  committed << in.rdbuf();
  const std::string generated = chorus::launcher::settings_page();
  if (committed.str() == generated) return 0;
  std::cerr << path << " is stale: it differs from the settings table (core/base/settings.def) from line "
            << first_difference(committed.str(), generated) << " on; regenerate it from the repository's root with\n  "
            << chorus::launcher::kRegenerateSettingsPage << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 1) {
    std::cout << chorus::launcher::settings_page();
    return 0;
  }
  if (argc == 3 && std::string(argv[1]) == "--check") return check(argv[2]);
  std::cerr << "usage: chorus_settings_doc [--check FILE]\n"
               "  prints docs/CONFIGURATION.md; --check fails when FILE differs from it\n";
  return 2;
}
