package wire

import "fmt"

// Credit protocols: a client's credit receipts (package credit), held on
// the r nodes closest to the client's credit key.
const (
	// ProtoCreditPut stores signed receipts; from a project (publishing),
	// a node (repair) or a client (its own receipts).
	ProtoCreditPut = "/up/credit/put/1.0.0"
	// ProtoCreditGet returns the receipts a node holds for one client.
	ProtoCreditGet = "/up/credit/get/1.0.0"
)

// Credit protocol bounds: a receipt's encoding (credit.MaxSignedLen, the
// same number), receipts per put, and a get's reply.
const (
	MaxCreditReceipt   = 33 << 10
	MaxCreditPerPut    = 16
	MaxCreditPutFrame  = MaxCreditPerPut*(MaxCreditReceipt+8) + 1<<10
	MaxCreditGetFrame  = 1 << 10
	MaxCreditGetReply  = 2<<20 + 1<<10
	MaxCreditGetCount  = 256
	creditClientKeyLen = 32
)

// CreditPut offers signed receipts (credit.Signed, encoded) to store.
type CreditPut struct {
	_        struct{} `cbor:",toarray"`
	Receipts [][]byte
}

// Validate bounds a decoded CreditPut.
func (p *CreditPut) Validate() error {
	if len(p.Receipts) == 0 || len(p.Receipts) > MaxCreditPerPut {
		return fmt.Errorf("credit put of %d receipts (want 1..%d): %w", len(p.Receipts), MaxCreditPerPut, ErrMalformed)
	}
	return validateReceipts(p.Receipts)
}

func validateReceipts(rs [][]byte) error {
	for i, r := range rs {
		if len(r) == 0 || len(r) > MaxCreditReceipt {
			return fmt.Errorf("credit receipt %d of %d bytes (want 1..%d): %w", i, len(r), MaxCreditReceipt, ErrMalformed)
		}
	}
	return nil
}

// CreditPutResponse says what the node did with an accepted put (a put
// with any receipt that does not verify is refused whole, its reply's
// message saying why).
type CreditPutResponse struct {
	_      struct{} `cbor:",toarray"`
	Stored uint16   // receipts newly stored
	Had    uint16   // receipts it held already, or older than those it keeps
}

// Validate bounds a decoded CreditPutResponse.
func (r *CreditPutResponse) Validate() error {
	if int(r.Stored)+int(r.Had) > MaxCreditPerPut {
		return fmt.Errorf("credit put response counts %d receipts (max %d): %w", int(r.Stored)+int(r.Had), MaxCreditPerPut, ErrMalformed)
	}
	return nil
}

// CreditGet asks for the receipts held for one client, by its Ed25519
// public key.
type CreditGet struct {
	_      struct{} `cbor:",toarray"`
	Client []byte
}

// Validate bounds a decoded CreditGet.
func (g *CreditGet) Validate() error {
	if len(g.Client) != creditClientKeyLen {
		return fmt.Errorf("credit get for a client key of %d bytes (want %d): %w", len(g.Client), creditClientKeyLen, ErrMalformed)
	}
	return nil
}

// CreditGetResponse returns the receipts a node holds for the client:
// each project's newest first, then older ones while the reply has room.
type CreditGetResponse struct {
	_        struct{} `cbor:",toarray"`
	Receipts [][]byte
}

// Validate bounds a decoded CreditGetResponse.
func (r *CreditGetResponse) Validate() error {
	if len(r.Receipts) > MaxCreditGetCount {
		return fmt.Errorf("credit get response of %d receipts (max %d): %w", len(r.Receipts), MaxCreditGetCount, ErrMalformed)
	}
	return validateReceipts(r.Receipts)
}
