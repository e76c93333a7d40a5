package up_test

import (
	"slices"
	"strings"
)

// module is this repository's module path; reports drop it from package
// paths ("client -> claimnet -> pool").
const module = "github.com/up-pool/up"

// importGraph maps a package's import path to the paths its non-test files
// import directly.
type importGraph map[string][]string

// packageSet is a named set of import paths that a rule applies to or
// forbids.
type packageSet struct {
	name string
	has  func(path string) bool
}

// contains reports whether path is in the set; the zero set is empty.
func (s packageSet) contains(path string) bool {
	return s.has != nil && s.has(path)
}

// treeOf is the set of the given module packages (paths relative to the
// module, "" for the module root) and every package under them.
func treeOf(relative ...string) packageSet {
	roots := make([]string, len(relative))
	for i, r := range relative {
		roots[i] = strings.TrimSuffix(module+"/"+r, "/")
	}
	return packageSet{name: strings.Join(relative, ", "), has: func(path string) bool {
		return slices.ContainsFunc(roots, func(root string) bool { return inTree(path, root) })
	}}
}

// packagesOf is the set of the given module packages alone (paths
// relative to the module), not those under them.
func packagesOf(relative ...string) packageSet {
	paths := make([]string, len(relative))
	for i, r := range relative {
		paths[i] = strings.TrimSuffix(module+"/"+r, "/")
	}
	return packageSet{name: strings.Join(relative, ", "), has: func(path string) bool { return slices.Contains(paths, path) }}
}

// moduleExcept is the set of every module package outside the given
// trees (paths relative to the module).
func moduleExcept(relative ...string) packageSet {
	all, except := treeOf(""), treeOf(relative...)
	return packageSet{name: "this module but " + except.name, has: func(path string) bool {
		return all.contains(path) && !except.contains(path)
	}}
}

// externalTree is the set of the package root (a full import path) and
// every package under it.
func externalTree(name, root string) packageSet {
	return packageSet{name: name, has: func(path string) bool { return inTree(path, root) }}
}

// containing is the set of every package whose path contains sub.
func containing(sub string) packageSet {
	return packageSet{name: sub, has: func(path string) bool { return strings.Contains(path, sub) }}
}

// outsideStandardLibrary is the set of every package that is not in the
// standard library, except the given full import paths.
func outsideStandardLibrary(except ...string) packageSet {
	return packageSet{name: "outside the standard library", has: func(path string) bool {
		return !isStandard(path) && !slices.Contains(except, path)
	}}
}

// inTree reports whether path is root or a package under it.
func inTree(path, root string) bool {
	return path == root || strings.HasPrefix(path, root+"/")
}

// isStandard reports whether path is a standard-library package: like the
// go tool, one whose first element has no dot.
func isStandard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// purePackage describes a package that must stay pure: which direct imports
// it may have and what it must never depend on.
type purePackage struct {
	path string
	// allowed is every package the non-test files may import directly.
	allowed []string
	// neverImports are packages (and their subpackages) it must not import
	// directly, whatever allowed says.
	neverImports []string
	// standardOnly: every transitive dependency is in the standard
	// library, except those in besidesStandard.
	standardOnly    bool
	besidesStandard []string
	// allowedInTests, if set, is what the package's own test files may
	// import on top of allowed.
	allowedInTests []string
}

// dependencyRule forbids the packages in from (less those in except) to
// depend on any package in a forbidden set: directly, or transitively.
type dependencyRule struct {
	name       string
	from       packageSet
	except     packageSet
	forbidden  []packageSet
	transitive bool
}

// layeringRules is everything checkLayering enforces.
type layeringRules struct {
	pure []purePackage
	deps []dependencyRule
}

// Names of the rules every pure package is held to.
const (
	ruleMissing      = "a package named by a rule exists"
	rulePureImports  = "pure: direct imports on the allow-list"
	rulePureNever    = "pure: never imported directly"
	rulePureNetwork  = "pure: no network (libp2p, net), transitively"
	rulePureStandard = "pure: standard library only, transitively"
	rulePureTests    = "pure: test imports on the allow-list"
)

// pureNeverDepends is what no pure package may depend on, transitively.
var pureNeverDepends = []packageSet{containing("libp2p"), externalTree("net", "net")}

// violation is one broken rule: pkg reaches forbidden along chain (pkg
// first, the offending package last).
type violation struct {
	rule      string
	pkg       string
	forbidden string
	chain     []string
}

// key identifies the violation independently of the chain that causes it.
func (v violation) key() string {
	return v.rule + " | " + shortPath(v.pkg) + " | " + v.forbidden
}

// route is the chain as "client -> claimnet -> pool".
func (v violation) route() string {
	short := make([]string, len(v.chain))
	for i, p := range v.chain {
		short[i] = shortPath(p)
	}
	return strings.Join(short, " -> ")
}

// shortPath drops the module prefix from a module package's path.
func shortPath(path string) string {
	if path == module {
		return "."
	}
	return strings.TrimPrefix(path, module+"/")
}

// checkLayering returns every violation of rules in graph (the non-test
// import graph) and testImports (each package's own tests' imports), in a
// stable order.
func checkLayering(graph, testImports importGraph, rules layeringRules) []violation {
	var found []violation
	for _, p := range rules.pure {
		found = append(found, checkPure(graph, testImports, p)...)
	}
	for _, r := range rules.deps {
		found = append(found, checkDependencyRule(graph, r)...)
	}
	slices.SortStableFunc(found, func(a, b violation) int { return strings.Compare(a.key(), b.key()) })
	return found
}

// checkPure returns the ways package p is not pure in graph.
func checkPure(graph, testImports importGraph, p purePackage) []violation {
	imports, ok := graph[p.path]
	if !ok {
		return []violation{{rule: ruleMissing, pkg: p.path, forbidden: "not in the import graph", chain: []string{p.path}}}
	}
	var found []violation
	for _, imp := range imports {
		if !slices.Contains(p.allowed, imp) {
			found = append(found, violation{rule: rulePureImports, pkg: p.path, forbidden: imp, chain: []string{p.path, imp}})
		}
	}
	for _, imp := range imports {
		if i := slices.IndexFunc(p.neverImports, func(never string) bool { return inTree(imp, never) }); i >= 0 {
			found = append(found, violation{rule: rulePureNever, pkg: p.path, forbidden: p.neverImports[i], chain: []string{p.path, imp}})
		}
	}
	found = append(found, reachedSets(graph, rulePureNetwork, p.path, pureNeverDepends, true)...)
	if p.standardOnly {
		nonStandard := []packageSet{outsideStandardLibrary(p.besidesStandard...)}
		found = append(found, reachedSets(graph, rulePureStandard, p.path, nonStandard, true)...)
	}
	if p.allowedInTests != nil {
		for _, imp := range testImports[p.path] {
			if !slices.Contains(p.allowed, imp) && !slices.Contains(p.allowedInTests, imp) {
				found = append(found, violation{rule: rulePureTests, pkg: p.path, forbidden: imp, chain: []string{p.path + " (tests)", imp}})
			}
		}
	}
	return found
}

// checkDependencyRule returns the violations of r in graph; a rule that
// applies to no package in graph is itself reported, since it would
// check nothing.
func checkDependencyRule(graph importGraph, r dependencyRule) []violation {
	var found []violation
	applied := false
	for _, pkg := range sortedPackages(graph) {
		if !r.from.contains(pkg) || r.except.contains(pkg) {
			continue
		}
		applied = true
		found = append(found, reachedSets(graph, r.name, pkg, r.forbidden, r.transitive)...)
	}
	if !applied {
		found = append(found, violation{rule: ruleMissing, pkg: r.from.name, forbidden: "no package for rule " + r.name, chain: []string{r.from.name}})
	}
	return found
}

// sortedPackages is every package in graph, sorted.
func sortedPackages(graph importGraph) []string {
	pkgs := make([]string, 0, len(graph))
	for p := range graph {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	return pkgs
}

// reachedSets returns one violation of rule for each of sets that pkg
// imports (directly, or also transitively), with the shortest import chain
// to the nearest package in the set.
func reachedSets(graph importGraph, rule, pkg string, sets []packageSet, transitive bool) []violation {
	var found []violation
	for _, set := range sets {
		if chain := shortestChain(graph, pkg, set, transitive); chain != nil {
			found = append(found, violation{rule: rule, pkg: pkg, forbidden: set.name, chain: chain})
		}
	}
	return found
}

// shortestChain returns the shortest import chain from pkg to a package in
// target (pkg itself excluded), visiting imports in the graph's order; nil
// if there is none. Unless transitive, only pkg's direct imports count.
func shortestChain(graph importGraph, pkg string, target packageSet, transitive bool) []string {
	cameFrom := map[string]string{pkg: ""}
	queue := []string{pkg}
	for len(queue) > 0 {
		current := queue[0]
		queue = queue[1:]
		for _, next := range graph[current] {
			if _, seen := cameFrom[next]; seen {
				continue
			}
			cameFrom[next] = current
			if target.contains(next) {
				return chainTo(cameFrom, next)
			}
			if transitive {
				queue = append(queue, next)
			}
		}
	}
	return nil
}

// chainTo walks cameFrom back from last to the start of the search.
func chainTo(cameFrom map[string]string, last string) []string {
	var chain []string
	for p := last; p != ""; p = cameFrom[p] {
		chain = append(chain, p)
	}
	slices.Reverse(chain)
	return chain
}
