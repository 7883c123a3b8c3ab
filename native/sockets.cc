#include "sockets.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "errors.h"

namespace ironet {

namespace {

constexpr size_t kMacLength = 6;

uint64_t MonotonicNow() {
  struct timespec ts {};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // cannot fail for CLOCK_MONOTONIC with a valid pointer
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

// The calling thread could not return to its own network namespace: every later
// socket made on this thread (including Node's own) would land in the wrong
// namespace, silently. There is no safe way to continue.
[[noreturn]] void AbortNotRestored(int err) {
  fprintf(stderr, "ironet native: FATAL: setns back to the original network namespace failed: %s\n",
          strerror(err));
  abort();
}

int SocketIn(Napi::Env env, const char* netns_path, int domain, int type, int protocol) {
  const int flags = type | SOCK_NONBLOCK | SOCK_CLOEXEC;
  if (netns_path == nullptr) {
    int fd = socket(domain, flags, protocol);
    if (fd < 0) ThrowErrno(env, "openSocket", "socket", errno);
    return fd;
  }

  int original = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (original < 0) ThrowErrno(env, "openSocket", "open", errno, "/proc/thread-self/ns/net");
  int target = open(netns_path, O_RDONLY | O_CLOEXEC);
  if (target < 0) {
    int err = errno;
    close(original);
    ThrowErrno(env, "openSocket", "open", err, netns_path);
  }

  const char* failed_call = nullptr;
  int err = 0;
  int fd = -1;
  if (setns(target, CLONE_NEWNET) != 0) {
    failed_call = "setns";
    err = errno;
  } else {
    fd = socket(domain, flags, protocol);
    if (fd < 0) {
      failed_call = "socket";
      err = errno;
    }
    // Always go back, whether socket() worked or not.
    if (setns(original, CLONE_NEWNET) != 0) AbortNotRestored(errno);
  }
  close(target);
  close(original);
  if (failed_call != nullptr) {
    ThrowErrno(env, "openSocket", failed_call, err, std::string("(netns ") + netns_path + ")");
  }
  return fd;
}

}  // namespace

// openSocket(netnsPath: string | null, domain, type, protocol): fd
Napi::Value OpenSocket(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path;
  bool in_namespace = false;
  if (info.Length() < 1 || !(info[0].IsNull() || info[0].IsString())) {
    throw Napi::TypeError::New(env, "openSocket: netnsPath must be a string or null");
  }
  if (info[0].IsString()) {
    path = info[0].As<Napi::String>().Utf8Value();
    in_namespace = true;
  }
  int domain = IntArg(info, 1, "openSocket", "domain");
  int type = IntArg(info, 2, "openSocket", "type");
  int protocol = IntArg(info, 3, "openSocket", "protocol");
  int fd = SocketIn(env, in_namespace ? path.c_str() : nullptr, domain, type, protocol);
  return Napi::Number::New(env, fd);
}

// bindPacket(fd, ifindex, protocol): protocol in host byte order.
Napi::Value BindPacket(const Napi::CallbackInfo& info) {
  int fd = IntArg(info, 0, "bindPacket", "fd");
  int ifindex = IntArg(info, 1, "bindPacket", "ifindex");
  int protocol = IntArg(info, 2, "bindPacket", "protocol");
  struct sockaddr_ll addr {};
  addr.sll_family = AF_PACKET;
  addr.sll_protocol = htons(static_cast<uint16_t>(protocol));
  addr.sll_ifindex = ifindex;
  if (bind(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) != 0) {
    ThrowErrno(info.Env(), "bindPacket", "bind", errno);
  }
  return info.Env().Undefined();
}

// bindInet(fd, address, port): bind an AF_INET socket; address is dotted IPv4
// ("0.0.0.0" for any). SO_REUSEADDR is set first (a restarted server rebinds at once).
Napi::Value BindInet(const Napi::CallbackInfo& info) {
  int fd = IntArg(info, 0, "bindInet", "fd");
  if (info.Length() < 2 || !info[1].IsString()) {
    throw Napi::TypeError::New(info.Env(), "bindInet: argument address must be a string");
  }
  std::string address = info[1].As<Napi::String>().Utf8Value();
  int port = IntArg(info, 2, "bindInet", "port");
  struct sockaddr_in addr {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) {
    ThrowErrno(info.Env(), "bindInet", "inet_pton", EINVAL, address);
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) != 0) {
    ThrowErrno(info.Env(), "bindInet", "bind", errno, address + ":" + std::to_string(port));
  }
  return info.Env().Undefined();
}

// bindInet6(fd, address, port): bind an AF_INET6 socket; address is textual IPv6
// ("::" for any, or a link-scope multicast group such as ff02::1:2, which needs
// SO_BINDTODEVICE first). SO_REUSEADDR is set first, as in bindInet.
Napi::Value BindInet6(const Napi::CallbackInfo& info) {
  int fd = IntArg(info, 0, "bindInet6", "fd");
  if (info.Length() < 2 || !info[1].IsString()) {
    throw Napi::TypeError::New(info.Env(), "bindInet6: argument address must be a string");
  }
  std::string address = info[1].As<Napi::String>().Utf8Value();
  int port = IntArg(info, 2, "bindInet6", "port");
  struct sockaddr_in6 addr {};
  addr.sin6_family = AF_INET6;
  addr.sin6_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET6, address.c_str(), &addr.sin6_addr) != 1) {
    ThrowErrno(info.Env(), "bindInet6", "inet_pton", EINVAL, address);
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) != 0) {
    ThrowErrno(info.Env(), "bindInet6", "bind", errno, "[" + address + "]:" + std::to_string(port));
  }
  return info.Env().Undefined();
}

// joinGroup6(fd, group, ifindex): IPV6_JOIN_GROUP on interface ifindex (an index
// in the socket's own namespace, from interfaceInfo: a name would be looked up
// in the caller's namespace).
Napi::Value JoinGroup6(const Napi::CallbackInfo& info) {
  int fd = IntArg(info, 0, "joinGroup6", "fd");
  if (info.Length() < 2 || !info[1].IsString()) {
    throw Napi::TypeError::New(info.Env(), "joinGroup6: argument group must be a string");
  }
  std::string group = info[1].As<Napi::String>().Utf8Value();
  int ifindex = IntArg(info, 2, "joinGroup6", "ifindex");
  struct ipv6_mreq mreq {};
  if (inet_pton(AF_INET6, group.c_str(), &mreq.ipv6mr_multiaddr) != 1) {
    ThrowErrno(info.Env(), "joinGroup6", "inet_pton", EINVAL, group);
  }
  mreq.ipv6mr_interface = static_cast<unsigned int>(ifindex);
  if (setsockopt(fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &mreq, sizeof(mreq)) != 0) {
    ThrowErrno(info.Env(), "joinGroup6", "setsockopt", errno, group);
  }
  return info.Env().Undefined();
}

// bindToDevice(fd, name): SO_BINDTODEVICE — the socket sends and receives on
// that interface only (e.g. the provisioning interface, never the pod's eth0).
Napi::Value BindToDevice(const Napi::CallbackInfo& info) {
  int fd = IntArg(info, 0, "bindToDevice", "fd");
  if (info.Length() < 2 || !info[1].IsString()) {
    throw Napi::TypeError::New(info.Env(), "bindToDevice: argument name must be a string");
  }
  std::string name = info[1].As<Napi::String>().Utf8Value();
  if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, name.c_str(), static_cast<socklen_t>(name.size())) != 0) {
    ThrowErrno(info.Env(), "bindToDevice", "setsockopt", errno, name);
  }
  return info.Env().Undefined();
}

// bindNetlink(fd, groups): nl_pid 0 (the kernel assigns the port id).
Napi::Value BindNetlink(const Napi::CallbackInfo& info) {
  int fd = IntArg(info, 0, "bindNetlink", "fd");
  int groups = IntArg(info, 1, "bindNetlink", "groups");
  struct sockaddr_nl addr {};
  addr.nl_family = AF_NETLINK;
  addr.nl_pid = 0;
  addr.nl_groups = static_cast<uint32_t>(groups);
  if (bind(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) != 0) {
    ThrowErrno(info.Env(), "bindNetlink", "bind", errno);
  }
  return info.Env().Undefined();
}

// interfaceInfo(fd, name): { index, mac, mtu, flags } in the fd's network namespace.
Napi::Value InterfaceInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = IntArg(info, 0, "interfaceInfo", "fd");
  if (info.Length() < 2 || !info[1].IsString()) {
    throw Napi::TypeError::New(env, "interfaceInfo: name must be a string");
  }
  std::string name = info[1].As<Napi::String>().Utf8Value();
  if (name.empty() || name.size() >= IFNAMSIZ) {
    ThrowErrno(env, "interfaceInfo", "ioctl", EINVAL, "(interface name '" + name + "')");
  }
  const std::string detail = "(" + name + ")";
  struct ifreq req {};
  auto query = [&](unsigned long request, const char* what) {
    memset(&req, 0, sizeof(req));
    memcpy(req.ifr_name, name.data(), name.size());
    if (ioctl(fd, request, &req) != 0) ThrowErrno(env, "interfaceInfo", what, errno, detail);
  };

  Napi::Object result = Napi::Object::New(env);
  query(SIOCGIFINDEX, "ioctl SIOCGIFINDEX");
  result.Set("index", Napi::Number::New(env, req.ifr_ifindex));
  query(SIOCGIFHWADDR, "ioctl SIOCGIFHWADDR");
  result.Set("mac", Napi::Buffer<uint8_t>::Copy(
                        env, reinterpret_cast<const uint8_t*>(req.ifr_hwaddr.sa_data), kMacLength));
  query(SIOCGIFMTU, "ioctl SIOCGIFMTU");
  result.Set("mtu", Napi::Number::New(env, req.ifr_mtu));
  query(SIOCGIFFLAGS, "ioctl SIOCGIFFLAGS");
  result.Set("flags", Napi::Number::New(env, static_cast<uint16_t>(req.ifr_flags)));
  return result;
}

// sendPacket(fd, ifindex, protocol, destMac, frame): bytes sent.
Napi::Value SendPacket(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = IntArg(info, 0, "sendPacket", "fd");
  int ifindex = IntArg(info, 1, "sendPacket", "ifindex");
  int protocol = IntArg(info, 2, "sendPacket", "protocol");
  Napi::Buffer<uint8_t> mac = BufferArg(info, 3, "sendPacket", "destMac");
  Napi::Buffer<uint8_t> frame = BufferArg(info, 4, "sendPacket", "frame");
  if (mac.Length() != kMacLength) {
    throw Napi::TypeError::New(env, "sendPacket: destMac must be 6 bytes");
  }
  struct sockaddr_ll addr {};
  addr.sll_family = AF_PACKET;
  addr.sll_protocol = htons(static_cast<uint16_t>(protocol));
  addr.sll_ifindex = ifindex;
  addr.sll_halen = kMacLength;
  memcpy(addr.sll_addr, mac.Data(), kMacLength);
  ssize_t sent;
  do {
    sent = sendto(fd, frame.Data(), frame.Length(), 0, reinterpret_cast<struct sockaddr*>(&addr),
                  sizeof(addr));
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) ThrowErrno(env, "sendPacket", "sendto", errno);
  return Napi::Number::New(env, static_cast<double>(sent));
}

// sendNetlink(fd, message, deadlineNs?): bytes sent; EDEADLINE when CLOCK_MONOTONIC,
// read immediately before the syscall, is past deadlineNs.
Napi::Value SendNetlink(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = IntArg(info, 0, "sendNetlink", "fd");
  Napi::Buffer<uint8_t> message = BufferArg(info, 1, "sendNetlink", "message");
  bool has_deadline = false;
  uint64_t deadline_ns = 0;
  if (info.Length() > 2 && !info[2].IsUndefined()) {
    if (!info[2].IsBigInt()) {
      throw Napi::TypeError::New(env, "sendNetlink: deadlineNs must be a bigint");
    }
    bool lossless = false;
    deadline_ns = info[2].As<Napi::BigInt>().Uint64Value(&lossless);
    if (!lossless) throw Napi::TypeError::New(env, "sendNetlink: deadlineNs out of range");
    has_deadline = true;
  }
  struct sockaddr_nl addr {};
  addr.nl_family = AF_NETLINK;
  ssize_t sent;
  do {
    if (has_deadline) {
      uint64_t now = MonotonicNow();
      if (now > deadline_ns) {
        char late[64];
        snprintf(late, sizeof(late), "%.3f", static_cast<double>(now - deadline_ns) / 1e6);
        Napi::Error error = Napi::Error::New(
            env, std::string("sendNetlink: deadline passed ") + late + " ms before the send; not sent");
        error.Value().Set("code", Napi::String::New(env, kDeadlineCode));
        error.Value().Set("syscall", Napi::String::New(env, "sendto"));
        throw error;
      }
    }
    sent = sendto(fd, message.Data(), message.Length(), 0, reinterpret_cast<struct sockaddr*>(&addr),
                  sizeof(addr));
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) ThrowErrno(env, "sendNetlink", "sendto", errno);
  return Napi::Number::New(env, static_cast<double>(sent));
}

// monotonicNs(): CLOCK_MONOTONIC in nanoseconds.
Napi::Value MonotonicNs(const Napi::CallbackInfo& info) {
  return Napi::BigInt::New(info.Env(), MonotonicNow());
}

// setIntOption(fd, level, name, value)
Napi::Value SetIntOption(const Napi::CallbackInfo& info) {
  int fd = IntArg(info, 0, "setIntOption", "fd");
  int level = IntArg(info, 1, "setIntOption", "level");
  int name = IntArg(info, 2, "setIntOption", "name");
  int value = IntArg(info, 3, "setIntOption", "value");
  if (setsockopt(fd, level, name, &value, sizeof(value)) != 0) {
    ThrowErrno(info.Env(), "setIntOption", "setsockopt", errno,
               "(level " + std::to_string(level) + ", option " + std::to_string(name) + ")");
  }
  return info.Env().Undefined();
}

// attachFilter(fd, program): program is struct sock_filter[] in host byte order, 8 bytes each.
Napi::Value AttachFilter(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = IntArg(info, 0, "attachFilter", "fd");
  Napi::Buffer<uint8_t> program = BufferArg(info, 1, "attachFilter", "program");
  static_assert(sizeof(struct sock_filter) == 8, "struct sock_filter is 8 bytes");
  const size_t count = program.Length() / sizeof(struct sock_filter);
  if (program.Length() == 0 || program.Length() % sizeof(struct sock_filter) != 0 ||
      count > BPF_MAXINSNS) {
    throw Napi::TypeError::New(env,
                               "attachFilter: program must be 1.." + std::to_string(BPF_MAXINSNS) +
                                   " instructions of 8 bytes");
  }
  std::vector<struct sock_filter> filter(count);
  memcpy(filter.data(), program.Data(), program.Length());  // Buffer data may be unaligned
  struct sock_fprog fprog {};
  fprog.len = static_cast<unsigned short>(count);
  fprog.filter = filter.data();
  if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fprog, sizeof(fprog)) != 0) {
    ThrowErrno(env, "attachFilter", "setsockopt SO_ATTACH_FILTER", errno);
  }
  return env.Undefined();
}

// close(fd); EINTR counts as closed (Linux always releases the descriptor).
Napi::Value Close(const Napi::CallbackInfo& info) {
  int fd = IntArg(info, 0, "close", "fd");
  if (close(fd) != 0 && errno != EINTR) ThrowErrno(info.Env(), "close", "close", errno);
  return info.Env().Undefined();
}

}  // namespace ironet
