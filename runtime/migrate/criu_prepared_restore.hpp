// CriuDestination's PreparedRestore: checkpoint::PreparedRestore (the
// cgroup, mounts, state dir and the waiting `criu swrk`, made before the
// freeze) with what a migration's restore asks of it in run().
#pragma once
#include <string>

#include "checkpoint/prepared_restore.hpp"
#include "migrate/sides.hpp"

namespace crx::migrate {

class CriuPreparedRestore : public PreparedRestore {
 public:
  // Throws Error (nothing left) when the destination cannot prepare.
  CriuPreparedRestore(const container::GlobalOptions& g, const Manifest& m, const Acceptance& a,
                      const std::string& session_dir, const std::string& work_dir);
  int run(const std::string& images_dir, const std::function<void()>& hold,
          const std::function<void()>& resumed) override;
  void set_net_sysctls(const std::map<std::string, std::string>& sysctls) override {
    restore_.set_net_sysctls(sysctls);
  }
  void restore_pages_lazily() override { restore_.set_lazy_pages(); }
  void save_state_ahead() override { restore_.save_state_ahead(); }
  std::string cgroup_path() const override { return restore_.cgroup_v2_path(); }

 private:
  static checkpoint::RestoreRequest request(const Manifest& m, const Acceptance& a,
                                            const std::string& session_dir,
                                            const std::string& work_dir);
  checkpoint::PreparedRestore restore_;
};

}  // namespace crx::migrate
