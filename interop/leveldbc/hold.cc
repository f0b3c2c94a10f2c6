//go:build leveldb_cgo

// Holding LevelDB's background thread, for HoldBackgroundWork.

#include <condition_variable>
#include <mutex>

#include <leveldb/env.h>

namespace {

// A hold is a task on the default Env's background thread that waits until
// it is released. The thread runs its tasks one at a time, in order, so
// every flush and compaction scheduled after it waits too.
struct Hold {
  std::mutex mu;
  std::condition_variable cv;
  bool running = false;   // the task has started: the thread is held
  bool released = false;  // the task may return
};

void WaitForRelease(void* arg) {
  Hold* h = static_cast<Hold*>(arg);
  std::unique_lock<std::mutex> lock(h->mu);
  h->running = true;
  h->cv.notify_all();
  h->cv.wait(lock, [h] { return h->released; });
  lock.unlock();
  delete h;  // the releaser no longer touches h once released is set
}

}  // namespace

extern "C" void* leveldbc_hold_background(void) {
  Hold* h = new Hold;
  leveldb::Env::Default()->Schedule(WaitForRelease, h);
  std::unique_lock<std::mutex> lock(h->mu);
  h->cv.wait(lock, [h] { return h->running; });
  return h;
}

extern "C" void leveldbc_release_background(void* arg) {
  Hold* h = static_cast<Hold*>(arg);
  std::lock_guard<std::mutex> lock(h->mu);
  h->released = true;
  h->cv.notify_all();
}
