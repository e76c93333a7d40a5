package wire

import (
	"crypto/ed25519"
	"fmt"
)

// Quota protocols (package quota): a client's record nodes, the r
// closest to its credit key, give it tickets to claim jobs within its
// quota of jobs in progress, and take its reports of how they ended.
const (
	// ProtoQuotaTicket asks one of the client's record nodes for a ticket
	// to claim a job.
	ProtoQuotaTicket = "/up/quota/ticket/1.0.0"
	// ProtoQuotaReport tells a record node how a job the client held
	// ended; a record node forwards a failure to the others.
	ProtoQuotaReport = "/up/quota/report/1.0.0"
	// ProtoQuotaTicketMany asks for tickets to claim several jobs of one
	// place at once (the claim that follows is a ProtoClaimMany).
	ProtoQuotaTicketMany = "/up/quota/ticket/many/1.0.0"
	// ProtoQuotaTicketManyOwn is ProtoQuotaTicketMany whose done and
	// released reports go unsigned (QuotaTicketManyOwnRequest): the
	// client sends them over its own authenticated connection, and a
	// record node forwards none of them (only failures, which stay
	// signed). A client asks a node that does not serve it the old way,
	// its reports signed.
	ProtoQuotaTicketManyOwn = "/up/quota/ticket/many/1.1.0"
)

// Quota protocol bounds, in bytes.
const (
	MaxQuotaFrame       = 1<<10 + MaxQuotaReports*(MaxJobKeyLen+128)
	MaxQuotaTicketReply = MaxReplyBytes + 64
	quotaOutcomeFailed  = 3 // quota.Failed
	quotaOutcomeMax     = quotaOutcomeFailed
)

// MaxQuotaReports bounds the reports one ticket request carries.
const MaxQuotaReports = 32

// QuotaTicketRequest asks for a ticket to claim Job, held for HoldMS
// (a duration: the record node ends the hold on its own clock). Reports
// are the client's reports of jobs that ended since its last request to
// this node, applied before the ticket is decided: a job's end costs no
// message of its own.
type QuotaTicketRequest struct {
	_       struct{} `cbor:",toarray"`
	Job     []byte
	HoldMS  int64
	Reports []QuotaReport
	// Place is the job's place key (job.PlaceKey) when it is not its key,
	// else empty: the ticket names it (claim.Statement.Place).
	Place []byte
}

// Validate bounds a decoded QuotaTicketRequest.
func (r *QuotaTicketRequest) Validate() error {
	if err := validKey(r.Job); err != nil {
		return err
	}
	if len(r.Place) > 0 {
		if err := validKey(r.Place); err != nil {
			return fmt.Errorf("ticket's place: %w", err)
		}
	}
	if r.HoldMS <= 0 {
		return fmt.Errorf("ticket hold of %d ms: %w", r.HoldMS, ErrMalformed)
	}
	return validReports(r.Reports, false)
}

// validReports bounds the reports a ticket request carries; ownOK
// lets done and released reports go unsigned (QuotaReport.validate).
func validReports(reps []QuotaReport, ownOK bool) error {
	if len(reps) > MaxQuotaReports {
		return fmt.Errorf("ticket request with %d reports (max %d): %w", len(reps), MaxQuotaReports, ErrMalformed)
	}
	for i := range reps {
		if err := reps[i].validate(ownOK); err != nil {
			return err
		}
	}
	return nil
}

// QuotaTicketResponse carries the ticket: a claim.Signed of kind Ticket
// naming the job, the client and the record node.
type QuotaTicketResponse struct {
	_      struct{} `cbor:",toarray"`
	Ticket []byte
}

// Validate bounds a decoded QuotaTicketResponse.
func (r *QuotaTicketResponse) Validate() error {
	if len(r.Ticket) == 0 || len(r.Ticket) > MaxReplyBytes {
		return fmt.Errorf("ticket of %d bytes: %w", len(r.Ticket), ErrMalformed)
	}
	return nil
}

// QuotaReport is a client's word that a job it held ended with Outcome
// (quota.Outcome): Sig is the client's Ed25519 signature over
// QuotaReportMessage, so a record node can forward it and the others
// check it without the client. A done or released report the client
// sends itself in a QuotaTicketManyOwnRequest may go unsigned (empty
// Sig; its connection vouches for it); such a report is never forwarded.
type QuotaReport struct {
	_       struct{} `cbor:",toarray"`
	Client  []byte
	Job     []byte
	Outcome uint8
	Sig     []byte
}

// Validate bounds a decoded QuotaReport: every one signed.
func (r *QuotaReport) Validate() error { return r.validate(false) }

// Unsigned reports a report without a signature: a done or released
// report the client sent over its own connection (ProtoQuotaTicketManyOwn).
func (r *QuotaReport) Unsigned() bool { return len(r.Sig) == 0 }

// validate is Validate; with ownOK a done or released report may go
// unsigned (a failure, which record nodes forward, never).
func (r *QuotaReport) validate(ownOK bool) error {
	if err := r.validateFields(); err != nil {
		return err
	}
	if ownOK && r.Unsigned() && r.Outcome != quotaOutcomeFailed {
		return nil
	}
	if len(r.Sig) != ed25519.SignatureSize {
		return fmt.Errorf("quota report signature of %d bytes: %w", len(r.Sig), ErrMalformed)
	}
	return nil
}

// validateFields bounds a report's fields but its signature.
func (r *QuotaReport) validateFields() error {
	if err := validKey(r.Job); err != nil {
		return err
	}
	switch {
	case len(r.Client) != ed25519.PublicKeySize:
		return fmt.Errorf("quota report for a client key of %d bytes: %w", len(r.Client), ErrMalformed)
	case r.Outcome < 1 || r.Outcome > quotaOutcomeMax:
		return fmt.Errorf("quota report outcome %d: %w", r.Outcome, ErrMalformed)
	}
	return nil
}

// QuotaReportMessage is what the client signs in a QuotaReport.
func QuotaReportMessage(client, job []byte, outcome uint8) []byte {
	b := append([]byte("up/quota-report/v1\x00"), client...)
	b = append(b, byte(len(job)))
	b = append(b, job...)
	return append(b, outcome)
}

// QuotaTicketManyRequest asks for tickets to claim Jobs (1 to
// MaxClaimMany distinct keys, all of Place), each held for HoldMS, with
// the reports of QuotaTicketRequest.
type QuotaTicketManyRequest struct {
	_       struct{} `cbor:",toarray"`
	Jobs    [][]byte
	HoldMS  int64
	Reports []QuotaReport
	Place   []byte
}

// Validate bounds a decoded QuotaTicketManyRequest: every report signed.
func (r *QuotaTicketManyRequest) Validate() error { return r.validate(false) }

// QuotaTicketManyOwnRequest is QuotaTicketManyRequest as
// ProtoQuotaTicketManyOwn carries it (the same encoding): its done and
// released reports may go unsigned; a failure is signed.
type QuotaTicketManyOwnRequest QuotaTicketManyRequest

// Validate bounds a decoded QuotaTicketManyOwnRequest.
func (r *QuotaTicketManyOwnRequest) Validate() error {
	return (*QuotaTicketManyRequest)(r).validate(true)
}

// validate bounds the request; ownOK: as QuotaReport.validate.
func (r *QuotaTicketManyRequest) validate(ownOK bool) error {
	if len(r.Jobs) == 0 || len(r.Jobs) > MaxClaimMany {
		return fmt.Errorf("tickets for %d jobs: %w", len(r.Jobs), ErrMalformed)
	}
	seen := make(map[string]bool, len(r.Jobs))
	for _, k := range r.Jobs {
		if seen[string(k)] {
			return fmt.Errorf("tickets name job %x twice: %w", k, ErrMalformed)
		}
		seen[string(k)] = true
		one := QuotaTicketRequest{Job: k, HoldMS: r.HoldMS, Place: r.Place}
		if err := one.Validate(); err != nil {
			return err
		}
	}
	return validReports(r.Reports, ownOK)
}

// QuotaTicketManyResponse carries a ticket for each job of the request,
// in its order, under one signature (claim.SignBatch): the first jobs
// the client's quota had room for; empty for the rest (at least one is
// given: with no room the request is refused, StatusQuota).
type QuotaTicketManyResponse struct {
	_       struct{} `cbor:",toarray"`
	Tickets [][]byte
	// Quota is the client's quota of jobs in progress at this record
	// node (quota.Account.Quota), so that the client asks next for as
	// many tickets as it has room for (claimclient.TicketRoom): the
	// record node's word, unsigned. A record node that overstates it
	// gets requests it refuses in part; one that understates it gets
	// smaller ones; neither holds anything. 0: not said.
	Quota int64
}

// MaxQuotaSaid bounds QuotaTicketManyResponse.Quota.
const MaxQuotaSaid = 1 << 16

// Validate bounds a decoded QuotaTicketManyResponse.
func (r *QuotaTicketManyResponse) Validate() error {
	if len(r.Tickets) == 0 || len(r.Tickets) > MaxClaimMany || len(r.Tickets[0]) == 0 {
		return fmt.Errorf("ticket response with %d tickets: %w", len(r.Tickets), ErrMalformed)
	}
	if r.Quota < 0 || r.Quota > MaxQuotaSaid {
		return fmt.Errorf("ticket response saying a quota of %d: %w", r.Quota, ErrMalformed)
	}
	for _, t := range r.Tickets {
		if len(t) > MaxReplyBytes {
			return fmt.Errorf("ticket of %d bytes: %w", len(t), ErrMalformed)
		}
	}
	return nil
}
