// Receiver: asynchronous datagram receive on a non-blocking socket through the
// Node event loop (uv_poll_t, UV_READABLE). Each datagram is delivered as a fresh
// Buffer to onData(buf, info), where info = { ifindex, protocol, pktType,
// sourceMac } for AF_PACKET sockets and undefined otherwise; receive errors go to
// onError(err). close() stops polling and releases the uv handle; it never closes
// the fd and may be called any number of times.
#pragma once

#include <napi.h>
#include <uv.h>

#include <memory>
#include <vector>

namespace ironet {

class Receiver : public Napi::ObjectWrap<Receiver> {
 public:
  static Napi::Function Define(Napi::Env env);

  explicit Receiver(const Napi::CallbackInfo& info);
  ~Receiver() override;

 private:
  struct Poll;  // the uv handle; outlives this object until its close callback runs

  Napi::Value CloseMethod(const Napi::CallbackInfo& info);
  void OnReadable(int status);
  void Stop();      // stops polling and closes the uv handle
  void Shutdown();  // Stop() plus dropping the self-reference, cleanup hook and async context
  // Calls `fn` with `args`; an exception it throws becomes an uncaught exception. False if it threw.
  bool Deliver(Napi::FunctionReference& fn, const std::vector<napi_value>& args);

  static void CleanupHook(void* self);

  int fd_;
  bool is_packet_;
  Poll* poll_ = nullptr;
  bool cleanup_hook_ = false;
  Napi::FunctionReference on_data_;
  Napi::FunctionReference on_error_;
  std::unique_ptr<Napi::AsyncContext> async_context_;
  std::vector<uint8_t> buffer_;
};

}  // namespace ironet
