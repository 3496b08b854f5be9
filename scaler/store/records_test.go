package store

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/fleet"
)

// Property: Recent keeps exactly the times inside the window (now-CycleWindow, now] and those at
// most clockSkew after now, taken as now, sorted, whatever the input order; nothing it returns
// lies after now.
func TestRecentKeepsExactlyTheWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		now := t0.Add(time.Duration(rng.Int64N(int64(48 * time.Hour))))
		var in []time.Time
		for range rng.IntN(20) {
			switch ago := time.Duration(rng.Int64N(int64(60 * time.Hour))); rng.IntN(4) {
			case 0: // ahead of the clock, by a little or by a lot
				in = append(in, now.Add(ago/100), now.Add(ago))
			default:
				in = append(in, now.Add(-ago))
			}
		}
		got := Recent(in, now)
		if !slices.IsSortedFunc(got, func(a, b time.Time) int { return a.Compare(b) }) {
			t.Fatalf("case %d: not sorted: %v", i, got)
		}
		want := 0
		for _, ts := range in {
			if now.Sub(ts) < CycleWindow && ts.Sub(now) <= clockSkew {
				want++
			}
		}
		for _, ts := range got {
			if now.Sub(ts) >= CycleWindow || ts.After(now) {
				t.Fatalf("case %d: kept %v, outside the window (%v, %v]", i, ts, now.Add(-CycleWindow), now)
			}
		}
		if len(got) != want {
			t.Fatalf("case %d: kept %d of %d in the window", i, len(got), want)
		}
	}
}

// A time recorded by a clock that ran ahead: a little ahead (rotas' clocks differ) it counts, as
// now, and once written back through Recent is forgotten a window later; further ahead than
// clockSkew (a clock that jumped, since put right) it counts for nothing, instead of holding the
// cycle cap, the budgets and the cooldowns until the date it bears.
func TestTimesAheadOfTheClock(t *testing.T) {
	cases := []struct {
		name   string
		ahead  time.Duration
		counts bool
	}{
		{"a second ahead", time.Second, true},
		{"clockSkew ahead", clockSkew, true},
		{"an hour ahead", time.Hour, false},
		{"a year ahead", 365 * 24 * time.Hour, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			at := t0.Add(c.ahead)
			want := 0
			if c.counts {
				want = 1
			}
			n := Node{State: fleet.StateOn, PowerOffs: []time.Time{at}}
			g := Global{PowerOffs: []time.Time{at}, Moves: []time.Time{at},
				LastScaleUp: map[string]time.Time{"gpu": at}, LastScaleDown: map[string]time.Time{"gpu": at}}
			h := g.History(t0)
			if got := n.CyclesToday(t0); got != want {
				t.Errorf("CyclesToday = %d, want %d", got, want)
			}
			if len(h.PowerOffs) != want || len(h.Moves) != want || len(h.LastScaleUp) != want || len(h.LastScaleDown) != want {
				t.Errorf("History = %+v; want %d of each", h, want)
			}
			for _, ts := range append(slices.Concat(h.PowerOffs, h.Moves), h.LastScaleUp["gpu"], h.LastScaleDown["gpu"]) {
				if c.counts && !ts.Equal(t0) {
					t.Errorf("History holds %v; want it taken as now, %v", ts, t0)
				}
			}
			n.RecordPowerOff(t0)
			if got := n.CyclesToday(t0); got != want+1 {
				t.Errorf("after a power-off now, CyclesToday = %d, want %d", got, want+1)
			}
			if later := t0.Add(CycleWindow + time.Second); n.CyclesToday(later) != 0 {
				t.Errorf("a window after, CyclesToday = %d (%v), want 0", n.CyclesToday(later), n.PowerOffs)
			}
		})
	}
}

// A count that is negative is a damaged record; a retry time far ahead is not (it is now plus
// the backoff, whatever the clock said).
func TestDecodeNodeRefusesNegativeCounts(t *testing.T) {
	cases := []struct {
		name, raw, want string
	}{
		{"negative failures", `{"v":1,"state":"failed","failures":-5,"failed_kind":"power_on"}`, "negative failure count"},
		{"negative attempt", `{"v":1,"state":"powering_off","intent":{"kind":"power_off","attempt":-3}}`, "negative intent attempt"},
		{"negative unread changes", `{"v":1,"state":"off","unread_changes":{"off":-1}}`, "negative count of unread changes"},
		{"retry far ahead", `{"v":1,"state":"failed","failures":3,"failed_kind":"power_on","retry_after":"9999-12-31T23:59:59Z"}`, ""},
		{"attempt zero (a record from before attempts)", `{"v":1,"state":"powering_off","intent":{"kind":"power_off"}}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := decodeNode([]byte(c.raw))
			switch {
			case c.want == "" && err != nil:
				t.Errorf("decoding %s: %v; want it read", c.raw, err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("decoding %s: %v; want an error saying %q", c.raw, err, c.want)
			}
		})
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

// TestNodeTimesAheadOfTheClock: a node's times further ahead than clockSkew are taken as now,
// a retry past the longest backoff is moved to it; times within clockSkew, and a retry within
// the backoff, are left as they are.
func TestNodeTimesAheadOfTheClock(t *testing.T) {
	limit := time.Hour
	near, far := t0.Add(clockSkew), t0.Add(clockSkew+time.Second)
	n := Node{Since: far, LastOn: near, LastOff: far, Intent: &Intent{Started: far}, RetryAfter: t0.Add(limit + clockSkew)}
	if !n.AheadOfTheClock(t0, limit) {
		t.Fatal("nothing changed")
	}
	if !n.Since.Equal(t0) || !n.LastOn.Equal(near) || !n.LastOff.Equal(t0) || !n.Intent.Started.Equal(t0) || !n.RetryAfter.Equal(t0.Add(limit+clockSkew)) {
		t.Errorf("got %+v (intent %+v)", n, *n.Intent)
	}
	n.RetryAfter = t0.Add(limit + clockSkew + time.Second)
	if !n.AheadOfTheClock(t0, limit) || !n.RetryAfter.Equal(t0.Add(limit)) {
		t.Errorf("retry after %v, want %v", n.RetryAfter, t0.Add(limit))
	}
	if n.AheadOfTheClock(t0, limit) {
		t.Error("a second call changed something")
	}
}
