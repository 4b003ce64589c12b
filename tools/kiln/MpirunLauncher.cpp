// Finding mpirun and running this executable as N ranks under it.
#include "tools/kiln/MpirunLauncher.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace kiln::tool {

namespace {

/// The first executable `name` in $PATH's directories, or empty.
std::string findOnPath(const std::string &name, std::string &searched) {
  const char *path = std::getenv("PATH");
  searched = path ? path : "";
  size_t start = 0;
  while (start <= searched.size()) {
    size_t end = searched.find(':', start);
    if (end == std::string::npos)
      end = searched.size();
    // An empty entry means the current directory, as for the shell.
    std::string directory = end > start ? searched.substr(start, end - start) : ".";
    std::string candidate = directory + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate))
      return candidate;
    start = end + 1;
  }
  return "";
}

} // namespace

std::vector<std::string> withoutNproc(const std::vector<std::string> &words) {
  std::vector<std::string> kept;
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i] == "--nproc") {
      ++i; // and its value
      continue;
    }
    if (words[i].starts_with("--nproc="))
      continue;
    kept.push_back(words[i]);
  }
  return kept;
}

std::vector<std::string> mpirunCommandLine(const std::string &mpirun, int64_t ranks,
                                           const std::string &self, const std::string &command,
                                           const std::vector<std::string> &words) {
  std::vector<std::string> line = {mpirun, "-np", fmt::format("{}", ranks), "--oversubscribe"};
  // Open MPI refuses to start as root unless told that it is meant.
  if (::geteuid() == 0)
    line.push_back("--allow-run-as-root");
  line.push_back(self);
  line.push_back(command);
  line.insert(line.end(), words.begin(), words.end());
  return line;
}

Expected<int> runUnderMpirun(int64_t ranks, const std::string &command,
                             const std::vector<std::string> &words) {
  std::string searched;
  std::string mpirun = findOnPath("mpirun", searched);
  if (mpirun.empty())
    return std::unexpected(
        Error(ErrorCode::Unavailable,
              fmt::format("--nproc {} runs mpirun, which is not on PATH ({})", ranks,
                          searched.empty() ? "PATH is empty" : searched))
            .withNote("install an MPI launcher (Debian: openmpi-bin) or start the ranks with "
                      "your own: mpirun -np N kiln train ..."));
  std::error_code error;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error)
    return makeError(ErrorCode::IOError,
                     fmt::format("--nproc: cannot find this kiln executable (/proc/self/exe: {})",
                                 error.message()));
  std::vector<std::string> line = mpirunCommandLine(mpirun, ranks, self.string(), command, words);
  std::vector<char *> argv;
  for (std::string &word : line)
    argv.push_back(word.data());
  argv.push_back(nullptr);
  pid_t child = 0;
  if (int failed = ::posix_spawn(&child, mpirun.c_str(), nullptr, nullptr, argv.data(), environ))
    return makeError(ErrorCode::IOError,
                     fmt::format("--nproc: cannot run {}: {}", mpirun, std::strerror(failed)));
  int status = 0;
  while (::waitpid(child, &status, 0) < 0)
    if (errno != EINTR)
      return makeError(ErrorCode::IOError,
                       fmt::format("--nproc: waiting for {}: {}", mpirun, std::strerror(errno)));
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

} // namespace kiln::tool
