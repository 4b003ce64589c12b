// Temporary directories and child processes for the external tools codegen runs.
#include "codegen/ExternalTool.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace kiln::codegen {

namespace fs = std::filesystem;

Expected<TemporaryDirectory> TemporaryDirectory::create(std::string_view prefix) {
  std::error_code error;
  fs::path base = fs::temp_directory_path(error);
  if (error)
    base = "/tmp";
  std::string pattern = (base / fmt::format("{}-XXXXXX", prefix)).string();
  if (!mkdtemp(pattern.data()))
    return makeError(ErrorCode::IOError,
                     fmt::format("cannot create a temporary directory {}", pattern));
  return TemporaryDirectory(pattern);
}

TemporaryDirectory::~TemporaryDirectory() {
  if (!path_.empty()) {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
}

std::string readWholeFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool writeWholeFile(const fs::path &path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  return static_cast<bool>(out);
}

int runToLog(const std::vector<std::string> &argv, const fs::path &logPath) {
  std::vector<char *> args;
  for (const std::string &arg : argv)
    args.push_back(const_cast<char *>(arg.c_str()));
  args.push_back(nullptr);
  pid_t child = fork();
  if (child < 0)
    return -1;
  if (child == 0) {
    FILE *log = std::fopen(logPath.c_str(), "w");
    if (!log)
      _exit(127);
    dup2(fileno(log), STDOUT_FILENO);
    dup2(fileno(log), STDERR_FILENO);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0)
    if (errno != EINTR)
      return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace kiln::codegen
