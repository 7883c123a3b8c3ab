// The synchronous calls: socket creation in another network namespace, bind,
// interface lookup, send, socket options, the monotonic clock, close.
#pragma once

#include <napi.h>

namespace ironet {

Napi::Value OpenSocket(const Napi::CallbackInfo& info);
Napi::Value BindPacket(const Napi::CallbackInfo& info);
Napi::Value BindNetlink(const Napi::CallbackInfo& info);
Napi::Value BindInet(const Napi::CallbackInfo& info);
Napi::Value BindToDevice(const Napi::CallbackInfo& info);
Napi::Value BindInet6(const Napi::CallbackInfo& info);
Napi::Value JoinGroup6(const Napi::CallbackInfo& info);
Napi::Value InterfaceInfo(const Napi::CallbackInfo& info);
Napi::Value SendPacket(const Napi::CallbackInfo& info);
Napi::Value SendNetlink(const Napi::CallbackInfo& info);
Napi::Value MonotonicNs(const Napi::CallbackInfo& info);
Napi::Value SetIntOption(const Napi::CallbackInfo& info);
Napi::Value AttachFilter(const Napi::CallbackInfo& info);
Napi::Value Close(const Napi::CallbackInfo& info);

}  // namespace ironet
