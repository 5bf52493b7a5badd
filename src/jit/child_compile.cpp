#include "child_compile.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <stdexcept>

namespace cutlax::jit {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kDefaultTimeoutSeconds = 900;
constexpr char kMagic[4] = {'c', 'j', 'c', '1'};
constexpr size_t kHeaderSize = sizeof(kMagic) + sizeof(uint64_t);
constexpr uint8_t kOutputMessage = 0;
constexpr uint8_t kErrorMessage = 1;
constexpr int kPollMilliseconds = 100;

// The message the child writes: magic, payload length, payload.
class Writer {
 public:
  Writer() { bytes_.append(kHeaderSize, '\0'); }
  void u8(uint8_t v) { bytes_.push_back(static_cast<char>(v)); }
  void i32(int32_t v) { raw(&v, sizeof v); }
  void text(const void* data, size_t size) {
    const uint64_t n = size;
    raw(&n, sizeof n);
    raw(data, size);
  }
  void text(const std::string& s) { text(s.data(), s.size()); }
  const std::string& finish() {
    std::memcpy(bytes_.data(), kMagic, sizeof kMagic);
    const uint64_t payload = bytes_.size() - kHeaderSize;
    std::memcpy(bytes_.data() + sizeof kMagic, &payload, sizeof payload);
    return bytes_;
  }

 private:
  void raw(const void* data, size_t size) { bytes_.append(static_cast<const char*>(data), size); }
  std::string bytes_;
};

class Reader {
 public:
  Reader(const std::string& bytes) : bytes_(bytes), at_(kHeaderSize) {}
  uint8_t u8() {
    need(1);
    return static_cast<uint8_t>(bytes_[at_++]);
  }
  int32_t i32() {
    int32_t v;
    need(sizeof v);
    std::memcpy(&v, bytes_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  std::string text() {
    uint64_t n;
    need(sizeof n);
    std::memcpy(&n, bytes_.data() + at_, sizeof n);
    at_ += sizeof n;
    need(n);
    std::string s = bytes_.substr(at_, n);
    at_ += n;
    return s;
  }

 private:
  void need(uint64_t n) const {
    if (n > bytes_.size() - at_) throw std::runtime_error("truncated");
  }
  const std::string& bytes_;
  size_t at_;
};

// The payload length once the header has arrived, else -1.
int64_t expected_size(const std::string& bytes) {
  if (bytes.size() < kHeaderSize || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    return -1;
  }
  uint64_t payload;
  std::memcpy(&payload, bytes.data() + sizeof kMagic, sizeof payload);
  return static_cast<int64_t>(kHeaderSize + payload);
}

bool write_all(int fd, const std::string& bytes) {
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// The child: compile, write, _exit. Never returns.
[[noreturn]] void child_main(int fd, pid_t parent, const Nvrtc& api, const std::string& text,
                             const std::string& entry, const std::vector<std::string>& options) {
  // Die with the parent; Ctrl-C and kill reach the child as themselves
  // (Python's handlers, inherited, would only set a flag nobody reads); a
  // crash is a quiet death the parent reports (Python's faulthandler, or
  // another library's crash handler, would print the parent's stack).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);
  for (int number : {SIGINT, SIGTERM, SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE, SIGTRAP}) {
    std::signal(number, SIG_DFL);
  }
  Writer message;
  try {
    const CompileOutput out = run_nvrtc(api, text, entry, options);
    message.u8(kOutputMessage);
    message.u8(out.ok ? 1 : 0);
    message.i32(out.pch_create_status);
    message.text(out.lowered_name);
    message.text(out.log);
    message.text(out.cubin.data(), out.cubin.size());
  } catch (const std::exception& e) {
    message = Writer();
    message.u8(kErrorMessage);
    message.text(std::string(e.what()));
  }
  _exit(write_all(fd, message.finish()) ? 0 : 1);
}

bool is_crash(int signal) {
  return signal == SIGSEGV || signal == SIGBUS || signal == SIGABRT || signal == SIGILL ||
         signal == SIGFPE || signal == SIGTRAP;
}

std::string signal_name(int signal) {
  switch (signal) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGABRT:
      return "SIGABRT";
    case SIGILL:
      return "SIGILL";
    case SIGFPE:
      return "SIGFPE";
    case SIGTRAP:
      return "SIGTRAP";
    case SIGKILL:
      return "SIGKILL";
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    default:
      return "signal " + std::to_string(signal);
  }
}

double timeout_from_environment() {
  const char* value = std::getenv("CUTLAX_JIT_COMPILE_TIMEOUT");
  if (!value || !*value) return kDefaultTimeoutSeconds;
  char* end = nullptr;
  const double seconds = std::strtod(value, &end);
  return end && *end == '\0' && seconds > 0 ? seconds : kDefaultTimeoutSeconds;
}

std::string describe_outcome(const ChildOutcome& outcome) {
  switch (outcome.status) {
    case ChildOutcome::Status::kFinished:
      return "finished";
    case ChildOutcome::Status::kCrashed:
    case ChildOutcome::Status::kKilled:
      if (outcome.signal == SIGKILL) {
        return "killed by SIGKILL (the system's out-of-memory killer, or kill -9)";
      }
      return outcome.signal ? "killed by " + signal_name(outcome.signal)
                            : "exited without a result";
    case ChildOutcome::Status::kTimedOut:
      return "stopped after CUTLAX_JIT_COMPILE_TIMEOUT seconds";
    case ChildOutcome::Status::kNotStarted:
      return "not started: " + outcome.error;
  }
  return "";
}

}  // namespace

bool child_compiles_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("CUTLAX_JIT_FORK");
    return !(value && std::string(value) == "0");
  }();
  return enabled;
}

std::mutex& nvrtc_process_mutex() {
  static std::mutex mutex;
  return mutex;
}

ChildOutcome run_nvrtc_in_child(const Nvrtc& api, const std::string& text, const std::string& entry,
                                const std::vector<std::string>& options, double timeout_seconds) {
  ChildOutcome outcome;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    outcome.status = ChildOutcome::Status::kNotStarted;
    outcome.error = std::string("pipe: ") + std::strerror(errno);
    return outcome;
  }
  const pid_t parent = getpid();
  pid_t pid;
  {
    std::lock_guard<std::mutex> lock(nvrtc_process_mutex());
    pid = fork();
  }
  if (pid == 0) {
    close(fds[0]);
    child_main(fds[1], parent, api, text, entry, options);
  }
  const int fork_errno = errno;
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    outcome.status = ChildOutcome::Status::kNotStarted;
    outcome.error = std::string("fork: ") + std::strerror(fork_errno);
    return outcome;
  }

  // Read until the whole message is here. Not until end of file: a child
  // forked meanwhile by another thread holds a copy of the write end until
  // it exits. While nothing arrives, look whether the child has died.
  const Clock::time_point deadline =
      Clock::now() +
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds));
  std::string bytes;
  char chunk[1 << 16];
  int status = 0;
  bool reaped = false, status_known = false, timed_out = false;
  auto complete = [&] {
    const int64_t size = expected_size(bytes);
    return size >= 0 && static_cast<int64_t>(bytes.size()) >= size;
  };
  while (!complete()) {
    pollfd ready{fds[0], POLLIN, 0};
    const int polled = poll(&ready, 1, reaped ? 0 : kPollMilliseconds);
    if (polled < 0 && errno == EINTR) continue;
    if (polled > 0) {
      const ssize_t n = read(fds[0], chunk, sizeof chunk);
      if (n > 0) {
        bytes.append(chunk, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      break;  // end of file (every writer gone) or an error
    }
    if (polled < 0 || reaped) break;  // the child is gone and the pipe is drained
    const pid_t waited = waitpid(pid, &status, WNOHANG);
    if (waited == pid || (waited < 0 && errno == ECHILD)) {
      reaped = true;  // drain what it wrote, then stop
      status_known = waited == pid;
    } else if (Clock::now() > deadline) {
      kill(pid, SIGKILL);
      timed_out = true;
      break;
    }
  }
  close(fds[0]);
  if (!reaped) {
    pid_t waited;
    do {
      waited = waitpid(pid, &status, 0);
    } while (waited < 0 && errno == EINTR);
    status_known = waited == pid;
  }

  if (complete()) {
    Reader reader(bytes);
    try {
      if (reader.u8() == kErrorMessage) throw std::logic_error(reader.text());
      outcome.output.ok = reader.u8() != 0;
      outcome.output.pch_create_status = reader.i32();
      outcome.output.lowered_name = reader.text();
      outcome.output.log = reader.text();
      const std::string cubin = reader.text();
      outcome.output.cubin.assign(cubin.begin(), cubin.end());
      return outcome;
    } catch (const std::logic_error& e) {
      throw std::runtime_error(e.what());  // run_nvrtc's own exception, from the child
    } catch (const std::runtime_error&) {
      // A damaged message: reported below as a child without a result.
    }
  }
  if (timed_out) {
    outcome.status = ChildOutcome::Status::kTimedOut;
  } else if (status_known && WIFSIGNALED(status)) {
    outcome.signal = WTERMSIG(status);
    outcome.status =
        is_crash(outcome.signal) ? ChildOutcome::Status::kCrashed : ChildOutcome::Status::kKilled;
  } else {
    outcome.status = ChildOutcome::Status::kKilled;
  }
  return outcome;
}

std::string crash_log(const std::string& entry, int signal, const std::string& nvrtc_version,
                      bool retry_compiled, const std::string& retry_log, bool retry_failed) {
  std::string log = "NVRTC " + nvrtc_version + " crashed (" + signal_name(signal) + ") compiling " +
                    entry +
                    ". cutlax.jit compiles in a child process, so only that process died.\n";
  if (retry_failed) {
    return log + "Compiled again without the entry's name expression, NVRTC did not finish " +
           "either: " + retry_log;
  }
  if (retry_compiled) {
    log += "Compiled again without the entry's name expression (so without instantiating " + entry +
           "), the source has no errors: check that the entry names a __global__ function "
           "(or a function template with valid template arguments) declared in the source.";
    return retry_log.empty() ? log : log + "\n" + retry_log;
  }
  return log +
         "NVRTC 13.0 crashes this way when a kernel parameter's type is not declared (a "
         "misspelled type, or Tensor without `using cutlax::jit::Tensor;`). Compiled again "
         "without the entry's name expression, NVRTC reports:\n" +
         retry_log;
}

CompileOutput compile_isolated(const Nvrtc& api, const std::string& text, const std::string& entry,
                               const std::vector<std::string>& options) {
  if (child_compiles_enabled()) {
    const double timeout = timeout_from_environment();
    ChildOutcome outcome = run_nvrtc_in_child(api, text, entry, options, timeout);
    switch (outcome.status) {
      case ChildOutcome::Status::kFinished:
        return std::move(outcome.output);
      case ChildOutcome::Status::kNotStarted:
        break;  // compile in this process instead
      case ChildOutcome::Status::kKilled:
      case ChildOutcome::Status::kTimedOut:
        throw std::runtime_error("cutlax.jit: the NVRTC compile of " + entry +
                                 " (in a child process) was " + describe_outcome(outcome));
      case ChildOutcome::Status::kCrashed: {
        // Without a name expression NVRTC 13.0 reports the error it crashed on.
        const ChildOutcome retry = run_nvrtc_in_child(api, text, "", options, timeout);
        const bool finished = retry.status == ChildOutcome::Status::kFinished;
        CompileOutput out;
        out.crashed = true;
        out.log = crash_log(entry, outcome.signal, api.version_text, finished && retry.output.ok,
                            finished ? retry.output.log : describe_outcome(retry), !finished);
        return out;
      }
    }
  }
  std::lock_guard<std::mutex> lock(nvrtc_process_mutex());
  return run_nvrtc(api, text, entry, options);
}

}  // namespace cutlax::jit
