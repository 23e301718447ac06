#pragma once
// The server's HTTP/1.1 front: one event-loop thread (epoll) owns the
// listening socket and every connection while it is idle or sending its
// request; a pool of worker threads gets only complete, validated requests
// and writes their responses. So a slow client holds a socket and a buffer,
// never a worker, and the loop enforces every deadline:
//
//   request_timeout     from a request's first byte (or the connection's
//                       accept) to its last: a whole-request deadline, so a
//                       1 byte/s drip is cut (408), whatever its pace
//   keep_alive_timeout  idle time between requests on a connection (closed)
//   write_timeout       a response write that cannot progress (closed)
//   max_connections     open connections; one more is answered 503 and closed
//
// Pipelined requests are answered in order: a connection is handed to a
// worker one request at a time, and bytes that came after a request stay
// buffered for the next. Framing is strict (http_request_parser.h). Refused
// requests are answered with Connection: close, then the connection's input
// is drained for a moment before closing, so the client reads the answer
// instead of a reset.
//
// A response (an SSE stream too) holds its worker until it ends: open
// streams are bounded by worker_threads. Streams that do not each need a
// thread are future work.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ridge/server/http_request_parser.h"

namespace ridge::server {

struct HttpFrontOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port
  int worker_threads = 128;
  int max_connections = 1024;
  HttpLimits limits;
  std::chrono::milliseconds request_timeout{30000};
  std::chrono::milliseconds keep_alive_timeout{15000};
  std::chrono::milliseconds write_timeout{30000};
  // How long a refused connection's input is read and dropped before it closes.
  std::chrono::milliseconds linger{5000};
};

// While a worker runs the handler of a request: whether that request's client
// has gone (reset the connection or closed its side), found without reading
// or writing. False on any other thread. A handler that waits long before
// answering (a non-streaming completion) asks this between waits, so that it
// can cancel the work and still answer with its true status when it ends.
bool RequestPeerGone();

// Answers one request (routing included). Must not throw.
using HttpHandler = std::function<void(httplib::Request&, httplib::Response&)>;
// Fills the response to a request the front refuses itself: status and message.
using HttpErrorWriter = std::function<void(int status, const std::string& message, httplib::Response&)>;

class HttpFront {
 public:
  HttpFront(HttpFrontOptions options, HttpHandler handler, HttpErrorWriter error_writer);
  ~HttpFront();
  HttpFront(const HttpFront&) = delete;
  HttpFront& operator=(const HttpFront&) = delete;

  // Binds and listens; returns the port. Throws ridge::Error.
  int Bind();
  // Starts the loop and the workers (after Bind).
  void Start();
  // From now on: idle connections and requests not yet fully received are
  // closed at once, and every response closes its connection. Safe from any thread.
  void Drain();
  // Drain, close the listening socket, cut the responses still being written
  // (their writes fail), and join every thread. Idempotent.
  void Stop();

  // Open connections (not counting refused ones being drained).
  int64_t open_connections() const { return open_connections_.load(); }
  // Complete requests handed to the workers and not yet handed back to the
  // loop: counted from before the handler runs until after the last byte of
  // the response is written (or cut), so a graceful shutdown that waits for
  // zero loses no answer. The loop's count of busy connections too. Safe
  // from any thread.
  int64_t responses_in_flight() const { return responses_in_flight_.load(); }

 private:
  struct Connection;
  using Clock = std::chrono::steady_clock;

  void Loop();
  void Worker();
  void Accept();
  void OnReadable(Connection& c);
  void Advance(Connection& c);
  void Dispatch(Connection& c);
  void TakeBack(Connection& c);
  void Refuse(Connection& c, int status, const std::string& message);
  void Close(Connection& c);
  void SetDeadline(Connection& c, Clock::time_point deadline);
  void ExpireDeadlines();
  void CloseUnbusy(bool idle_and_reading_only);
  void Wake();

  HttpFrontOptions options_;
  HttpHandler handler_;
  HttpErrorWriter error_writer_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: workers and Drain/Stop wake the loop
  std::thread loop_thread_;
  std::vector<std::thread> workers_;

  // Loop thread only.
  std::unordered_map<int, std::unique_ptr<Connection>> connections_;
  Clock::time_point next_expiry_ = Clock::time_point::max();
  int64_t lingering_ = 0;
  bool listening_ = true;
  bool drained_ = false;

  std::atomic<int64_t> open_connections_{0};
  std::atomic<int64_t> responses_in_flight_{0};
  std::atomic<bool> draining_{false};
  std::atomic<bool> stopping_{false};
  bool started_ = false;
  bool stopped_ = false;

  // Complete requests for the workers, and connections they hand back.
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::deque<Connection*> work_;
  std::vector<Connection*> returned_;
  bool workers_stop_ = false;
};

}  // namespace ridge::server
