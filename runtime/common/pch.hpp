// Precompiled for every C++ file of libcrx (see CMakeLists.txt).
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>
