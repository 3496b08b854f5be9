package store

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/fleet"
)

// Property: Recent keeps exactly the times inside the window, sorted, whatever the input order.
func TestRecentKeepsExactlyTheWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		now := t0.Add(time.Duration(rng.Int64N(int64(48 * time.Hour))))
		var in []time.Time
		for range rng.IntN(20) {
			in = append(in, now.Add(-time.Duration(rng.Int64N(int64(60*time.Hour)))))
		}
		got := Recent(in, now)
		if !slices.IsSortedFunc(got, func(a, b time.Time) int { return a.Compare(b) }) {
			t.Fatalf("case %d: not sorted: %v", i, got)
		}
		want := 0
		for _, ts := range in {
			if now.Sub(ts) < CycleWindow {
				want++
			}
		}
		for _, ts := range got {
			if now.Sub(ts) >= CycleWindow {
				t.Fatalf("case %d: kept %v, outside the window before %v", i, ts, now)
			}
		}
		if len(got) != want {
			t.Fatalf("case %d: kept %d of %d in the window", i, len(got), want)
		}
	}
}

func TestNodeEnterAndPowerOffs(t *testing.T) {
	n := Node{State: fleet.StatePoweringOff, Since: t0, Intent: &Intent{Kind: fleet.PowerOff}}
	n.RecordPowerOff(t0.Add(-25 * time.Hour))
	n.RecordPowerOff(t0)
	n.Enter(fleet.StateOff, t0)
	if n.Intent != nil || n.State != fleet.StateOff || !n.Since.Equal(t0) {
		t.Errorf("Enter left %+v", n)
	}
	if n.CyclesToday(t0) != 1 || !n.LastOff.Equal(t0) {
		t.Errorf("cycles %d, last off %v; want 1, %v", n.CyclesToday(t0), n.LastOff, t0)
	}
	since := n.Since
	n.Enter(fleet.StateOff, t0.Add(time.Hour))
	if !n.Since.Equal(since) {
		t.Error("re-entering the same state moved Since")
	}
}

// FuzzDecodeNode: whatever the bytes, decoding never panics, and what decodes survives a round
// trip unchanged.
func FuzzDecodeNode(f *testing.F) {
	f.Add([]byte(`{"v":1,"state":"on","since":"2026-11-29T12:00:00Z"}`))
	f.Add([]byte(`{"v":1,"state":"powering_off","intent":{"kind":"power_off","attempt":1}}`))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`{"v":1,"state":"off","intent":{"kind":"explode"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := decodeNode(b)
		if err != nil {
			return
		}
		enc := mustEncode(t, nodeV1{V: recordVersion, Node: n})
		n2, err := decodeNode(enc)
		if err != nil {
			t.Fatalf("decoding what was encoded: %v", err)
		}
		// Compared encoded: JSON cannot tell an empty list from none, nor keep a zone's pointer.
		if again := mustEncode(t, nodeV1{V: recordVersion, Node: n2}); string(again) != string(enc) {
			t.Fatalf("round trip changed %s into %s", enc, again)
		}
	})
}

// FuzzDecodeGlobalAndAudit: the other two record decoders never panic, and what decodes
// survives a round trip.
func FuzzDecodeGlobalAndAudit(f *testing.F) {
	f.Add([]byte(`{"v":1,"paused":true,"last_scale_up":{"gpu":"2026-11-29T12:00:00Z"},"power_offs":["2026-11-29T12:00:00Z"]}`))
	f.Add([]byte(`{"v":1,"time":"2026-11-29T12:00:00Z","node":"gpu01","action":"power_off","result":"succeeded"}`))
	f.Add([]byte(`{"v":1,"last_scale_down":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if g, err := decodeGlobal(b); err == nil {
			enc, err := encode(globalV1{V: recordVersion, Global: g})
			if err != nil {
				t.Fatalf("re-encoding %+v: %v", g, err)
			}
			if g2, err := decodeGlobal(enc); err != nil || string(enc) != string(mustEncode(t, globalV1{V: recordVersion, Global: g2})) {
				t.Fatalf("global round trip: %+v -> %+v (%v)", g, g2, err)
			}
		}
		if r, err := decodeAudit(b); err == nil {
			enc, err := encode(auditV1{V: recordVersion, AuditRecord: r})
			if err != nil {
				t.Fatalf("re-encoding %+v: %v", r, err)
			}
			if r2, err := decodeAudit(enc); err != nil || string(enc) != string(mustEncode(t, auditV1{V: recordVersion, AuditRecord: r2})) {
				t.Fatalf("audit round trip: %+v -> %+v (%v)", r, r2, err)
			}
		}
	})
}

func mustEncode[T any](t *testing.T, v T) []byte {
	t.Helper()
	b, err := encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A failure count lasts until an action of the kind that failed succeeds.
func TestFailuresLastUntilTheSameKindSucceeds(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		name      string
		node      Node
		succeeded fleet.Kind
		want      int
	}{
		{"power-off failed, power-on succeeded", Node{Failures: 2, FailedKind: fleet.PowerOff, RetryAfter: now}, fleet.PowerOn, 2},
		{"power-off failed, power-off succeeded", Node{Failures: 2, FailedKind: fleet.PowerOff, RetryAfter: now}, fleet.PowerOff, 0},
		{"power-on failed, power-on succeeded", Node{Failures: 1, FailedKind: fleet.PowerOn, RetryAfter: now}, fleet.PowerOn, 0},
		{"record older than failed_kind", Node{Failures: 3, RetryAfter: now}, fleet.PowerOn, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := c.node
			n.Succeeded(c.succeeded)
			if n.Failures != c.want || n.RetryAfter.IsZero() != (c.want == 0) {
				t.Errorf("after a %s success: %d failures, retry after %v; want %d", c.succeeded, n.Failures, n.RetryAfter, c.want)
			}
		})
	}
	var n Node
	n.Failed(fleet.PowerOff, now, time.Minute)
	n.Failed(fleet.PowerOff, now, 2*time.Minute)
	if n.Failures != 2 || n.FailedKind != fleet.PowerOff || !n.RetryAfter.Equal(now.Add(2*time.Minute)) {
		t.Errorf("two failures recorded as %+v", n)
	}
}
