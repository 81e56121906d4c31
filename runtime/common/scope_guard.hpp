// The undo step of a transaction, written once beside what it undoes.
#pragma once
#include <exception>
#include <string>
#include <utility>

#include "common/log.hpp"

namespace crx {

// Runs an action when the scope it lives in is left - by its end, a return
// or an exception - unless dismiss() was called first:
//   auto dir = StateDir::create(root, id);
//   ScopeGuard remove_dir([&] { dir.remove(); });
//   ...                        // a failure here removes the directory
//   remove_dir.dismiss();      // done: it stays
// Guards run in the reverse order of their declaration, as the destructors
// of the things they undo do. The action runs while an exception may be
// unwinding, so nothing escapes it: a failure of its own is logged as the
// warning "cleanup: <what()>" and the next undo step still runs.
template <class F>
class ScopeGuard {
 public:
  explicit ScopeGuard(F action) : action_(std::move(action)) {}
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;
  ~ScopeGuard() {
    if (!armed_) return;
    try {
      action_();
    } catch (const std::exception& e) {
      log::warn(std::string("cleanup: ") + e.what());
    } catch (...) {
      log::warn("cleanup: unknown exception");
    }
  }

  // The action will not run.
  void dismiss() { armed_ = false; }

 private:
  F action_;
  bool armed_ = true;
};

}  // namespace crx
