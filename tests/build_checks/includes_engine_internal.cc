// Compiled by the ctest entry engine_internals_are_private as the service or
// the CLI would be (without TETHER_ENGINE_INTERNAL): it must be refused.
#include "engine/internal/expr/tape.h"
