package job

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"

	"github.com/up-pool/up/sigverify"
)

// receiptDomain separates store receipts from every other signed message.
const receiptDomain = "up/job/stored/1\x00"

// ErrBadReceipt reports a store receipt whose signature does not verify.
var ErrBadReceipt = errors.New("store receipt does not verify")

// ReceiptMessage is what a node signs with its account key to say that it
// stores the jobs keys, in that order: the domain and a digest of the
// length-prefixed keys. One signature covers a whole batch.
func ReceiptMessage(keys [][]byte) []byte {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, k := range keys {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(k)))])
		h.Write(k)
	}
	return h.Sum([]byte(receiptDomain))
}

// SignReceipt signs a receipt for the jobs keys with a node's account key.
func SignReceipt(account ed25519.PrivateKey, keys [][]byte) []byte {
	return ed25519.Sign(account, ReceiptMessage(keys))
}

// VerifyReceipt checks that sig is account's receipt for the jobs keys.
func VerifyReceipt(account ed25519.PublicKey, keys [][]byte, sig []byte) error {
	if len(account) != ed25519.PublicKeySize || !sigverify.Verify(account, ReceiptMessage(keys), sig) {
		return ErrBadReceipt
	}
	return nil
}
