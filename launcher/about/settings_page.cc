#include "about/settings_page.h"

#include <sstream>

#include "base/settings.h"

namespace chorus::launcher {
namespace {

// A table cell: a '|' would end it.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string code(const std::string& text) { return "`" + text + "`"; }

std::string default_cell(const Setting& setting) {
  if (setting.default_text == "unset" || setting.default_text == "empty") return setting.default_text;
  return code(setting.default_text);
}

std::string flag_cell(const Setting& setting) {
  const Flag& flag = setting.flag;
  if (flag.option == nullptr) return "";
  std::string text = code(std::string("--") + flag.option);
  if (setting.is_switch) text += " (no value: sets 1)";
  if (flag.scale != 1.0) text += std::string(" (in ") + flag.unit + ")";
  return text;
}

}  // namespace

std::string settings_page() {
  std::ostringstream page;
  page << "# Configuration\n\n"
       << "<!-- Generated from core/base/settings.def by chorus_settings_doc; do not edit by hand. Regenerate:\n"
       << "     " << kRegenerateSettingsPage << " -->\n\n"
       << "Chorus reads these variables once, at `chorus::init()`. A value that does not parse or is out of\n"
       << "range makes `init()` fail with `<VARIABLE>='<value>' is invalid: expected <what Accepted says>`.\n"
       << "Integers take plain decimal digits only (no sign, no suffix); numbers are decimal, without a unit.\n\n"
       << "`chorusrun` passes its runtime flags to every rank as these variables, and checks them, the\n"
       << "variables in its own environment and those given with `-x` the same way before anything starts\n"
       << "([LAUNCHER.md](LAUNCHER.md)).\n\n"
       << "How the ranks must agree on a setting (Ranks):\n"
       << "- **alike**: `init()` fails on every rank unless every rank holds rank 0's value; the rank that\n"
       << "  differs is told its value and rank 0's, the others which ranks differ.\n"
       << "- **rank 0's**: read by rank 0 alone, which runs the clock, the stall inspector, the timeline and\n"
       << "  the autotuner's search.\n"
       << "- **this rank's**: each rank's own; ranks may differ.\n\n"
       << "| Variable | Default | Accepted | Ranks | `chorusrun` flag | Meaning |\n"
       << "|---|---|---|---|---|---|\n";
  for (const Setting& setting : settings()) {
    page << "| " << code(setting.variable) << " | " << cell(default_cell(setting)) << " | " << cell(setting.expected)
         << " | " << agreement_name(setting.agreement) << " | " << cell(flag_cell(setting)) << " | "
         << cell(setting.help) << " |\n";
  }
  return page.str();
}

}  // namespace chorus::launcher
