#include "cgroup/paths.hpp"

#include <cctype>
#include <set>
#include <sstream>

#include "common/error.hpp"

namespace crx::cgroup {

namespace {

const std::set<std::string> kV1Controllers = {
    "cpuset", "cpu",   "cpuacct", "blkio",   "memory", "devices", "freezer",
    "net_cls", "perf_event", "net_prio", "hugetlb", "pids", "rdma", "misc"};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape_octal(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string join(const std::string& a, const std::string& b) {
  if (b.empty()) return a;
  std::string out = a;
  if (out.empty() || out.back() != '/') out += '/';
  out += (b.front() == '/') ? b.substr(1) : b;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::string dirname(const std::string& p) {
  auto pos = p.find_last_of('/');
  if (pos == std::string::npos) return ".";
  if (pos == 0) return "/";
  return p.substr(0, pos);
}

// `own` made relative to the mount's root (a cgroup namespace or a bind
// mount of a sub-tree shows only part of the hierarchy).
std::string below_mount_root(const std::string& own, const std::string& root) {
  if (root.empty() || root == "/") return own;
  if (own == root) return "/";
  if (own.rfind(root + "/", 0) == 0) return own.substr(root.size());
  return own;
}

}  // namespace

std::vector<Hierarchy> parse_mountinfo(const std::string& text) {
  std::vector<Hierarchy> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto sep = line.find(" - ");
    if (sep == std::string::npos) continue;
    auto head = split(line.substr(0, sep), ' ');
    auto tail = split(line.substr(sep + 3), ' ');
    if (head.size() < 5 || tail.size() < 3) continue;
    const std::string& fstype = tail[0];
    if (fstype != "cgroup" && fstype != "cgroup2") continue;
    Hierarchy h;
    h.root = unescape_octal(head[3]);
    h.mountpoint = unescape_octal(head[4]);
    h.v2 = fstype == "cgroup2";
    h.super_options = split(tail[2], ',');
    if (!h.v2) {
      for (const auto& opt : h.super_options)
        if (kV1Controllers.count(opt) || opt.rfind("name=", 0) == 0) h.controllers.push_back(opt);
      if (h.controllers.empty()) continue;
    }
    out.push_back(std::move(h));
  }
  return out;
}

std::map<std::string, std::string> parse_proc_cgroup(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto a = line.find(':');
    if (a == std::string::npos) continue;
    auto b = line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::string ctrls = line.substr(a + 1, b - a - 1);
    std::string path = line.substr(b + 1);
    if (ctrls.empty()) {
      out[""] = path;
      continue;
    }
    for (const auto& c : split(ctrls, ',')) out[c] = path;
  }
  return out;
}

std::string clean_cgroup_path(const std::string& path) {
  if (path.empty()) return "";
  bool absolute = path.front() == '/';
  std::vector<std::string> parts;
  for (const auto& p : split(path, '/')) {
    if (p.empty() || p == ".") continue;
    if (p == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(p);
  }
  std::string out = absolute ? "/" : "";
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += '/';
    out += parts[i];
  }
  return out;
}

std::string systemd_cgroup_path(const std::string& cgroups_path, const std::string& id) {
  std::string slice = "system.slice", prefix = "crx", name = id;
  if (!cgroups_path.empty()) {
    auto parts = split(cgroups_path, ':');
    if (parts.size() != 3)
      throw Error("cgroup: systemd cgroupsPath \"" + cgroups_path +
                  "\" is not of the form slice:prefix:name");
    slice = parts[0].empty() ? "system.slice" : parts[0];
    prefix = parts[1];
    name = parts[2];
  }
  auto bad = [&](const std::string& what) {
    throw Error("cgroup: systemd cgroupsPath \"" + cgroups_path + "\": " + what);
  };
  if (name.empty()) bad("empty name");
  if (slice.find('/') != std::string::npos || prefix.find('/') != std::string::npos ||
      name.find('/') != std::string::npos)
    bad("'/' is not allowed");
  if (slice.size() < 7 || slice.substr(slice.size() - 6) != ".slice")
    bad("slice \"" + slice + "\" does not end in .slice");
  // "a-b-c.slice" lives at /a.slice/a-b.slice/a-b-c.slice; "-.slice" is the root.
  std::string path;
  if (slice != "-.slice") {
    std::string base = slice.substr(0, slice.size() - 6);
    if (base.front() == '-' || base.back() == '-' || base.find("--") != std::string::npos)
      bad("slice \"" + slice + "\" is not a valid slice name");
    std::string acc;
    for (const auto& comp : split(base, '-')) {
      acc += acc.empty() ? comp : "-" + comp;
      path += "/" + acc + ".slice";
    }
  }
  // A name ending in .slice is a slice of its own, otherwise a scope.
  std::string unit;
  if (name.size() > 6 && name.substr(name.size() - 6) == ".slice")
    unit = name;
  else
    unit = (prefix.empty() ? "" : prefix + "-") + name + ".scope";
  return path + "/" + unit;
}

std::map<std::string, std::string> container_dirs(const Placement& where,
                                                  const std::string& inner_path) {
  std::map<std::string, std::string> dirs;
  std::string inner = clean_cgroup_path(inner_path);
  bool absolute = !inner.empty() && inner.front() == '/';
  for (const auto& h : where.hierarchies) {
    if (!h.v2 && !where.use_v1) continue;
    std::string dir;
    if (absolute) {
      dir = join(h.mountpoint, inner);
    } else {
      std::string key = h.v2 ? "" : h.controllers.front();
      auto it = where.own.find(key);
      std::string own = it == where.own.end() ? "/" : it->second;
      own = below_mount_root(own, h.root);
      // v2: crx's own cgroup holds processes, so controllers could not be
      // enabled below it; its parent is used, as runc does.
      if (h.v2) own = dirname(own);
      dir = join(join(h.mountpoint, own), inner);
    }
    if (h.v2) {
      dirs.emplace("unified", dir);
    } else {
      for (const auto& c : h.controllers) dirs.emplace(c, dir);
    }
  }
  return dirs;
}

const Hierarchy* hierarchy_of(const std::vector<Hierarchy>& hierarchies, const std::string& dir) {
  const Hierarchy* best = nullptr;
  for (const auto& h : hierarchies) {
    bool below = dir == h.mountpoint || dir.rfind(h.mountpoint + "/", 0) == 0;
    if (below && (!best || h.mountpoint.size() > best->mountpoint.size())) best = &h;
  }
  return best;
}

std::vector<std::pair<std::string, std::string>> criu_cgroup_roots(
    const std::vector<Hierarchy>& hierarchies, const std::map<std::string, std::string>& dirs) {
  std::vector<std::pair<std::string, std::string>> roots;
  for (const auto& [controller, dir] : dirs) {
    const Hierarchy* mount = hierarchy_of(hierarchies, dir);
    if (!mount) throw Error("cgroup: " + dir + " is on no mounted cgroup hierarchy");
    // The mount's root inside the hierarchy, then the rest of dir below it.
    std::string path = mount->root == "/" ? std::string() : mount->root;
    path.append(dir, mount->mountpoint.size());
    roots.emplace_back(controller == "unified" ? "" : controller, path.empty() ? "/" : path);
  }
  return roots;
}

std::string criu_v2_path(const std::vector<Hierarchy>& hierarchies,
                         const std::map<std::string, std::string>& dirs) {
  if (dirs.size() != 1 || !dirs.contains("unified")) return {};
  return criu_cgroup_roots(hierarchies, dirs).front().second;
}

}  // namespace crx::cgroup
