// harness/mpi_launch.cpp — see mpi_launch.h.
#include "harness/mpi_launch.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace tb {

std::vector<std::string> mpirun_prefix(int np) {
#if defined(TB_MPIEXEC)
  std::string exe = TB_MPIEXEC;
#else
  std::string exe = "mpirun";
#endif
  if (const char* e = std::getenv("TB_MPIRUN"); e && *e) exe = e;
  // Slurm's srun counts tasks with -n and takes none of Open MPI's flags (binding and
  // transports are the site's srun configuration); mpirun/mpiexec take -np.
  const std::string base = exe.substr(exe.find_last_of('/') + 1);
  const bool srun = base == "srun";
  std::vector<std::string> v = {exe, srun ? "-n" : "-np", std::to_string(np)};
  std::string flags = srun ? "" : "--allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader";
  if (const char* f = std::getenv("TB_MPIRUN_FLAGS")) flags = f;
  std::istringstream in(flags);
  for (std::string w; in >> w;) v.push_back(w);
  return v;
}

bool launch_is_single_node() {
  const char* exe = std::getenv("TB_MPIRUN");
  const char* flags = std::getenv("TB_MPIRUN_FLAGS");
  return !(exe && *exe) && !flags;
}

int run_under_mpirun(int np, const std::vector<std::string>& args, const std::string& log_path) {
  char self[PATH_MAX] = {};
  const ssize_t len = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) throw std::runtime_error("cannot find this executable (/proc/self/exe)");
  std::vector<std::string> argv_s = mpirun_prefix(np);
  argv_s.emplace_back(self, static_cast<size_t>(len));
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("cannot start " + argv_s[0] + ": " + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace tb
