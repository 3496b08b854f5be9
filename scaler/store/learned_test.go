package store

import (
	"reflect"
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
