#include "ridge/server/http_front.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "ridge/base/error.h"
#include "ridge/server/http_response_writer.h"

namespace ridge::server {

struct HttpFront::Connection {
  enum class State {
    kReading,    // receiving a request (its deadline: request_timeout)
    kIdle,       // between requests (its deadline: keep_alive_timeout)
    kBusy,       // a worker owns it: only the worker touches it, the loop does not watch it
    kLingering,  // refused: answered, write side shut, input dropped until the deadline
  };
  Connection(int fd, const HttpLimits& limits) : fd(fd), parser(limits) {}
  const int fd;
  std::string remote_addr;
  int remote_port = -1;
  std::string in;  // received bytes not yet consumed by a request
  HttpRequestParser parser;
  State state = State::kReading;
  Clock::time_point deadline;
  bool sent_continue = false;  // "100 Continue" went out for the current request
  bool peer_closed = false;    // the client shut its side: answer what is buffered, then close
  bool close_after_response = false;
};

namespace {

void AddressOf(const sockaddr_storage& addr, std::string& host, int& port) {
  char text[INET6_ADDRSTRLEN] = "";
  if (addr.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    ::inet_ntop(AF_INET, &a.sin_addr, text, sizeof(text));
    port = ntohs(a.sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
    ::inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof(text));
    port = ntohs(a.sin6_port);
  }
  host = text;
}

// Each connection is a descriptor, and so is each refused one while it
// lingers: make sure the process may open that many.
void RaiseDescriptorLimit(int max_connections) {
  const rlim_t needed = static_cast<rlim_t>(max_connections) * 2 + 256;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= needed) return;
  if (limit.rlim_max < needed)
    Fail("{} connections need {} file descriptors, and this process may open only {} (ulimit -Hn); lower "
         "--max-connections",
         max_connections, needed, limit.rlim_max);
  limit.rlim_cur = needed;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) Fail("cannot raise the file descriptor limit to {}", needed);
}

}  // namespace

HttpFront::HttpFront(HttpFrontOptions options, HttpHandler handler, HttpErrorWriter error_writer)
    : options_(std::move(options)), handler_(std::move(handler)), error_writer_(std::move(error_writer)) {
  if (options_.worker_threads < 1) Fail("the server needs at least one HTTP thread, got {}", options_.worker_threads);
  if (options_.max_connections < 1) Fail("the connection limit must be positive, got {}", options_.max_connections);
}

HttpFront::~HttpFront() {
  Stop();
  for (int fd : {listen_fd_, epoll_fd_, wake_fd_})
    if (fd >= 0) ::close(fd);
}

int HttpFront::Bind() {
  RaiseDescriptorLimit(options_.max_connections);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(options_.port);
  if (::getaddrinfo(options_.host.c_str(), port.c_str(), &hints, &found) != 0 || !found)
    Fail("cannot resolve '{}' to an address to listen on", options_.host);
  for (addrinfo* a = found; a && listen_fd_ < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    // SOMAXCONN: a burst of clients must wait in the backlog, not be dropped
    // and retried a second later (TCP SYN retransmission).
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0)
      listen_fd_ = fd;
    else
      ::close(fd);
  }
  ::freeaddrinfo(found);
  if (listen_fd_ < 0)
    Fail("cannot listen on {}:{} (address in use, or not an address of this machine?)", options_.host, options_.port);
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  std::string host;
  int bound_port = -1;
  AddressOf(bound, host, bound_port);

  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) Fail("cannot create the HTTP event loop: {}", std::strerror(errno));
  for (int fd : {listen_fd_, wake_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  }
  return bound_port;
}

void HttpFront::Start() {
  if (listen_fd_ < 0) Fail("the HTTP front must be bound before it starts");
  started_ = true;
  for (int i = 0; i < options_.worker_threads; ++i) workers_.emplace_back([this] { Worker(); });
  loop_thread_ = std::thread([this] { Loop(); });
}

void HttpFront::Wake() {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
}

void HttpFront::Drain() {
  if (!started_) return;
  draining_ = true;
  Wake();
}

void HttpFront::Stop() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  draining_ = true;
  stopping_ = true;
  Wake();
  loop_thread_.join();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    workers_stop_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void HttpFront::Loop() {
  constexpr int kMaxEvents = 256;
  epoll_event events[kMaxEvents];
  bool stop_handled = false;
  Clock::time_point listen_resume = Clock::time_point::max();
  while (true) {
    if (stopping_ && !stop_handled) {
      stop_handled = true;
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
      ::close(listen_fd_);
      listen_fd_ = -1;
      CloseUnbusy(/*idle_and_reading_only=*/false);
      // Responses still being written: their next write fails, their worker hands them back.
      for (auto& [fd, c] : connections_) ::shutdown(fd, SHUT_RDWR);
    }
    if (stop_handled && responses_in_flight_ == 0) return;
    if (draining_ && !drained_) {
      drained_ = true;
      CloseUnbusy(/*idle_and_reading_only=*/true);
    }
    Clock::time_point wake_at = next_expiry_;
    if (!listening_ && !stop_handled) wake_at = std::min(wake_at, listen_resume);
    int timeout_ms = -1;
    if (wake_at != Clock::time_point::max()) {
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(wake_at - Clock::now()).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(wait, 0, 60000));
    }
    const int n = ::epoll_wait(epoll_fd_, events, kMaxEvents, timeout_ms);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_fd_) {
        uint64_t count = 0;
        [[maybe_unused]] ssize_t r = ::read(wake_fd_, &count, sizeof(count));
      } else if (fd == listen_fd_) {
        Accept();
        if (!listening_) listen_resume = Clock::now() + std::chrono::milliseconds(100);
      } else if (auto it = connections_.find(fd); it != connections_.end()) {
        OnReadable(*it->second);
      }
    }
    std::vector<Connection*> returned;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      returned.swap(returned_);
    }
    for (Connection* c : returned) TakeBack(*c);
    const auto now = Clock::now();
    if (!listening_ && !stop_handled && now >= listen_resume) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = listen_fd_;
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
      listening_ = true;
    }
    if (now >= next_expiry_) ExpireDeadlines();
  }
}

void HttpFront::Accept() {
  while (true) {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors or memory: stop accepting for a moment rather
        // than spin on a listening socket that stays readable.
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
        listening_ = false;
      }
      return;  // EAGAIN: accepted everything pending
    }
    // SSE chunks are small: without this, Nagle's algorithm holds each one
    // back until the previous is acknowledged, adding latency to every token.
    const int yes = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
    auto owned = std::make_unique<Connection>(fd, options_.limits);
    Connection& c = *owned;
    AddressOf(addr, c.remote_addr, c.remote_port);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    connections_.emplace(fd, std::move(owned));
    ++open_connections_;
    if (open_connections_ > options_.max_connections) {
      Refuse(c, 503, fmt::format("the server has {} connections open, its limit; retry later",
                                 options_.max_connections));
      continue;
    }
    SetDeadline(c, Clock::now() + options_.request_timeout);
  }
}

void HttpFront::OnReadable(Connection& c) {
  char buf[16384];
  if (c.state == Connection::State::kLingering) {
    while (true) {
      const ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
      if (n > 0 || (n < 0 && errno == EINTR)) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      Close(c);  // the client closed (or reset): the answer was read
      return;
    }
  }
  // Never buffer more than one largest request and a little of the next:
  // the parser refuses anything larger before it gets there.
  const size_t cap = options_.limits.max_head_bytes + options_.limits.max_body_bytes + sizeof(buf);
  while (c.in.size() < cap) {
    const ssize_t n = ::recv(c.fd, buf, std::min(sizeof(buf), cap - c.in.size()), 0);
    if (n > 0) {
      if (c.state == Connection::State::kIdle) {
        c.state = Connection::State::kReading;
        SetDeadline(c, Clock::now() + options_.request_timeout);
      }
      c.in.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0) {
      Close(c);
      return;
    }
    c.peer_closed = true;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);  // end of file stays readable: stop watching
    break;
  }
  Advance(c);
}

void HttpFront::Advance(Connection& c) {
  if (c.in.empty()) {
    if (c.peer_closed) Close(c);
    return;
  }
  switch (c.parser.Parse(c.in)) {
    case HttpRequestParser::Result::kError:
      Refuse(c, c.parser.error_status(), c.parser.error_message());
      return;
    case HttpRequestParser::Result::kDone:
      Dispatch(c);
      return;
    case HttpRequestParser::Result::kNeedMore:
      if (c.peer_closed) {
        Close(c);  // the request can never complete
      } else if (c.parser.head_done() && c.parser.expects_continue() && !c.sent_continue) {
        c.sent_continue = true;
        // A few bytes on a connection that has sent nothing yet: the socket buffer takes them.
        constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        ::send(c.fd, kContinue.data(), kContinue.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      }
      return;
  }
}

void HttpFront::Dispatch(Connection& c) {
  if (!c.peer_closed) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  c.state = Connection::State::kBusy;
  ++responses_in_flight_;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    work_.push_back(&c);
  }
  work_ready_.notify_one();
}

namespace {
thread_local int request_fd = -1;  // the connection whose request this worker is answering
}  // namespace

bool RequestPeerGone() {
  if (request_fd < 0) return false;
  pollfd p{request_fd, POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

void HttpFront::Worker() {
  while (true) {
    Connection* c = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_ready_.wait(lock, [this] { return workers_stop_ || !work_.empty(); });
      if (work_.empty()) return;
      c = work_.front();
      work_.pop_front();
    }
    if (stopping_) {
      c->close_after_response = true;
    } else {
      httplib::Request req = std::move(c->parser.request());
      req.remote_addr = c->remote_addr;
      req.remote_port = c->remote_port;
      const bool keep_alive = c->parser.keep_alive() && !c->peer_closed && !draining_;
      c->in.erase(0, c->parser.consumed());
      c->parser.Reset();
      c->sent_continue = false;
      httplib::Response res;
      request_fd = c->fd;
      handler_(req, res);
      request_fd = -1;
      if (res.status == -1) res.status = 200;  // cpp-httplib's convention: a handler that set no status succeeded
      const bool written = WriteResponse(c->fd, res, keep_alive, options_.write_timeout);
      c->close_after_response = !written || !keep_alive;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      returned_.push_back(c);
    }
    Wake();
  }
}

void HttpFront::TakeBack(Connection& c) {
  --responses_in_flight_;
  if (c.close_after_response || stopping_ || draining_) {
    Close(c);
    return;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = c.fd;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c.fd, &ev);
  if (c.in.empty()) {
    c.state = Connection::State::kIdle;
    SetDeadline(c, Clock::now() + options_.keep_alive_timeout);
    return;
  }
  // Pipelined: the next request's bytes came while this one was answered.
  c.state = Connection::State::kReading;
  SetDeadline(c, Clock::now() + options_.request_timeout);
  Advance(c);
}

void HttpFront::Refuse(Connection& c, int status, const std::string& message) {
  if (c.state == Connection::State::kLingering) return;
  httplib::Response res;
  res.status = status;
  error_writer_(status, message, res);
  const std::string bytes = ResponseHead(res, /*keep_alive=*/false) + res.body;
  // An error answer is small and the connection has had nothing else written
  // since its last response: the socket buffer takes it without waiting.
  ::send(c.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (lingering_ >= options_.max_connections) {
    Close(c);
    return;
  }
  // Closing with unread input would reset the connection, and the client
  // could lose the answer: shut the write side and drop input for a while.
  ::shutdown(c.fd, SHUT_WR);
  if (c.peer_closed) {
    Close(c);
    return;
  }
  c.state = Connection::State::kLingering;
  c.in = std::string();
  --open_connections_;
  ++lingering_;
  SetDeadline(c, Clock::now() + options_.linger);
}

void HttpFront::Close(Connection& c) {
  if (c.state == Connection::State::kLingering)
    --lingering_;
  else
    --open_connections_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  ::close(c.fd);
  connections_.erase(c.fd);  // destroys c
}

void HttpFront::SetDeadline(Connection& c, Clock::time_point deadline) {
  c.deadline = deadline;
  next_expiry_ = std::min(next_expiry_, deadline);
}

void HttpFront::ExpireDeadlines() {
  const auto now = Clock::now();
  next_expiry_ = Clock::time_point::max();
  std::vector<Connection*> expired;
  for (auto& [fd, c] : connections_) {
    if (c->state == Connection::State::kBusy) continue;
    if (c->deadline <= now)
      expired.push_back(c.get());
    else
      next_expiry_ = std::min(next_expiry_, c->deadline);
  }
  for (Connection* c : expired) {
    if (c->state == Connection::State::kReading && !c->in.empty())
      Refuse(*c, 408, fmt::format("the request was not received within {} s",
                                  std::chrono::duration<double>(options_.request_timeout).count()));
    else
      Close(*c);  // idle, silent since accepted, or done lingering
  }
}

void HttpFront::CloseUnbusy(bool idle_and_reading_only) {
  std::vector<Connection*> victims;
  for (auto& [fd, c] : connections_) {
    if (c->state == Connection::State::kBusy) continue;
    if (idle_and_reading_only && c->state == Connection::State::kLingering) continue;
    victims.push_back(c.get());
  }
  for (Connection* c : victims) Close(*c);
}

}  // namespace ridge::server
