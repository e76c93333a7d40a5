// Package up_test holds the module's one layering test: which packages may
// import which, checked over the import graph `go list` reports.
package up_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// noClockFilesRandomness are the imports a package that is pure in the
// strict sense (no network, no files, no clock, no randomness) must never
// have, whatever its allow-list says.
var noClockFilesRandomness = []string{"net", "os", "time", "math/rand", "math/rand/v2", "crypto/rand"}

// purePackages are the packages that hold decisions and encodings only:
// each has its allow-list of direct imports, and none may depend,
// transitively, on libp2p or net.
var purePackages = []purePackage{
	{
		// Ed25519 verification with cached expanded keys: pure (a cache
		// of computed values behind a mutex), no clock, files or
		// network; its tests' randomness is seeded.
		path:           module + "/sigverify",
		allowed:        []string{"crypto/ed25519", "crypto/sha256", "sync", "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"},
		neverImports:   noClockFilesRandomness,
		allowedInTests: []string{"crypto/ed25519", "math/rand/v2", "slices", "testing"},
	},
	{
		// The package is pure: no network, no files, no clock, no randomness.
		path: module + "/claim",
		allowed: []string{
			"bytes",
			"cmp",
			"crypto/ed25519",
			"errors",
			"fmt",
			"slices",
			"github.com/up-pool/up/codec",
			"github.com/up-pool/up/job",
			"github.com/up-pool/up/sigverify",
		},
		neverImports: noClockFilesRandomness,
	},
	{
		// Content-addressed blobs: chunking, manifests, CIDs and the
		// project's statement. Pure: no network, no files, no clock, no
		// randomness (io only for SplitReader over the caller's reader);
		// its tests' randomness is seeded math/rand/v2.
		path: module + "/blob",
		allowed: []string{
			"bytes",
			"crypto/ed25519",
			"crypto/sha256",
			"errors",
			"fmt",
			"io",
			"unicode/utf8",
			"github.com/ipfs/go-cid",
			"github.com/multiformats/go-multihash",
			"github.com/up-pool/up/codec",
			"github.com/up-pool/up/job",
			"github.com/up-pool/up/sigverify",
		},
		neverImports:   noClockFilesRandomness,
		allowedInTests: []string{"math/rand/v2", "strings", "testing", "testing/iotest"},
	},
	{
		// A client's quota of jobs in progress, as its record nodes keep
		// it: pure, standard library only; times are arguments.
		path:           module + "/quota",
		allowed:        []string{"errors", "fmt", "slices"},
		standardOnly:   true,
		allowedInTests: []string{"errors", "testing"},
	},
	{
		// The replica placement rules: pure, node IDs a type parameter.
		path:         module + "/replica",
		allowed:      []string{"slices", "github.com/up-pool/up/job"},
		neverImports: noClockFilesRandomness,
	},
	{
		// The package is pure, standard library only.
		path: module + "/client/sched",
		allowed: []string{
			"errors", "fmt", "maps", "math", "math/rand/v2",
			"slices", "sort", "time",
		},
		standardOnly: true,
	},
	{
		// Whether the client can finish a job before its deadline: pure,
		// standard library only; time is an argument (time.Time values,
		// never the clock).
		path:           module + "/client/feasible",
		allowed:        []string{"fmt", "math", "time"},
		standardOnly:   true,
		allowedInTests: []string{"encoding/json", "math/rand/v2", "strings", "testing"},
	},
	{
		// The package is pure: nothing it depends on, transitively, may be
		// outside the standard library.
		path: module + "/dht/keyspace",
		allowed: []string{
			"crypto/sha256",
			"encoding/binary",
			"encoding/hex",
			"errors",
			"fmt",
			"math/bits",
			"math/rand/v2",
			"slices",
			"sort",
		},
		standardOnly: true,
	},
	{
		// The index core stays pure: no networking, no libp2p.
		path: module + "/index",
		allowed: []string{
			"bytes",
			"cmp",
			"errors",
			"fmt",
			"math",
			"math/rand/v2",
			"slices",
			"strings",
			"github.com/google/btree",
			"github.com/up-pool/up/job",
			"github.com/up-pool/up/dht/keyspace",
		},
	},
	{
		// The package is pure: no network, no files, no clock, no
		// randomness; nothing it depends on (its codec included) pulls in
		// libp2p.
		path: module + "/job",
		allowed: []string{
			"bytes",
			"cmp",
			"crypto",
			"crypto/ed25519",
			"crypto/sha256",
			"encoding/binary",
			"errors",
			"fmt",
			"slices",
			"unicode",
			"unicode/utf8",
			"github.com/ipfs/go-cid",
			"github.com/transparency-dev/merkle/compact",
			"github.com/transparency-dev/merkle/proof",
			"github.com/transparency-dev/merkle/rfc6962",
			"github.com/multiformats/go-multihash",
			"github.com/up-pool/up/codec",
			"github.com/up-pool/up/sigverify",
		},
		neverImports: noClockFilesRandomness,
	},
	{
		// The load figure, the move decision, the split and the balancing
		// controller the nodes and the simulator step: nothing it depends
		// on, transitively, may be outside the standard library and this
		// module's keyspace package, or be networking; no files, no clock,
		// no randomness of its own (the controller's time is an argument
		// and its source the caller's); math/rand/v2 only in tests.
		path: module + "/loadbalance",
		allowed: []string{
			"fmt",
			"math",
			"slices",
			"sort",
			"github.com/up-pool/up/dht/keyspace",
		},
		neverImports:    noClockFilesRandomness,
		standardOnly:    true,
		besidesStandard: []string{module + "/dht/keyspace"},
		allowedInTests:  []string{"math/rand/v2", "os/exec", "strings", "testing"},
	},
	{
		// A result sealed and signed in memory: no network, no files, no
		// clock, no randomness of its own. io is there because Seal takes
		// its randomness as an io.Reader from the caller; x/crypto's
		// curve25519 and nacl/box seal the inner record; crypto/hmac
		// derives a commitment's salt from the client's key (commit.go);
		// job for the Merkle batch signature several results share
		// (batch.go: job.SignBatchWith, job.BatchMessage), which job owns;
		// crypto/hkdf, crypto/cipher and x/crypto's chacha20poly1305 for a
		// session's key and records (session.go).
		path: module + "/result",
		allowed: []string{
			"bytes",
			"crypto/cipher",
			"crypto/ed25519",
			"crypto/hkdf",
			"crypto/hmac",
			"crypto/sha256",
			"errors",
			"fmt",
			"io",
			"strings",
			"github.com/up-pool/up/codec",
			"github.com/up-pool/up/job",
			"golang.org/x/crypto/chacha20poly1305",
			"golang.org/x/crypto/curve25519",
			"golang.org/x/crypto/nacl/box",
			"github.com/up-pool/up/sigverify",
		},
		neverImports: noClockFilesRandomness,
	},
	{
		// The bytes parties exchange: message types and framing only, no
		// network, no files, no clock, no randomness. bufio and io are the
		// frame readers and writers over streams the caller owns. It
		// imports fxamacker/cbor directly, for cbor.RawMessage in two
		// message types, though codec otherwise owns the CBOR encoding;
		// blob for the bounds of the blob messages.
		path: module + "/wire",
		allowed: []string{
			"bufio",
			"bytes",
			"crypto/ed25519",
			"fmt",
			"io",
			"math",
			"slices",
			"strings",
			"unicode/utf8",
			"github.com/fxamacker/cbor/v2",
			"github.com/up-pool/up/blob",
			"github.com/up-pool/up/codec",
			"github.com/up-pool/up/job",
		},
		neverImports: noClockFilesRandomness,
	},
}

// Names of the shell rules, which pending violations refer to.
const (
	ruleOverlay    = "a. overlay links no pool, claimnet, indexnet or balancenet"
	ruleNode       = "b. only cmd/up and the harness import node"
	ruleClientSide = "c. client-side packages link no store, pool or server shell (blobnet included)"
	ruleSimulator  = "d. the simulator links no libp2p, pebble, prometheus or balancenet"
	ruleCADir      = "e. the CA's directory links no network service"
	ruleTestkit    = "f. the tests' kit links only the standard library"
	ruleBalance    = "g. only node imports balancenet"
	ruleHarness    = "h. the harness links none of the runs on it (bench, scenario, demo)"
	ruleSandbox    = "i. the sandbox links no network stack: no libp2p, nothing of this module but apps"
)

// shellRules are the forbidden edges between the network shells.
var shellRules = []dependencyRule{
	{
		// The overlay is the bottom of the network stack: the services
		// built on it must not leak back into it.
		name:       ruleOverlay,
		from:       treeOf("overlay"),
		forbidden:  []packageSet{treeOf("pool"), treeOf("claimnet"), treeOf("indexnet"), treeOf("balancenet"), treeOf("blobnet"), treeOf("creditnet")},
		transitive: true,
	},
	{
		// node is the daemon's wiring; only the binary and the harness
		// that starts daemons in-process may build one.
		name:      ruleNode,
		from:      treeOf(""),
		except:    treeOf("cmd/up", "testnet", "node"),
		forbidden: []packageSet{treeOf("node")},
	},
	{
		// A worker or a project holds no replicas, serves no protocol of a
		// node and never moves: it must not link the node's job store, its
		// pebble database, the server halves of claiming, the index and
		// blobs, or the balancing shell. The blob core, the client's
		// fetcher and cache, and the blob protocols' caller side are
		// client-side too.
		name: ruleClientSide,
		from: treeOf("agent", "client", "project", "claimclient", "indexclient", "blob", "blobclient", "credit", "creditclient", "quota"),
		forbidden: []packageSet{treeOf("store"), treeOf("pool"), treeOf("claimnet"), treeOf("indexnet"),
			treeOf("blobnet"), treeOf("creditnet"), treeOf("balancenet"), externalTree("pebble", "github.com/cockroachdb/pebble")},
		transitive: true,
	},
	{
		// The simulator runs the pure decision code alone, in one process,
		// on simulated time: no real network, database or metrics.
		name: ruleSimulator,
		from: treeOf("testnet/sim"),
		forbidden: []packageSet{
			containing("libp2p"),
			externalTree("pebble", "github.com/cockroachdb/pebble"),
			externalTree("prometheus", "github.com/prometheus"),
			treeOf("balancenet"),
		},
		transitive: true,
	},
	{
		// The CA operator's tools run offline, beside the CA key: they
		// link no overlay, store or daemon (keystore's libp2p key types
		// are all they get of libp2p).
		name: ruleCADir,
		from: treeOf("cadir"),
		forbidden: []packageSet{
			treeOf("overlay", "dht", "pool", "store", "node"),
			externalTree("libp2p host", "github.com/libp2p/go-libp2p/p2p"),
		},
		transitive: true,
	},
	{
		// Every package's tests may use testkit, those inside overlay and
		// store included: it must import nothing that imports them back.
		name:       ruleTestkit,
		from:       treeOf("testnet/testkit"),
		forbidden:  []packageSet{outsideStandardLibrary()},
		transitive: true,
	},
	{
		// The balancing shell moves the node it runs in (it restarts the
		// node's network stack): node builds and wires it; the others use
		// the node's methods, and the simulator the controller itself.
		name:      ruleBalance,
		from:      treeOf(""),
		except:    treeOf("node", "balancenet"),
		forbidden: []packageSet{treeOf("balancenet")},
	},
	{
		// The testnet harness (networks, fixtures, checkers) is what the
		// bench, the scenarios and the demo run on; none of them may leak
		// back into it, nor into what its tests' users link.
		name:       ruleHarness,
		from:       packagesOf("testnet"),
		forbidden:  []packageSet{treeOf("testnet/bench", "testnet/scenario", "testnet/demo")},
		transitive: true,
	},
	{
		// The sandbox runs untrusted code inside the volunteer's process:
		// it links no network stack, so a guest's only way out is WASI,
		// which opens no socket. (wazero links the standard library's net,
		// for listeners a host may hand a guest through the context; the
		// sandbox hands it none.)
		name:       ruleSandbox,
		from:       treeOf("sandbox"),
		forbidden:  []packageSet{containing("libp2p"), moduleExcept("sandbox", "apps")},
		transitive: true,
	},
}

// pendingViolation is a violation that holds today and is to be cut: the
// test fails if it no longer occurs (delete the entry), so this list only
// shrinks.
type pendingViolation struct {
	rule      string
	pkg       string // relative to the module
	forbidden string // the forbidden set's name
	chain     string // the shortest import chain today
}

// key matches violation.key.
func (p pendingViolation) key() string {
	return p.rule + " | " + p.pkg + " | " + p.forbidden
}

// pending are today's violations of the shell rules: none since issue 18
// cut the client-side and simulator chains. A rule that cannot hold at
// once gets its chains listed here, and the ratchet keeps them shrinking.
var pending = []pendingViolation{}

// TestLayering checks the module's import graph against purePackages and
// shellRules; run it with -v to see the chains of the pending violations.
func TestLayering(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not on PATH")
	}
	graph, testImports, err := loadImportGraph()
	if err != nil {
		t.Fatal(err)
	}
	if len(graph) < len(purePackages) {
		t.Fatalf("go list reported %d packages; the check is not working", len(graph))
	}
	found := checkLayering(graph, testImports, layeringRules{pure: purePackages, deps: shellRules})
	compareWithPending(t, found, pending)
}

// compareWithPending fails on every problem ratchet finds and logs the
// chain of every pending violation that still holds.
func compareWithPending(t *testing.T, found []violation, pending []pendingViolation) {
	t.Helper()
	problems, stillPending := ratchet(found, pending)
	for _, p := range problems {
		t.Error(p)
	}
	for _, v := range stillPending {
		t.Logf("pending, %s: %s", v.rule, v.route())
	}
}

// ratchet compares found with pending. Its problems are every violation
// that is not pending, every pending one whose chain changed, and every
// pending one that no longer occurs; stillPending are the pending ones
// that hold as recorded.
func ratchet(found []violation, pending []pendingViolation) (problems []string, stillPending []violation) {
	expected := make(map[string]pendingViolation, len(pending))
	for _, p := range pending {
		expected[p.key()] = p
	}
	occurred := make(map[string]bool, len(found))
	for _, v := range found {
		occurred[v.key()] = true
		p, ok := expected[v.key()]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: %s reaches %s: %s", v.rule, shortPath(v.pkg), v.forbidden, v.route()))
		case p.chain != v.route():
			problems = append(problems, fmt.Sprintf("%s: pending %s -> %s now goes %s (was %s); update its chain",
				v.rule, p.pkg, p.forbidden, v.route(), p.chain))
		default:
			stillPending = append(stillPending, v)
		}
	}
	for _, p := range pending {
		if !occurred[p.key()] {
			problems = append(problems, fmt.Sprintf("%s: pending %s (%s) no longer occurs; delete it from pending",
				p.rule, p.chain, p.forbidden))
		}
	}
	return problems, stillPending
}

// listedPackage is what loadImportGraph reads of each package go list
// reports.
type listedPackage struct {
	ImportPath  string
	Imports     []string
	TestImports []string
}

// loadImportGraph runs go list once over the module and returns its
// non-test import graph, every dependency included, and the imports of
// each package's own test files.
func loadImportGraph() (graph, testImports importGraph, err error) {
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports,TestImports", "./...")
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return nil, nil, fmt.Errorf("go list the module's packages: %w: %s", err, strings.TrimSpace(string(exit.Stderr)))
		}
		return nil, nil, fmt.Errorf("go list the module's packages: %w", err)
	}
	graph, testImports = importGraph{}, importGraph{}
	decoder := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := decoder.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, nil, fmt.Errorf("decode go list output: %w", err)
		}
		graph[p.ImportPath] = p.Imports
		testImports[p.ImportPath] = p.TestImports
	}
	return graph, testImports, nil
}
