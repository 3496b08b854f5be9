# shellcheck shell=bash
# Shared by demo.sh, bench-exporter.sh and gpu-check.sh (source it): free loopback ports, a plain
# HTTP GET that needs only bash (no curl), waiting for an exporter, stopping a process by pid.

# free_port prints a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
  local p
  for p in $(shuf -i 20000-60000 -n 200); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  echo "no free port found" >&2
  return 1
}

# http_get HOST PORT PATH prints the body of a 200 answer; fails on anything else.
http_get() {
  local host=$1 port=$2 path=$3 fd status line
  exec {fd}<>"/dev/tcp/$host/$port" || return 1
  printf 'GET %s HTTP/1.0\r\nHost: %s:%s\r\n\r\n' "$path" "$host" "$port" >&"$fd"
  IFS= read -r status <&"$fd" || { exec {fd}<&-; return 1; }
  case $status in
    *" 200 "*) ;;
    *) exec {fd}<&-; return 1 ;;
  esac
  while IFS= read -r line <&"$fd"; do
    if [ "$line" = $'\r' ] || [ -z "$line" ]; then break; fi
  done
  cat <&"$fd"
  exec {fd}<&-
}

# wait_http HOST PORT PATH PID waits (up to 30 s) until the path answers 200; fails early if PID
# exits.
wait_http() {
  local i
  for i in $(seq 1 300); do
    if http_get "$1" "$2" "$3" >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$4" 2>/dev/null; then return 1; fi
    sleep 0.1
  done
  return 1
}

# stop_pid PID: SIGTERM, then SIGKILL after 5 s; PID must be a child of this shell.
stop_pid() {
  local pid=$1 i
  kill -0 "$pid" 2>/dev/null || return 0
  kill "$pid" 2>/dev/null || true
  for i in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# start_exporter BIN LOG ARGS... starts BIN on a free loopback port, retrying if another process
# took the port first; sets EXPORTER_PID and EXPORTER_PORT.
start_exporter() {
  local bin=$1 log=$2 try
  shift 2
  for try in 1 2 3; do
    EXPORTER_PORT=$(free_port)
    "$bin" --web.listen-address="127.0.0.1:$EXPORTER_PORT" "$@" >"$log" 2>&1 &
    EXPORTER_PID=$!
    if wait_http 127.0.0.1 "$EXPORTER_PORT" /metrics "$EXPORTER_PID"; then return 0; fi
    stop_pid "$EXPORTER_PID"
  done
  echo "could not start $bin; its log:" >&2
  cat "$log" >&2
  return 1
}
