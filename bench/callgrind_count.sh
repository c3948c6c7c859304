# Sourced by the *_instructions.sh scripts: callgrind_count BIN STEPS NAME
# FUNCTION prints the instructions per step of benchmark NAME of the Google
# Benchmark binary BIN (valgrind --tool=callgrind, collecting only inside
# FUNCTION, a glob), STEPS steps per timed iteration. The binary must print
# "timed iterations: N" on stderr at exit: Google Benchmark may run a
# benchmark more than once, and the count is divided by the iterations it
# reports having timed.
callgrind_count() {
  local bin=$1 steps=$2 name=$3 function=$4 tmp iters
  tmp=$(mktemp -d)
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" --toggle-collect="$function" \
    "$bin" --benchmark_filter="^$name\$" --benchmark_min_time=1e-9 >/dev/null 2>"$tmp/err"
  iters=$(awk '/^timed iterations:/ {print $3}' "$tmp/err")
  if [[ -z "$iters" || "$iters" -le 0 ]]; then
    echo "no iteration count from $name" >&2
    rm -rf "$tmp"
    exit 1
  fi
  awk -v s="$steps" -v n="$iters" '/^totals:/ {printf "%.0f", $2 / (s * n)}' "$tmp/cg"
  rm -rf "$tmp"
}
