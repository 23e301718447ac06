#include "ridge/mpi/communicator.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <string>
#include <thread>

#include "ridge/base/clock.h"

namespace ridge::mpi {
namespace {

int CountOf(int64_t n, const char* what) {
  if (n < 0 || n > INT_MAX) Fail("{}: {} elements is more than one MPI message carries", what, n);
  return static_cast<int>(n);
}

}  // namespace

Session::Session(int* argc, char*** argv) {
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) Fail("MPI_Init_thread failed");
  if (provided < MPI_THREAD_SERIALIZED) Fail("this MPI library does not allow calls from more than one thread");
}

Session::~Session() { MPI_Finalize(); }

Communicator::Communicator(double timeout_seconds) : timeout_seconds_(timeout_seconds) {
  if (!(timeout_seconds > 0)) Fail("the communication timeout must be positive, got {} s", timeout_seconds);
  Check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

Communicator::~Communicator() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void Communicator::Check(int rc, const char* what) const {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw LinkError(fmt::format("{} failed: {}", what, std::string(text, static_cast<size_t>(length))));
}

// Spins while the answer is likely close (a step's all-reduce), then yields,
// then sleeps, longer once the wait is long (a follower of an idle server),
// so that a rank waiting for a slow one leaves it the CPU.
void Communicator::Wait(std::vector<MPI_Request>& requests, const char* what) {
  const Clock::time_point start = Clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds_));
  for (int64_t polls = 0;; ++polls) {
    int done = 0;
    Check(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE), what);
    if (interrupted_.load(std::memory_order_acquire))
      throw LinkError(fmt::format("{} was interrupted: {}", what, interrupted_why_));
    if (done) break;
    const Clock::time_point now = Clock::now();
    if (now > deadline)
      throw TimeoutError(
          fmt::format("{} did not complete within {} s: another rank has died or hangs", what, timeout_seconds_));
    const double waited_s = std::chrono::duration<double>(now - start).count();
    if (waited_s > 0.1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } else if (waited_s > 2e-3) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    } else if (waited_s > 1e-4) {
      std::this_thread::yield();
    }
  }
  comm_seconds_ += std::chrono::duration<double>(Clock::now() - start).count();
}

void Communicator::Broadcast(void* data, int64_t bytes, int root) {
  requests_.assign(1, MPI_REQUEST_NULL);
  Check(MPI_Ibcast(data, CountOf(bytes, "broadcast"), MPI_BYTE, root, comm_, requests_.data()), "MPI_Ibcast");
  Wait(requests_, "a broadcast of the step");
  if (rank_ == root) bytes_sent_ += bytes * (size_ - 1);
}

void Communicator::AllReduceSum(float* data, int64_t n) {
  const int count = CountOf(n, "all-reduce");
  parts_.resize(static_cast<size_t>(n) * static_cast<size_t>(size_));
  requests_.clear();
  constexpr int kTag = 1;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    requests_.emplace_back();
    Check(MPI_Irecv(parts_.data() + static_cast<size_t>(r) * static_cast<size_t>(n), count, MPI_FLOAT, r, kTag, comm_,
                    &requests_.back()),
          "MPI_Irecv");
    requests_.emplace_back();
    Check(MPI_Isend(data, count, MPI_FLOAT, r, kTag, comm_, &requests_.back()), "MPI_Isend");
  }
  Wait(requests_, "an all-reduce");
  bytes_sent_ += int64_t{4} * n * (size_ - 1);
  std::copy_n(data, n, parts_.data() + static_cast<size_t>(rank_) * static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    float sum = parts_[static_cast<size_t>(i)];
    for (int r = 1; r < size_; ++r)
      sum += parts_[static_cast<size_t>(r) * static_cast<size_t>(n) + static_cast<size_t>(i)];
    data[i] = sum;
  }
}

void Communicator::Send(const void* data, int64_t bytes, int to_rank, int tag) {
  requests_.assign(1, MPI_REQUEST_NULL);
  Check(MPI_Isend(data, CountOf(bytes, "send"), MPI_BYTE, to_rank, tag, comm_, requests_.data()), "MPI_Isend");
  Wait(requests_, "a send to the next rank");
  bytes_sent_ += bytes;
}

void Communicator::Recv(void* data, int64_t bytes, int from_rank, int tag) {
  requests_.assign(1, MPI_REQUEST_NULL);
  Check(MPI_Irecv(data, CountOf(bytes, "receive"), MPI_BYTE, from_rank, tag, comm_, requests_.data()), "MPI_Irecv");
  Wait(requests_, "a receive from another rank");
}

void Communicator::StartRecv(void* data, int64_t bytes, int from_rank, int tag) {
  started_recvs_.emplace_back(MPI_REQUEST_NULL);
  Check(MPI_Irecv(data, CountOf(bytes, "receive"), MPI_BYTE, from_rank, tag, comm_, &started_recvs_.back()),
        "MPI_Irecv");
}

void Communicator::FinishRecvs() {
  if (started_recvs_.empty()) return;
  Wait(started_recvs_, "a receive from another rank");
  started_recvs_.clear();
}

void Communicator::Interrupt(const std::string& why) {
  if (interrupted_.load()) return;
  interrupted_why_ = why;
  interrupted_.store(true, std::memory_order_release);
}

void Communicator::Abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort should not return
}

}  // namespace ridge::mpi
