#!/bin/sh
# First start: a UTF8 cluster whose superuser 'postgres' has POSTGRES_PASSWORD; then the server, on every address.
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    : "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
    pwfile="$(mktemp)"
    printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
    initdb --pgdata="$PGDATA" --username=postgres --encoding=UTF8 --locale=C.UTF-8 \
        --auth-local=trust --auth-host=scram-sha-256 --pwfile="$pwfile" >/dev/null
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/var/run/postgresql
