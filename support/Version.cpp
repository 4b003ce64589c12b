// The version string, passed in by CMake (KILN_VERSION_STRING) for this file alone.
#include "support/Version.h"

#ifndef KILN_VERSION_STRING
#error "KILN_VERSION_STRING is set by CMakeLists.txt from project(VERSION)"
#endif

namespace kiln {

std::string_view kilnVersion() { return KILN_VERSION_STRING; }

} // namespace kiln
