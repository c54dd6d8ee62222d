// docs/CONFIGURATION.md, made from the runtime's settings table
// (core/base/settings.def): every CHORUS_* variable with its default, what it
// accepts, how ranks must agree on it, its chorusrun flag and its meaning.
// chorus_settings_doc prints it; a test fails when the committed page
// differs (launcher/settings_page_main.cc).
#pragma once

#include <string>

namespace chorus::launcher {

// The whole page, in Markdown.
std::string settings_page();

// The command that rewrites the committed page, from the repository's root.
constexpr const char* kRegenerateSettingsPage =
    "scripts/build.sh chorus_settings_doc && build/launcher/chorus_settings_doc > docs/CONFIGURATION.md";

}  // namespace chorus::launcher
