#include "migrate/destination_checks.hpp"

#include <cctype>

#include "common/error.hpp"

namespace crx::migrate {

std::vector<long> version_numbers(const std::string& v) {
  // Tokens between '.', '-', '+', ...: numbers until the first one with a
  // letter ("amd64", "rc1"), which ends the version.
  std::vector<long> out;
  size_t i = 0;
  while (i < v.size()) {
    size_t j = i;
    while (j < v.size() && std::isalnum(static_cast<unsigned char>(v[j]))) ++j;
    std::string tok = v.substr(i, j - i);
    if (!tok.empty()) {
      for (char c : tok)
        if (!std::isdigit(static_cast<unsigned char>(c))) return out;
      out.push_back(tok.size() > 9 ? 999999999L : std::stol(tok));
    }
    i = j + 1;
  }
  return out;
}

bool version_older(const std::string& a, const std::string& b) {
  auto x = version_numbers(a), y = version_numbers(b);
  size_t n = std::max(x.size(), y.size());
  x.resize(n, 0);
  y.resize(n, 0);
  return x < y;
}

void check_not_older(const std::string& what, const std::string& here, const std::string& source) {
  if (here.empty() || source.empty()) return;
  if (version_older(here, source)) {
    throw Error("the destination's " + what + " " + here + " is older than the source's " +
                source + " that writes the images");
  }
}

std::vector<std::string> missing_bind_sources(
    const spec::Spec& s, const std::function<bool(const std::string&)>& exists) {
  std::vector<std::string> out;
  for (const auto& m : s.mounts) {
    bool bind = m.type == "bind";
    for (const auto& o : m.options) bind = bind || o == "bind" || o == "rbind";
    if (bind && !exists(m.source)) {
      out.push_back("bind mount " + m.destination + ": " + m.source +
                    " does not exist on the destination");
    }
  }
  return out;
}

std::vector<std::string> missing_namespace_paths(
    const spec::Spec& s, const std::function<bool(const std::string&)>& exists) {
  std::vector<std::string> out;
  for (const auto& n : s.linux.namespaces) {
    if (!n.path.empty() && !exists(n.path))
      out.push_back(n.type + " namespace " + n.path + " does not exist on the destination");
  }
  return out;
}

std::vector<std::string> missing_devices(const spec::Spec& s,
                                         const std::function<bool(const std::string&)>& exists) {
  std::vector<std::string> out;
  for (const auto& d : s.linux.devices) {
    if (d.type != 'c' && d.type != 'u' && d.type != 'b') continue;
    std::string kind = d.type == 'b' ? "block" : "char";
    std::string mm = std::to_string(d.major) + ":" + std::to_string(d.minor);
    if (!exists("/sys/dev/" + kind + "/" + mm)) {
      out.push_back("device " + d.path + " (" + kind + " " + mm +
                    ") does not exist on the destination");
    }
  }
  return out;
}

}  // namespace crx::migrate
