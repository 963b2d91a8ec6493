// harness/mpi_launch.cpp — see mpi_launch.h.
#include "harness/mpi_launch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

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

namespace {

// The launcher program: TB_MPIRUN, else the mpiexec found at configure time.
std::string launcher_program() {
#if defined(TB_MPIEXEC)
  std::string exe = TB_MPIEXEC;
#else
  std::string exe = "mpirun";
#endif
  if (const char* e = std::getenv("TB_MPIRUN"); e && *e) exe = e;
  return exe;
}

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// NAME as execvp would find it: itself when it holds a '/', else the first executable
// PATH entry; "" when none. Resolved before fork: the child only calls execv.
std::string resolve_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return is_executable_file(name) ? name : "";
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string p = (dir.empty() ? "." : dir) + "/" + name;
    if (is_executable_file(p)) return p;
  }
  return "";
}

}  // namespace

std::string launcher_problem() {
  const std::string exe = launcher_program();
  const bool from_env = std::getenv("TB_MPIRUN") && *std::getenv("TB_MPIRUN");
  const std::string named = from_env ? "TB_MPIRUN='" + exe + "'" : "the configured launcher '" + exe + "'";
  // One program: the suite runs it as one word (no shell), and `launcher N` prints it as such.
  if (exe.find_first_of(" \t\n") != std::string::npos) {
    return named + " is not one program: name the launcher alone and put its flags in TB_MPIRUN_FLAGS";
  }
  if (resolve_program(exe).empty()) {
    return named + (exe.find('/') != std::string::npos ? " is not an executable file"
                                                        : " is not found on PATH") +
           " (set TB_MPIRUN to mpirun, mpiexec or srun)";
  }
  return "";
}

std::vector<std::string> mpirun_prefix(int np) {
  const std::string exe = launcher_program();
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

  const std::string program = resolve_program(argv_s[0]);
  if (program.empty()) throw std::runtime_error("cannot start " + argv_s[0] + ": " + launcher_problem());
  // Opened before fork: between fork and exec the child (of a process that may run
  // threads) makes async-signal-safe calls only.
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) throw std::runtime_error("cannot open " + log_path + ": " + std::strerror(errno));
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(log_fd);
    if (null_fd >= 0) ::close(null_fd);
    throw std::runtime_error("cannot start " + argv_s[0] + ": fork: " + std::strerror(err));
  }
  if (pid == 0) {
    // The job runs in its own process group: a signal to the suite (a terminal's Ctrl-C
    // or a scheduler's SIGTERM) is forwarded to the whole group (interrupt.h), and a
    // job that outlives the grace period after it is killed with its ranks.
    ::setpgid(0, 0);
#if defined(__linux__)
    // A suite that dies without forwarding anything (SIGKILL, the OOM killer) still ends
    // its job: the launcher gets SIGTERM and ends its ranks, instead of running on
    // unseen. Linux ties this to the thread that forked: the suite's main thread,
    // which outlives the job. A parent already gone by now is caught by getppid.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
#endif
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    sigset_t none;  // exec resets the suite's handlers, not its signal mask
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(log_fd);
  if (null_fd >= 0) ::close(null_fd);
  ::setpgid(pid, pid);  // also here: the suite may signal the group before the child ran
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
