// harness/mpi_launch.cpp — see mpi_launch.h.
#include "harness/mpi_launch.h"

#include <fcntl.h>
#include <spawn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "harness/interrupt.h"
#include "harness/mpi_library.h"

extern char** environ;

namespace tb {

std::vector<std::string> mpirun_prefix(int np) {
#if defined(TB_MPIEXEC)
  std::string exe = TB_MPIEXEC;
#else
  std::string exe = "mpirun";
#endif
  if (const char* e = std::getenv("TB_MPIRUN"); e && *e) exe = e;
  // Slurm's srun counts tasks with -n and takes none of mpirun's flags (binding and
  // transports are the site's srun configuration), but the PMI plugin the library can
  // talk to, and ends every task when one fails; mpirun/mpiexec take -np.
  const std::string base = exe.substr(exe.find_last_of('/') + 1);
  const bool srun = base == "srun";
  std::vector<std::string> v = {exe, srun ? "-n" : "-np", std::to_string(np)};
  const std::string plugin = srun_mpi_plugin();
  std::string flags = !srun ? mpi_launcher_flags()
                            : (plugin.empty() ? "" : "--mpi=" + plugin + " ") + "--kill-on-bad-exit=1";
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

int run_under_mpirun(int np, const std::vector<std::string>& args, const std::string& log_path,
                     const std::function<void()>& on_wait) {
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
  // The job runs in its own process group: a signal to the suite (a terminal's Ctrl-C
  // or a scheduler's SIGTERM) is forwarded to the whole group (interrupt.h), and a
  // job that outlives the grace period after it is killed with its ranks.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw std::runtime_error("cannot start " + argv_s[0] + ": " + std::strerror(rc));
  set_child_process_group(pid);
  if (interrupt_signal() != 0) ::kill(-pid, interrupt_signal());  // arrived while spawning
  constexpr double kGraceS = 10;
  int status = 0;
  double since_signal = -1;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) {
      set_child_process_group(0);
      throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
    }
    ::usleep(interrupt_signal() ? 50000 : 100000);
    if (on_wait) on_wait();
    if (interrupt_signal() == 0) continue;
    if (since_signal < 0) since_signal = 0;
    if (since_signal >= kGraceS) ::kill(-pid, SIGKILL);
    since_signal += 0.05;
  }
  set_child_process_group(0);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace tb
