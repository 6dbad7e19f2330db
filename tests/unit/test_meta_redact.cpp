// Credentials' values in the text reprun keeps of a code or configuration file (meta/redact.hpp).
#include "reprun/meta/redact.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace reprun;

TEST_CASE("a key that names a credential, and one that does not") {
  for (const char* k : {"aws_secret_access_key", "wandb-api-key", "GITHUB_TOKEN", "db.password", "apiKey", "private_key",
                        "\"credentials\"", "HF_AUTH_KEY", "passwd"}) {
    CHECK_MESSAGE(names_credential(k), k);
  }
  for (const char* k : {"key_dim", "lr", "monkey", "author", "tokenizer_name_or_path_x", "session_id", "keys"}) {
    const bool tokenizer = std::string(k).find("token") != std::string::npos;
    CHECK_MESSAGE(names_credential(k) == tokenizer, k); // "tokenizer..." holds TOKEN: redacted, the safe side
  }
}

TEST_CASE("the value of each credential's key is redacted, line by line, the rest kept") {
  const std::string in = "[default]\n"
                         "aws_secret_access_key = AKIA123\n"
                         "region = eu-west-1\n"
                         "lr: 0.1\n"
                         "wandb_api_key: sk-abc  # mine\n"
                         "  - db_password: hunter2\n"
                         "export HF_TOKEN=hf_xyz\n"
                         "{\"lr\": 0.1, \"db_password\": \"p\\\"w\", \"epochs\": 3, \"api_key\": 42}\n"
                         "    \"secret\": \"s3\",\n"
                         "OPENAI_API_KEY = os.environ[\"OPENAI_API_KEY\"]\n"
                         "key_dim = 64\n"
                         "no newline at the end: token";
  const std::string want = "[default]\n"
                           "aws_secret_access_key = (redacted)\n"
                           "region = eu-west-1\n"
                           "lr: 0.1\n"
                           "wandb_api_key: (redacted)\n"
                           "  - db_password: (redacted)\n"
                           "export HF_TOKEN= (redacted)\n"
                           "{\"lr\": 0.1, \"db_password\": (redacted), \"epochs\": 3, \"api_key\": (redacted)}\n"
                           "    \"secret\": (redacted),\n"
                           "OPENAI_API_KEY = (redacted)\n"
                           "key_dim = 64\n"
                           "no newline at the end: token";
  CHECK(redact_secret_values(in) == want);
  CHECK(redact_secret_values("") == "");
  CHECK(redact_secret_values("plain\n\n") == "plain\n\n");
}
