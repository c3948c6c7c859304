#include "cli/python_command.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

namespace tether::cli {

int PythonCommand(const Command& self, const Options& o) {
  const char* configured = std::getenv("TETHER_PYTHON");
  const std::string python = configured != nullptr && *configured != '\0' ? configured : "python3";
#ifdef TETHER_PYTHON_SOURCE_DIR
  std::error_code ignored;
  if (std::filesystem::is_directory(TETHER_PYTHON_SOURCE_DIR, ignored)) {
    const char* path = std::getenv("PYTHONPATH");
    std::string joined = path != nullptr && *path != '\0' ? std::string(path) + ":" : "";
    joined += TETHER_PYTHON_SOURCE_DIR;
    setenv("PYTHONPATH", joined.c_str(), 1);
  }
#endif
  std::vector<std::string> words = {python, "-m", "tether_client", self.name};
  words.insert(words.end(), o.args.begin(), o.args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::cout.flush();
  execvp(argv[0], argv.data());
  const int error = errno;
  std::cerr << "tether " << self.name << ": cannot run " << python << ": " << std::strerror(error)
            << "; " << self.name
            << " needs Python 3 (python3 on PATH, or TETHER_PYTHON) with the tether_client "
               "package (pip install ./client/python) and matplotlib\n";
  return kExitFailure;
}

}  // namespace tether::cli
