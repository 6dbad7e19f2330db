// Secret values in text reprun keeps of a file the program read (a code file's or a configuration
// file's copy in the run directory, which diff prints line by line): the value of each key that
// names a credential is replaced by "(redacted)". The file's digest is of its real bytes; only the
// copy is redacted.
#pragma once

#include <string>
#include <string_view>

namespace reprun {

// What stands in a copy for a value redacted.
inline constexpr std::string_view k_redacted_value = "(redacted)";

// True for a key that names a credential, case-insensitive, '-' and '.' read as '_': one holding
// TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL, API_KEY, APIKEY, ACCESS_KEY, PRIVATE_KEY or
// AUTH_KEY. Stricter than looks_secret (environment names): an attention layer's `key_dim` in a
// model's code or configuration is no secret.
bool names_credential(std::string_view key);

// `text` with the value of each such key redacted: a key at a line's start before ':' or '='
// (YAML, INI, TOML, .env, `export X=...`, a Python assignment), and a quoted key anywhere before
// ':' (JSON, YAML flow maps). The value runs to the line's end, or for a quoted key to the end of
// its string or the next ',' or '}'.
std::string redact_secret_values(std::string_view text);

} // namespace reprun
