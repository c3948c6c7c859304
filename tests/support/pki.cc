#include "support/pki.h"

#include <stdlib.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace tether::test_support {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

Pki::Pki() {
  char tmpl[] = "/tmp/tether-tls-XXXXXX";
  const char* made = mkdtemp(tmpl);
  if (made == nullptr) {
    log_ = "mkdtemp failed";
    return;
  }
  dir_ = made;
  ok_ = std::system(("sh '" TETHER_MAKE_PKI_SCRIPT "' '" + dir_ + "'").c_str()) == 0;
  if (!ok_) log_ = ReadAll(dir_ + "/openssl.log");
}

Pki::~Pki() {
  if (!dir_.empty()) std::system(("rm -rf '" + dir_ + "'").c_str());
}

std::string Pki::pem(const std::string& name) const { return ReadAll(path(name)); }

}  // namespace tether::test_support
