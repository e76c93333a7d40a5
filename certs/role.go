package certs

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Role is what a certificate holder is allowed to be in the pool. It is
// stored as the single OrganizationalUnit of the certificate's subject.
type Role string

// The four roles.
const (
	RoleCA      Role = "ca"
	RoleNode    Role = "node"
	RoleProject Role = "project"
	RoleClient  Role = "client"
)

// allRoles lists every valid role, in the order used in error messages.
var allRoles = []Role{RoleCA, RoleNode, RoleProject, RoleClient}

// ParseRole returns the Role named by s. The error names the bad value and
// lists the valid ones.
func ParseRole(s string) (Role, error) {
	for _, r := range allRoles {
		if string(r) == s {
			return r, nil
		}
	}
	return "", fmt.Errorf("certs: unknown role %q (valid: ca, node, project, client)", s)
}

// isLeafRole reports whether r is a role the CA issues certificates for
// (node, project or client).
func isLeafRole(r Role) bool {
	return r == RoleNode || r == RoleProject || r == RoleClient
}

// MaxNameLen is the longest subject CommonName, in bytes, that NewAuthority,
// Issue and CreateRequest accept.
const MaxNameLen = 64

// validateName checks a subject CommonName: non-empty, at most MaxNameLen
// bytes, valid UTF-8, every rune printable (unicode.IsPrint: letters, marks,
// numbers, punctuation, symbols and the ASCII space).
func validateName(name string) error {
	if name == "" {
		return fmt.Errorf("certs: name is empty")
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("certs: name is %d bytes, max %d", len(name), MaxNameLen)
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("certs: name %q is not valid UTF-8", name)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("certs: name %q contains non-printable character %U", name, r)
		}
	}
	return nil
}
