// Package creditnet is the node's side of credit receipts (issue 22):
// each client's receipts (package credit), held on the r nodes closest to
// the client's credit key (credit.Key), so that anyone can gather and
// verify a client's credit with no statistics server.
//
// A put (wire.ProtoCreditPut) from a project, a node or a client is
// verified whole before anything is stored: every receipt's certificate
// (the CA's, a project's, of the project it names, valid when it was made,
// not revoked) and signature. One that fails refuses the whole put, is
// counted by reason in up_credit_refused_total and logged with its
// sender; nothing changes. Per client and project the node keeps the
// KeepPerProject newest receipts by sequence number; of two different
// receipts with one number it keeps the first (Sum reports such a
// project as contradicting itself). A get (wire.ProtoCreditGet) answers
// what the node holds for one client, each project's newest first.
//
// Each repair round (the job republish period) a holder pushes a
// client's receipts to those of the client's r live closest it has not
// pushed them to since they changed, and a holder no longer among them
// deletes its copy once they all took them. The client also republishes
// its own (creditclient.Publish), as it is the party that wants them kept.
//
// The project's and client's side of these protocols is creditclient.
package creditnet
