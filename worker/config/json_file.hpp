// Small file helpers shared by config loading, capabilities files and job files.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

namespace ojs::worker {

// Throws std::runtime_error when the file cannot be read or is not JSON.
nlohmann::json read_json_file(const std::string& path);
std::string read_text_file(const std::string& path);
// Writes to a temporary name then renames, so readers never see half a file.
void write_text_file_atomically(const std::string& path, const std::string& content);

}  // namespace ojs::worker
