// Errors thrown to JavaScript: every failure is a JS Error whose message names the
// call and strerror(errno), with `.code` (errno name, e.g. 'EPERM'), `.errno`
// (the positive errno number) and `.syscall`.
#pragma once

#include <napi.h>

#include <string>

namespace ironet {

// The custom `.code` of sendNetlink when the deadline had passed before the syscall.
inline constexpr const char* kDeadlineCode = "EDEADLINE";

// Builds (does not throw) the Error for `call` failing in `syscall` with `err`.
// `detail` (may be empty) is inserted after the syscall name, e.g. a path.
Napi::Error ErrnoError(Napi::Env env, const char* call, const char* syscall, int err,
                       const std::string& detail = std::string());

// Throws ErrnoError(...) as a C++ exception (node-addon-api turns it into the JS exception).
[[noreturn]] void ThrowErrno(Napi::Env env, const char* call, const char* syscall, int err,
                             const std::string& detail = std::string());

// Argument helpers: throw a TypeError naming the call and argument when the type is wrong.
int IntArg(const Napi::CallbackInfo& info, size_t index, const char* call, const char* name);
Napi::Buffer<uint8_t> BufferArg(const Napi::CallbackInfo& info, size_t index, const char* call,
                                const char* name);
Napi::Function FunctionArg(const Napi::CallbackInfo& info, size_t index, const char* call,
                           const char* name);

}  // namespace ironet
