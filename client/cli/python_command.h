// tether plot and tether animate: pictures of a run, drawn by the Python
// package (tether_client.cli, matplotlib) in a Python process that replaces
// this one.
#pragma once

#include "cli/command_line.h"
#include "cli/options.h"

namespace tether::cli {

// Runs `PYTHON -m tether_client COMMAND ARGS...` in place of this process
// (exec): PYTHON is $TETHER_PYTHON, else python3 on PATH. The package is
// the installed one (pip install ./client/python); when it is not
// installed, this checkout's client/python/src (the path compiled in, when
// it exists) is appended to PYTHONPATH, so an installed package still
// wins. Returns only when the exec fails (exit 1, saying what to install).
int PythonCommand(const Command& self, const Options& options);

}  // namespace tether::cli
