// ironet native addon: the syscalls Node.js lacks (see native/README.md).
// Loaded only by src/host/native.ts.
#include <napi.h>

#include "receiver.h"
#include "sockets.h"

namespace {

using namespace ironet;

Napi::Object InitIronet(Napi::Env env, Napi::Object exports) {
  exports.Set("openSocket", Napi::Function::New(env, OpenSocket, "openSocket"));
  exports.Set("bindPacket", Napi::Function::New(env, BindPacket, "bindPacket"));
  exports.Set("bindNetlink", Napi::Function::New(env, BindNetlink, "bindNetlink"));
  exports.Set("bindInet", Napi::Function::New(env, BindInet, "bindInet"));
  exports.Set("bindToDevice", Napi::Function::New(env, BindToDevice, "bindToDevice"));
  exports.Set("bindInet6", Napi::Function::New(env, BindInet6, "bindInet6"));
  exports.Set("joinGroup6", Napi::Function::New(env, JoinGroup6, "joinGroup6"));
  exports.Set("interfaceInfo", Napi::Function::New(env, InterfaceInfo, "interfaceInfo"));
  exports.Set("sendPacket", Napi::Function::New(env, SendPacket, "sendPacket"));
  exports.Set("sendNetlink", Napi::Function::New(env, SendNetlink, "sendNetlink"));
  exports.Set("monotonicNs", Napi::Function::New(env, MonotonicNs, "monotonicNs"));
  exports.Set("setIntOption", Napi::Function::New(env, SetIntOption, "setIntOption"));
  exports.Set("attachFilter", Napi::Function::New(env, AttachFilter, "attachFilter"));
  exports.Set("close", Napi::Function::New(env, Close, "close"));
  exports.Set("Receiver", Receiver::Define(env));
  return exports;
}

}  // namespace

NODE_API_MODULE(ironet, InitIronet)
