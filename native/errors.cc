#include "errors.h"

#include <cerrno>
#include <cstring>

namespace ironet {

namespace {

std::string ErrnoName(int err) {
  // glibc >= 2.32; returns nullptr for numbers it does not know.
  const char* name = strerrorname_np(err);
  return name != nullptr ? std::string(name) : "E" + std::to_string(err);
}

}  // namespace

Napi::Error ErrnoError(Napi::Env env, const char* call, const char* syscall, int err,
                       const std::string& detail) {
  std::string message = std::string(call) + ": " + syscall;
  if (!detail.empty()) message += " " + detail;
  message += ": " + std::string(strerror(err)) + " (" + ErrnoName(err) + ")";
  Napi::Error error = Napi::Error::New(env, message);
  error.Value().Set("code", Napi::String::New(env, ErrnoName(err)));
  error.Value().Set("errno", Napi::Number::New(env, err));
  error.Value().Set("syscall", Napi::String::New(env, syscall));
  return error;
}

void ThrowErrno(Napi::Env env, const char* call, const char* syscall, int err,
                const std::string& detail) {
  throw ErrnoError(env, call, syscall, err, detail);
}

int IntArg(const Napi::CallbackInfo& info, size_t index, const char* call, const char* name) {
  if (index >= info.Length() || !info[index].IsNumber()) {
    throw Napi::TypeError::New(info.Env(), std::string(call) + ": " + name + " must be a number");
  }
  double value = info[index].As<Napi::Number>().DoubleValue();
  if (value != static_cast<double>(static_cast<int64_t>(value)) || value < -2147483648.0 ||
      value > 4294967295.0) {
    throw Napi::TypeError::New(info.Env(),
                               std::string(call) + ": " + name + " must be a 32-bit integer");
  }
  // Values in [2^31, 2^32) are accepted as unsigned bit patterns (e.g. netlink group masks).
  return static_cast<int>(static_cast<uint32_t>(static_cast<int64_t>(value)));
}

Napi::Buffer<uint8_t> BufferArg(const Napi::CallbackInfo& info, size_t index, const char* call,
                                const char* name) {
  if (index >= info.Length() || !info[index].IsBuffer()) {
    throw Napi::TypeError::New(info.Env(), std::string(call) + ": " + name + " must be a Buffer");
  }
  return info[index].As<Napi::Buffer<uint8_t>>();
}

Napi::Function FunctionArg(const Napi::CallbackInfo& info, size_t index, const char* call,
                           const char* name) {
  if (index >= info.Length() || !info[index].IsFunction()) {
    throw Napi::TypeError::New(info.Env(),
                               std::string(call) + ": " + name + " must be a function");
  }
  return info[index].As<Napi::Function>();
}

}  // namespace ironet
