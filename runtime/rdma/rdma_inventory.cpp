#include "rdma/rdma_inventory.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <type_traits>
#include <vector>

#include "common/error.hpp"
#include "ibv_migr.h"
#include "rdma/rdma_error.hpp"

namespace crx::rdma {
namespace {

std::string qp_type_name(uint32_t type) {
  switch (type) {
    case IBV_QPT_RC: return "RC";
    case IBV_QPT_UC: return "UC";
    case IBV_QPT_UD: return "UD";
    case IBV_QPT_RAW_PACKET: return "raw packet";
    default: return "type-" + std::to_string(type);
  }
}

template <typename T>
void sort_unique(std::vector<T>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

template <typename T>
struct is_integer_list : std::false_type {};
template <typename U>
struct is_integer_list<std::vector<U>> : std::bool_constant<std::is_integral_v<U>> {};

template <typename T>
T field(const nlohmann::json& j, const char* key, const char* where = "rdma.") {
  auto it = j.find(key);
  if (it == j.end()) throw Error(std::string("malformed manifest: no ") + where + key);
  // get<integer>() of a float casts it, undefined out of the type's range
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (!it->is_number_integer())
      throw Error(std::string("malformed manifest: ") + where + key + " is not an integer");
  }
  if constexpr (is_integer_list<T>::value) {
    if (it->is_array()) {
      for (const auto& e : *it) {
        if (!e.is_number_integer())
          throw Error(std::string("malformed manifest: ") + where + key + " holds a non-integer");
      }
    }
  }
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(std::string("malformed manifest: ") + where + key + " has the wrong type");
  }
}

std::string plural(uint32_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

}  // namespace

void RdmaInventory::add_dump(const std::string& device, const void* dump, size_t length) {
  const rxe_migr_rec_hdr* r = nullptr;
  int err = 0;
  while ((r = ibv_migr_next_record(dump, length, r, &err))) {
    const void* body = r + 1;
    switch (r->type) {
      case RXE_MIGR_OBJ_PD: ++counts.pd; break;
      case RXE_MIGR_OBJ_AH: ++counts.ah; break;
      case RXE_MIGR_OBJ_MR: {
        const auto* mr = static_cast<const rxe_migr_mr*>(body);
        ++counts.mr;
        mrns.push_back(mr->mrn);
        mr_bytes += mr->length;
        break;
      }
      case RXE_MIGR_OBJ_CQ: ++counts.cq; break;
      case RXE_MIGR_OBJ_SRQ: ++counts.srq; break;
      case RXE_MIGR_OBJ_QP: {
        const auto* qp = static_cast<const rxe_migr_qp*>(body);
        ++counts.qp;
        qpns.push_back(qp->qpn);
        if (qp->qp_type != IBV_QPT_RC && qp->qp_type != IBV_QPT_UD)
          unsupported.push_back(qp_type_name(qp->qp_type) + " QP " + std::to_string(qp->qpn) +
                                " (" + device + ")");
        break;
      }
      case RXE_MIGR_OBJ_ASYNC_EVENT: ++counts.async_event; break;
      case RXE_MIGR_OBJ_COMP_CHANNEL: ++counts.comp_channel; break;
      default: break;
    }
  }
  if (err) throw RdmaError(RdmaCause::VerbsCall, "malformed verbs dump of " + device, -err);
  ++contexts;
  devices.push_back(device);
  sort_unique(devices);
  sort_unique(qpns);
  sort_unique(mrns);
}

void RdmaInventory::add(const RdmaInventory& o) {
  unsupported.insert(unsupported.end(), o.unsupported.begin(), o.unsupported.end());
  devices.insert(devices.end(), o.devices.begin(), o.devices.end());
  qpns.insert(qpns.end(), o.qpns.begin(), o.qpns.end());
  mrns.insert(mrns.end(), o.mrns.begin(), o.mrns.end());
  sort_unique(devices);
  sort_unique(qpns);
  sort_unique(mrns);
  counts.pd += o.counts.pd;
  counts.mr += o.counts.mr;
  counts.cq += o.counts.cq;
  counts.srq += o.counts.srq;
  counts.qp += o.counts.qp;
  counts.ah += o.counts.ah;
  counts.async_event += o.counts.async_event;
  counts.comp_channel += o.counts.comp_channel;
  mr_bytes += o.mr_bytes;
  contexts += o.contexts;
}

nlohmann::json to_json(const RdmaInventory& inv) {
  const ObjectCounts& c = inv.counts;
  return nlohmann::json{{"devices", inv.devices},
                        {"qpns", inv.qpns},
                        {"mrns", inv.mrns},
                        {"contexts", inv.contexts},
                        {"mr_bytes", inv.mr_bytes},
                        {"objects",
                         {{"pd", c.pd},
                          {"mr", c.mr},
                          {"cq", c.cq},
                          {"srq", c.srq},
                          {"qp", c.qp},
                          {"ah", c.ah},
                          {"async_event", c.async_event},
                          {"comp_channel", c.comp_channel}}}};
}

RdmaInventory inventory_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw Error("malformed manifest: rdma is not an object");
  RdmaInventory inv;
  inv.devices = field<std::vector<std::string>>(j, "devices");
  inv.qpns = field<std::vector<uint32_t>>(j, "qpns");
  inv.mrns = field<std::vector<uint32_t>>(j, "mrns");
  inv.contexts = field<uint32_t>(j, "contexts");
  inv.mr_bytes = field<uint64_t>(j, "mr_bytes");
  auto o = field<nlohmann::json>(j, "objects");
  if (!o.is_object()) throw Error("malformed manifest: rdma.objects is not an object");
  ObjectCounts& c = inv.counts;
  c.pd = field<uint32_t>(o, "pd", "rdma.objects.");
  c.mr = field<uint32_t>(o, "mr", "rdma.objects.");
  c.cq = field<uint32_t>(o, "cq", "rdma.objects.");
  c.srq = field<uint32_t>(o, "srq", "rdma.objects.");
  c.qp = field<uint32_t>(o, "qp", "rdma.objects.");
  c.ah = o.value("ah", 0u);
  c.async_event = o.value("async_event", 0u);
  c.comp_channel = o.value("comp_channel", 0u);
  sort_unique(inv.devices);
  sort_unique(inv.qpns);
  sort_unique(inv.mrns);
  return inv;
}

std::string describe(const RdmaInventory& inv) {
  const ObjectCounts& c = inv.counts;
  char pinned[64];
  std::snprintf(pinned, sizeof pinned, "%.1f MiB", static_cast<double>(inv.mr_bytes) / (1 << 20));
  std::string out = plural(c.qp, "QP") + ", " + plural(c.mr, "MR") + " (" + pinned +
                    " pinned), " + plural(c.cq, "CQ") + ", " + plural(c.srq, "SRQ") + ", " +
                    plural(c.pd, "PD") + (c.ah ? ", " + plural(c.ah, "AH") : "") + " on ";
  for (size_t i = 0; i < inv.devices.size(); ++i) out += (i ? ", " : "") + inv.devices[i];
  return out;
}

void refuse_unsupported(const std::string& id, const RdmaInventory& inv) {
  if (inv.unsupported.empty()) return;
  std::string list;
  for (const auto& u : inv.unsupported) list += (list.empty() ? "" : ", ") + u;
  throw RdmaError(RdmaCause::Unsupported,
                  "container " + id + " holds verbs objects a restore cannot bring back yet: " +
                      list + " (only RC and UD QPs move); nothing was frozen",
                  EOPNOTSUPP);
}

}  // namespace crx::rdma
