// What crx carries next to the CRIU images (checkpoint/carried_state.hpp).
#include <gtest/gtest.h>
#include <stdlib.h>

#include "checkpoint/carried_state.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"

namespace {

using crx::checkpoint::CarriedState;

crx::state::ContainerState updated_container() {
  crx::state::ContainerState st;
  st.id = "c1";
  st.owner = "";
  st.pid_file = "/run/c1.pid";
  st.annotations = {{"io.crx.test", "16"}};
  // The config as `crx update --memory 96m --pids-limit 77` left it.
  st.config = nlohmann::json::parse(R"({
    "ociVersion": "1.0.2",
    "linux": {"resources": {"memory": {"limit": 100663296}, "pids": {"limit": 77}},
              "cgroupsPath": "/crx/c1"}})");
  return st;
}

TEST(CarriedState, TakesTheUpdatedResourcesAndTheContainersState) {
  CarriedState c = crx::checkpoint::carried_state_of(updated_container(), true);
  EXPECT_EQ(c.resources["memory"]["limit"], 100663296);
  EXPECT_EQ(c.resources["pids"]["limit"], 77);
  EXPECT_EQ(c.annotations.at("io.crx.test"), "16");
  EXPECT_EQ(c.pid_file, "/run/c1.pid");
  EXPECT_TRUE(c.paused);
}

TEST(CarriedState, RoundTripsThroughTheImagesDir) {
  char tmpl[] = "/tmp/crx-carried-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  EXPECT_FALSE(crx::checkpoint::read_carried_state(dir)) << "images without the file";
  CarriedState c = crx::checkpoint::carried_state_of(updated_container(), false);
  crx::checkpoint::write_carried_state(dir, c);
  auto back = crx::checkpoint::read_carried_state(dir);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->to_json(), c.to_json());
  crx::write_file(dir + "/" + crx::checkpoint::kCarriedStateFile, R"({"paused": "yes"})");
  EXPECT_THROW(crx::checkpoint::read_carried_state(dir), crx::Error);
  crx::remove_tree(dir);
}

TEST(CarriedState, CarriesNetworkSysctlsOnlyUnderNet) {
  CarriedState c = crx::checkpoint::carried_state_of(updated_container(), false);
  EXPECT_FALSE(c.to_json().contains("net_sysctls")) << "none: as older crx wrote it";
  c.net_sysctls = {{"net/ipv4/ip_unprivileged_port_start", "0"},
                   {"net/ipv4/ping_group_range", "0\t2147483647"}};
  CarriedState back = CarriedState::from_json(c.to_json());
  EXPECT_EQ(back.net_sysctls, c.net_sysctls);
  for (const char* bad : {R"({"net_sysctls": {"kernel/hostname": "x"}})",
                          R"({"net_sysctls": {"net/../kernel/hostname": "x"}})",
                          R"({"net_sysctls": {"net/ipv4/ip_forward": 1}})"}) {
    EXPECT_THROW(CarriedState::from_json(nlohmann::json::parse(bad)), crx::Error) << bad;
  }
}

TEST(CarriedState, SaysWhenTheNetworkNamespaceIsNotInTheImages) {
  CarriedState c = crx::checkpoint::carried_state_of(updated_container(), false);
  EXPECT_FALSE(c.to_json().contains("new_netns_outside_images")) << "false: as older crx wrote it";
  EXPECT_FALSE(CarriedState::from_json(c.to_json()).new_netns_outside_images);
  c.new_netns_outside_images = true;
  EXPECT_TRUE(CarriedState::from_json(c.to_json()).new_netns_outside_images);
  EXPECT_THROW(CarriedState::from_json(nlohmann::json::parse(R"({"new_netns_outside_images": 1})")),
               crx::Error);
}

TEST(CarriedState, CarriesWhatTheUtsAndIpcNamespacesHeldWhenNotInTheImages) {
  CarriedState c = crx::checkpoint::carried_state_of(updated_container(), false);
  EXPECT_FALSE(c.to_json().contains("uts_ipc_outside_images")) << "none: as older crx wrote it";
  EXPECT_FALSE(CarriedState::from_json(c.to_json()).uts_ipc_outside_images);
  c.uts_ipc_outside_images = crx::checkpoint::UtsIpcContent{
      "web-1", "example", {{"kernel/shmmax", "12345678"}, {"kernel/sem", "250\t32000\t64\t200"}}};
  auto back = CarriedState::from_json(c.to_json()).uts_ipc_outside_images;
  ASSERT_TRUE(back);
  EXPECT_EQ(back->hostname, "web-1");
  EXPECT_EQ(back->domainname, "example");
  EXPECT_EQ(back->ipc_sysctls, c.uts_ipc_outside_images->ipc_sysctls);
  for (const char* bad : {R"({"uts_ipc_outside_images": true})",
                          R"({"uts_ipc_outside_images": {"domainname": ""}})",
                          R"({"uts_ipc_outside_images": {"hostname": 1, "domainname": ""}})",
                          R"({"uts_ipc_outside_images": {"hostname": "h", "domainname": "",
                              "ipc_sysctls": {"kernel/shmmax": 1}}})"}) {
    EXPECT_THROW(CarriedState::from_json(nlohmann::json::parse(bad)), crx::Error) << bad;
  }
}

TEST(CarriedState, ReplacesOnlyTheResourcesOfTheBundlesConfig) {
  auto bundle = nlohmann::json::parse(R"({
    "ociVersion": "1.0.2", "process": {"args": ["sh"]},
    "linux": {"resources": {"memory": {"limit": 33554432}}, "cgroupsPath": "/crx/c1"}})");
  CarriedState c = crx::checkpoint::carried_state_of(updated_container(), false);
  auto cfg = crx::checkpoint::config_with_resources(bundle, c);
  EXPECT_EQ(cfg["linux"]["resources"]["memory"]["limit"], 100663296);
  EXPECT_EQ(cfg["linux"]["resources"]["pids"]["limit"], 77);
  EXPECT_EQ(cfg["linux"]["cgroupsPath"], "/crx/c1");
  EXPECT_EQ(cfg["process"]["args"][0], "sh");
  // Nothing carried: the bundle's config as it is.
  EXPECT_EQ(crx::checkpoint::config_with_resources(bundle, CarriedState{}), bundle);
}

TEST(CarriedState, OnlyResourcesChangedSinceTheCreateAreAppliedAgain) {
  using crx::checkpoint::carries_other_resources;
  auto bundle = nlohmann::json::parse(R"({
    "ociVersion": "1.0.2", "process": {"args": ["sh"]},
    "linux": {"resources": {"memory": {"limit": 33554432}}, "cgroupsPath": "/crx/c1"}})");
  CarriedState same;
  same.resources = bundle["linux"]["resources"];
  EXPECT_FALSE(carries_other_resources(bundle, same));
  EXPECT_FALSE(carries_other_resources(bundle, CarriedState{}));  // none carried
  CarriedState updated = crx::checkpoint::carried_state_of(updated_container(), false);
  EXPECT_TRUE(carries_other_resources(bundle, updated));
  // A config without resources, or without linux at all, gets them.
  auto bare = nlohmann::json::parse(R"({"ociVersion": "1.0.2", "linux": {}})");
  EXPECT_TRUE(carries_other_resources(bare, same));
  EXPECT_TRUE(carries_other_resources(nlohmann::json::parse(R"({"ociVersion": "1.0.2"})"), same));
}

}  // namespace
