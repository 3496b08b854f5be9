package store

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/learn"
)

// learnedErr reads pool gpu's statistics and returns the error that named it damaged.
func learnedErr(s *Store) error {
	_, bad, err := s.Learned([]string{"gpu"})
	if err != nil {
		return err
	}
	return bad["gpu"]
}

// idleErr reads pool gpu's idle periods and returns the error that named them damaged.
func idleErr(s *Store) error {
	_, bad, err := s.LearnedIdle([]string{"gpu"})
	if err != nil {
		return err
	}
	return bad["gpu"]
}

// Idle periods are kept sparse and read back the same; a damaged record is named, and
// writing skips it.
func TestLearnedIdleRoundTripAndDamage(t *testing.T) {
	s, path := openTemp(t, Options{})
	d := &learn.Idle{}
	for k := range 500 {
		d.Observe(1+k%40, t0.Add(time.Duration(k)*7*time.Minute), time.Duration(k%400)*time.Minute, k%3 != 0)
	}
	if err := s.PutLearnedIdle(map[string]*learn.Idle{"gpu": d, "cpu": {}}, nil); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s, path)
	back, bad, err := s.LearnedIdle([]string{"gpu", "cpu", "none"})
	if err != nil || bad != nil {
		t.Fatalf("read back: %v, %v", err, bad)
	}
	// Compared by their counts: an Idle also keeps what it read from them.
	if back["gpu"] == nil || !slices.Equal(back["gpu"].Counts(), d.Counts()) || back["cpu"] == nil || back["cpu"].Counts() != nil || back["none"] != nil {
		t.Error("idle periods differ after a round trip")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	writeRaw(t, path, bucketIdle, "", "gpu", `{"v":1,"format":1,"counts":[[0,0,`)
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, bad, _ = s.LearnedIdle([]string{"gpu"})
	if bad["gpu"] == nil || !strings.Contains(bad["gpu"].Error(), bucketIdle) {
		t.Fatalf("bad %v, want gpu named in bucket %s", bad, bucketIdle)
	}
	if err := s.PutLearnedIdle(map[string]*learn.Idle{"gpu": d, "cpu": d}, bad); err != nil {
		t.Fatal(err)
	}
	if idleErr(s) == nil {
		t.Error("the damaged record was overwritten")
	}
	if got, _, _ := s.LearnedIdle([]string{"cpu"}); got["cpu"] == nil || !slices.Equal(got["cpu"].Counts(), d.Counts()) {
		t.Error("the other pool was not written")
	}
}

// FuzzDecodeIdle: whatever the bytes, decoding never panics, and what decodes is written back
// byte for byte.
func FuzzDecodeIdle(f *testing.F) {
	f.Add([]byte(`{"v":1,"format":1,"counts":[[0,0,5,3,1],[0,2,0,1,0],[6,7,359,4000,96]]}`))
	f.Add([]byte(`{"v":1,"format":1,"counts":[]}`))
	f.Add([]byte(`{"v":1,"format":0}`))
	f.Add([]byte(`{"v":1,"format":1,"counts":[[0,0,5,4294967295,4294967295]]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decodeIdle(b)
		if err != nil || d == nil {
			return
		}
		enc := mustEncode(t, idleV1{V: recordVersion, Format: learn.IdleVersion, Counts: d.Counts()})
		d2, err := decodeIdle(enc)
		if err != nil || d2 == nil || *d2 != *d {
			t.Fatalf("round trip of %s: %v", enc, err)
		}
		if again := mustEncode(t, idleV1{V: recordVersion, Format: learn.IdleVersion, Counts: d2.Counts()}); string(again) != string(enc) {
			t.Fatalf("round trip changed %s into %s", enc, again)
		}
	})
}

func TestLearnedRoundTrip(t *testing.T) {
	s, path := openTemp(t, Options{})
	var stats learn.Stats
	for m := range 4 * 60 {
		stats.Observe(t0.Add(time.Duration(m)*time.Minute), map[string]int{"gpu": m % 7, "cpu": 1})
	}
	stats.ObserveBoot("gpu", 4*time.Minute)
	if err := s.PutLearned(stats, nil); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s, path)
	back, bad, err := s.Learned([]string{"gpu", "cpu", "none"})
	if err != nil || bad != nil {
		t.Fatalf("read back: %v, %v", err, bad)
	}
	if !reflect.DeepEqual(back.Pools["gpu"], stats.Pools["gpu"]) || back.Pools["none"] != nil {
		t.Error("statistics differ after a round trip")
	}
	now := t0.Add(4 * time.Hour)
	if a, b := stats.View("gpu", now, 0), back.View("gpu", now, 0); a != b {
		t.Errorf("views differ after a round trip")
	}
}

// A damaged record is named and left as it is: writing skips it.
func TestLearnedDamagedIsKept(t *testing.T) {
	s, path := openTemp(t, Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	writeRaw(t, path, bucketLearned, "", "gpu", "[")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, bad, err := s.Learned([]string{"gpu"})
	if err != nil || bad["gpu"] == nil {
		t.Fatalf("bad %v err %v, want gpu named", bad, err)
	}
	stats := learn.Stats{Pools: map[string]*learn.Pool{"gpu": learn.NewPool(), "cpu": learn.NewPool()}}
	if err := s.PutLearned(stats, bad); err != nil {
		t.Fatal(err)
	}
	if err := learnedErr(s); err == nil {
		t.Error("the damaged record was overwritten")
	}
	if got, _, _ := s.Learned([]string{"cpu"}); got.Pools["cpu"] == nil {
		t.Error("the other pool was not written")
	}
}

// Statistics of an older format are relearned, not an error; a store from before the bucket
// existed reads as having none.
func TestLearnedOlderFormatAndOlderStore(t *testing.T) {
	s, path := openTemp(t, Options{})
	got, bad, err := s.Learned([]string{"gpu"})
	if err != nil || bad != nil || len(got.Pools) != 0 {
		t.Fatalf("store without the bucket: %v %v %v", got, bad, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	writeRaw(t, path, bucketLearned, "", "gpu", `{"v":1,"format":0,"pool":{}}`)
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, bad, err = s.Learned([]string{"gpu"})
	if err != nil || bad != nil || got.Pools["gpu"] != nil {
		t.Errorf("older format: %v %v %v, want none", got, bad, err)
	}
}
