// Which program runs a job of a given type: exact type first, then the longest
// matching prefix wildcard ("ml.*"), then the catch-all "*".
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ojs::worker {

struct CommandSpec {
  std::vector<std::string> argv;  // executed directly, no shell
};

// A string is a shell command line (run as /bin/sh -c STRING); an array is argv.
CommandSpec command_from_json(const nlohmann::json& value);
CommandSpec shell_command(const std::string& command_line);

// Parses "TYPE=COMMAND" from the command line; throws std::invalid_argument.
std::pair<std::string, CommandSpec> parse_command_assignment(const std::string& assignment);

using CommandTable = std::map<std::string, CommandSpec>;

// nullptr when no entry matches: such jobs are refused (NACK), never guessed.
const CommandSpec* resolve_command(const CommandTable& table, std::string_view job_type);

}  // namespace ojs::worker
