// `tether ensemble SPEC.json --sweep NAME=START:STOP:COUNT ... [--random
// NAME=uniform:A:B|normal:MU:SIGMA --count N --seed S] --until T [--output
// FILE.jsonl|.csv]`: every instance of the grid (and draws) run to T,
// offline (engine/ensemble.h, --workers threads) or with --server on the
// server (RunEnsemble); one line per instance, the same bytes either way
// (the backend hands over results, the writer is this process's).
#pragma once

#include "cli/backend.h"
#include "cli/options.h"

namespace tether::cli {

// The command on `backend`; returns the exit code: 0, 2 for bad input, 3
// when some instance failed numerically (its line says where and why; the
// others are written), 1 for I/O or the server.
int EnsembleCommand(const Options& options, Backend& backend);

}  // namespace tether::cli
