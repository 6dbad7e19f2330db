// Error types and exit codes. Errors travel up as exceptions and are turned into one line and an
// exit code in main(); nothing below main() calls exit().
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace reprun {

// Documented exit codes (docs/commands.md).
enum class ExitCode : int {
  ok = 0,           // success; for diff/check: identical
  different = 1,    // diff/check found differences; train: the run failed (non-finite loss)
  input_error = 2,  // usage error, bad input, unreadable file, I/O failure
  interrupted = 130 // SIGINT/SIGTERM
};

// Bad input or an environment problem the user can fix. `where` is "file", "file:line:col" or
// "file: key"; the message reads "<where>: <what>".
class Error : public std::runtime_error {
public:
  explicit Error(const std::string& what, ExitCode code = ExitCode::input_error)
    : std::runtime_error(what), m_code(code) {}
  Error(const std::string& where, const std::string& what, ExitCode code = ExitCode::input_error)
    : std::runtime_error(where.empty() ? what : where + ": " + what), m_code(code) {}
  ExitCode code() const { return m_code; }

private:
  ExitCode m_code;
};

// Edit distance based suggestion: returns " (did you mean 'x'?)" or "".
std::string did_you_mean(const std::string& word, const std::initializer_list<const char*>& options);
std::string did_you_mean(const std::string& word, const std::vector<std::string>& options);

} // namespace reprun
