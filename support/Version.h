// kiln's own version, as CMake's project() states it: part of every cache key
// and of the tuning database's records.
#pragma once

#include <string_view>

namespace kiln {

/// "0.1.0": the project version kiln was built as.
std::string_view kilnVersion();

} // namespace kiln
