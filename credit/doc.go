// Package credit owns U.P.'s credit receipts (issue 22): a project's
// signed word that a client's results were valid and earned credit, which
// anyone can check without asking the project or a statistics server.
//
// A Receipt names the project (by name and certificate reference), the
// client (by its Ed25519 public key), the results it newly credits — per
// result the unit, the job the client ran, the amount and when the
// project graded it, on the project's clock — and the running total the
// project has granted the client so far, with a sequence number that
// rises by one per receipt. The project signs one receipt per client per
// harvest, covering every result graded valid since the last (a batch:
// one signature for up to MaxEntries results), and sends it with its
// certificate, so a receipt verifies on its own: the certificate is the
// CA's, of a project, of the name the receipt gives, valid when the
// receipt was made and not revoked now; the signature is that
// certificate's key's.
//
// Receipts are held in the overlay on the r nodes closest to the client's
// credit key (Key); package creditnet stores and repairs them there,
// package creditclient publishes and gathers them. Sum, here, turns what
// the nodes answered into a client's credit: every receipt verified, a
// forged or altered one rejected and attributed to the node that sent it,
// per project the newest receipt's total, checked against the receipts
// before it where they are seen, and the totals summed across projects.
//
// The package opens no socket or file, reads no clock and draws no
// randomness: time comes in as an argument. (It checks certificates with
// package certs, which links crypto/x509 and so net: the layering test
// lists it as client-side, not as pure.)
package credit
