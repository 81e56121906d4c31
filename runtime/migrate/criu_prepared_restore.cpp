#include "migrate/criu_prepared_restore.hpp"

namespace crx::migrate {

checkpoint::RestoreRequest CriuPreparedRestore::request(const Manifest& m, const Acceptance& a,
                                                        const std::string& session_dir,
                                                        const std::string& work_dir) {
  checkpoint::RestoreRequest r;
  r.image_path = session_dir;  // the final round's dir is below it
  r.images_below = true;
  r.work_path = work_dir;
  r.bundle = a.bundle;
  r.detach = true;
  r.as_child = false;
  r.flags.tcp_established = m.flags.tcp_established;
  r.flags.ext_unix_sk = m.flags.ext_unix_sk;
  r.flags.shell_job = m.flags.shell_job;
  r.flags.file_locks = m.flags.file_locks;
  r.flags.lazy_pages = m.lazy;  // the memory comes from start_lazy_pages' daemon
  if (!m.flags.manage_cgroups_mode.empty())
    r.flags.manage_cgroups_mode = checkpoint::parse_cgroup_mode(m.flags.manage_cgroups_mode);
  // The verbs plugin leaves restored QPs stopped; VerbsDestination resumes
  // them after the commit (a rolled-back copy never talks to a partner).
  r.defer_verbs_resume = true;
  r.carried_pid_file = true;  // the pid file the source's creator named
  r.keep_paused = true;       // paused on the source, paused here
  return r;
}

CriuPreparedRestore::CriuPreparedRestore(const container::GlobalOptions& g, const Manifest& m,
                                         const Acceptance& a, const std::string& session_dir,
                                         const std::string& work_dir)
    : restore_(g, m.id, request(m, a, session_dir, work_dir)) {}

int CriuPreparedRestore::run(const std::string& images_dir, const std::function<void()>& hold,
                             const std::function<void()>& resumed) {
  return restore_.run(images_dir, hold, resumed);
}

}  // namespace crx::migrate
