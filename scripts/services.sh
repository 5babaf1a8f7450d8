#!/usr/bin/env bash
# Makes Redis (and PostgreSQL, used by the audit mirror) reachable for Sluice:
#   1. use the ones already answering at REDIS_URL / DATABASE_URL;
#   2. else start private instances from local binaries under .data/;
#   3. else `docker compose up -d redis postgres`;
#   4. else print exactly what to install.
# Idempotent: safe to run before every demo or test run.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="$PWD/.data"
REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/sluice}"
NEED_PG="${SLUICE_NEED_POSTGRES:-1}"

hostport() { # url -> "host port"
  local rest="${1#*://}"; rest="${rest##*@}"; rest="${rest%%/*}"
  local host="${rest%%:*}" port="${rest##*:}"
  [ "$port" = "$rest" ] && port="$2"
  echo "$host $port"
}
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

read -r RH RP < <(hostport "$REDIS_URL" 6379)
read -r PH PP < <(hostport "$DATABASE_URL" 5432)

redis_up() { port_open "$RH" "$RP"; }
pg_up() { port_open "$PH" "$PP"; }

start_private_redis() {
  command -v redis-server >/dev/null || return 1
  mkdir -p "$DATA/redis"
  echo "services: starting a private redis-server on $RH:$RP (data in .data/redis, AOF on)"
  redis-server --daemonize yes --bind "$RH" --port "$RP" --dir "$DATA/redis" \
    --appendonly yes --save "" --logfile "$DATA/redis/redis.log" --pidfile "$DATA/redis/redis.pid"
  for _ in $(seq 50); do redis_up && return 0; sleep 0.1; done
  return 1
}

pg_bin() {
  for d in /usr/lib/postgresql/*/bin /usr/local/bin /usr/bin; do
    [ -x "$d/pg_ctl" ] && [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  return 1
}

start_private_pg() {
  local bin; bin=$(pg_bin) || return 1
  mkdir -p "$DATA"
  local run=()
  # initdb refuses to run as root: use the postgres system user when we are root.
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || return 1
    chown postgres "$DATA" 2>/dev/null || true
    run=(runuser -u postgres --)
  fi
  if [ ! -f "$DATA/pg/PG_VERSION" ]; then
    echo "services: initializing a private PostgreSQL cluster in .data/pg"
    "${run[@]}" "$bin/initdb" -D "$DATA/pg" -U postgres --auth=trust >/dev/null
  fi
  echo "services: starting a private PostgreSQL on $PH:$PP"
  "${run[@]}" "$bin/pg_ctl" -D "$DATA/pg" -l "$DATA/pg/server.log" -o "-p $PP -k /tmp -c listen_addresses=$PH" -w start >/dev/null
  pg_up
}

compose_up() {
  command -v docker >/dev/null && docker info >/dev/null 2>&1 || return 1
  echo "services: starting $1 with docker compose"
  docker compose up -d "$1"
  for _ in $(seq 100); do "$2" && return 0; sleep 0.3; done
  return 1
}

if redis_up; then echo "services: redis is reachable at $RH:$RP"
elif start_private_redis || compose_up redis redis_up; then :
else
  echo "services: no Redis at $RH:$RP and none could be started." >&2
  echo "  install one: apt-get install redis-server   (or brew install redis, or a Docker engine)" >&2
  exit 1
fi

if [ "$NEED_PG" = 1 ]; then
  if pg_up; then echo "services: postgres is reachable at $PH:$PP"
  elif start_private_pg || compose_up postgres pg_up; then :
  else
    echo "services: no PostgreSQL at $PH:$PP and none could be started." >&2
    echo "  install one: apt-get install postgresql   (or brew install postgresql, or a Docker engine)" >&2
    exit 1
  fi
fi
