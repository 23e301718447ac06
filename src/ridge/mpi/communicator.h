#pragma once
// The MPI calls ridge makes, each bounded in time: every operation is started
// non-blocking and polled against a deadline, so that a rank that died or
// hangs ends the job with an error naming the operation and the timeout
// instead of leaving the others waiting forever.
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "ridge/model/parallel_link.h"

namespace ridge::mpi {

// An operation that did not complete within the communicator's timeout.
// (Every failed operation throws a LinkError: the ranks may be out of step.)
class TimeoutError : public LinkError {
 public:
  using LinkError::LinkError;
};

// MPI_Init_thread (MPI_THREAD_SERIALIZED: one thread at a time calls MPI,
// which need not be the main thread) and MPI_Finalize. One per process.
class Session {
 public:
  Session(int* argc, char*** argv);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
};

class Communicator {
 public:
  // MPI_COMM_WORLD, duplicated, with errors returned (they become ridge::Error).
  explicit Communicator(double timeout_seconds);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  double timeout_seconds() const { return timeout_seconds_; }

  // `bytes` bytes at data from `root` to every rank.
  void Broadcast(void* data, int64_t bytes, int root);
  // data[i] = Σ over ranks, in rank order, of each rank's data[i]: every rank
  // gets every other rank's part and adds them in the same order, so the bits
  // are the same on every rank. Each rank sends (N − 1)·n floats (a ring
  // all-reduce sends 2·(N − 1)/N·n: the same at N = 2).
  void AllReduceSum(float* data, int64_t n);
  void Send(const void* data, int64_t bytes, int to_rank, int tag);
  void Recv(void* data, int64_t bytes, int from_rank, int tag);
  // A receive that returns at once; FinishRecvs waits (bounded by the timeout,
  // from its own start) for every one started since the last FinishRecvs.
  // Messages of one sender and tag fill the started receives in order. After
  // a LinkError they are abandoned with the job (the ranks are out of step).
  void StartRecv(void* data, int64_t bytes, int from_rank, int tag);
  void FinishRecvs();

  // Any thread, without calling MPI: the operation waiting now, and every
  // later one, throws LinkError("... interrupted: <why>") at once. For a
  // rank 0 that the launcher is ending (it kills every rank a moment later),
  // so that its requests end with an error instead of a dropped connection.
  void Interrupt(const std::string& why);

  // Ends every rank of the job with `code` (MPI_Abort); does not return.
  [[noreturn]] void Abort(int code);

  // Wall time spent inside the calls above and the bytes this rank sent, since creation.
  double comm_seconds() const { return comm_seconds_; }
  int64_t bytes_sent() const { return bytes_sent_; }

 private:
  // Polls `requests` until all complete; throws TimeoutError past the deadline.
  void Wait(std::vector<MPI_Request>& requests, const char* what);
  void Check(int rc, const char* what) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  double timeout_seconds_;
  double comm_seconds_ = 0;
  int64_t bytes_sent_ = 0;
  std::vector<float> parts_;  // AllReduceSum: the other ranks' parts
  std::vector<MPI_Request> requests_;
  std::vector<MPI_Request> started_recvs_;  // StartRecv's, until FinishRecvs
  std::atomic<bool> interrupted_{false};
  std::string interrupted_why_;  // written before interrupted_ is set
};

}  // namespace ridge::mpi
