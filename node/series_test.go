package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"testing"
	"time"

	"github.com/up-pool/up/dht/keyspace"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/testnet"
	"github.com/up-pool/up/wire"
)

// TestSeriesRates: request counts become rates over the time between two
// readings; the first reading has none; ages are on the answer's clock,
// oldest first.
func TestSeriesRates(t *testing.T) {
	s := node.NewSampler(0, 0)
	if s.Step() != node.DefaultSeriesStep {
		t.Fatalf("step %v, want the default %v", s.Step(), node.DefaultSeriesStep)
	}
	t0 := time.Unix(1000, 0)
	s.Add(t0, node.Reading{JobsHeld: 1, Instance: "a", RPC: map[string]float64{"/p": 10}})
	s.Add(t0.Add(5*time.Second), node.Reading{JobsHeld: 2, Load: 0.5, Moves: 1, Connections: 3, Instance: "a",
		RPC: map[string]float64{"/p": 20, "/q": 5}})
	se := s.Series(t0.Add(7 * time.Second))
	if se.Step != 5 || len(se.Samples) != 2 {
		t.Fatalf("series step %v s with %d samples, want 5 s and 2", se.Step, len(se.Samples))
	}
	first, last := se.Samples[0], se.Samples[1]
	if first.Age != 7 || last.Age != 2 || first.JobsHeld != 1 || last.JobsHeld != 2 {
		t.Fatalf("samples %+v, want ages 7 and 2 s holding 1 and 2 jobs", se.Samples)
	}
	if len(first.RPC) != 0 {
		t.Fatalf("first sample has rates %v, want none", first.RPC)
	}
	if last.RPC["/p"] != 2 || last.RPC["/q"] != 1 || last.Load != 0.5 || last.Moves != 1 || last.Connections != 3 {
		t.Fatalf("last sample %+v, want /p 2/s, /q 1/s, load 0.5, 1 move, 3 connections", last)
	}
	// The JSON served is the series encoded.
	var served node.Series
	b := s.AppendJSON(nil, t0.Add(7*time.Second))
	if err := json.Unmarshal(b, &served); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if !reflect.DeepEqual(served, se) {
		t.Fatalf("served %s, want %+v", b, se)
	}
}

// TestSeriesCountersRestart: after a move (a new instance) or a counter
// that went back, the counts are new requests, not a negative rate.
func TestSeriesCountersRestart(t *testing.T) {
	s := node.NewSampler(time.Second, 0)
	t0 := time.Unix(1000, 0)
	s.Add(t0, node.Reading{Instance: "a", RPC: map[string]float64{"/p": 100}})
	s.Add(t0.Add(time.Second), node.Reading{Instance: "b", RPC: map[string]float64{"/p": 3}})
	s.Add(t0.Add(2*time.Second), node.Reading{Instance: "b", RPC: map[string]float64{"/p": 1}})
	se := s.Series(t0.Add(2 * time.Second))
	if got := se.Samples[1].RPC["/p"]; got != 3 {
		t.Fatalf("rate after a move %v/s, want 3", got)
	}
	if got := se.Samples[2].RPC["/p"]; got != 1 {
		t.Fatalf("rate after a counter went back %v/s, want 1", got)
	}
}

// TestSeriesBounded: the sampler keeps the last MaxSamples, dropping the
// oldest.
func TestSeriesBounded(t *testing.T) {
	s := node.NewSampler(time.Second, 0)
	t0 := time.Unix(1000, 0)
	const extra = 5
	for i := range node.MaxSamples + extra {
		s.Add(t0.Add(time.Duration(i)*time.Second), node.Reading{JobsHeld: i})
	}
	se := s.Series(t0.Add((node.MaxSamples + extra - 1) * time.Second))
	if s.Len() != node.MaxSamples || len(se.Samples) != node.MaxSamples {
		t.Fatalf("%d samples (%d served), want %d", s.Len(), len(se.Samples), node.MaxSamples)
	}
	for i, smp := range se.Samples {
		if smp.JobsHeld != extra+i || smp.Age != float64(node.MaxSamples-1-i) {
			t.Fatalf("sample %d is %+v, want reading %d aged %d s", i, smp, extra+i, node.MaxSamples-1-i)
		}
	}
}

// TestSeriesHTTP: a node serves its samples on GET /api/series, counting
// the requests it served during the step by protocol, and the serials
// its revocation list revokes on /status.
func TestSeriesHTTP(t *testing.T) {
	tn, err := testnet.Start(context.Background(), testnet.Options{
		Nodes: 3, Dir: t.TempDir(), Seed: 23,
		Configure: func(i int, cfg *node.Config) {
			if i == 0 {
				cfg.HTTPAddr = "127.0.0.1:0"
				cfg.SeriesStep = time.Hour // samples by hand only
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tn.Close()
	nd := tn.Node(0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	self := keyspace.PeerPos([]byte(nd.ID()))
	for range 3 {
		if _, err := tn.Node(1).DHT().Near(ctx, nd.ID(), self, 3); err != nil {
			t.Fatal(err)
		}
	}
	nd.Sample()
	var se struct {
		Step    float64 `json:"step_s"`
		Samples []struct {
			Age         float64            `json:"age_s"`
			JobsHeld    *int               `json:"jobs_held"`
			Index       *int               `json:"index_entries"`
			Load        *float64           `json:"load"`
			Moves       *int               `json:"moves"`
			Connections int                `json:"connections"`
			RPC         map[string]float64 `json:"rpc"`
		} `json:"samples"`
	}
	if err := json.Unmarshal(get(t, "http://"+nd.HTTPAddr()+"/api/series"), &se); err != nil {
		t.Fatal(err)
	}
	if se.Step != 3600 || len(se.Samples) != 2 {
		t.Fatalf("series step %v s with %d samples, want 3600 and 2 (start and by hand)", se.Step, len(se.Samples))
	}
	last := se.Samples[1]
	if last.JobsHeld == nil || last.Index == nil || last.Load == nil || last.Moves == nil || last.Connections < 1 {
		t.Fatalf("last sample %+v lacks a field or counts no connection", last)
	}
	if last.RPC[string(wire.ProtoNear)] <= 0 || se.Samples[0].Age < last.Age || last.Age < 0 {
		t.Fatalf("samples %+v: want the last with a rate for %s, the first older", se.Samples, wire.ProtoNear)
	}

	var serials []*big.Int
	for i := range node.MaxStatusRevocations + 2 {
		serials = append(serials, big.NewInt(int64(1000+i)))
	}
	rl, err := tn.CA.Revoke(nil, serials, time.Now().Add(-time.Minute), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var st node.Status
	if err := json.Unmarshal(get(t, "http://"+nd.HTTPAddr()+"/status"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Revocations.Count != 0 || st.Revocations.Serials == nil || len(st.Revocations.Serials) != 0 {
		t.Fatalf("revocations %+v before any list, want none (and [] not null)", st.Revocations)
	}
	nd.Endpoint().AdoptCRL(rl)
	if err := json.Unmarshal(get(t, "http://"+nd.HTTPAddr()+"/status"), &st); err != nil {
		t.Fatal(err)
	}
	r := st.Revocations
	if r.Count != len(serials) || len(r.Serials) != node.MaxStatusRevocations || r.Serials[0] != fmt.Sprintf("%x", 1000) {
		t.Fatalf("revocations %d: %v; want %d, the first %d from %x", r.Count, r.Serials, len(serials), node.MaxStatusRevocations, 1000)
	}
}
