// The JSON type of the search's state file, log and scheduler settings:
// nlohmann-json's ordered_json, whose objects keep their keys in insertion
// order (so a saved file reads in the order it was written). Numbers keep
// their type (integer or double); doubles are written in the shortest form
// that reads back as the same double, so a metric read back is the same
// value and a replayed search makes the same decisions.
#pragma once

#include <nlohmann/json.hpp>

namespace chorus {
namespace tune {

using Json = nlohmann::ordered_json;

}  // namespace tune
}  // namespace chorus
