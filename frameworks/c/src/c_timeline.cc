// The C API's timeline control: chorus::start_timeline() and
// chorus::stop_timeline(), blocking and collective as there.
#include <string>

#include "c_errors.h"
#include "chorus/c_api.h"
#include "chorus/chorus.h"

extern "C" {

chorus_result_t chorus_start_timeline(const char* path, int mark_cycles) {
  static const char* const function = "chorus_start_timeline";
  return chorus::c_api::guarded(function, [&] {
    chorus::c_api::require_pointer(path, function, "path");
    chorus::start_timeline(path, mark_cycles != 0);
    return CHORUS_SUCCESS;
  });
}

chorus_result_t chorus_stop_timeline(void) {
  return chorus::c_api::guarded("chorus_stop_timeline", [] {
    chorus::stop_timeline();
    return CHORUS_SUCCESS;
  });
}

}  // extern "C"
