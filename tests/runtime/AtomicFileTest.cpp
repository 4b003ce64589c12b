// replaceFile: the file appears whole or not at all, and temporaries that a
// killed writer left beside it are removed by the next write (a live
// writer's are not).
#include "runtime/cache/AtomicFile.h"

#include "frontend/TempDir.h"
#include "support/RegularFile.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace kiln;
using kiln::testing::TempDir;

namespace {

/// A pid that no process has: a child that has exited and been reaped.
pid_t deadPid() {
  pid_t child = ::fork();
  if (child == 0)
    ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

} // namespace

TEST_CASE("replaceFile removes the temporaries of dead writers only", "[file]") {
  TempDir dir;
  std::string target = dir.file("model.kiln");
  std::string dead = fmt::format(".model.kiln.tmp-{}-0", deadPid());
  std::string live = fmt::format(".model.kiln.tmp-{}-7", ::getppid());
  std::string other = fmt::format(".other.kiln.tmp-{}-0", deadPid());
  for (const std::string &name : {dead, live, other, std::string(".model.kiln.tmp-x-1")})
    std::ofstream(dir.file(name)) << "partial";

  REQUIRE(runtime::replaceFile(target, "whole", "bundle"));
  CHECK(readRegularFile(target, "bundle", 16).value() == "whole");
  CHECK(dir.entries() ==
        std::set<std::string>{"model.kiln", live, other, ".model.kiln.tmp-x-1"});
}

TEST_CASE("a failed replaceFile leaves the old file and no temporary", "[file]") {
  TempDir dir;
  std::string target = dir.file("data");
  REQUIRE(runtime::replaceFile(target, "old"));
  auto failed = runtime::replaceFileWith(target, "test file", [](int) { return ENOSPC; });
  REQUIRE_FALSE(failed);
  CHECK_THAT(failed.error().message(),
             Catch::StartsWith("cannot write test file '" + target + "': cannot write '") &&
                 Catch::EndsWith("': No space left on device"));
  CHECK(readRegularFile(target, "test file", 16).value() == "old");
  CHECK(dir.entries() == std::set<std::string>{"data"});
}
