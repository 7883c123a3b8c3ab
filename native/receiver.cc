#include "receiver.h"

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "errors.h"

namespace ironet {

namespace {

constexpr size_t kInitialBuffer = 64 * 1024;
// Datagrams handled per readable event before yielding to the event loop (uv_poll is
// level-triggered: what is left is picked up on the next loop iteration).
constexpr int kBudgetPerWakeup = 1024;

}  // namespace

struct Receiver::Poll {
  uv_poll_t handle;
  Receiver* owner;
};

Napi::Function Receiver::Define(Napi::Env env) {
  return DefineClass(env, "Receiver", {InstanceMethod("close", &Receiver::CloseMethod)});
}

Receiver::Receiver(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Receiver>(info) {
  Napi::Env env = info.Env();
  fd_ = IntArg(info, 0, "Receiver", "fd");
  on_data_ = Napi::Persistent(FunctionArg(info, 1, "Receiver", "onData"));
  on_error_ = Napi::Persistent(FunctionArg(info, 2, "Receiver", "onError"));

  int domain = 0;
  socklen_t len = sizeof(domain);
  if (getsockopt(fd_, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0) {
    ThrowErrno(env, "Receiver", "getsockopt SO_DOMAIN", errno);
  }
  is_packet_ = domain == AF_PACKET;

  uv_loop_t* loop = nullptr;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok) {
    throw Napi::Error::New(env, "Receiver: no event loop");
  }
  Poll* poll = new Poll{};
  poll->owner = this;
  poll->handle.data = poll;
  int rc = uv_poll_init(loop, &poll->handle, fd_);
  if (rc != 0) {
    delete poll;  // never initialised: no uv_close needed
    ThrowErrno(env, "Receiver", "uv_poll_init", -rc);
  }
  rc = uv_poll_start(&poll->handle, UV_READABLE, [](uv_poll_t* handle, int status, int) {
    Poll* p = static_cast<Poll*>(handle->data);
    if (p->owner != nullptr) p->owner->OnReadable(status);
  });
  if (rc != 0) {
    uv_close(reinterpret_cast<uv_handle_t*>(&poll->handle),
             [](uv_handle_t* handle) { delete static_cast<Poll*>(handle->data); });
    ThrowErrno(env, "Receiver", "uv_poll_start", -rc);
  }
  poll_ = poll;
  buffer_.resize(kInitialBuffer);
  async_context_ = std::make_unique<Napi::AsyncContext>(env, "ironet.Receiver", Value());
  napi_add_env_cleanup_hook(env, &Receiver::CleanupHook, this);
  cleanup_hook_ = true;
  // While polling, the receiver keeps itself alive even if JavaScript drops it.
  Ref();
}

Receiver::~Receiver() {
  if (cleanup_hook_) napi_remove_env_cleanup_hook(Env(), &Receiver::CleanupHook, this);
  cleanup_hook_ = false;
  Stop();
}

void Receiver::CleanupHook(void* self) {
  Receiver* receiver = static_cast<Receiver*>(self);
  receiver->cleanup_hook_ = false;  // the environment removes hooks as it runs them
  receiver->Stop();
}

void Receiver::Stop() {
  if (poll_ == nullptr) return;
  poll_->owner = nullptr;
  uv_poll_stop(&poll_->handle);
  uv_close(reinterpret_cast<uv_handle_t*>(&poll_->handle),
           [](uv_handle_t* handle) { delete static_cast<Poll*>(handle->data); });
  poll_ = nullptr;
}

void Receiver::Shutdown() {
  if (poll_ == nullptr) return;
  Stop();
  if (cleanup_hook_) napi_remove_env_cleanup_hook(Env(), &Receiver::CleanupHook, this);
  cleanup_hook_ = false;
  async_context_.reset();
  Unref();  // JavaScript's references alone decide its lifetime from now on
}

Napi::Value Receiver::CloseMethod(const Napi::CallbackInfo& info) {
  Shutdown();
  return info.Env().Undefined();
}

bool Receiver::Deliver(Napi::FunctionReference& fn, const std::vector<napi_value>& args) {
  if (!async_context_) return false;  // closed
  try {
    fn.MakeCallback(Value(), args, *async_context_);
    return true;
  } catch (const Napi::Error& error) {
    napi_fatal_exception(Env(), error.Value());
    return false;
  }
}

void Receiver::OnReadable(int status) {
  Napi::Env env = Env();
  Napi::HandleScope scope(env);
  [[maybe_unused]] Napi::Object self = Value();  // keeps this object reachable while callbacks run
  if (status < 0) {
    // The fd itself is unusable: report once and stop polling (as close() would).
    Deliver(on_error_, {ErrnoError(env, "Receiver", "uv_poll", -status).Value()});
    Shutdown();
    return;
  }
  for (int i = 0; i < kBudgetPerWakeup && poll_ != nullptr; ++i) {
    Napi::HandleScope iteration(env);
    // Learn the datagram's full size first (MSG_TRUNC reports it even with a zero-length
    // buffer), so a datagram larger than the buffer grows it instead of being cut.
    ssize_t size = recv(fd_, nullptr, 0, MSG_DONTWAIT | MSG_PEEK | MSG_TRUNC);
    if (size < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      Deliver(on_error_, {ErrnoError(env, "Receiver", "recv", errno).Value()});
      return;  // wait for the next readable event rather than spinning on a repeating error
    }
    if (static_cast<size_t>(size) > buffer_.size()) buffer_.resize(static_cast<size_t>(size));

    struct sockaddr_ll from {};
    socklen_t from_len = sizeof(from);
    ssize_t n = recvfrom(fd_, buffer_.data(), buffer_.size(), MSG_DONTWAIT | MSG_TRUNC,
                         reinterpret_cast<struct sockaddr*>(&from), &from_len);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      Deliver(on_error_, {ErrnoError(env, "Receiver", "recvfrom", errno).Value()});
      return;
    }
    size_t length = static_cast<size_t>(n) < buffer_.size() ? static_cast<size_t>(n) : buffer_.size();
    if (static_cast<size_t>(n) > buffer_.size()) {
      // Grew between peek and read (another reader on the same fd): grow for the next one.
      buffer_.resize(static_cast<size_t>(n));
    }
    Napi::Value data = Napi::Buffer<uint8_t>::Copy(env, buffer_.data(), length);
    Napi::Value source = env.Undefined();
    if (is_packet_ && from.sll_family == AF_PACKET) {
      Napi::Object packet = Napi::Object::New(env);
      packet.Set("ifindex", Napi::Number::New(env, from.sll_ifindex));
      packet.Set("protocol", Napi::Number::New(env, ntohs(from.sll_protocol)));
      packet.Set("pktType", Napi::Number::New(env, from.sll_pkttype));
      size_t halen = from.sll_halen <= sizeof(from.sll_addr) ? from.sll_halen : sizeof(from.sll_addr);
      packet.Set("sourceMac", Napi::Buffer<uint8_t>::Copy(env, from.sll_addr, halen));
      source = packet;
    }
    if (!Deliver(on_data_, {data, source})) return;
  }
}

}  // namespace ironet
