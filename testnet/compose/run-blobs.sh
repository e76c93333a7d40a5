#!/usr/bin/env bash
# Compose test of jobs whose data and application travel through the
# overlay (issue 20): the project submits 200 WebAssembly jobs (100 units ×
# 2 copies of the built-in digest, apps/wasm's module) whose inputs are 20
# local files of 1–8 MiB, and its process ends; two volunteers in their
# own containers fetch the module and the inputs from the nodes and run
# every job in the sandbox, a node is killed and restarted meanwhile; the
# project, started again, harvests every result. Checks: every result
# valid, each file's SHA-256 among the outputs (the data arrived intact),
# and the bytes the project uploaded are about the data once, not r times.
set -euo pipefail
cd "$(dirname "$0")"
run_id="${UP_COMPOSE_RUN_ID:-$(date +%s)$$}"
export COMPOSE_PROJECT_NAME="upblobs${run_id}"
export UP_IMAGE="up-pool/up:blobs${run_id}"
files="$(mktemp -d /tmp/up-blobs-files.XXXXXX)"
export UP_FILES="$files"
dc() { docker-compose "$@"; }
cleanup() {
	if [ -n "${UP_COMPOSE_LOGS:-}" ]; then dc --profile wasm logs --no-color --timestamps >"$UP_COMPOSE_LOGS" 2>&1 || true; fi
	dc --profile init --profile project --profile wasm down -v --remove-orphans >/dev/null 2>&1 || true
	docker volume rm -f "${COMPOSE_PROJECT_NAME}_updata" >/dev/null 2>&1 || true
	docker image rm -f "$UP_IMAGE" >/dev/null 2>&1 || true
	docker rm -f "upres${run_id}" >/dev/null 2>&1 || true
	rm -rf "$files"
}
trap cleanup EXIT

echo "== the project's files: 20 inputs of 1–8 MiB, the module, the job file"
total=0
for f in $(seq 1 20); do
	size=$(( (1 + (f * 7) % 8) * 1048576 - f * 4099 ))
	head -c "$size" /dev/urandom >"$files/part$f.bin"
	total=$((total + size))
done
cp ../../apps/wasm/builtin.wasm "$files/"
cat >"$files/jobs.yaml" <<'YAML'
app: digest                # the built-in digest, run by the module (argv[0])
module: builtin.wasm
args: ["-rounds", "{k}", input0]
copies: 2
t_finish: 10m
inputs: [{file: "part{f}.bin"}]
sweep:
  f: {from: 1, to: 20}
  k: [0, 1000, 2000, 3000, 4000]
YAML
echo "   $total bytes of inputs"

echo "== build the static binary and the image"
(cd ../.. && CGO_ENABLED=0 go build -o testnet/compose/up ./cmd/up)
docker build -q -t "$UP_IMAGE" . >/dev/null
rm -f up

echo "== CA init job"
dc --profile init run --rm init
echo "== nodes"
dc up -d node1
sleep 2
dc up -d node2 node3 node4 node5
sleep 3

proj() { dc --profile project run --rm -T project project "$@"; }
echo "== submit (the project's process ends after it)"
submit_out=$(proj submit --data /data/project --bootstrap-file /data/bootstrap.txt --quiet /files/jobs.yaml)
echo "$submit_out" | sed 's/^/   /'
uploaded=$(echo "$submit_out" | sed -n 's/.*uploaded \([0-9]*\) bytes.*/\1/p')
[ -n "$uploaded" ] || { echo "FAIL: submit reported no upload"; exit 1; }

echo "== volunteers (WebAssembly allowed for the project), a node killed and restarted"
dc --profile wasm up -d client3 client4
sleep 5
dc kill node3 >/dev/null
sleep 2
dc start node3 >/dev/null

echo "== the project comes back and harvests until every result is in"
for i in $(seq 1 120); do
	proj harvest --data /data/project --bootstrap-file /data/bootstrap.txt --quiet >/dev/null 2>&1 || true
	valid=$(proj status --data /data/project --json | tr -d ' \n' | sed -n 's/.*"units":{[^}]*"valid":\([0-9]*\).*/\1/p')
	echo "   ${valid:-0} of 100 units valid"
	[ "${valid:-0}" = 100 ] && break
	sleep 5
done
[ "${valid:-0}" = 100 ] || { echo "FAIL: only ${valid:-0} of 100 units valid"; dc --profile wasm logs --tail 30 client3 client4; exit 1; }

echo "== check the results"
# Written into the volume and copied out (a long stdout through
# docker-compose run can come back cut short).
dc --profile project run --name "upres${run_id}" -T project project results --data /data/project --canonical=false --out /data/results >/dev/null
rm -rf "$files/results"
docker cp "upres${run_id}:/data/results" "$files/results" >/dev/null
docker rm -f "upres${run_id}" >/dev/null
n=$(ls "$files/results" | wc -l)
[ "$n" = 200 ] || {
	echo "FAIL: $n of 200 results harvested; the ledger says:"
	proj status --data /data/project --json | tr -d '\n' | cut -c1-600
	echo
	proj harvest --data /data/project --bootstrap-file /data/bootstrap.txt || true
	exit 1
}
outputs=$(cat "$files"/results/* | cut -d' ' -f1 | sort -u)
for f in $(seq 1 20); do
	sum=$(sha256sum "$files/part$f.bin" | cut -d' ' -f1)
	echo "$outputs" | grep -qx "$sum" || { echo "FAIL: no result carries part$f.bin's SHA-256"; exit 1; }
done
bad=$(cat "$files"/results/* | grep -cv '^[0-9a-f]\{64\}  input0$' || true)
[ "$bad" = 0 ] || { echo "FAIL: $bad result lines are not a digest of input0"; exit 1; }
module=$(stat -c %s "$files/builtin.wasm")
data=$((total + module))
echo "   uploaded $uploaded bytes for $data bytes of distinct data (inputs × r = $((data * 5)))"
[ "$uploaded" -le $((data + data / 10)) ] || { echo "FAIL: uploaded $uploaded bytes, more than 1.1 × the data"; exit 1; }
echo "OK: 200 WebAssembly jobs on 20 input files computed by 2 volunteers from overlay data with the project offline, harvested after it came back; uploaded $uploaded bytes for $data"
