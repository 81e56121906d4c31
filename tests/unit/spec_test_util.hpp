// Shared by the spec_*_test.cpp files: a minimal valid config.json and a
// check that parsing fails with an exact, single-line message.
#pragma once
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "common/error.hpp"
#include "spec/spec.hpp"

namespace spec_test {

inline nlohmann::json minimal_config() {
  return nlohmann::json::parse(R"({
    "ociVersion": "1.1.0",
    "root": {"path": "rootfs"},
    "process": {"args": ["sh"], "cwd": "/"},
    "linux": {"namespaces": [{"type": "mount"}]}
  })");
}

// The message parse_spec throws, or "" when it does not throw.
inline std::string parse_error(const nlohmann::json& doc) {
  try {
    crx::spec::parse_spec(doc);
  } catch (const crx::Error& e) {
    return e.what();
  }
  return "";
}

// Applies a JSON merge patch to the minimal config and returns the error.
inline std::string error_with(const char* patch) {
  auto doc = minimal_config();
  doc.merge_patch(nlohmann::json::parse(patch));
  return parse_error(doc);
}

}  // namespace spec_test
