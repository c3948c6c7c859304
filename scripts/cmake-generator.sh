# Sourced by the build scripts (build.sh, sanitize.sh, fuzz.sh).
# generator_args DIR: the CMake generator arguments for configuring DIR.
# Ninja (Debian's ninja-build, which install-deps.sh installs) for a new
# build directory: it schedules the whole build graph at once, where the
# Makefiles wait for a target's dependencies to be built before compiling
# any of its objects, which left a core idle behind the generated protobuf
# code, the precompiled headers and the long lane kernels. A directory
# that exists keeps the generator it was made with (CMake refuses to
# change it), as does a machine without ninja.
generator_args() {
  if [[ ! -f "$1/CMakeCache.txt" ]] && command -v ninja >/dev/null; then
    echo "-G Ninja"
  fi
}
