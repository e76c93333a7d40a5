package indexnet_test

import "github.com/up-pool/up/wire"

// pageAll is a harvest query for everything under keyword.
func pageAll(keyword string) *wire.IndexQueryRequest {
	return &wire.IndexQueryRequest{Query: keyword, Keyword: keyword, N: wire.MaxIndexHits, Page: true}
}
