#!/usr/bin/env bash
# Compose smoke test: build the static up binary and a FROM-scratch image,
# run the CA init job, start 5 nodes and 2 clients in containers, submit 50
# jobs as the project, kill and restart a node during the run, harvest
# until every result is in, check every result, tear down.
set -euo pipefail
cd "$(dirname "$0")"
# A project name and image tag of this run's own: a Docker engine shared
# with other runs (or holding a killed run's volume) cannot hand this run a
# stale /data or a half-built image.
run_id="${UP_COMPOSE_RUN_ID:-$(date +%s)$$}"
export COMPOSE_PROJECT_NAME="uptestnet${run_id}"
export UP_IMAGE="up-pool/up:test${run_id}"
dc() { docker-compose "$@"; }
cleanup() {
	# UP_COMPOSE_LOGS=file keeps every container's log of the run there.
	if [ -n "${UP_COMPOSE_LOGS:-}" ]; then dc logs --no-color --timestamps >"$UP_COMPOSE_LOGS" 2>&1 || true; fi
	dc --profile init --profile project down -v --remove-orphans >/dev/null 2>&1 || true
	docker volume rm -f "${COMPOSE_PROJECT_NAME}_updata" >/dev/null 2>&1 || true
	docker image rm -f "$UP_IMAGE" >/dev/null 2>&1 || true
	rm -f up
}
trap cleanup EXIT
cleanup

echo "== build the static binary and the image"
(cd ../.. && CGO_ENABLED=0 go build -o testnet/compose/up ./cmd/up)
docker build -q -t "$UP_IMAGE" . >/dev/null

echo "== CA init job"
dc --profile init run --rm init
echo "== nodes and clients"
dc up -d node1
sleep 2
dc up -d node2 node3 node4 node5 client1 client2
sleep 3

proj() { dc --profile project run --rm -T project project "$@" --data /data/project; }
echo "== submit"
dc --profile project run --rm -T project project submit --data /data/project --bootstrap-file /data/bootstrap.txt --quiet /data/jobs.yaml

echo "== kill and restart node3 during the run"
dc kill node3 >/dev/null
sleep 2
dc start node3 >/dev/null

echo "== harvest until every result is in"
# Up to ~6 min, a generous bound: results come in 5-15 s after the kill
# (a harvest walks past the dead node; the node rejoins on its own).
for i in $(seq 1 80); do
	dc --profile project run --rm -T project project harvest --data /data/project --bootstrap-file /data/bootstrap.txt --quiet || true
	done_units=$(dc --profile project run --rm -T project project status --data /data/project --json | tr -d ' \n' | sed -n 's/.*"units":{[^}]*"valid":\([0-9]*\).*/\1/p')
	echo "   ${done_units:-0} of 50 units valid"
	[ "${done_units:-0}" = 50 ] && break
	sleep 3
done
[ "${done_units:-0}" = 50 ] || { echo "FAIL: only ${done_units:-0} of 50 results harvested"; dc logs --tail 20; exit 1; }

echo "== check every result"
results=$(dc --profile project run --rm -T project project results --data /data/project --jsonl)
n=$(echo "$results" | grep -c '"exit_code":0' || true)
[ "$n" = 50 ] || { echo "FAIL: $n of 50 results with exit code 0"; exit 1; }
dupes=$(echo "$results" | sed -n 's/.*"job":"\([^"]*\)".*/\1/p' | sort | uniq -d | wc -l)
[ "$dupes" = 0 ] || { echo "FAIL: $dupes results harvested twice"; exit 1; }
echo "OK: 50 jobs submitted, computed and harvested exactly once across 5 containers with a node restart"
