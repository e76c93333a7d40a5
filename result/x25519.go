package result

import "golang.org/x/crypto/curve25519"

func curve25519ScalarBase(dst, scalar *[32]byte) { curve25519.ScalarBaseMult(dst, scalar) }
