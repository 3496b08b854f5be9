package output

import (
	"errors"
	"strings"
	"testing"
)

// TestCapped: what fits is kept whole; the write that would pass the cap fails, and every
// write after it, so a program is stopped at the cap and not partway through a later write.
func TestCapped(t *testing.T) {
	c := &Capped{Max: 10}
	for _, w := range []string{"0123", "45678"} {
		if _, err := c.Write([]byte(w)); err != nil {
			t.Fatal(err)
		}
	}
	if c.Over() || string(c.Bytes()) != "012345678" {
		t.Fatalf("over %v, kept %q", c.Over(), c.Bytes())
	}
	for _, w := range []string{"9a", "b"} {
		if n, err := c.Write([]byte(w)); n != 0 || !errors.Is(err, ErrTooMuch) {
			t.Fatalf("write %q past the cap: %d, %v", w, n, err)
		}
	}
	if !c.Over() || string(c.Bytes()) != "012345678" {
		t.Fatalf("over %v, kept %q", c.Over(), c.Bytes())
	}
}

// TestTail: the last Max bytes are kept, whatever the size of each write, and no write fails.
func TestTail(t *testing.T) {
	for _, writes := range [][]string{
		{"short"},
		{"0123456789", "abcdef"},
		{strings.Repeat("x", 100) + "0123456789"},
		{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"},
	} {
		tl := &Tail{Max: 8}
		all := ""
		for _, w := range writes {
			if n, err := tl.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("write %q: %d, %v", w, n, err)
			}
			all += w
		}
		if want := all[max(0, len(all)-8):]; tl.String() != want {
			t.Errorf("%q: kept %q, want %q", writes, tl.String(), want)
		}
	}
}
