#!/usr/bin/env bash
# What the node's web page costs a real daemon: five `up node run`
# processes on loopback; node n1's CPU time (utime + stime of
# /proc/PID/stat) over three windows:
#   idle   PAGECOST_SECONDS (default 60) s, nobody polls (the node's own
#          sampling every 5 s runs in every window);
#   paced  PAGECOST_SECONDS s, a page's polling: GET /status and
#          GET /api/series every 2 s (the page polls the series every 5 s:
#          this is the upper bound);
#   burst  PAGECOST_POLLS (default 2000) polls back to back, for the CPU
#          time of one poll above the clock-tick resolution (10 ms).
# Usage: testnet/pagecost/run.sh   (from the repository root; needs curl)
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${PAGECOST_SECONDS:-60}
polls=${PAGECOST_POLLS:-2000}
every=2
dir=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

go build -o "$dir/up" ./cmd/up
cd "$dir"
./up ca init --data ca >/dev/null
for n in n1 n2 n3 n4 n5; do
	./up node init --data $n --ca ca/ca.crt --name $n >/dev/null
	./up ca issue --data ca --role node --in $n/node.csr --out $n/node.crt >/dev/null
done
base=$((20000 + RANDOM % 20000))
http=127.0.0.1:$((base + 100))
./up node run --data n1 --listen /ip4/127.0.0.1/tcp/$base --http $http >n1.out 2>n1.log &
pid=$!
pids+=("$pid")
./up node status --http $http --wait 30s | grep -o "/ip4/127.0.0.1/tcp/$base/p2p/[A-Za-z0-9]*" >boot.txt
for i in 2 3 4 5; do
	./up node run --data n$i --listen /ip4/127.0.0.1/tcp/$((base + i)) --bootstrap-file boot.txt >n$i.out 2>n$i.log &
	pids+=("$!")
done
./up node status --http $http --wait 30s --peers 4 >/dev/null

tck=$(getconf CLK_TCK)
cpu_ms() { awk -v t="$tck" '{ print ($14 + $15) * 1000 / t }' "/proc/$pid/stat"; }
poll() {
	curl -fsS -o /dev/null "http://$http/status"
	curl -fsS -o /dev/null "http://$http/api/series"
}

poll # the first answers warm the handlers
a=$(cpu_ms)
sleep "$secs"
b=$(cpu_ms)
end=$((SECONDS + secs))
while [ $SECONDS -lt $end ]; do
	poll
	sleep $every
done
c=$(cpu_ms)
bytes=$(( $(curl -fsS "http://$http/status" | wc -c) + $(curl -fsS "http://$http/api/series" | wc -c) ))
samples=$(curl -fsS "http://$http/api/series" | grep -o '"age_s"' | wc -l)
start=$(date +%s.%N)
for _ in $(seq "$polls"); do poll; done
wall=$(echo "$(date +%s.%N) - $start" | bc)
d=$(cpu_ms)

awk -v a="$a" -v b="$b" -v c="$c" -v d="$d" -v s="$secs" -v n="$polls" -v e="$every" -v by="$bytes" -v sm="$samples" -v w="$wall" -v pid="$pid" 'BEGIN {
	idle = b - a; paced = c - b; burst = d - c - idle * w / s # less the background over the burst
	printf "node n1 (pid %s): CPU time on /proc/PID/stat, 10 ms ticks\n", pid
	printf "idle   %4d s: %7.0f ms CPU = %.3f %% of a core\n", s, idle, 100 * idle / (s * 1000)
	printf "paced  %4d s: %7.0f ms CPU = %.3f %% of a core (one poll of /status + /api/series every %d s)\n", s, paced, 100 * paced / (s * 1000), e
	printf "       polling adds %.0f ms over %d s = %.3f %% of a core (noise: a few ticks)\n", paced - idle, s, 100 * (paced - idle) / (s * 1000)
	printf "burst  %d polls in %.1f s: %.0f ms CPU above idle = %.3f ms per poll (%d bytes, %d samples in the series)\n", n, w, burst, burst / n, by, sm
	printf "       at one poll per %d s: %.4f %% of a core\n", e, 100 * (burst / n) / (e * 1000)
}'
