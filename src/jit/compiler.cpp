#include "compiler.hpp"

#include <stdexcept>

#include "prelude.hpp"

namespace cutlax::jit {
namespace {

constexpr NvrtcResult kNvrtcInvalidOption = 5;
constexpr NvrtcResult kNvrtcCompilationFailed = 6;

// Destroys the program however the compile ends.
class Program {
 public:
  Program(const Nvrtc& api, const std::string& text) : api_(api) {
    const std::string_view prelude = prelude_source();
    const char* headers[] = {prelude.data()};
    const char* names[] = {kPreludeName};
    check(api_.create_program(&program_, text.c_str(), kSourceName, 1, headers, names),
          "nvrtcCreateProgram");
  }
  ~Program() { api_.destroy_program(&program_); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  NvrtcProgram get() const { return program_; }

  void check(NvrtcResult result, const char* what) const {
    if (result != kNvrtcSuccess) {
      throw std::runtime_error(std::string("cutlax.jit: ") + what +
                               " failed: " + api_.get_error_string(result));
    }
  }

  std::string log() const {
    size_t size = 0;
    check(api_.get_program_log_size(program_, &size), "nvrtcGetProgramLogSize");
    std::string log(size, '\0');
    check(api_.get_program_log(program_, log.data()), "nvrtcGetProgramLog");
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    return log;
  }

 private:
  const Nvrtc& api_;
  NvrtcProgram program_ = nullptr;
};

}  // namespace

std::vector<std::string> nvrtc_options(const CompileRequest& request) {
  // -default-device: CUTLASS's unannotated constexpr helpers must be device
  // functions; -DNDEBUG: device asserts are calls that break up CuTe's
  // pipelines (and ptxas warns about wgmma serialisation).
  std::vector<std::string> options = {"--std=c++17", "--gpu-architecture=" + request.arch,
                                      "-default-device", "-DNDEBUG"};
  for (const std::string& dir : request.include_dirs) options.push_back("-I" + dir);
  options.insert(options.end(), request.options.begin(), request.options.end());
  return options;
}

std::string program_text(const std::string& source) {
  return std::string("#include <") + kPreludeName + ">\n#line 1 \"" + kSourceName + "\"\n" + source;
}

CompileOutput run_nvrtc(const Nvrtc& api, const std::string& text, const std::string& entry,
                        const std::vector<std::string>& options) {
  Program program(api, text);
  if (!entry.empty()) {
    program.check(api.add_name_expression(program.get(), entry.c_str()), "nvrtcAddNameExpression");
  }
  std::vector<const char*> argv;
  for (const std::string& option : options) argv.push_back(option.c_str());
  const NvrtcResult compiled =
      api.compile_program(program.get(), static_cast<int>(argv.size()), argv.data());

  CompileOutput out;
  out.log = program.log();
  if (api.get_pch_create_status) out.pch_create_status = api.get_pch_create_status(program.get());
  if (compiled == kNvrtcCompilationFailed || compiled == kNvrtcInvalidOption) {
    if (compiled == kNvrtcInvalidOption)
      out.log += "\nNVRTC: " + std::string(api.get_error_string(compiled));
    return out;
  }
  program.check(compiled, "nvrtcCompileProgram");
  out.ok = true;
  if (entry.empty()) return out;
  const char* lowered = nullptr;
  program.check(api.get_lowered_name(program.get(), entry.c_str(), &lowered),
                "nvrtcGetLoweredName");
  out.lowered_name = lowered;
  size_t size = 0;
  program.check(api.get_cubin_size(program.get(), &size), "nvrtcGetCUBINSize");
  if (size == 0) {
    throw std::runtime_error(
        "cutlax.jit: NVRTC produced no CUBIN; the architecture must be a real one such as "
        "sm_90a, not a virtual compute_XX");
  }
  out.cubin.resize(size);
  program.check(api.get_cubin(program.get(), reinterpret_cast<char*>(out.cubin.data())),
                "nvrtcGetCUBIN");
  return out;
}

}  // namespace cutlax::jit
