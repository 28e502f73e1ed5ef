// Implements run_launch.h with fork + exec of /proc/self/exe (the same binary, the same argv).
#include "run_launch.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "run_cli.h"
#include "run_driver.h"

namespace vidgraph::cli {
namespace {

using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_launcher_interrupts = 0;

extern "C" void on_launcher_interrupt(int) { g_launcher_interrupts = g_launcher_interrupts + 1; }

// A loopback port the kernel just handed out (free now; rank 0 binds it moments later).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = list.find(',', start);
    const std::size_t end = comma == std::string::npos ? list.size() : comma;
    if (end > start) out.push_back(list.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// In the forked child, before exec: the torchrun environment, the job's temporary folder, its own
// process group (so a Ctrl-C on the terminal reaches the launcher only, which passes it on once),
// and SIGTERM when the launcher dies.
[[noreturn]] void exec_rank(char** argv, int rank, int nproc, int port, pid_t launcher, const std::string& tmp) {
  if (!tmp.empty()) ::setenv("TMPDIR", tmp.c_str(), 1);
  ::setenv("RANK", std::to_string(rank).c_str(), 1);
  ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
  ::setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
  ::setenv("LOCAL_WORLD_SIZE", std::to_string(nproc).c_str(), 1);
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
  ::setpgid(0, 0);
#ifdef __linux__
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != launcher) ::_exit(kExitCancelled);  // the launcher died before prctl
#else
  (void)launcher;
#endif
  if (rank > 0) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, STDOUT_FILENO);
  }
  ::execv("/proc/self/exe", argv);
  std::fprintf(stderr, "error: rank %d could not start %s: %s\n", rank, argv[0], std::strerror(errno));
  ::_exit(kExitNodeFailed);
}

// A fresh folder in TMPDIR (or /tmp); "" when none can be made (the ranks keep the caller's TMPDIR).
std::string make_job_tmp() {
  std::error_code ec;
  const std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  std::string pattern = ((ec ? std::filesystem::path("/tmp") : tmp) / "vidgraph-job-XXXXXX").string();
  return ::mkdtemp(pattern.data()) != nullptr ? pattern : std::string();
}

void remove_job_tmp(const std::string& dir) {
  std::error_code ec;
  if (!dir.empty()) std::filesystem::remove_all(dir, ec);
}

void signal_all(const std::vector<pid_t>& pids, int sig) {
  for (pid_t p : pids) {
    if (p > 0) ::kill(p, sig);
  }
}

struct Failure {
  int rank = -1;
  int status = 0;  // waitpid's
};

// How the failing rank ended, as one sentence.
std::string failure_message(const Failure& f, int nproc) {
  const std::string who = "rank " + std::to_string(f.rank) + " of " + std::to_string(nproc);
  if (WIFSIGNALED(f.status)) {
    const int sig = WTERMSIG(f.status);
    return who + " was killed by signal " + std::to_string(sig) + " (" + ::strsignal(sig) + "), which stopped the job";
  }
  return who + " failed with exit code " + std::to_string(WEXITSTATUS(f.status)) +
         " (its message is above), which stopped the job";
}

struct JobEnd {
  Failure failure;          // the first rank that did not succeed; rank -1: none
  bool all_invalid = true;  // every rank found the workflow invalid (rank 0 has printed why)
  bool interrupted = false;
};

// Waits for every rank (pids: rank order). The first failure or interrupt gives the others
// `grace_s` to end by themselves, then SIGTERM, then SIGKILL 5 s later; interrupts to the launcher
// are passed on as SIGINT (the first cancels, a second exits them).
JobEnd wait_for_ranks(std::vector<pid_t> pids, int grace_s) {
  JobEnd end;
  int forwarded = 0;
  std::size_t running = pids.size();
  auto stop_at = Clock::time_point::max();  // then SIGTERM; SIGKILL 5 s later
  int stop_signal = SIGTERM;
  while (running > 0) {
    for (std::size_t r = 0; r < pids.size(); ++r) {
      int status = 0;
      if (pids[r] <= 0 || ::waitpid(pids[r], &status, WNOHANG) != pids[r]) continue;
      pids[r] = 0;
      --running;
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == kExitOk;
      end.all_invalid = end.all_invalid && WIFEXITED(status) && WEXITSTATUS(status) == kExitInvalid;
      if (!ok && end.failure.rank < 0) {
        end.failure = Failure{static_cast<int>(r), status};
        stop_at = std::min(stop_at, Clock::now() + std::chrono::seconds(grace_s));
      }
    }
    if (g_launcher_interrupts > forwarded) {  // the first cancels every rank, a second exits them
      ++forwarded;
      end.interrupted = true;
      signal_all(pids, SIGINT);
      stop_at = std::min(stop_at, Clock::now() + std::chrono::seconds(grace_s));
    }
    if (running > 0 && Clock::now() >= stop_at) {
      signal_all(pids, stop_signal);
      stop_signal = SIGKILL;
      stop_at = Clock::now() + std::chrono::seconds(5);
    }
    if (running > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return end;
}

}  // namespace

bool running_as_rank(const engine::Environment& env) { return env.torchrun.count("WORLD_SIZE") > 0; }

int own_rank(const engine::Environment& env) {
  const auto rank = env.torchrun.find("RANK");
  return rank != env.torchrun.end() ? std::atoi(rank->second.c_str()) : 0;
}

std::string rank_gpu_visibility(const engine::Environment& env) {
  const auto local_text = env.torchrun.find("LOCAL_RANK");
  const int local = local_text != env.torchrun.end() ? std::atoi(local_text->second.c_str()) : own_rank(env);
  if (!env.cuda_visible_devices) {
    ::setenv("CUDA_VISIBLE_DEVICES", std::to_string(local).c_str(), 1);
    return "";
  }
  const std::string& visible = *env.cuda_visible_devices;
  const std::vector<std::string> gpus = split_list(visible);
  if (gpus.size() <= 1) return "";  // no GPU, or the one a wrapper picked for this rank
  if (local < 0 || static_cast<std::size_t>(local) >= gpus.size()) {
    return "local rank " + std::to_string(local) + " has no GPU: CUDA_VISIBLE_DEVICES='" + visible + "' lists " +
           std::to_string(gpus.size()) + "; start at most that many ranks on this machine.";
  }
  ::setenv("CUDA_VISIBLE_DEVICES", gpus[static_cast<std::size_t>(local)].c_str(), 1);
  return "";
}

int launch_ranks(char** argv, const RunArgs& args) {
  const int nproc = args.nproc;
  const int grace_s = args.dist_timeout_s + 10;
  const int port = free_port();
  if (port == 0) {
    report_error(args, "no free loopback port for the process group; is networking available?");
    return kExitInvalid;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  struct sigaction sa {}, old_int{}, old_term{};
  sa.sa_handler = on_launcher_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);

  // The ranks' TMPDIR: removed when they have all ended, so even a killed rank leaves nothing.
  const std::string job_tmp = make_job_tmp();
  const pid_t launcher = ::getpid();
  std::vector<pid_t> pids;
  for (int rank = 0; rank < nproc; ++rank) {
    const pid_t pid = ::fork();
    if (pid == 0) exec_rank(argv, rank, nproc, port, launcher, job_tmp);
    if (pid < 0) {
      const std::string error = std::strerror(errno);
      signal_all(pids, SIGKILL);
      for (pid_t p : pids) ::waitpid(p, nullptr, 0);
      remove_job_tmp(job_tmp);
      sigaction(SIGINT, &old_int, nullptr);
      sigaction(SIGTERM, &old_term, nullptr);
      report_error(args, "could not start rank " + std::to_string(rank) + " of " + std::to_string(nproc) + ": " + error);
      return kExitNodeFailed;
    }
    pids.push_back(pid);
  }

  const JobEnd end = wait_for_ranks(pids, grace_s);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  remove_job_tmp(job_tmp);
  if (end.failure.rank < 0) return kExitOk;
  if (end.interrupted) return kExitCancelled;
  if (end.all_invalid) return kExitInvalid;
  report_error(args, failure_message(end.failure, nproc));
  return WIFEXITED(end.failure.status) ? WEXITSTATUS(end.failure.status) : kExitNodeFailed;
}

}  // namespace vidgraph::cli
