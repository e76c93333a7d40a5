package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/job"
)

// The help of the bootstrap flags, the same on every command that needs
// a node to join through.
const (
	bootstrapHelp     = "multiaddr of a node to join through, with /p2p/<id> (repeatable; this or --bootstrap-file is required)"
	bootstrapFileHelp = "file of bootstrap multiaddrs, one per line (this or --bootstrap is required)"
)

// oldFlagName registers old as a hidden spelling of the string flag name,
// bound to the same variable, so old scripts keep working. (pflag's
// deprecation notice would go to stdout, into what scripts read.)
func oldFlagName(f *pflag.FlagSet, p *string, name, old string) {
	f.StringVar(p, old, "", "deprecated: use --"+name)
	_ = f.MarkHidden(old)
}

// checkPartyName reports why name cannot name a node, project or client.
// A party's name is its certificate's subject; a project's is also the
// keyword its jobs are found by, the prefix of its "<name>:finished"
// keyword, a query term and the NAME of 'up client run --project
// NAME:SHARE' and '--allow NAME=APPS'. So it must be a valid keyword (no
// spaces, parentheses or control characters), not a query operator (AND,
// OR, NOT), and hold none of ':', '=' and ','.
func checkPartyName(name string) error {
	if name == "" {
		return fmt.Errorf("empty name")
	}
	if len(name) > certs.MaxNameLen {
		return fmt.Errorf("%d bytes, max %d", len(name), certs.MaxNameLen)
	}
	if err := job.ValidateKeyword(name); err != nil {
		return fmt.Errorf("a name must not hold spaces, parentheses or control characters")
	}
	if i := strings.IndexAny(name, ":=,"); i >= 0 {
		return fmt.Errorf("a name must not hold %q (it separates a project's name from its share or applications)", name[i])
	}
	switch name {
	case "AND", "OR", "NOT":
		return fmt.Errorf("%s is a query operator", name)
	}
	return nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./+:@%,=", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// changedFlags says which of the flags names were given on the command
// line, for flags whose zero value is not the default.
func changedFlags(f *pflag.FlagSet, names ...string) map[string]bool {
	set := make(map[string]bool, len(names))
	for _, name := range names {
		set[name] = f.Changed(name)
	}
	return set
}
