// Round trips and parse errors of the graph IR text form.
#include <catch2/catch.hpp>
