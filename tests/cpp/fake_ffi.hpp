// A stand-in for the XLA runtime's side of the FFI, so a registered handler
// can be called outside XLA: the unit tests, the fuzzers (tests/fuzz) and the
// GPU sanitizer driver (tests/gpu) build a call frame with FakeCall, and the
// fake XLA_FFI_Api answers what a cutlax handler asks of the runtime: error
// objects, the CUDA stream, and an intra-op thread pool of real threads (so
// ThreadSanitizer sees the CPU twins' parallel_for as XLA:CPU runs it).
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "cutlax/registry.hpp"
#include "xla/ffi/api/c_api.h"

namespace cutlax::testing {

// A fixed set of worker threads running scheduled tasks in order.
class FakeThreadPool {
 public:
  explicit FakeThreadPool(int threads) {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { run(); });
  }
  ~FakeThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& worker : workers_) worker.join();
  }
  FakeThreadPool(const FakeThreadPool&) = delete;
  FakeThreadPool& operator=(const FakeThreadPool&) = delete;

  int64_t size() const { return static_cast<int64_t>(workers_.size()); }
  // How many tasks were scheduled: a test's proof that the pool was used.
  int64_t scheduled() const { return scheduled_.load(); }
  void schedule(std::function<void()> task) {
    scheduled_.fetch_add(1);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    wake_.notify_one();
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) return;  // stopping, with nothing left to run
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::atomic<int64_t> scheduled_{0};
  std::vector<std::thread> workers_;
};

// What XLA_FFI_ExecutionContext points at in a fake call: the stream a CUDA
// handler launches on and the pool a CPU twin may use (none: no pool).
struct FakeExecutionContext {
  void* stream = nullptr;
  FakeThreadPool* pool = nullptr;
};

namespace fake_ffi_detail {

struct Error {
  XLA_FFI_Error_Code code;
  std::string message;
};

inline FakeExecutionContext& context(XLA_FFI_ExecutionContext* ctx) {
  return *reinterpret_cast<FakeExecutionContext*>(ctx);
}

inline XLA_FFI_Error* error_create(XLA_FFI_Error_Create_Args* args) {
  return reinterpret_cast<XLA_FFI_Error*>(
      new Error{args->errc, args->message ? args->message : ""});
}
inline void error_destroy(XLA_FFI_Error_Destroy_Args* args) {
  delete reinterpret_cast<Error*>(args->error);
}
inline XLA_FFI_Error* stream_get(XLA_FFI_Stream_Get_Args* args) {
  args->stream = context(args->ctx).stream;
  return nullptr;
}
// Without a pool, NumThreads says 0, so parallel_for never schedules; a task
// scheduled anyway runs inline (an error here would send XLA's headers to
// the error-message entry, whose name differs between jaxlib releases).
inline XLA_FFI_Error* thread_pool_schedule(XLA_FFI_ThreadPool_Schedule_Args* args) {
  FakeThreadPool* pool = context(args->ctx).pool;
  if (!pool) {
    args->task(args->data);
    return nullptr;
  }
  pool->schedule([task = args->task, data = args->data] { task(data); });
  return nullptr;
}
inline XLA_FFI_Error* thread_pool_num_threads(XLA_FFI_ThreadPool_NumThreads_Args* args) {
  FakeThreadPool* pool = context(args->ctx).pool;
  *args->num_threads = pool ? pool->size() : 0;
  return nullptr;
}

}  // namespace fake_ffi_detail

// The fake API. Only the entries a cutlax handler calls are set, and only
// entries whose names every supported jaxlib's headers share (the GPU
// sanitizer driver builds against the newest); the rest stay null.
inline const XLA_FFI_Api* fake_ffi_api() {
  static const XLA_FFI_Api api = [] {
    namespace d = fake_ffi_detail;
    XLA_FFI_Api a;
    std::memset(&a, 0, sizeof a);
    a.struct_size = XLA_FFI_Api_STRUCT_SIZE;
    a.api_version = {XLA_FFI_Api_Version_STRUCT_SIZE, nullptr, XLA_FFI_API_MAJOR,
                     XLA_FFI_API_MINOR};
    a.XLA_FFI_Error_Create = d::error_create;
    a.XLA_FFI_Error_Destroy = d::error_destroy;
    a.XLA_FFI_Stream_Get = d::stream_get;
    a.XLA_FFI_ThreadPool_Schedule = d::thread_pool_schedule;
    a.XLA_FFI_ThreadPool_NumThreads = d::thread_pool_num_threads;
    return a;
  }();
  return &api;
}

// The handler of `target` on `platform` (any platform: nullptr) in a
// library's table, or nullptr.
inline const cutlax_handler_entry* find_handler(const cutlax_handler_table& table,
                                                std::string_view target, const char* platform) {
  for (size_t i = 0; i < table.size; ++i) {
    const cutlax_handler_entry& entry = table.entries[i];
    if (target == entry.target && (!platform || std::strcmp(entry.platform, platform) == 0)) {
      return &entry;
    }
  }
  return nullptr;
}

// How a fake call ended: ok, or XLA's error code and message.
struct CallOutcome {
  bool ok = true;
  XLA_FFI_Error_Code code = XLA_FFI_Error_Code_OK;
  std::string message;
};

// One call's arguments, results and attributes. Buffers are borrowed: they
// must outlive the call. Attributes are sorted by name when the frame is made,
// as XLA sorts them.
class FakeCall {
 public:
  void arg(XLA_FFI_Buffer* buffer) { args_.push_back(buffer); }
  void ret(XLA_FFI_Buffer* buffer) { rets_.push_back(buffer); }

  template <class T>
  void scalar_attr(std::string name, XLA_FFI_DataType dtype, T value) {
    auto attr = std::make_unique<Attr>();
    attr->name = std::move(name);
    attr->storage.resize(sizeof(T));
    std::memcpy(attr->storage.data(), &value, sizeof(T));
    attr->type = XLA_FFI_AttrType_SCALAR;
    attr->scalar = {dtype, attr->storage.data()};
    attrs_.push_back(std::move(attr));
  }
  void string_attr(std::string name, std::string value) {
    auto attr = std::make_unique<Attr>();
    attr->name = std::move(name);
    attr->storage.assign(value.begin(), value.end());
    attr->type = XLA_FFI_AttrType_STRING;
    attr->bytes = {attr->storage.data(), attr->storage.size()};
    attrs_.push_back(std::move(attr));
  }

  // Calls `handler` at the execute stage with this frame and `context`.
  CallOutcome call(XLA_FFI_Handler* handler, FakeExecutionContext& context) {
    std::vector<XLA_FFI_ArgType> arg_types(args_.size(), XLA_FFI_ArgType_BUFFER);
    std::vector<XLA_FFI_RetType> ret_types(rets_.size(), XLA_FFI_RetType_BUFFER);
    std::vector<void*> args(args_.begin(), args_.end()), rets(rets_.begin(), rets_.end());
    std::stable_sort(attrs_.begin(), attrs_.end(),
                     [](const auto& a, const auto& b) { return a->name < b->name; });
    std::vector<XLA_FFI_AttrType> attr_types;
    std::vector<XLA_FFI_ByteSpan> name_spans;
    std::vector<void*> attr_values;
    for (auto& attr : attrs_) {
      attr_types.push_back(attr->type);
      name_spans.push_back({attr->name.data(), attr->name.size()});
      attr_values.push_back(
          attr->type == XLA_FFI_AttrType_SCALAR ? static_cast<void*>(&attr->scalar) : &attr->bytes);
    }
    std::vector<XLA_FFI_ByteSpan*> names;
    for (XLA_FFI_ByteSpan& span : name_spans) names.push_back(&span);

    XLA_FFI_CallFrame frame;
    std::memset(&frame, 0, sizeof frame);
    frame.struct_size = XLA_FFI_CallFrame_STRUCT_SIZE;
    frame.api = fake_ffi_api();
    frame.ctx = reinterpret_cast<XLA_FFI_ExecutionContext*>(&context);
    frame.stage = XLA_FFI_ExecutionStage_EXECUTE;
    frame.args = {XLA_FFI_Args_STRUCT_SIZE, nullptr, static_cast<int64_t>(args.size()),
                  arg_types.data(), args.data()};
    frame.rets = {XLA_FFI_Rets_STRUCT_SIZE, nullptr, static_cast<int64_t>(rets.size()),
                  ret_types.data(), rets.data()};
    frame.attrs = {XLA_FFI_Attrs_STRUCT_SIZE, nullptr,      static_cast<int64_t>(attrs_.size()),
                   attr_types.data(),         names.data(), attr_values.data()};

    CallOutcome outcome;
    if (XLA_FFI_Error* error = handler(&frame)) {
      auto* e = reinterpret_cast<fake_ffi_detail::Error*>(error);
      outcome = {false, e->code, e->message};
      delete e;
    }
    return outcome;
  }

 private:
  struct Attr {
    std::string name;
    std::vector<char> storage;
    XLA_FFI_AttrType type;
    XLA_FFI_Scalar scalar;
    XLA_FFI_ByteSpan bytes;
  };
  std::vector<XLA_FFI_Buffer*> args_, rets_;
  std::vector<std::unique_ptr<Attr>> attrs_;
};

}  // namespace cutlax::testing
