#!/usr/bin/env bash
# Start, stop or check the local Neo4j that mneme's tests and development use (no Docker).
#
#   tools/neo4j/neo4j.sh start    build if needed, start on 127.0.0.1:$MNEME_NEO4J_PORT (7687),
#                                 wait until Bolt answers, print `export NEO4J_URI=...` on stdout
#   tools/neo4j/neo4j.sh stop     stop it (TERM, then KILL) and delete its throw-away data
#   tools/neo4j/neo4j.sh status   exit 0 if running, 1 if not
#   tools/neo4j/neo4j.sh build    only (re)build the launcher and its classpath
#
# Progress and messages go to stderr and the export lines to stdout, so
# `eval "$(tools/neo4j/neo4j.sh start)"` sets NEO4J_URI in the calling shell.
#
# Environment: MNEME_NEO4J_PORT (7687), MNEME_NEO4J_RUN_DIR (pid file, log and throw-away data;
# default tools/neo4j/run, so a test run can keep its own server beside a dev one),
# MNEME_NEO4J_START_TIMEOUT (120 s),
# MNEME_NEO4J_STOP_TIMEOUT (30 s), MNEME_NEO4J_HEAP (1g), MNEME_NEO4J_JAVA_OPTS (extra JVM flags,
# e.g. -XX:TieredStopAtLevel=1 halves start-up on a busy box at the cost of slower queries),
# JAVA_HOME.
# Exit codes: 0 ok, 1 failure (the message says why), 3 Java 17+ or Maven missing (callers such
# as `make test` may then skip Neo4j loudly), 64 bad usage.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RUN="${MNEME_NEO4J_RUN_DIR:-$HERE/run}"
TARGET="$HERE/target"
STAMP="$TARGET/.built"
PIDFILE="$RUN/neo4j.pid"
PORTFILE="$RUN/neo4j.port"
LOG="$RUN/neo4j.log"
DATA="$RUN/data"
MAIN_CLASS="dev.mneme.neo4j.Main"

PORT="${MNEME_NEO4J_PORT:-7687}"
START_TIMEOUT="${MNEME_NEO4J_START_TIMEOUT:-120}"
STOP_TIMEOUT="${MNEME_NEO4J_STOP_TIMEOUT:-30}"
HEAP="${MNEME_NEO4J_HEAP:-1g}"
read -r -a JAVA_OPTS <<<"${MNEME_NEO4J_JAVA_OPTS:-}"

say() { printf 'neo4j: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

log_tail() {
    if [[ -s "$LOG" ]]; then
        say "last lines of $LOG:"
        tail -n 30 "$LOG" | sed 's/^/  | /' >&2
    fi
    if [[ -s "$DATA/logs/debug.log" ]]; then
        say "last errors of $DATA/logs/debug.log:"
        grep -E ' (ERROR|WARN) ' "$DATA/logs/debug.log" | tail -n 10 | cut -c1-300 | sed 's/^/  | /' >&2 || true
    fi
}

java_bin() {
    if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
        echo "$JAVA_HOME/bin/java"
    elif command -v java >/dev/null 2>&1; then
        command -v java
    else
        return 1
    fi
}

check_toolchain() {
    local java major
    java="$(java_bin)" || { say "Java 17+ is not installed (no \$JAVA_HOME/bin/java, no java on PATH); install a JDK 17 or 21 to run Neo4j"; exit 3; }
    major="$("$java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = \([0-9]*\).*/\1/p')"
    if [[ -z "$major" || "$major" -lt 17 ]]; then
        say "$java is Java ${major:-unknown}; Neo4j 5.26 needs Java 17 or 21 (set JAVA_HOME)"
        exit 3
    fi
}

# The build is up to date when the stamp is newer than the pom and every source file.
build_is_current() {
    [[ -f "$STAMP" && -d "$TARGET/lib" && -d "$TARGET/classes" ]] || return 1
    [[ -z "$(find "$HERE/pom.xml" "$HERE/src" -newer "$STAMP" -print -quit)" ]]
}

build() {
    check_toolchain
    if build_is_current; then
        return 0
    fi
    # One build at a time, whichever run dir asked for it.
    mkdir -p "$TARGET"
    if command -v flock >/dev/null 2>&1; then
        exec 8>"$TARGET/.build.lock"
        flock 8
        build_is_current && return 0
    fi
    command -v mvn >/dev/null 2>&1 || { say "Maven (mvn) is not installed; install Maven 3.8+ to build the Neo4j runner"; exit 3; }
    if running_pid >/dev/null; then
        die "the runner's sources changed but Neo4j is running from target/lib; run '$0 stop' first"
    fi
    local started=$SECONDS
    mkdir -p "$RUN"
    say "building the Neo4j runner (the first build downloads ~160 MB from Maven Central)..."
    rm -rf "$TARGET/lib"
    if ! mvn -q -B -f "$HERE/pom.xml" -DskipTests package >"$RUN/build.log" 2>&1; then
        say "Maven build failed; see $RUN/build.log"
        tail -n 30 "$RUN/build.log" | sed 's/^/  | /' >&2
        exit 1
    fi
    touch "$STAMP"
    say "built in $((SECONDS - started)) s"
}

# Our JVM, alive, with its recorded pid (a stale pid file or a recycled pid does not count).
running_pid() {
    [[ -f "$PIDFILE" ]] || return 1
    local pid
    pid="$(cat "$PIDFILE" 2>/dev/null || true)"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$MAIN_CLASS" || return 1
    echo "$pid"
}

port_in_use() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

print_env() {
    echo "export NEO4J_URI=bolt://127.0.0.1:$1"
}

lock() {
    mkdir -p "$RUN"
    if command -v flock >/dev/null 2>&1; then
        exec 9>"$RUN/.lock"
        flock 9
    fi
}

start() {
    [[ "$PORT" =~ ^[0-9]+$ && "$PORT" -ge 1 && "$PORT" -le 65535 ]] \
        || { say "MNEME_NEO4J_PORT=$PORT is not a port number (1..65535)"; exit 64; }
    lock
    local pid
    if pid="$(running_pid)"; then
        local port
        port="$(cat "$PORTFILE" 2>/dev/null || echo "$PORT")"
        if [[ "$port" != "$PORT" ]]; then
            die "already running on port $port (pid $pid), not $PORT; run '$0 stop' first or use MNEME_NEO4J_PORT=$port"
        fi
        say "already running at bolt://127.0.0.1:$port (pid $pid)"
        print_env "$port"
        return 0
    fi
    rm -f "$PIDFILE" "$PORTFILE"
    if port_in_use "$PORT"; then
        die "port $PORT on 127.0.0.1 is already in use by another process; stop it or set MNEME_NEO4J_PORT to a free port"
    fi
    build
    local java
    java="$(java_bin)"
    rm -rf "$DATA"
    mkdir -p "$DATA"
    : >"$LOG"
    # setsid: the server outlives the shell that started it; `exec` keeps the recorded pid the JVM's.
    setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$PIDFILE" \
        "$java" -Xms256m "-Xmx$HEAP" -XX:+UseSerialGC -XX:+ExitOnOutOfMemoryError -Dfile.encoding=UTF-8 \
        --add-opens=java.base/java.nio=ALL-UNNAMED \
        --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
        --add-opens=java.base/java.io=ALL-UNNAMED \
        --add-opens=java.base/java.lang=ALL-UNNAMED \
        --add-opens=java.base/java.util.concurrent=ALL-UNNAMED \
        --add-opens=java.base/jdk.internal.misc=ALL-UNNAMED \
        --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED \
        ${JAVA_OPTS[@]+"${JAVA_OPTS[@]}"} \
        -cp "$TARGET/classes:$TARGET/lib/*" "$MAIN_CLASS" "$DATA" "$PORT" \
        </dev/null >>"$LOG" 2>&1 8>&- 9>&- &
    echo "$PORT" >"$PORTFILE"
    say "starting on 127.0.0.1:$PORT (log $LOG)"
    local started=$SECONDS next=10
    for _ in $(seq 50); do [[ -s "$PIDFILE" ]] && break; sleep 0.1; done
    while true; do
        if grep -q '^NEO4J READY ' "$LOG" 2>/dev/null; then
            say "ready at bolt://127.0.0.1:$PORT in $((SECONDS - started)) s (pid $(cat "$PIDFILE"))"
            print_env "$PORT"
            return 0
        fi
        if ! running_pid >/dev/null; then
            say "Neo4j exited during start-up"
            log_tail
            rm -f "$PIDFILE" "$PORTFILE"
            rm -rf "$DATA"
            exit 1
        fi
        if ((SECONDS - started >= START_TIMEOUT)); then
            say "not ready after $START_TIMEOUT s; stopping it"
            log_tail
            stop_quietly
            exit 1
        fi
        if ((SECONDS - started >= next)); then
            say "still starting... $((SECONDS - started)) s"
            next=$((next + 10))
        fi
        sleep 0.5
    done
}

stop_quietly() {
    local pid waited=0
    if pid="$(running_pid)"; then
        kill -TERM "$pid" 2>/dev/null || true
        while kill -0 "$pid" 2>/dev/null; do
            if ((waited >= STOP_TIMEOUT * 10)); then
                say "pid $pid did not stop within $STOP_TIMEOUT s; killing it"
                kill -KILL "$pid" 2>/dev/null || true
                sleep 0.5
                break
            fi
            sleep 0.1
            waited=$((waited + 1))
        done
    fi
    rm -f "$PIDFILE" "$PORTFILE"
    rm -rf "$DATA"
}

stop() {
    lock
    local pid
    if pid="$(running_pid)"; then
        say "stopping pid $pid"
        stop_quietly
        say "stopped"
    else
        stop_quietly
        say "not running"
    fi
}

status() {
    local pid
    if pid="$(running_pid)"; then
        local port
        port="$(cat "$PORTFILE" 2>/dev/null || echo "$PORT")"
        if grep -q '^NEO4J READY ' "$LOG" 2>/dev/null; then
            say "running at bolt://127.0.0.1:$port (pid $pid)"
        else
            say "starting at bolt://127.0.0.1:$port (pid $pid), not ready yet"
        fi
        return 0
    fi
    say "not running"
    return 1
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    build) build ;;
    *)
        echo "usage: $0 start|stop|status|build" >&2
        exit 64
        ;;
esac
