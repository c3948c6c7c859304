// Test certificates in a temporary directory, made by make_pki.sh (the one
// recipe the C++, shell and Python tests share): ca.crt, server.{crt,key}
// (localhost and 127.0.0.1), client.{crt,key} (signed by ca) and
// wrong-ca.{crt,key} (an unrelated CA). Removed with the object.
//
// Threading: a Pki belongs to the thread that made it.
#pragma once

#include <string>

namespace tether::test_support {

class Pki {
 public:
  Pki();
  ~Pki();
  Pki(const Pki&) = delete;
  Pki& operator=(const Pki&) = delete;

  // False when openssl failed; log() is then its output.
  bool ok() const { return ok_; }
  const std::string& log() const { return log_; }
  // DIR/name, e.g. path("ca.crt").
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  // The contents of path(name).
  std::string pem(const std::string& name) const;

 private:
  std::string dir_, log_;
  bool ok_ = false;
};

}  // namespace tether::test_support
