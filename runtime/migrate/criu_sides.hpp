// The real SourceSide/DestinationSide: CRIU and the crx runtime.
#pragma once
#include <set>
#include <string>

#include "checkpoint/container_checkpoint.hpp"
#include "checkpoint/criu_rpc.hpp"
#include "migrate/sides.hpp"

namespace crx::migrate {

class CriuSource : public SourceSide {
 public:
  CriuSource(container::GlobalOptions g, std::string id, checkpoint::CriuFlags flags);
  void pre_dump(const std::string& images_dir, const std::string& parent, int page_fd) override;
  void freeze() override;
  void dump(const std::string& images_dir, const std::string& parent, int page_fd) override;
  void resume() override;
  void destroy() override;

 private:
  // One CRIU dump call (pre-dump or final) into images_dir, its ".work"
  // sibling as work dir, pages to page_fd.
  void run_dump(void (*criu_call)(const checkpoint::DumpOptions&, const checkpoint::NotifyHandler&),
                const std::string& images_dir, const std::string& parent, int page_fd, const char* log,
                bool final_dump);
  container::GlobalOptions g_;
  std::string id_;
  bool tcp_established_ = false;
  checkpoint::SourceContainer src_;
};

class CriuDestination : public DestinationSide {
 public:
  explicit CriuDestination(container::GlobalOptions g);
  Acceptance accept(const Manifest& m) override;
  std::unique_ptr<PageSink> start_page_server(const std::string& round_dir,
                                              UniqueFd channel) override;
  int restore(const std::string& images_dir, const Manifest& m, const Acceptance& a,
              const std::function<void()>& hold) override;
  void discard(const Manifest& m) noexcept override;

 private:
  container::GlobalOptions g_;
  std::set<std::string> restored_;
};

// "<hash of config.json>" of a bundle, as the manifest carries it.
std::string bundle_config_hash(const std::string& bundle);

}  // namespace crx::migrate
