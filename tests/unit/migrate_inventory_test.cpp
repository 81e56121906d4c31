// The inventory the sender puts in the manifest (migrate/inventory.hpp).
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "migrate/inventory.hpp"
#include "migrate/protocol.hpp"
#include "migrate/report.hpp"

namespace {

using crx::migrate::Inventory;

Inventory sample() {
  Inventory inv;
  inv.processes = {{812, "sh -c counter"}, {1033, "sleep 0.2"}};
  inv.bind_mounts = {{"/out", "/srv/out"}};
  inv.namespaces = {{"network", "/var/run/netns/ctr"}};
  inv.memory_bytes = 3 << 20;
  inv.paused = true;
  return inv;
}

TEST(MigrateInventory, TravelsInTheManifestAndShowsInTheReport) {
  crx::migrate::Manifest m;
  m.id = "c1";
  m.bundle = "/b";
  m.config_sha256 = "00";
  m.inventory = sample().to_json();
  auto back = crx::migrate::parse_manifest(crx::migrate::to_json(m));
  ASSERT_TRUE(back.inventory);
  Inventory inv = Inventory::from_json(*back.inventory);
  EXPECT_EQ(inv.to_json(), sample().to_json());
  EXPECT_EQ(inv.summary(),
            "2 processes (812 (sh -c counter), 1033 (sleep 0.2)), bind mounts /out<-/srv/out, "
            "network namespace /var/run/netns/ctr, memory 3.0 MiB, paused");
  crx::migrate::MigrationReport r;
  r.inventory = *back.inventory;
  EXPECT_NE(r.to_text().find("  moves: 2 processes"), std::string::npos) << r.to_text();
  EXPECT_NE(r.to_json().find("\"inventory\""), std::string::npos);
}

// Found by tests/fuzz (fuzz_migrate_manifest, UBSan): memory_bytes
// 1048570e96 was cast from a float out of uint64_t's range.
TEST(MigrateInventory, IntegerFieldsRefuseFloats) {
  for (const char* text : {R"({"memory_bytes":1048570e96})", R"({"processes":[{"pid":1e40,"command":"sh"}]})"}) {
    try {
      Inventory::from_json(nlohmann::json::parse(text));
      ADD_FAILURE() << "accepted " << text;
    } catch (const crx::Error& e) {
      EXPECT_NE(std::string(e.what()).find("is not an integer"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(Inventory::from_json(nlohmann::json::parse(R"({"memory_bytes":5})")).memory_bytes, 5u);
}

TEST(MigrateInventory, MalformedInventoryIsRefusedByName) {
  crx::migrate::Manifest m;
  m.id = "c1";
  m.bundle = "/b";
  m.config_sha256 = "00";
  m.inventory = nlohmann::json{{"processes", {{{"pid", "x"}}}}};
  try {
    crx::migrate::parse_manifest(crx::migrate::to_json(m));
    FAIL() << "accepted";
  } catch (const crx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"inventory\""), std::string::npos) << e.what();
  }
}

}  // namespace
