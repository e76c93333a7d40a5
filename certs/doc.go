// Package certs owns U.P.'s identities: Ed25519 keys, the X.509
// certificates the CA issues to nodes, projects and clients, the CA's signed
// revocation list, and the signed position records that bind a node's libp2p
// identity to its account key. Everything takes time as an argument; nothing
// here touches the network or the clock.
//
// All keys are Ed25519. All files are PEM: private keys are PKCS#8
// ("PRIVATE KEY"), public keys PKIX ("PUBLIC KEY"), certificates
// "CERTIFICATE", signing requests "CERTIFICATE REQUEST" and revocation lists
// "X509 CRL", so the usual openssl subcommands can read them.
//
// A certificate's role is carried in its subject's OrganizationalUnit (exactly
// one value: "ca", "node", "project" or "client") and its name in the subject
// CommonName.
//
// Errors are wrapped around the sentinel errors in errors.go, so callers can
// test them with errors.Is.
package certs
