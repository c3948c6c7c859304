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
  // `python -m tether_client NAME ARGS`, with the build's checkout of the
  // package appended to sys.path: an installed tether_client comes first
  // (PYTHONPATH put the checkout ahead of it), the checkout serves where
  // none is installed, and a missing module (grpc, matplotlib) is a line
  // saying what to install, not a traceback.
  std::string source;
#ifdef TETHER_PYTHON_SOURCE_DIR
  std::error_code ignored;
  if (std::filesystem::is_directory(TETHER_PYTHON_SOURCE_DIR, ignored))
    source = TETHER_PYTHON_SOURCE_DIR;
#endif
  const std::string bootstrap =
      "import runpy, sys\n"
      "source = sys.argv.pop(1)\n"
      "if source: sys.path.append(source)\n"
      "sys.argv[0] = 'tether_client'\n"
      "try:\n"
      "    import tether_client\n"
      "except ModuleNotFoundError as e:\n"
      "    sys.exit('tether ' + sys.argv[1] + ': needs Python 3 with the tether_client package "
      "and its dependencies (pip install ./client/python, or Debian\\'s python3-grpcio, "
      "python3-protobuf, python3-numpy and python3-matplotlib): module ' + repr(e.name) + "
      "' not found')\n"
      "runpy.run_module('tether_client', run_name='__main__', alter_sys=True)\n";
  std::vector<std::string> words = {python, "-c", bootstrap, source, self.name};
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
